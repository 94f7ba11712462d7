"""Simple detectors beside every detection table, read from the ideal observer's recorded evidence at the same
probes (docs/evaluation.md, "Detection"): what a detector must beat before its figure means anything.

- **public only**: the observer's model (its parameters) over the public evidence alone: deaths, ejections and
  the revealed roles, who reported or called, every accusation and vote, conflicting public claims; nothing
  the crewmate saw itself (no positions, no kill seen, no contradiction by its own sight);
- **most accused**: each candidate's accusations and votes received so far, as shares of the living imposters;
- **linear**: a logistic model of P(imposter) on per-candidate counts of the same evidence (``FEATURES``),
  fitted on the truth of half of the run's seeds and scored on the other half (two folds by seed, so no
  candidate is scored by a fit that saw its match, nor the twin match another arm played on the same seed):
  an upper reference fitted on the truth, not a peer of a student trained on the teacher's votes;
- **linear (BC rows)**: the peer of such a student (``mau.infer.compact_reader``): a conditional logit over
  the candidates of the compact VOTE prompt, fitted on the BC rows a student was trained on with the same
  target (the expert's vote and/or belief), read at each before-vote probe from that crewmate's VOTE prompt
  (its ``calls.jsonl``; probes at other moments have no such prompt and get no row);
- **observer, no speech**: the ideal observer with accusations and votes counting for nothing (an ablation of
  the speech block).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from mau import schema as F
from mau.infer import evidence as E
from mau.infer.linear import BASE_FEATURES, counts, fit_logistic
from mau.infer.model import GROUPS, Detector, beliefs, zeroed

PUBLIC_ROW = "public only"
ACCUSED_ROW = "most accused"
LINEAR_ROW = "linear (2-fold)"
LINEAR_BC_ROW = "linear (BC rows)"
NO_SPEECH_ROW = "observer, no speech"
BASELINE_ROWS = (PUBLIC_ROW, ACCUSED_ROW, LINEAR_ROW, LINEAR_BC_ROW, NO_SPEECH_ROW)
# What every player hears or sees at meetings (a vote withheld is as public as a vote cast).
PUBLIC_KINDS = (E.DEAD, E.EJECTED, E.ACCUSE, E.VOTE, E.SKIPPED, E.REPORTED, E.CALLED, E.CONFLICT)
FEATURES = BASE_FEATURES  # the linear baseline's counts (the linear detector adds skips and alibis)


def _normalise(scores: dict[str, float], k: int) -> dict[str, float]:
    """Scores >= 0 as P(imposter) shares of the k living imposters (each at most 1)."""
    total = sum(scores.values())
    if total <= 0:
        return {c: round(min(1.0, k / len(scores)), 6) for c in scores} if scores else {}
    return {c: round(min(1.0, k * v / total), 6) for c, v in scores.items()}


def public_only(rec: dict[str, Any], roster: list[str], params: Detector) -> dict[str, float]:
    items = [it for it in rec["evidence"] if it["k"] in PUBLIC_KINDS]
    return beliefs(
        rec[F.AGENT], roster, list(rec[F.PROBE_BELIEFS]), int(rec.get("n_imposters", 2)), items, params
    )[0]


def no_speech(rec: dict[str, Any], roster: list[str], params: Detector) -> dict[str, float]:
    quiet = zeroed(params, GROUPS["speech"])
    return beliefs(rec[F.AGENT], roster, list(rec[F.PROBE_BELIEFS]), int(rec.get("n_imposters", 2)),
                   rec["evidence"], quiet)[0]


def most_accused(rec: dict[str, Any]) -> dict[str, float]:
    cands = list(rec[F.PROBE_BELIEFS])
    got = dict.fromkeys(cands, 0.5)  # half a count each: a probe where nobody was accused reads k/n
    for it in rec["evidence"]:
        if it["k"] in (E.ACCUSE, E.VOTE) and it.get("target") in got:
            got[it["target"]] += 1.0
    return _normalise(got, int(rec.get("n_imposters", 2)))


def features(rec: dict[str, Any]) -> dict[str, list[float]]:
    """Per candidate of a probe, log(1 + count) of each of ``FEATURES`` in its evidence."""
    return {c: [math.log1p(v[n]) for n in FEATURES]
            for c, v in counts(rec["evidence"], list(rec[F.PROBE_BELIEFS])).items()}


def fold_of(seed: int) -> int:
    """The linear baseline's fold of a match: by its seed, so the matches that different arms played on one
    seed (same roles, same imposters) fall in the same fold."""
    return hashlib.blake2b(str(int(seed)).encode(), digest_size=2).digest()[0] % 2


def linear_rows(recs_by_match: dict[str, tuple[list[dict[str, Any]], dict[str, str]]],
                seeds: dict[str, int]) -> dict[str, list[dict[str, float]]]:
    """Per match, the linear model's beliefs at each of its ideal probes (same order), fitted on the other
    fold (``fold_of`` its seed, ``seeds``: match id -> seed)."""
    rows: dict[int, list[tuple[list[float], float]]] = {0: [], 1: []}
    for mid, (recs, roles) in recs_by_match.items():
        for r in recs:
            for c, x in features(r).items():
                rows[fold_of(seeds[mid])].append((x, float(roles.get(c) == F.IMPOSTER)))
    weights = {}
    for fold in (0, 1):
        train = rows[1 - fold] or rows[fold]
        if not train or len({y for _, y in train}) < 2:
            weights[fold] = None
            continue
        weights[fold] = fit_logistic(np.asarray([x for x, _ in train]), np.asarray([y for _, y in train]))
    out = {}
    for mid, (recs, _) in recs_by_match.items():
        w = weights[fold_of(seeds[mid])]
        bel = []
        for r in recs:
            fs = features(r)
            if w is None:
                bel.append({c: 0.5 for c in fs})
                continue
            bel.append({c: round(float(1 / (1 + math.exp(-float(np.dot(w[:-1], x) + w[-1])))), 6)
                        for c, x in fs.items()})
        out[mid] = bel
    return out


def vote_prompts(folder: Any) -> dict[tuple[str, int], tuple[str, list[str]]]:
    """(agent, tick) -> (user text, candidates with skip last) of every crewmate VOTE call of a match folder
    whose prompt is compact (the prompt the before-vote probe of that crewmate at that tick reads)."""
    import json
    from pathlib import Path

    from mau.infer.compact_reader import compact_candidates

    path = Path(folder) / F.CALLS_FILE
    out: dict[tuple[str, int], tuple[str, list[str]]] = {}
    if not path.is_file():
        return out
    for line in path.read_text().splitlines():
        try:
            c = json.loads(line)
        except json.JSONDecodeError:
            continue  # a damaged line counts for nothing here; the match readers name it
        if not isinstance(c, dict) or c.get(F.MODULE) != "vote" or c.get(F.ROLE) != F.CREWMATE:
            continue
        user = next((m for m in c.get(F.MESSAGES) or [] if m.get("role") == "user"), None)
        content = (user or {}).get("content")
        text = content if isinstance(content, str) else "\n".join(
            str(p.get("text") or "") for p in content or [] if isinstance(p, dict))
        cands = compact_candidates(text)
        if cands:
            out[(str(c.get(F.AGENT)), int(c.get(F.TICK, -1)))] = (text, cands)
    return out


def bc_linear_beliefs(reader: Any, rec: dict[str, Any], prompt: tuple[str, list[str]]) -> dict[str, float]:
    """The BC-rows linear reader's beliefs at one probe: its probabilities of the probe's candidates from the
    VOTE prompt (skip left out), normalised to the living imposters as a scored VOTE read-out is."""
    from mau.harness.beliefs.probe import normalise

    text, cands = prompt
    p = dict(zip(cands, reader.probs(text, cands)))
    names = list(rec[F.PROBE_BELIEFS])
    raw = {n: p.get(n, 0.0) for n in names}
    total = sum(raw.values())
    raw = {n: v / total if total > 0 else 1.0 / len(names) for n, v in raw.items()}
    return normalise(raw, int(rec.get("n_imposters", 2)))
