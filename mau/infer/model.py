"""The likelihood model and the exact posterior over the imposter sets (docs/detection.md, "The model").

With k imposters among the n other players a crewmate has C(n, k) hypotheses H (21 for 2 among 7), so Bayes is
exact: a uniform prior times one factor per evidence item (``mau.infer.evidence``). Parameters are log
likelihood ratios (``Params``; 0 makes a kind of evidence count for nothing):

- ``dead`` / ``ejected``: hard constraints (victims are crewmates; an ejection reveals the role);
- ``saw_kill`` (I saw X kill): factor 1 if X in H, else exp(``saw_kill_error``);
- ``death`` (who was near where the victim fell): the killer is one of the imposters active then, so
  factor(H) = mean over the members k of H that were there of sum_j pi_j exp(near[bin of k at step end j]),
  with pi_j proportional to ``kill_decay``^j over the window's step ends (the kill is most likely soon after
  the victim came to lie there) and near[far or unseen] = 0;
- ``accuse`` (speaker S says T is an imposter, ``strong`` or ``weak``) and ``vote`` (S voted T): a factor by
  the roles H gives S and T, ``<kind>_{ci,ic,ii}`` for crewmate->imposter, imposter->crewmate,
  imposter->imposter (crewmate->crewmate is 0): the speaker's credibility is part of the hypothesis, so an
  accusation by a revealed imposter clears its target;
- ``reported`` / ``called`` (S reported a body / called a meeting): exp(param) if S in H.

The defaults are the maximum-likelihood fit on training seeds (``mau beliefs --fit``; docs/detection.md gives the
command and the run it came from).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from itertools import combinations
from typing import Any

from mau.infer.evidence import ACCUSE, CALLED, DEAD, DEATH, EJECTED, FAR, NEAR_BINS, REPORTED, SAW_KILL, VOTE

ROLE_PAIRS = ("ci", "ic", "ii")


@dataclass
class Params:
    """Log likelihood ratios of the evidence kinds (module docstring); a flat vector for the fit."""

    near_0: float = 5.49  # <= 3 blocks
    near_1: float = 0.04  # <= 6
    near_2: float = -0.88  # <= 12
    kill_decay: float = 0.96  # in (0, 1]: prior weight of the j-th step end of a death's window ~ decay^j
    saw_kill_error: float = -8.0  # log P(I saw X kill | X not an imposter): a misperception
    strong_ci: float = 0.31
    strong_ic: float = 0.7
    strong_ii: float = -4.42
    weak_ci: float = -0.22
    weak_ic: float = 1.2
    weak_ii: float = -1.99
    vote_ci: float = 0.33
    vote_ic: float = 1.32
    vote_ii: float = -0.47
    reported: float = -3.32
    called: float = 0.0

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def vector(self) -> list[float]:
        return [getattr(self, n) for n in self.names()]

    @classmethod
    def from_vector(cls, v: Any) -> Params:
        return cls(**{n: float(x) for n, x in zip(cls.names(), v)})

    @classmethod
    def from_dict(cls, d: dict[str, float] | None) -> Params:
        return cls(**(d or {}))

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 6) for k, v in asdict(self).items()}

    def near(self) -> list[float]:
        return [self.near_0, self.near_1, self.near_2, 0.0]


def hypotheses(others: list[str], k: int) -> list[frozenset[str]]:
    return [frozenset(c) for c in combinations(sorted(others), k)]


def _pair(p: Params, kind: str, s_imp: bool, t_imp: bool) -> float:
    if not s_imp and not t_imp:
        return 0.0
    return getattr(p, f"{kind}_{'i' if s_imp else 'c'}{'i' if t_imp else 'c'}")


def death_lr(bins: list[int], p: Params) -> float:
    """sum_j pi_j exp(near[bin_j]) of one player over a death's window (1 when far or unseen throughout)."""
    if not bins:
        return 1.0
    near, decay = p.near(), min(1.0, max(1e-6, p.kill_decay))
    w = [decay ** j for j in range(len(bins))]
    return sum(wj * math.exp(near[b]) for wj, b in zip(w, bins)) / sum(w)


def log_factor(item: dict[str, Any], h: frozenset[str], p: Params) -> float:
    """log P(item | the imposters are h), up to a term that is the same for every h (-inf: impossible)."""
    k = item["k"]
    if k == DEAD:
        return -math.inf if item["p"] in h else 0.0
    if k == EJECTED:
        return 0.0 if (item["p"] in h) == (item["role"] == "imposter") else -math.inf
    if k == SAW_KILL:
        return 0.0 if item["p"] in h else p.saw_kill_error
    if k == DEATH:
        there = [m for m in h if m in item["bins"]]
        if not there:
            return p.saw_kill_error  # no imposter of h could have done it
        return math.log(sum(death_lr(item["bins"][m], p) for m in there) / len(there))
    if k == ACCUSE:
        return _pair(p, item["s"], item["p"] in h, item["target"] in h)
    if k == VOTE:
        return _pair(p, "vote", item["p"] in h, item["target"] in h)
    if k == REPORTED:
        return p.reported if item["p"] in h else 0.0
    if k == CALLED:
        return p.called if item["p"] in h else 0.0
    raise ValueError(f"unknown evidence kind {k!r}")


def posterior(others: list[str], k: int, items: list[dict[str, Any]],
              p: Params) -> tuple[dict[frozenset[str], float], bool]:
    """(posterior over the k-subsets of ``others``, consistent). Evidence that rules out every hypothesis
    gives the uniform prior and ``consistent`` False."""
    hyps = hypotheses(others, k)
    logw = []
    for h in hyps:
        s = 0.0
        for it in items:
            s += log_factor(it, h, p)
            if s == -math.inf:
                break
        logw.append(s)
    top = max(logw)
    if top == -math.inf:
        return {h: 1.0 / len(hyps) for h in hyps}, False
    w = [math.exp(x - top) for x in logw]
    total = sum(w)
    return {h: x / total for h, x in zip(hyps, w)}, True


def marginals(post: dict[frozenset[str], float], players: list[str]) -> dict[str, float]:
    """P(imposter) of each player: the posterior mass of the hypotheses that contain it."""
    return {n: sum(w for h, w in post.items() if n in h) for n in players}


def beliefs(me: str, roster: list[str], candidates: list[str], k: int, items: list[dict[str, Any]],
            p: Params) -> tuple[dict[str, float], bool]:
    """P(imposter) of each candidate (the players ``me`` believes alive) and consistency."""
    post, ok = posterior([n for n in roster if n != me], k, items, p)
    return {n: round(v, 6) for n, v in marginals(post, candidates).items()}, ok


def knows_nothing(candidates: list[str], k: int) -> dict[str, float]:
    """The reference belief that knows nothing: k/n for each of the n candidates (k living imposters)."""
    n = len(candidates)
    return {c: round(min(1.0, k / n), 6) for c in candidates} if n else {}


NEAR_EDGES = NEAR_BINS
__all__ = ["Params", "posterior", "marginals", "beliefs", "knows_nothing", "log_factor", "hypotheses", "FAR"]
