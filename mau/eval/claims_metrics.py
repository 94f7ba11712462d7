"""Numbers about claims, from match folders (docs/claims.md, "Metrics"): per role, claim accuracy and the share
of false claims, lie rates, crew spatial errors, liar votes, accusations; each with a 95 % match-level bootstrap
interval. Also the checks a scripted run must pass (render -> parse, unlabelled facts TRUE, lies not TRUE).

Definitions (facts are the six checkable kinds; stances are accuse and vouch):

- ``claim_accuracy`` = TRUE / (TRUE + FALSE + UNSUPPORTED) of the facts; ``unverifiable_share`` apart;
- ``false_share`` = (FALSE + UNSUPPORTED) / facts;
- ``lie_rate`` = claims labelled ``lie`` / claims (labels exist for scripted speakers only);
  ``known_false_rate`` = facts the checker finds known-false from the speaker's own view / claims (any speaker);
- ``spatial_error`` = FALSE ``at`` and ``saw`` facts / ``at`` and ``saw`` facts (QUACK's spatial hallucination);
- ``meetings_with_a_lie``: meetings where an imposter said a FALSE or UNSUPPORTED fact / meetings with imposter facts;
- a meeting's **liars** are the speakers of a FALSE or UNSUPPORTED fact in it (read from the checker, role-blind);
  ``liar_vote_recall`` = (meeting, liar) pairs with a crewmate's vote on that liar / such pairs;
  ``liar_vote_precision`` = crewmates' votes on that meeting's liars / crewmates' non-skip votes;
- ``accusation_accuracy`` = accusations of an imposter / accusations; ``grounded_accusations`` = accusations of a
  player the speaker saw since the last meeting or near a body / accusations (``unsupported_accusations``: the rest).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from mau import schema as F
from mau.claims.check import FALSE, KNOWN_FALSE, TRUE, UNSUPPORTED, UNVERIFIABLE, check_match
from mau.claims.render import parse
from mau.claims.sights import read_lines
from mau.errors import MauError

ROLES = (F.CREWMATE, F.IMPOSTER)
# metric -> (numerator counter, denominator counter), per role where the name has {r}
RATIOS: dict[str, tuple[str, str]] = {
    "claim_accuracy_{r}": ("true_{r}", "checkable_{r}"),
    "false_share_{r}": ("false_or_unsupported_{r}", "facts_{r}"),
    "unverifiable_share_{r}": ("unverifiable_{r}", "facts_{r}"),
    "lie_rate_{r}": ("lies_{r}", "labelled_claims_{r}"),
    "known_false_rate_{r}": ("known_false_{r}", "claims_{r}"),
    "spatial_error_{r}": ("spatial_false_{r}", "spatial_{r}"),
    "accusation_accuracy_{r}": ("accusations_right_{r}", "accusations_{r}"),
    "grounded_accusations_{r}": ("accusations_grounded_{r}", "accusations_{r}"),
    "unsupported_accusations_{r}": ("accusations_ungrounded_{r}", "accusations_{r}"),
}
SHARED_RATIOS: dict[str, tuple[str, str]] = {
    "meetings_with_a_lie": ("meetings_imposter_lied", "meetings_imposter_facts"),
    "liar_vote_recall": ("liars_voted", "liars"),
    "liar_vote_precision": ("votes_on_liars", "crew_votes"),
}


def all_ratios() -> dict[str, tuple[str, str]]:
    out = {k.format(r=r): (a.format(r=r), b.format(r=r)) for k, (a, b) in RATIOS.items() for r in ROLES}
    return {**out, **SHARED_RATIOS}


@dataclass
class MatchClaims:
    """One match's claims and the checker's records (recomputed from the files)."""

    path: Path
    match_id: str
    roles: dict[str, str]
    groups: dict[str, str]  # imposter model, crewmate model (collect) or arm (eval)
    events: list[dict[str, Any]]
    records: list[dict[str, Any]]
    recorded: list[dict[str, Any]] | None  # the match folder's claims.jsonl (None: none written)
    check_s: float
    sights_bytes: int
    counts: dict[str, float] = field(default_factory=dict)

    @property
    def identical(self) -> bool | None:
        return None if self.recorded is None else self.recorded == self.records


def match_folders(paths: Iterable[str | Path]) -> list[Path]:
    """Every finished match folder under run folders (or match folders) ``paths`` (``matchdir.finished_matches``)."""
    from mau.matchdir import finished_matches

    out: list[Path] = []
    for p in map(Path, paths):
        if not (p / F.MATCH_HEADER).is_file() and not (p / F.MATCHES_DIR).is_dir():
            raise MauError(f"{p}: neither a run folder (with {F.MATCHES_DIR}/) nor a match folder; give one")
        out += finished_matches(p)
    return out


def load(path: Path, extra_claims: dict[int, list[dict[str, Any]]] | None = None,
         recorded_only: bool = False) -> MatchClaims:
    """Read a match folder and check its claims; ``extra_claims``: claims read from free text by an extraction
    pass ({event index: claims}), checked as if they had been said structured; ``recorded_only``: take the
    match-end claims.jsonl as it is (a run's summary), without checking again."""
    from mau.matchdir import iter_events, read_header

    header = read_header(path)
    events = list(iter_events(path))
    if extra_claims:
        events = [dict(e, **{F.CLAIMS: extra_claims[e[F.EVENT_INDEX]]}) if e[F.EVENT_INDEX] in extra_claims else e
                  for e in events]
    recorded = None
    cf = path / F.CLAIMS_FILE
    if cf.is_file() and not extra_claims:
        recorded = [json.loads(x) for x in cf.read_text().splitlines() if x.strip()]
    t0 = time.perf_counter()
    if recorded_only:
        records = recorded or []
    else:
        sights = read_lines(path)
        records = check_match(events, sights) if sights else []
    dt = time.perf_counter() - t0
    grid = header.get(F.GRID) or {}
    groups = {"imposter": grid.get(F.IMPOSTER_MODEL) or header.get(F.EVAL_IMPOSTER) or "-",
              "crewmate": grid.get(F.CREWMATE_MODEL) or header.get(F.ARM) or "-"}
    if not isinstance(groups["imposter"], str):
        groups["imposter"] = str(groups["imposter"])
    size = (path / F.SIGHTS_FILE).stat().st_size if (path / F.SIGHTS_FILE).is_file() else 0
    m = MatchClaims(path, header.get(F.MATCH_ID, path.name), dict(header[F.ROLES]), groups, events, records,
                    recorded, dt, size)
    m.counts = count(m)
    return m


def _labels(events: list[dict[str, Any]]) -> dict[tuple[int, int], str | None]:
    out = {}
    for e in events:
        if e.get(F.CLAIMS):
            lab = e.get(F.CLAIM_INTENT) or [None] * len(e[F.CLAIMS])
            for n, label in enumerate(lab):
                out[(e[F.EVENT_INDEX], n)] = label
    return out


def count(m: MatchClaims) -> dict[str, float]:
    """The counters of one match (numerators and denominators of every ratio, and the checks)."""
    c: dict[str, float] = {}

    def add(key: str, v: float = 1) -> None:
        c[key] = c.get(key, 0) + v

    labels = _labels(m.events)
    labelled_speakers = {e[F.SPEAKER] for e in m.events if e.get(F.CLAIM_INTENT)}
    any_labels = bool(labelled_speakers) or any(lab is not None for lab in labels.values())
    liars: dict[int, set[str]] = {}
    imposter_facts: dict[int, bool] = {}
    for r in m.records:
        role = m.roles.get(r[F.SPEAKER], "?")
        label = labels.get((r["i"], r["n"]))
        claim, v = r["claim"], r["verdict"]
        add(f"claims_{role}")
        if any_labels:
            add(f"labelled_claims_{role}")
            add(f"lies_{role}", label == F.INTENT_LIE)
        if r["kind"] == "fact":
            add(f"facts_{role}")
            add(f"true_{role}", v == TRUE)
            add(f"checkable_{role}", v in (TRUE, FALSE, UNSUPPORTED))
            add(f"false_or_unsupported_{role}", v in (FALSE, UNSUPPORTED))
            add(f"unverifiable_{role}", v == UNVERIFIABLE)
            add(f"known_false_{role}", r.get("epistemic") == KNOWN_FALSE)
            if claim["k"] in ("at", "saw"):
                add(f"spatial_{role}")
                add(f"spatial_false_{role}", v == FALSE)
            if v in (FALSE, UNSUPPORTED):
                liars.setdefault(r["meeting"], set()).add(r[F.SPEAKER])
            if role == F.IMPOSTER:
                imposter_facts[r["meeting"]] = imposter_facts.get(r["meeting"], False) or v in (FALSE, UNSUPPORTED)
            # the acceptance checks of scripted speakers (labels known)
            if label is None:
                add("unlabelled_facts")
                add("unlabelled_true", v == TRUE)
            elif label == F.INTENT_LIE:
                add("lie_facts")
                add("lie_false_or_unsupported", v in (FALSE, UNSUPPORTED))
            else:
                add("mistake_facts")
            if role == F.CREWMATE and v != TRUE:
                add("crew_not_true")
                add("crew_not_true_mistake", label == F.INTENT_MISTAKE)
        elif claim["k"] == "accuse":
            add(f"accusations_{role}")
            add(f"accusations_right_{role}", m.roles.get(claim["who"]) == F.IMPOSTER)
            add(f"accusations_grounded_{role}", bool(r.get("grounded")))
            add(f"accusations_ungrounded_{role}", not r.get("grounded"))
    c["meetings_imposter_facts"] = len(imposter_facts)
    c["meetings_imposter_lied"] = sum(imposter_facts.values())
    # votes per meeting, by crewmates
    meeting, votes = 0, {}
    for e in m.events:
        if e[F.TYPE] == F.EV_MEETING_START:
            meeting += 1
        elif e[F.TYPE] == F.EV_VOTE and m.roles.get(e["voter"]) == F.CREWMATE:
            votes.setdefault(meeting, []).append(e["target"])
    for n, who in liars.items():
        cast = votes.get(n, [])
        c["liars"] = c.get("liars", 0) + len(who)
        c["liars_voted"] = c.get("liars_voted", 0) + sum(1 for w in who if w in cast)
        c["votes_on_liars"] = c.get("votes_on_liars", 0) + sum(1 for t in cast if t in who)
    c["crew_votes"] = sum(1 for n in liars for t in votes.get(n, []) if t != F.SKIP)
    # render -> parse: every utterance's claims are read back from its text
    names = list(m.roles)
    places = _places(m)
    for e in m.events:
        if e[F.TYPE] == F.EV_UTTERANCE and e.get(F.CLAIMS) and places:
            add("utterances_with_claims")
            add("parsed_back", parse(e[F.UTTERANCE_TEXT], names, places, e[F.SPEAKER]) == e[F.CLAIMS])
    return c


def _places(m: MatchClaims) -> list[str]:
    lines = read_lines(m.path)
    return list(lines[0][F.SIGHT_PLACE_NAMES]) if lines else []


# -- aggregation ---------------------------------------------------------------------------------------------------
def estimate(ms: list[MatchClaims], num: str, den: str, resamples: int, seed: int) -> dict[str, Any]:
    import numpy as np

    from mau.stats import bootstrap_indices, percentile_interval

    a = np.asarray([m.counts.get(num, 0) for m in ms], float)
    b = np.asarray([m.counts.get(den, 0) for m in ms], float)
    if b.sum() == 0:
        return {"value": None, "ci_low": None, "ci_high": None, "n": 0}
    idx = bootstrap_indices(len(a), resamples, seed)
    ns, ds = a[idx].sum(axis=1), b[idx].sum(axis=1)
    ok = ds > 0
    lo, hi = percentile_interval(ns[ok] / ds[ok])
    return {"value": float(a.sum() / b.sum()), "ci_low": lo, "ci_high": hi, "n": int(b.sum())}


def table(ms: list[MatchClaims], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Every ratio with its interval, and the totals of every counter."""
    totals: dict[str, float] = {}
    for m in ms:
        for k, v in m.counts.items():
            totals[k] = totals.get(k, 0) + v
    return {"matches": len(ms),
            "metrics": {k: estimate(ms, a, b, resamples, seed) for k, (a, b) in all_ratios().items()},
            "counts": {k: int(v) for k, v in sorted(totals.items())}}


def verdict_counts(ms: list[MatchClaims]) -> dict[str, dict[str, int]]:
    """{role: {TRUE: n, ..., stances: n}} over every claim."""
    out = {r: {TRUE: 0, FALSE: 0, UNSUPPORTED: 0, UNVERIFIABLE: 0, "stances": 0} for r in ROLES}
    for m in ms:
        for r in m.records:
            role = m.roles.get(r[F.SPEAKER])
            if role in out:
                out[role]["stances" if r["kind"] == "stance" else r["verdict"]] += 1
    return out


def evaluate(ms: list[MatchClaims], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The report's numbers: pooled, by imposter model and by crewmate model (or eval arm), plus the checks."""
    def by(key: str) -> dict[str, Any]:
        keys = sorted({m.groups[key] for m in ms})
        return {k: table([m for m in ms if m.groups[key] == k], resamples, seed) for k in keys}

    pooled = table(ms, resamples, seed)
    checks = pooled["counts"]
    check_s = sorted(m.check_s for m in ms)
    sizes = sorted(m.sights_bytes for m in ms if m.sights_bytes)
    identical = [m.identical for m in ms if m.identical is not None]
    return {
        "matches": len(ms), "verdicts": verdict_counts(ms), "pooled": pooled,
        "by_imposter": by("imposter"), "by_crewmate": by("crewmate"),
        "checks": {
            "parsed_back": [checks.get("parsed_back", 0), checks.get("utterances_with_claims", 0)],
            "unlabelled_facts_true": [checks.get("unlabelled_true", 0), checks.get("unlabelled_facts", 0)],
            "lies_false_or_unsupported": [checks.get("lie_false_or_unsupported", 0), checks.get("lie_facts", 0)],
            "crew_not_true_labelled_mistake": [checks.get("crew_not_true_mistake", 0), checks.get("crew_not_true", 0)],
            "identical_to_match_end": [sum(identical), len(identical)],
            "checker_s_per_match": {"median": _median(check_s), "max": max(check_s, default=None)},
            "sights_bytes_per_match": {"median": _median(sizes), "max": max(sizes, default=None)},
        },
    }


def _median(xs: list[float]) -> float | None:
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
