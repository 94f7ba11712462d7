"""Detection metrics from probe files (``probes.jsonl``) and the truth of each match folder.

Per row (an arm's model probes, the ideal observer, and the knows-nothing reference) x imposter model, over
the matches of the cell: AUROC and Brier score **within each probe** (computed on one probe's candidates, then
averaged over probes: chance is 0.5 whatever the probe), the same two pooled over all (probe, player) pairs
(their chance level is the knows-nothing row's, above 0.5: later probes have fewer candidates and a larger
imposter share), expected calibration error (10 equal-width bins), top-2 hit rate (ties broken at random, as
an expectation), detection rate, time to detection and detection lead; each with a match-level percentile
bootstrap interval (matches resampled with replacement, the metric recomputed on their probes). The
**knows-nothing** row gives every candidate k/n (k living imposters among n candidates) at the ideal
observer's probes. Fallback probes carry no beliefs and are left out of every metric (they are counted in
``probe_fallback_share``), never scored as 0.5. Definitions and which to quote: docs/evaluation.md,
"Detection".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mau import schema as F
from mau.errors import MauError
from mau.eval.baselines import (
    ACCUSED_ROW,
    BASELINE_ROWS,
    LINEAR_BC_ROW,
    LINEAR_ROW,
    NO_SPEECH_ROW,
    PUBLIC_ROW,
    bc_linear_beliefs,
    linear_rows,
    most_accused,
    no_speech,
    public_only,
    vote_prompts,
)
from mau.infer.model import Params, knows_nothing
from mau.matchdir import finished_matches, iter_events, read_header
from mau.stats import Estimate, bootstrap_indices, percentile_interval

# probe sources (probes.jsonl `source`) and the reference
SOURCE_IDEAL, KNOWS_NOTHING = F.PROBE_SOURCE_IDEAL, "knows_nothing"
IDEAL_ROW = "ideal observer"
KNOWS_NOTHING_ROW = "knows nothing (k/n)"
# rows that play nothing (no win rate, no paired test of theirs): the observer, chance, the simple baselines
REFERENCE_ROWS = (IDEAL_ROW, *BASELINE_ROWS, KNOWS_NOTHING_ROW)
# The moments a probe is asked at, as the by-moment table groups them (no figure read at the easiest moment
# alone)
MOMENTS = ("meeting 1, before speech", "meeting 1, before the vote", "meetings 2+, before speech",
           "meetings 2+, before the vote")
# metric -> (title, what n counts, lower is better)
DETECTION_METRICS: dict[str, tuple[str, str, bool]] = {
    "auroc_within": ("AUROC within each probe (chance 0.5), averaged over probes", "probes with both "
                                                                                   "roles", False),
    "brier_within": ("Brier score within each probe, averaged over probes (lower is better)", "probes", True),
    "auroc": ("AUROC pooled over all (probe, player) pairs (chance: the knows-nothing row)", "(probe, "
                                                                                             "player) pairs",
              False),
    "brier": ("Brier score pooled over all (probe, player) pairs (lower is better)", "(probe, player) "
                                                                                     "pairs", True),
    "ece": ("Expected calibration error, 10 bins (lower is better)", "(probe, player) pairs", True),
    "top2_hit_rate": ("Top-2 hit rate (%): probes whose top two hold a true imposter (ties at "
                      "random)", "probes",
                      False),
    "detection_rate": ("Detection rate (%): (crewmate, imposter) pairs detected", "(crewmate, imposter) "
                                                                                  "pairs", False),
    "time_to_detection": ("Time to detection (fraction of the match; detected pairs)", "detected "
                                                                                       "pairs", True),
    "detection_lead": ("Detection lead: time to detection minus ejection time (negative: "
                       "before)", "pairs", True),
    "probe_fallback_share": ("Probe fallback share (%): probes without usable beliefs", "probes asked", True),
}
PERCENT_METRICS = {"top2_hit_rate", "detection_rate", "probe_fallback_share"}
HEADLINE = ("auroc_within", "brier_within", "auroc", "top2_hit_rate", "time_to_detection")


def read_probes(folder: str | Path) -> list[dict[str, Any]]:
    """The probe records of a match folder ([] when it has none); refuses a version it does not know."""
    path = Path(folder) / F.PROBES_FILE
    if not path.is_file():
        return []
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            v = r.get(F.PROBES_VERSION_FIELD)
            if v not in F.PROBES_READABLE_VERSIONS:
                raise MauError(f"{path}:{n}: probe format_version {v!r} is not one of "
                               f"{F.PROBES_READABLE_VERSIONS}; "
                               "read it with the mau version that wrote it")
            out.append(r)
    return out


@dataclass
class MatchBeliefs:
    """One match's probes of one source, reduced to what the metrics need."""

    match_id: str
    row: str
    imposter: str
    seed: int
    p: np.ndarray = field(default_factory=lambda: np.zeros(0))
    y: np.ndarray = field(default_factory=lambda: np.zeros(0))
    probe_auroc: list[float] = field(default_factory=list)  # per probe with both roles among its candidates
    # the moment of each probe_auroc entry (MOMENTS or "")
    probe_moment: list[str] = field(default_factory=list)
    probe_brier: list[float] = field(default_factory=list)  # per probe
    top2_hits: float = 0.0  # expected hits (ties broken at random)
    top2_n: int = 0
    ttd: list[float | None] = field(default_factory=list)  # per (crewmate, imposter): None = censored
    leads: list[float] = field(default_factory=list)
    asked: int = 0
    fallbacks: int = 0
    readouts: tuple[str, ...] = ()  # model probes: how beliefs were read (answer, vote); the observer: ()


def match_group(h: dict[str, Any]) -> tuple[str, str]:
    """(arm, imposter model) of a match, from its header."""
    g = h.get(F.GRID, {})
    arm = h.get(F.ARM) or g.get(F.CREWMATE_MODEL) or "match"
    return str(arm), str(g.get(F.EVAL_IMPOSTER) or g.get(F.IMPOSTER_MODEL) or "-")


def match_beliefs(folder: str | Path, params: Any = None, baselines: bool = True,
                  bc_reader: Any = None) -> dict[str, Any]:
    """{"model": ..., "ideal": ..., "knows_nothing": ..., and the baselines' rows} for a match folder (only
    the sources it has); ``params``: re-score the ideal observer (and its baselines) from its recorded
    evidence with these likelihoods (``mau.eval.rescore``); ``bc_reader``: the linear reader fitted on BC rows
    (``mau.infer.compact_reader.LinearReader``) whose row is read from the VOTE prompts."""
    h = read_header(folder)
    roles = h[F.ROLES]
    ticks = max(1, int(h.get(F.TICKS) or 1))
    arm, imp = match_group(h)
    ejected_at = {e[F.EJECTED]: e[F.TICK] / ticks for e in iter_events(folder)
                  if e[F.TYPE] == F.EV_EJECTION and e.get(F.EJECTED)}
    out: dict[str, MatchBeliefs] = {}
    by_source: dict[str, list[dict[str, Any]]] = {}
    recs = read_probes(folder)
    if params is not None:
        from mau.eval.rescore import rescore

        recs = rescore(recs, roles, params)
    for r in recs:
        by_source.setdefault(r[F.PROBE_SOURCE], []).append(r)
    for source, recs in by_source.items():
        mb = MatchBeliefs(
            h.get(F.MATCH_ID) or Path(folder).name, arm if source == "model" else IDEAL_ROW, imp,
            int(h[F.SEED]),
        )
        mb.asked = len(recs)
        if source == "model":
            mb.readouts = tuple(sorted({r.get(F.PROBE_READOUT) or "answer" for r in recs}))
        ok = [r for r in recs if not r[F.FALLBACK] and r[F.PROBE_BELIEFS] is not None]
        mb.fallbacks = mb.asked - len(ok)
        _score(mb, ok, roles)
        _detections(mb, ok, roles, ticks, ejected_at)
        out[source] = mb
        if source == SOURCE_IDEAL:  # the reference that knows nothing, at the same probes
            # k: the living imposters the beliefs are normalised to (older hand-made records: their sum)
            nothing = [{**r, F.PROBE_BELIEFS: knows_nothing(
                list(r[F.PROBE_BELIEFS]), int(r.get("n_imposters", round(sum(r[F.PROBE_BELIEFS].values()))))),
                "top2_source": "derived"} for r in ok]
            kn = MatchBeliefs(mb.match_id, KNOWS_NOTHING_ROW, imp, mb.seed, asked=len(nothing))
            _score(kn, nothing, roles)
            out[KNOWS_NOTHING] = kn
            ev = [r for r in ok if "evidence" in r]  # records before format 2 hold no evidence: no baselines
            if ev and baselines:
                names, p = list(roles), params or Params()
                out[PUBLIC_ROW] = _derived(mb, PUBLIC_ROW, ev, [public_only(r, names, p) for r in ev], roles)
                out[ACCUSED_ROW] = _derived(mb, ACCUSED_ROW, ev, [most_accused(r) for r in ev], roles)
                out[NO_SPEECH_ROW] = _derived(
                    mb, NO_SPEECH_ROW, ev, [no_speech(r, names, p) for r in ev], roles
                )
                out[_EVIDENCE] = (ev, roles)  # type: ignore[assignment]  # for the linear row (load_run)
            if bc_reader is not None and baselines:
                prompts = vote_prompts(folder)
                at = [(r, prompts[(r[F.AGENT], int(r[F.TICK]))]) for r in ok
                      if (r[F.AGENT], int(r[F.TICK])) in prompts]
                out[LINEAR_BC_ROW] = _derived(mb, LINEAR_BC_ROW, [r for r, _ in at],
                                              [bc_linear_beliefs(bc_reader, r, pr) for r, pr in at], roles)
    return out


_EVIDENCE = "_evidence"


def moment_of(r: dict[str, Any]) -> str:
    """The ``MOMENTS`` group of a probe record ("" for other moments: a round's end, a roam probe)."""
    first = int(r.get("meeting") or 0) <= 1
    mo = r.get(F.PROBE_MOMENT)
    if mo == "meeting_start":
        return MOMENTS[0] if first else MOMENTS[2]
    if mo == "before_vote":
        return MOMENTS[1] if first else MOMENTS[3]
    return ""


def _derived(mb: MatchBeliefs, row: str, recs: list[dict[str, Any]], bel: list[dict[str, float]],
             roles: dict[str, str]) -> MatchBeliefs:
    """A reference row at the ideal observer's probes ``recs`` with beliefs ``bel`` (one per record)."""
    out = MatchBeliefs(mb.match_id, row, mb.imposter, mb.seed, asked=len(recs))
    _score(out, [{**r, F.PROBE_BELIEFS: b, "top2_source": "derived"} for r, b in zip(recs, bel)], roles)
    return out


def _score(mb: MatchBeliefs, recs: list[dict[str, Any]], roles: dict[str, str]) -> None:
    """The pooled arrays, the per-probe AUROC and Brier, and the top-2 hits of usable probe records."""
    ps, ys = [], []
    for r in recs:
        names = list(r[F.PROBE_BELIEFS])
        p = np.asarray([float(r[F.PROBE_BELIEFS][n]) for n in names])
        y = np.asarray([roles.get(n) == F.IMPOSTER for n in names], float)
        ps.append(p)
        ys.append(y)
        if len(p):
            mb.probe_brier.append(float(np.mean((p - y) ** 2)))
            a = auroc(p, y)
            if a is not None:
                mb.probe_auroc.append(a)
                mb.probe_moment.append(moment_of(r))
        if any(roles.get(c) == F.IMPOSTER for c in r[F.PROBE_CANDIDATES]):
            mb.top2_n += 1
            if r.get("top2_source", "answer") != "derived":  # the answer's own top two
                mb.top2_hits += any(roles.get(t) == F.IMPOSTER for t in r[F.PROBE_TOP2] or [])
            else:
                mb.top2_hits += top2_expected_hit(
                    r[F.PROBE_BELIEFS], {n for n in names if roles.get(n) == F.IMPOSTER}
                )
    mb.p = np.concatenate(ps) if ps else np.zeros(0)
    mb.y = np.concatenate(ys) if ys else np.zeros(0)


def top2_expected_hit(beliefs: dict[str, float], imposters: set[str]) -> float:
    """P(the two most suspected hold an imposter) with ties broken uniformly at random."""
    vals = sorted(beliefs.values(), reverse=True)
    if not vals:
        return 0.0
    v2 = vals[min(1, len(vals) - 1)]
    above = [n for n, v in beliefs.items() if v > v2]
    tied = [n for n, v in beliefs.items() if v == v2]
    if any(n in imposters for n in above):
        return 1.0
    need = min(2 - len(above), len(tied))
    crew_tied = len([n for n in tied if n not in imposters])
    if need <= 0:
        return 0.0
    return 1.0 - math.comb(crew_tied, need) / math.comb(len(tied), need)


def _detections(mb: MatchBeliefs, recs: list[dict[str, Any]], roles: dict[str, str], ticks: int,
                ejected_at: dict[str, float]) -> None:
    """Time to detection per (crewmate, imposter): the first probe from which the imposter stays in the
    crewmate's top two at every later probe that asks about it; censored (None) if its last probe misses
    it."""
    imposters = [n for n, r in roles.items() if r == F.IMPOSTER]
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        by_agent.setdefault(r[F.AGENT], []).append(r)
    for rs in by_agent.values():
        rs = sorted(rs, key=lambda r: r[F.PROBE_SEQ])
        for imp in imposters:
            seq = [r for r in rs if imp in r[F.PROBE_CANDIDATES]]
            if not seq:
                continue
            start = None
            for r in seq:
                if imp in (r[F.PROBE_TOP2] or []):
                    start = r if start is None else start
                else:
                    start = None
            if start is None:
                mb.ttd.append(None)
                continue
            t = start[F.TICK] / ticks
            mb.ttd.append(t)
            if imp in ejected_at:
                mb.leads.append(t - ejected_at[imp])


# -- the metrics on pooled probes ----------------------------------------------------------------------------
def auroc(p: np.ndarray, y: np.ndarray) -> float | None:
    """Mann-Whitney AUROC with ties counted half; None without both classes."""
    n1 = float(y.sum())
    n0 = len(y) - n1
    if n1 == 0 or n0 == 0:
        return None
    _, inv, counts = np.unique(p, return_inverse=True, return_counts=True)
    avg = np.cumsum(counts) - (counts - 1) / 2.0  # average 1-based rank of each distinct value
    r = avg[inv]
    return float((r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def brier(p: np.ndarray, y: np.ndarray) -> float | None:
    return float(np.mean((p - y) ** 2)) if len(p) else None


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float | None:
    """Sum over equal-width bins of (bin share) x |mean P - imposter frequency|; P = 1 falls in the last
    bin."""
    if not len(p):
        return None
    b = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for k in range(bins):
        m = b == k
        if m.any():
            total += m.mean() * abs(p[m].mean() - y[m].mean())
    return float(total)


class Weighted:
    """The metrics of a list of matches as sums per match, so that a bootstrap resample (each match counted as
    often as it was drawn: ``w``) is one pass over arrays instead of a rebuilt list (a report of 560 matches
    took
    hours the old way). ``values(ones)`` is the definition of every metric; ``values(w)`` the same on a
    resample."""

    def __init__(self, ms: list[MatchBeliefs]):
        self.m = len(ms)
        lens = [len(x.p) for x in ms]
        self.p = np.concatenate([x.p for x in ms]) if ms else np.zeros(0)
        self.y = np.concatenate([x.y for x in ms]) if ms else np.zeros(0)
        self.of = np.repeat(np.arange(self.m), lens)
        _, self.inv = np.unique(self.p, return_inverse=True)
        self.n_unique = int(self.inv.max()) + 1 if len(self.p) else 0
        self.bins = np.minimum((self.p * ECE_BINS).astype(int), ECE_BINS - 1)

        def per(f: Callable[[MatchBeliefs], float]) -> np.ndarray:
            return np.asarray([float(f(x)) for x in ms])
        self.sums = {
            "auroc_within": (per(lambda x: sum(x.probe_auroc)), per(lambda x: len(x.probe_auroc))),
            "brier_within": (per(lambda x: sum(x.probe_brier)), per(lambda x: len(x.probe_brier))),
            "top2_hit_rate": (per(lambda x: x.top2_hits), per(lambda x: x.top2_n)),
            "detection_rate": (per(lambda x: sum(t is not None for t in x.ttd)), per(lambda x: len(x.ttd))),
            "time_to_detection": (
                per(lambda x: sum(t for t in x.ttd if t is not None)),
                per(lambda x: sum(t is not None for t in x.ttd)),
            ),
            "detection_lead": (per(lambda x: sum(x.leads)), per(lambda x: len(x.leads))),
            "probe_fallback_share": (per(lambda x: x.fallbacks), per(lambda x: x.asked)),
        }
        for mo in MOMENTS:
            self.sums[mo] = (
                per(lambda x, mo=mo: sum(a for a, t in zip(x.probe_auroc, x.probe_moment) if t == mo)),
                per(lambda x, mo=mo: sum(t == mo for t in x.probe_moment)),
            )
        self.n = {k: int(c.sum()) for k, (_, c) in self.sums.items()}
        self.n.update(auroc=len(self.p), brier=len(self.p), ece=len(self.p))
        self._per: dict[str, np.ndarray] | None = None

    def values(self, w: np.ndarray | None = None, only: str | None = None) -> dict[str, float | None]:
        """Every metric at match weights ``w`` (None: each match once); ``only``: that metric alone (the same
        arithmetic; a paired bootstrap needs one metric thousands of times)."""
        w = np.ones(self.m) if w is None else w
        out: dict[str, float | None] = {}
        for k, (num, den) in self.sums.items():
            if only is not None and k != only:
                continue
            d = float(w @ den)
            out[k] = float(w @ num) / d if d else None
        if only is not None and only in self.sums:
            return out
        we = w[self.of]
        total = float(we.sum())
        if not total:
            return {**out, "auroc": None, "brier": None, "ece": None}
        if only == "brier":
            return {"brier": float(we @ (self.p - self.y) ** 2) / total}
        pos = np.bincount(self.inv, weights=we * self.y, minlength=self.n_unique)
        neg = np.bincount(self.inv, weights=we * (1 - self.y), minlength=self.n_unique)
        wp, wn = float(pos.sum()), float(neg.sum())
        # Mann-Whitney with ties counted half, each element weighted by its match's count
        out["auroc"] = float(pos @ (np.cumsum(neg) - neg + 0.5 * neg)) / (wp * wn) if wp and wn else None
        if only == "auroc":
            return out
        out["brier"] = float(we @ (self.p - self.y) ** 2) / total
        wb = np.bincount(self.bins, weights=we, minlength=ECE_BINS)
        pb = np.bincount(self.bins, weights=we * self.p, minlength=ECE_BINS)
        yb = np.bincount(self.bins, weights=we * self.y, minlength=ECE_BINS)
        ok = wb > 0
        out["ece"] = float(np.sum(wb[ok] / total * np.abs(pb[ok] / wb[ok] - yb[ok] / wb[ok])))
        return out

    def resampled(self, idx: np.ndarray, only: str | None = None) -> dict[str, np.ndarray]:
        """``values`` of every resample of a (resamples, m) index array, as one array per metric (NaN where
        ``values`` gives None), computed for all resamples at once (``values_many``)."""
        return self.values_many(_weights(idx, self.m), only)

    def values_many(self, w: np.ndarray, only: str | None = None,
                    chunk: int = 256) -> dict[str, np.ndarray]:
        """``values`` at each row of a (resamples, m) weight matrix, with matrix products instead of a loop
        over resamples (the bootstrap of one cell was most of a report's time). Equal to ``values`` row by
        row (tests/test_detection.py). The pooled AUROC is a quadratic form: with ``pair[a, b]`` the pairs
        (an imposter's probability in match a, a crewmate's in match b) ranked right (ties half), its
        numerator at weights w is w @ pair @ w."""
        out: dict[str, np.ndarray] = {}
        for k, (num, den) in self.sums.items():
            if only is None or k == only:
                out[k] = _ratio(w @ num, w @ den)
        if only is not None and only in self.sums:
            return out
        per = self._per_match()
        total = w @ per["n"]
        if only in (None, "auroc"):
            if self.m > PAIR_MATRIX_MAX_MATCHES:  # the (m, m) matrix would cost more than the loop
                out["auroc"] = np.asarray([np.nan if (v := self.values(row, "auroc")["auroc"]) is None else v
                                           for row in w])
            else:
                wp, wn = w @ per["pos"], w @ per["neg"]
                pairs = np.concatenate([np.einsum("ij,ij->i", w[i:i + chunk] @ per["pair"], w[i:i + chunk])
                                        for i in range(0, len(w), chunk)]) if len(w) else np.zeros(0)
                out["auroc"] = _ratio(pairs, wp * wn)
            if only == "auroc":
                return out
        out["brier"] = _ratio(w @ per["sq"], total)
        if only == "brier":
            return out
        wb, pb, yb = w @ per["bin_n"], w @ per["bin_p"], w @ per["bin_y"]
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.where(wb > 0, wb * np.abs(pb / wb - yb / wb), 0.0)
        out["ece"] = _ratio(gap.sum(axis=1), total)
        return out

    def _per_match(self) -> dict[str, np.ndarray]:
        """Per-match sums of the probe-level metrics (computed once)."""
        if self._per is not None:
            return self._per
        m, of, y = self.m, self.of, self.y
        per = {"n": np.bincount(of, minlength=m).astype(float),
               "pos": np.bincount(of, weights=y, minlength=m),
               "neg": np.bincount(of, weights=1 - y, minlength=m),
               "sq": np.bincount(of, weights=(self.p - self.y) ** 2, minlength=m)}
        for name, wt in (("bin_n", None), ("bin_p", self.p), ("bin_y", y)):
            a = np.zeros((m, ECE_BINS))
            np.add.at(a, (of, self.bins), 1.0 if wt is None else wt)
            per[name] = a
        per["pair"] = pair = np.zeros((m, m) if m <= PAIR_MATRIX_MAX_MATCHES else (0, 0))
        if m > PAIR_MATRIX_MAX_MATCHES:
            self._per = per
            return per
        pos = y > 0.5
        pos_p, pos_of = self.p[pos], of[pos]
        for b in range(m):
            negs = np.sort(self.p[(of == b) & ~pos])
            if len(negs) and len(pos_p):
                lo, hi = np.searchsorted(negs, pos_p, "left"), np.searchsorted(negs, pos_p, "right")
                pair[:, b] = np.bincount(pos_of, weights=lo + 0.5 * (hi - lo), minlength=m)
        self._per = per
        return per


ECE_BINS = 10
# Above this many matches a cell's pooled AUROC is bootstrapped one resample at a time (its pair matrix is
# m x m).
PAIR_MATRIX_MAX_MATCHES = 2500


def _weights(idx: np.ndarray, m: int) -> np.ndarray:
    """A (resamples, m) index array as match weights: how often each match was drawn."""
    idx = np.asarray(idx, dtype=int).reshape(len(idx), -1)
    w = np.zeros((len(idx), m))
    np.add.at(w, (np.repeat(np.arange(len(idx)), idx.shape[1]), idx.ravel()), 1.0)
    return w


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 (``values``' None)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), np.nan)


def _interval(boot: np.ndarray) -> tuple[float | None, float | None]:
    """The percentile interval of the defined resamples."""
    return percentile_interval(np.asarray(boot[~np.isnan(boot)], float))


def _values(ms: list[MatchBeliefs], only: str | None = None) -> dict[str, tuple[float | None, int]]:
    """Every metric (or ``only`` one) on the pooled probes of ``ms``, with its n."""
    wd = Weighted(ms)
    vals = wd.values()
    return {k: (vals[k], wd.n[k]) for k in ([only] if only else DETECTION_METRICS)}


def cell(ms: list[MatchBeliefs], resamples: int = 2000, seed: int = 0) -> dict[str, Estimate]:
    """Every metric of a cell with its match-level bootstrap interval (undefined values get none)."""
    wd = Weighted(ms)
    vals = wd.values()
    boot = wd.resampled(bootstrap_indices(len(ms), resamples, seed)) if ms else {}
    out = {}
    for k in DETECTION_METRICS:
        lo, hi = (None, None) if vals[k] is None else _interval(boot[k])
        out[k] = Estimate(vals[k], lo, hi, wd.n[k], "bootstrap")
    return out


def paired_diff(a: dict[Any, MatchBeliefs], b: dict[Any, MatchBeliefs], metric: str, resamples: int = 2000,
                seed: int = 0) -> dict[str, Any]:
    """metric(a) - metric(b) over the keys both have (same seed and imposter model, or the same match), with a
    paired bootstrap over the keys."""
    keys = sorted(set(a) & set(b), key=str)
    wa, wb = Weighted([a[k] for k in keys]), Weighted([b[k] for k in keys])

    def diff(w: np.ndarray | None) -> float | None:
        va, vb = wa.values(w, metric)[metric], wb.values(w, metric)[metric]
        return None if va is None or vb is None else va - vb

    d = diff(None) if keys else None
    lo = hi = None
    if d is not None:
        w = _weights(bootstrap_indices(len(keys), resamples, seed), len(keys))
        lo, hi = _interval(wa.values_many(w, metric)[metric] - wb.values_many(w, metric)[metric])
    return {"metric": metric, "n_pairs": len(keys), "diff": d, "ci_low": lo, "ci_high": hi,
            "method": "paired_bootstrap"}


def load_run(run: str | Path, params: Any = None, baselines: bool = True,
             bc_reader: Any = None) -> list[MatchBeliefs]:
    """Every source of every finished match of a run folder (or of one match folder) and the baselines' rows
    (``mau.eval.baselines``; the linear one fitted two-fold by seed over the run's matches); ``params``,
    ``bc_reader``: see ``match_beliefs``."""
    out: list[MatchBeliefs] = []
    evidence: dict[str, tuple[list[dict[str, Any]], dict[str, str]]] = {}
    ideal: dict[str, MatchBeliefs] = {}
    for f in finished_matches(run):
        got = match_beliefs(f, params, baselines, bc_reader)
        if _EVIDENCE in got:
            ideal[got[SOURCE_IDEAL].match_id] = got[SOURCE_IDEAL]
            evidence[got[SOURCE_IDEAL].match_id] = got.pop(_EVIDENCE)
        out += list(got.values())
    seeds = {mid: m.seed for mid, m in ideal.items()}
    for mid, bel in linear_rows(evidence, seeds).items():
        out.append(_derived(ideal[mid], LINEAR_ROW, evidence[mid][0], bel, evidence[mid][1]))
    return out


def by_moment(
    ms: list[MatchBeliefs], rows: list[str], resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """Within-probe AUROC of each row at each of ``MOMENTS`` (pooled over imposter models), with its
    match-level bootstrap interval and n (probes with both roles)."""
    out: dict[str, Any] = {}
    for row in rows:
        mine = [m for m in ms if m.row == row]
        wd = Weighted(mine)
        vals = wd.values()
        boot = wd.resampled(bootstrap_indices(len(mine), resamples, seed)) if mine else {}
        out[row] = {}
        for mo in MOMENTS:
            lo, hi = (None, None) if vals[mo] is None else _interval(boot[mo])
            out[row][mo] = Estimate(vals[mo], lo, hi, wd.n[mo], "bootstrap").to_dict()
    return out


def evaluate(ms: list[MatchBeliefs], baseline: str | None = None, resamples: int = 2000,
             seed: int = 0, pooled: str = "all", rows: list[str] | None = None,
             imposters: list[str] | None = None) -> dict[str, Any]:
    """Cells per row x imposter model (plus pooled when several), the ideal observer last; paired comparisons
    of each row with the baseline (pairs: imposter model and seed) and with the ideal observer (pairs:
    matches). ``rows`` / ``imposters``: their order (default: sorted, as found)."""
    found = {m.row for m in ms if m.row not in REFERENCE_ROWS}
    order = [r for r in (rows or sorted(found)) if r not in REFERENCE_ROWS]
    rows = order + [r for r in sorted(found) if r not in order]
    rows += [r for r in REFERENCE_ROWS if any(m.row == r for m in ms)]
    imps = list(imposters) if imposters else sorted({m.imposter for m in ms})
    columns = imps + ([pooled] if len(imps) > 1 else [])

    def of(row: str, imp: str) -> list[MatchBeliefs]:
        return [m for m in ms if m.row == row and (imp == pooled or m.imposter == imp)]

    cells = [{"row": r, F.IMPOSTER_COLUMN: i, "matches": len(of(r, i)),
              "metrics": {k: e.to_dict() for k, e in cell(of(r, i), resamples, seed).items()}}
             for r in rows for i in columns]
    paired: list[dict[str, Any]] = []
    models = [r for r in rows if r not in REFERENCE_ROWS]
    base = baseline if baseline in models else (models[0] if models else None)
    ideal_by_match = {m.match_id: m for m in ms if m.row == IDEAL_ROW}
    # the simple readers a learned row must beat, at the same matches (their probes: the same crewmates and
    # moments): the within-probe AUROC only
    readers = {row: {m.match_id: m for m in ms if m.row == row} for row in (LINEAR_ROW, LINEAR_BC_ROW)}
    for r in models:
        for i in columns:
            mine = {(m.imposter, m.seed): m for m in of(r, i)}
            if r != base and base is not None:
                theirs = {(m.imposter, m.seed): m for m in of(base, i)}
                for k in HEADLINE:
                    paired.append({"row": r, "versus": base, F.IMPOSTER_COLUMN: i,
                                   **paired_diff(mine, theirs, k, resamples, seed)})
            same = {m.match_id: m for m in of(r, i)}
            for k in HEADLINE:
                paired.append({"row": r, "versus": IDEAL_ROW, F.IMPOSTER_COLUMN: i,
                               **paired_diff(same, ideal_by_match, k, resamples, seed)})
            for ref, theirs in readers.items():
                if theirs:
                    paired.append({"row": r, "versus": ref, F.IMPOSTER_COLUMN: i,
                                   **paired_diff(same, theirs, "auroc_within", resamples, seed)})
    readouts = {r: sorted({x for m in ms if m.row == r for x in m.readouts}) for r in rows
                if r not in REFERENCE_ROWS}
    return {"rows": rows, "columns": columns, "baseline": base, "cells": cells, "paired": paired,
            "readouts": readouts, "by_moment": by_moment(ms, rows, resamples, seed),
            "matches": len({m.match_id for m in ms}), "bootstrap": {"resamples": resamples, "seed": seed}}


def probe_cost(folders: list[Path]) -> dict[str, float]:
    """Probe calls and tokens per match, from the match headers (collect and eval print it)."""
    n = probes = fb = tokens = 0
    for f in folders:
        pr = read_header(f).get(F.HEADER_PROBES) or {}
        n += 1
        probes += pr.get("model_probes", 0)
        fb += pr.get("fallbacks", 0)
        tokens += pr.get("prompt_tokens", 0) + pr.get("completion_tokens", 0)
    return {"matches": n, "probes": probes, "fallbacks": fb, "tokens": tokens,
            "probes_per_match": probes / n if n else 0.0}

