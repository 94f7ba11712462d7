"""Detection on held-out VOTE prompts (docs/student.md, "The learning curve"): a detector's ranking of the
candidates at every recorded crewmate VOTE of held-out matches, scored against the truth.

Each recorded VOTE call of a crewmate (compact prompt, answered by the expert itself) is one probe: its living
candidates (skip left out) are ranked by the detector's probabilities and scored by the AUROC within that
probe (chance 0.5), averaged over probes, with a match-level bootstrap interval, pooled and per imposter rung
(the match header's imposter model). Beside it: how often the detector's top choice (skip included) is the
expert's vote, and the mean KL from the expert's belief. Any detector with probabilities over the candidates
can be scored the same way (the student, the linear reader of the same prompts, the expert's own beliefs), so
a learning curve compares like with like on the same probes. The live games of ``mau eval`` stay the headline;
this is the cheap reading that many students can share. Heavy imports inside.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mau import schema as F
from mau.errors import MauError
from mau.stats import Estimate, bootstrap_indices, percentile_interval

POOLED = "all"
Row = tuple[str, "float | None", bool, "float | None"]  # (match, AUROC within, agrees with the vote, KL)
HELDOUT = "heldout.json"  # a student-train run's held-out reading


@dataclass
class HeldoutProbe:
    """One recorded VOTE: its prompt messages, candidates (skip last), the truth and the expert's answer."""

    match: str
    seed: int
    rung: str
    agent: str
    messages: list[dict[str, Any]]
    candidates: list[str]
    imposters: set[str]
    vote: str | None
    # the expert's distribution over candidates and skip (mau.datasets.beliefs)
    belief: dict[str, float] | None


def read_probes(runs: list[str], exclude_seeds: set[int] | None = None) -> list[HeldoutProbe]:
    """Every crewmate VOTE answered by the expert itself in the finished matches of ``runs`` (run or match
    folders), in folder order."""
    from mau.datasets.beliefs import distribution
    from mau.infer.compact_reader import compact_candidates
    from mau.matchdir import read_header
    from mau.replay.decisions import to_prompt
    from mau.replay.record import match_folders

    out: list[HeldoutProbe] = []
    for folder in match_folders(runs):
        h = read_header(folder)
        seed = int(h.get(F.SEED, -1))
        if exclude_seeds and seed in exclude_seeds:
            continue
        roles = h.get(F.ROLES) or {}
        g = h.get(F.GRID) or {}
        rung = str(g.get(F.EVAL_IMPOSTER) or g.get(F.IMPOSTER_MODEL) or "-")
        calls = Path(folder) / F.CALLS_FILE
        if not calls.is_file():
            continue
        for n, line in enumerate(calls.read_text().splitlines(), 1):
            try:
                c = json.loads(line)
            except json.JSONDecodeError:
                raise MauError(f"{calls}:{n}: not valid JSON; the record is damaged (collect it "
                               "again)") from None
            if not isinstance(c, dict) or c.get(F.MODULE) != "vote" or c.get(F.ROLE) != F.CREWMATE \
                    or c.get(F.FALLBACK):
                continue
            msgs = to_prompt(c[F.MESSAGES])
            text = "\n".join(p.get("text") or "" for m in msgs if m["role"] == "user" for p in m["content"])
            cands = compact_candidates(text)
            if not cands:
                raise MauError(f"{calls}:{n}: a VOTE prompt without a Candidates line; held-out scoring "
                               "needs compact VOTE prompts (aria.prompt_profile: {vote: compact})")
            parsed = c.get(F.PARSED) or {}
            bel = parsed.get(F.VOTE_BELIEFS)
            out.append(HeldoutProbe(
                str(Path(folder).name), seed, rung, str(c.get(F.AGENT)), msgs, cands,
                {n for n, r in roles.items() if r == F.IMPOSTER}, parsed.get(F.VOTE_TARGET),
                distribution(bel) if isinstance(bel, dict) and bel else None))
    if not out:
        raise MauError(f"{runs}: no crewmate VOTE calls to score; give collect runs of held-out matches with "
                       "the compact VOTE prompt")
    return out


def within_auroc(p: list[float], y: list[bool]) -> float | None:
    """Mann-Whitney AUROC of one probe (ties half); None without both roles."""
    pos = [a for a, t in zip(p, y) if t]
    neg = [a for a, t in zip(p, y) if not t]
    if not pos or not neg:
        return None
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return wins / (len(pos) * len(neg))


def score(probes: list[HeldoutProbe], probs: list[list[float]], resamples: int = 1000,
          seed: int = 0) -> dict[str, Any]:
    """Within-probe AUROC (pooled and per rung, with match-level bootstrap intervals), agreement with the
    expert's vote and mean KL from the expert's belief, of probabilities over each probe's candidates (skip
    last, as ``HeldoutProbe.candidates``)."""
    if len(probs) != len(probes):
        raise ValueError(f"{len(probs)} rows of probabilities for {len(probes)} probes")
    per: dict[str, list[Row]] = {}
    for pr, p in zip(probes, probs):
        living = [c for c in pr.candidates if c != F.SKIP]
        pl = [p[pr.candidates.index(c)] for c in living]
        a = within_auroc(pl, [c in pr.imposters for c in living])
        top = pr.candidates[int(np.argmax(p))]
        kl = None
        if pr.belief is not None:
            kl = sum(q * (math.log(q) - math.log(max(p[pr.candidates.index(c)], 1e-12)))
                     for c, q in pr.belief.items() if q > 0 and c in pr.candidates)
        row = (pr.match, a, top == pr.vote, kl)
        per.setdefault(pr.rung, []).append(row)
        per.setdefault(POOLED, []).append(row)
    return {rung: _cell(rows, resamples, seed) for rung, rows in sorted(per.items(), key=lambda kv: (
        kv[0] == POOLED, kv[0]))}


def _cell(rows: list[Row], resamples: int, seed: int) -> dict[str, Any]:
    matches = sorted({r[0] for r in rows})
    index = {m: i for i, m in enumerate(matches)}
    sums = np.zeros(len(matches))
    counts = np.zeros(len(matches))
    for m, a, _, _ in rows:
        if a is not None:
            sums[index[m]] += a
            counts[index[m]] += 1

    def value(w: np.ndarray) -> float | None:
        n = float((counts * w).sum())
        return float((sums * w).sum() / n) if n else None

    v = value(np.ones(len(matches)))
    lo = hi = None
    if v is not None and resamples:
        boot = [value(np.bincount(ix, minlength=len(matches)).astype(float))
                for ix in bootstrap_indices(len(matches), resamples, seed)]
        lo, hi = percentile_interval(np.asarray([b for b in boot if b is not None], float))
    kls = [r[3] for r in rows if r[3] is not None]
    return {"auroc_within": Estimate(v, lo, hi, int(counts.sum()), "bootstrap").to_dict(),
            "agree_vote": sum(r[2] for r in rows) / len(rows), "kl_to_expert": (sum(kls) / len(kls)
                                                                              if kls else None),
            "probes": len(rows), "matches": len(matches)}


def expert_probs(probes: list[HeldoutProbe]) -> list[list[float]]:
    """The expert's own belief at each probe (its recorded distribution; uniform where it recorded none)."""
    return [[pr.belief.get(c, 0.0) for c in pr.candidates] if pr.belief else
            [1 / len(pr.candidates)] * len(pr.candidates) for pr in probes]


def examples_of(tokenizer: Any, probes: list[HeldoutProbe]) -> list[Any]:
    """The candidate examples of held-out probes (the same rendering as training)."""
    from mau.student.examples import make_example

    return [make_example(tokenizer, f"{p.match}:{i}", p.messages, p.vote) for i, p in enumerate(probes)]


def table(results: dict[str, dict[str, Any]], rungs: list[str]) -> list[str]:
    """Markdown rows: one per detector, within-probe AUROC per rung and pooled."""
    head = "| detector | " + " | ".join(rungs) + " | vote agreement | KL to expert |"
    lines = [head, "|---" * (len(rungs) + 3) + "|"]
    for name, res in results.items():
        cells = []
        for r in rungs:
            e = (res.get(r) or {}).get("auroc_within") or {}
            cells.append("-" if e.get("value") is None else f"{e['value']:.3f}")
        pooled = res.get(POOLED) or {}
        kl = pooled.get("kl_to_expert")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {100 * pooled.get('agree_vote', 0):.1f} % | "
                     + ("-" if kl is None else f"{kl:.3f}") + " |")
    return lines


