"""The likelihood model and the exact posterior over the imposter sets (docs/detection.md, "The model").

With k imposters among the n other players a crewmate has C(n, k) hypotheses H (21 for 2 among 7), so Bayes is
exact: a uniform prior times one factor per evidence item (``mau.infer.evidence``). Parameters are log
likelihood ratios (``Params``; 0 makes a kind of evidence count for nothing):

- ``dead`` / ``ejected``: hard constraints (victims are crewmates; an ejection reveals the role);
- ``saw_kill`` (I saw X kill): factor 1 if X in H, else exp(``saw_kill_error``);
- ``death`` (who was near where the victim fell): the killer is one of the imposters active then, so
  factor(H) = mean over the members k of H that were there of sum_j pi_j exp(near[bin of k at step end j]),
  with pi_j proportional to ``kill_decay``^j over the window's step ends (the kill is most likely soon after
  the victim came to lie there; uniform when I was never shown it lying, as in ego state) and near[far or
  unseen] = 0;
- ``accuse`` (speaker S says T is an imposter, ``strong`` or ``weak``) and ``vote`` (S voted T): a factor by
  the roles H gives S and T, ``<kind>_{ci,ic,ii}`` for crewmate->imposter, imposter->crewmate,
  imposter->imposter (crewmate->crewmate is 0): the speaker's credibility is part of the hypothesis, so an
  accusation by a revealed imposter clears its target;
- ``reported`` / ``called`` (S reported a body / called a meeting): exp(param) if S in H;
- ``contradicted`` (S placed a player where I saw it was not; claims on): factor 1 if S in H, else
  exp(``contradicted``);
- ``conflict`` (S and T placed the same player in different places at once): factor 1 if S or T in H, else
  exp(``conflict``);
- ``skipped`` (S withheld its vote at a meeting) and ``alibi`` (I saw S during a death window, only away from
  where the victim lay): exp(param) if S in H (issue 43's evidence a planner cannot cheaply steer).

The defaults are the maximum-likelihood fit on training seeds (``mau beliefs --fit``; docs/detection.md gives
the command and the run it came from).
"""

from __future__ import annotations

import math
import operator
import random
from functools import reduce
from itertools import combinations
from typing import Any, Callable, Literal

from pydantic import Field, model_validator

from mau.config import Model
from mau.infer import evidence as E
from mau.infer.linear import Linear
from mau.infer.normalise import normalised
from mau.schema import IMPOSTER

ROLE_PAIRS = ("ci", "ic", "ii")


class Params(Model):
    """Log likelihood ratios of the evidence kinds (module docstring); 0 makes a kind count for nothing.
    The defaults are the maximum-likelihood fit of docs/detection.md ("The fit")."""

    near_0: float = Field(1.923, description="A death's window: the killer's log LR of standing <= 3 blocks "
                                            "(kill reach) from where the victim lay, at one step end.")
    near_1: float = Field(-0.094, description="... of standing 3-6 blocks from it.")
    near_2: float = Field(-0.293, description="... of standing 6-12 blocks from it (farther or unseen: 0).")
    kill_decay: float = Field(0.02, gt=0, le=1, description="Prior weight of the j-th step end of a death's "
                                                              "window as the one just after the kill: "
                                                              "decay^j.")
    saw_kill_error: float = Field(-8.0, description="log P(I saw X kill | X is not an imposter): a "
                                                    "misperception (held fixed by the fit).")
    strong_ci: float = Field(2.343, description="A strong accusation (says it saw the kill or the player by "
                                               "the victim) by a crewmate of an imposter (log, relative to "
                                               "crewmate of crewmate = 0).")
    strong_ic: float = Field(2.669, description="... by an imposter of a crewmate.")
    strong_ii: float = Field(-0.501, description="... by an imposter of an imposter.")
    weak_ci: float = Field(0.089, description="A weak accusation ('I suspect X') by a crewmate of an "
                                              "imposter.")
    weak_ic: float = Field(1.024, description="... by an imposter of a crewmate.")
    weak_ii: float = Field(-0.181, description="... by an imposter of an imposter.")
    vote_ci: float = Field(-0.29, description="A public vote by a crewmate for an imposter.")
    vote_ic: float = Field(1.696, description="... by an imposter for a crewmate.")
    vote_ii: float = Field(1.273, description="... by an imposter for an imposter.")
    reported: float = Field(-1.031, description="Reporting a body: log LR imposter : crewmate of the "
                                                "reporter.")
    called: float = Field(-2.632, description="Calling an emergency meeting: log LR imposter : crewmate of "
                                              "the caller.")
    contradicted: float = Field(-4.328, description="A claim of S that my own sightings contradict: log "
                                                    "P(that | S is a crewmate) - log P(that | S is an "
                                                    "imposter) (claims on; fitted on "
                                                    "configs/collect/claims.yaml, docs/claims.md).")
    conflict: float = Field(-0.788, description="Two speakers' claims that cannot both hold: log P(that | "
                                                "both are crewmates) - log P(that | one is an imposter) "
                                                "(claims on).")
    skipped: float = Field(0.0, description="A vote withheld (skip) in a meeting: log LR imposter : crewmate "
                                            "of the voter (issue 43: who gains from a meeting that ejects "
                                            "nobody; 0 in the issue-29 fit, which had no such kind).")
    alibi: float = Field(0.0, description="A death window in which I saw the player only farther than 12 "
                                          "blocks from where the victim lay: log LR imposter : crewmate (its "
                                          "time accounted for; 0 in the issue-29 fit).")

    @classmethod
    def names(cls) -> list[str]:
        return list(cls.model_fields)

    @classmethod
    def ratios(cls) -> list[str]:
        """The log likelihood ratios (``kill_decay`` is a weight, not one)."""
        return [n for n in cls.names() if n != "kill_decay"]

    @classmethod
    def expand(cls, spec: str, flag: str) -> list[str]:
        """Comma-separated log likelihood ratios or groups (``GROUPS``: speech, positions, claims,
        unsteerable) as names; an unknown one is a one-line error naming ``flag``."""
        out: list[str] = []
        for word in (w.strip() for w in spec.split(",")):
            if not word:
                continue
            names = GROUPS.get(word, [word])
            bad = [n for n in names if n not in cls.ratios()]
            if bad:
                raise ValueError(f"{flag} {word}: not a log likelihood ratio of the model nor a group "
                                 f"({', '.join(GROUPS)}; ratios: {', '.join(cls.ratios())})")
            out += [n for n in names if n not in out]
        return out

    def vector(self) -> list[float]:
        return [getattr(self, n) for n in self.names()]

    @classmethod
    def from_vector(cls, v: Any) -> Params:
        return cls(**{n: float(x) for n, x in zip(cls.names(), v)})

    @classmethod
    def from_dict(cls, d: dict[str, float] | None) -> Params:
        return cls(**(d or {}))

    def to_dict(self) -> dict[str, float]:
        return {k: round(float(v), 6) for k, v in self.model_dump().items()}

    def near(self) -> list[float]:
        return [self.near_0, self.near_1, self.near_2, 0.0]


# Named groups of ratios for --without / --ablate: what a crewmate makes of what others say (accusations and
# votes, weighed by the speaker's credibility), of where players stood near each death, and of claims.
GROUPS: dict[str, list[str]] = {
    "speech": [f"{kind}_{pair}" for kind in ("strong", "weak", "vote") for pair in ROLE_PAIRS],
    "positions": ["near_0", "near_1", "near_2"], "claims": ["contradicted", "conflict"],
    "unsteerable": ["skipped", "alibi"],  # issue 43: what a planner cannot cheaply steer
}


class Mixture(Model):
    """Hypotheses over the imposters' kind (issue 43; docs/detection.md, "A teacher that expects planners"):
    each kind of imposter (``habit``: the ladder's scripted habits; ``planner_<k>``: the adversary that
    planned against the detector of arms-race round k) has its own likelihoods, and the evidence's probability
    under a hypothesis H of who the imposters are is the prior-weighted sum over kinds: P(e | H) = sum_kind
    P(kind) P(e | H, kind). The posterior over H stays exact (C(n, k) x kinds terms). Every kind's factors are
    ratios against the same crewmate-crewmate reference (an accusation between two crewmates counts 0 in
    every kind): crewmates behave alike whoever the imposters are, so the kinds' likelihoods compare."""

    kinds: dict[str, Params] = Field(description="Each kind's likelihoods (a Params per kind).")
    prior: dict[str, float] = Field(description="P(kind), summing to 1, over the same names as kinds.")

    @model_validator(mode="after")
    def _same_names(self) -> Mixture:
        if not self.kinds or set(self.kinds) != set(self.prior):
            raise ValueError(f"mixture: kinds {sorted(self.kinds)} and prior {sorted(self.prior)} must name "
                             "the same kinds (at least one)")
        if any(v <= 0 for v in self.prior.values()) or abs(sum(self.prior.values()) - 1.0) > 1e-6:
            raise ValueError(f"mixture prior {self.prior}: each P(kind) > 0 and they sum to 1")
        return self

    def components(self) -> list[tuple[float, Params]]:
        """(log P(kind), its likelihoods) per kind, in name order."""
        return [(math.log(self.prior[n]), self.kinds[n]) for n in sorted(self.kinds)]

    def to_dict(self) -> dict[str, Any]:
        """As observer_fit.json version 2 holds it: each kind's log likelihood ratios and the prior."""
        return {"kinds": {n: p.to_dict() for n, p in self.kinds.items()}, "prior": dict(self.prior)}


# The least P(fact | the rest) a pool member is charged for a revealed fact (``Pool.learn``): one fact it
# called impossible costs it a factor of 1,000, not all its say.
FACT_FLOOR = 1e-3


class Pool(Model):
    """A pool of detectors (issue 43; docs/detection.md, "A pool of detectors"): each member (a likelihood
    model, a mixture or a linear detector) reads the same evidence into its own exact posterior over the
    imposter sets, and the pool's is their weighted mean (``rule: linear``, the linear opinion pool: a hedge
    between a detector that reads habits well and one a planner cannot invert) or their weighted geometric
    mean, renormalised (``rule: log``). No member's posterior says how likely the evidence is under the
    others', so with ``learn`` off the weights are fixed and the pool does not learn which kind of imposter it
    faces; with ``learn`` on, each member's weight is multiplied by how well it foretold each revealed fact
    (a death: the victim was a crewmate; an ejection: the role it revealed) from the rest of the evidence, its
    P(fact | every other item), floored at ``FACT_FLOOR``: a member a planner has turned upside down loses its
    say as the match reveals who was who. The hard facts rule out the same hypotheses in every member.
    ``rule: draw`` is a mixed strategy: each scripted seat that reasons with the pool draws one member at the
    start of its match, with P(member) its weight (``drawn``), and reasons with it alone; every reader of the
    pool's own posterior (the adversary planning against it, ``mau beliefs --params``) reads the expectation
    of the drawn member's posterior, which is the weighted mean, so a planner that knows the pool but not the
    draw minimises the expected belief of the seat it faces."""

    members: dict[str, Params | Mixture | Linear] = Field(description="Each member detector by name.")
    weights: dict[str, float] = Field(description="Each member's weight (> 0, summing to 1), same names.")
    rule: Literal["linear", "log", "draw"] = Field(
        "linear", description="linear: the weighted mean of the members' posteriors; log: their weighted "
                              "geometric mean, renormalised; draw: each seat reasons with one member drawn "
                              "by the weights (its expectation, the weighted mean, for every other reader).")
    learn: bool = Field(False, description="Each member's weight times its P(fact | the rest) of each "
                                           "revealed fact (deaths, ejected roles); off: the weights given.")

    @model_validator(mode="after")
    def _same_names(self) -> Pool:
        if not self.members or set(self.members) != set(self.weights):
            raise ValueError(f"pool: members {sorted(self.members)} and weights {sorted(self.weights)} must "
                             "name the same detectors (at least one)")
        if any(v <= 0 for v in self.weights.values()) or abs(sum(self.weights.values()) - 1.0) > 1e-6:
            raise ValueError(f"pool weights {self.weights}: each > 0 and they sum to 1")
        if self.learn and self.rule == "draw":
            raise ValueError("pool: learn needs every member's posterior, a drawn seat has one; set learn "
                             "false or rule linear")
        return self

    def to_dict(self) -> dict[str, Any]:
        """Each member's own dict, the weights and the rule (a report's record; the file names paths)."""
        return {"members": {n: m.to_dict() for n, m in self.members.items()}, "weights": dict(self.weights),
                "rule": self.rule, "learn": self.learn}

    def pooled(self, items: list[dict[str, Any]], read: Callable[[Detector, list[dict[str, Any]]], Any]
               ) -> tuple[dict[frozenset[str], float], bool]:
        """The pool's (posterior, consistent) of ``items``; ``read(member, items)``: a member's (posterior,
        consistent) over the reader's hypotheses (``posterior``, or a reader's ``PosteriorMemo``)."""
        posts = {n: read(m, items) for n, m in self.members.items()}
        return self.combine(posts, self.learned(items, read) if self.learn else self.weights)

    def learned(self, items: list[dict[str, Any]], read: Callable[[Detector, list[dict[str, Any]]], Any]
                ) -> dict[str, float]:
        """Each member's weight times its P(fact | every other item) of each revealed fact, renormalised."""
        logw = {n: math.log(w) for n, w in self.weights.items()}
        for j, it in enumerate(items):
            if it["k"] not in (E.DEAD, E.EJECTED):
                continue
            rest = items[:j] + items[j + 1:]
            guilty = it["k"] == E.EJECTED and it["role"] == IMPOSTER
            for n, m in self.members.items():
                post, _ = read(m, rest)
                p_in = sum(w for h, w in post.items() if it["p"] in h)
                logw[n] += math.log(max(FACT_FLOOR, min(1.0, p_in if guilty else 1.0 - p_in)))
        top = max(logw.values())
        total = sum(math.exp(v - top) for v in logw.values())
        return {n: math.exp(v - top) / total for n, v in logw.items()}

    def combine(self, posts: dict[str, tuple[dict[frozenset[str], float], bool]],
                weights: dict[str, float]) -> tuple[dict[frozenset[str], float], bool]:
        """The pool's posterior from each member's (posterior, consistent), all over the same hypotheses."""
        names = sorted(self.members)
        hyps = list(posts[names[0]][0])
        ok = any(posts[n][1] for n in names)
        if self.rule in ("linear", "draw"):  # draw: the expectation of the drawn member's posterior
            return {h: sum(weights[n] * posts[n][0][h] for n in names) for h in hyps}, ok
        logw = [sum(weights[n] * (math.log(posts[n][0][h]) if posts[n][0][h] > 0 else -math.inf)
                    for n in names) for h in hyps]
        w, consistent = normalised(logw)
        return dict(zip(hyps, w)), ok and consistent


# What a crewmate reasons with: one kind of imposter, a mixture of kinds, the linear detector
# (``mau.infer.linear``: a logistic reader of per-player counts inside the same exact posterior), or a pool
# of those.
Detector = Params | Mixture | Linear | Pool


def drawn(p: Detector, rng: random.Random) -> Detector:
    """The detector one seat reasons with: a member of a ``rule: draw`` pool drawn by its weights (one draw
    of ``rng``), else ``p`` itself."""
    if not isinstance(p, Pool) or p.rule != "draw":
        return p
    names = sorted(p.members)
    return p.members[rng.choices(names, weights=[p.weights[n] for n in names])[0]]


def zeroed(p: Detector, names: list[str]) -> Detector:
    """The same detector with the log likelihood ratios ``names`` at 0 in every kind (those kinds of evidence
    count for nothing): ablations and the baselines' "no speech"."""
    if isinstance(p, Linear):
        return p.zeroed(names)
    if isinstance(p, Pool):
        return Pool(members={n: zeroed(m, names) for n, m in p.members.items()}, weights=dict(p.weights),
                    rule=p.rule)
    if isinstance(p, Mixture):
        return Mixture(kinds={n: zeroed(k, names) for n, k in p.kinds.items()}, prior=dict(p.prior))
    return Params.from_dict({**p.to_dict(), **dict.fromkeys(names, 0.0)})


def weighs(p: Detector, name: str) -> bool:
    """Whether any kind of the detector weighs the ratio ``name`` (not 0)."""
    if isinstance(p, Linear):
        return p.weighs(name)
    if isinstance(p, Pool):
        return any(weighs(m, name) for m in p.members.values())
    return any(getattr(k, name) != 0.0 for _, k in components(p))


def components(p: Detector) -> list[tuple[float, Params]]:
    """(log prior, likelihoods) of each kind a detector weighs: one kind (log prior 0) for a ``Params``."""
    if isinstance(p, (Linear, Pool)):
        raise TypeError(f"a {type(p).__name__.lower()} detector has no likelihood kinds (ask posterior or "
                        "beliefs)")
    return p.components() if isinstance(p, Mixture) else [(0.0, p)]


def mix(per_kind: list[list[float]], log_priors: list[float]) -> list[float]:
    """Each hypothesis's log weight summed over kinds: log sum_kind exp(log prior + its log weight)."""
    if len(per_kind) == 1:
        return per_kind[0]
    out = []
    for row in zip(*per_kind):
        terms = [lp + x for lp, x in zip(log_priors, row) if x != -math.inf]
        if not terms:
            out.append(-math.inf)
            continue
        top = max(terms)
        out.append(top + math.log(sum(math.exp(t - top) for t in terms)))
    return out


def hypotheses(others: list[str], k: int) -> list[frozenset[str]]:
    return [frozenset(c) for c in combinations(sorted(others), k)]


def _pair(p: Params, kind: str, s_imp: bool, t_imp: bool) -> float:
    if not s_imp and not t_imp:
        return 0.0
    return getattr(p, _PAIR_FIELDS[kind, s_imp, t_imp])


# the Params field of (kind, speaker is an imposter, target is an imposter)
_PAIR_FIELDS = {(kind, s, t): f"{kind}_{'i' if s else 'c'}{'i' if t else 'c'}"
                for kind in ("strong", "weak", "vote") for s in (False, True) for t in (False, True)}


def death_lr(bins: list[int], p: Params, uniform: bool = False) -> float:
    """sum_j pi_j exp(near[bin_j]) of one player over a death's window (1 when far or unseen throughout);
    ``uniform``: the window's start is not when the victim fell (never shown lying), so pi is uniform."""
    if not bins:
        return 1.0
    near, decay = p.near(), 1.0 if uniform else min(1.0, max(1e-6, p.kill_decay))
    w = [decay ** j for j in range(len(bins))]
    return sum(wj * math.exp(near[b]) for wj, b in zip(w, bins)) / sum(w)


def log_factor(item: dict[str, Any], h: frozenset[str], p: Params) -> float:
    """log P(item | the imposters are h), up to a term that is the same for every h (-inf: impossible)."""
    k = item["k"]
    if k == E.DEAD:
        return -math.inf if item["p"] in h else 0.0
    if k == E.EJECTED:
        return 0.0 if (item["p"] in h) == (item["role"] == IMPOSTER) else -math.inf
    if k == E.SAW_KILL:
        return 0.0 if item["p"] in h else p.saw_kill_error
    if k == E.DEATH:
        there = [m for m in h if m in item["bins"]]
        if not there:
            return p.saw_kill_error  # no imposter of h could have done it
        uni = bool(item.get("uniform"))
        return math.log(sum(death_lr(item["bins"][m], p, uni) for m in there) / len(there))
    if k == E.ACCUSE:
        return _pair(p, item["s"], item["p"] in h, item["target"] in h)
    if k == E.VOTE:
        return _pair(p, "vote", item["p"] in h, item["target"] in h)
    if k == E.REPORTED:
        return p.reported if item["p"] in h else 0.0
    if k == E.CALLED:
        return p.called if item["p"] in h else 0.0
    if k == E.CONTRADICTED:
        return 0.0 if item["p"] in h else p.contradicted
    if k == E.SKIPPED:
        return p.skipped if item["p"] in h else 0.0
    if k == E.ALIBI:
        return p.alibi if item["p"] in h else 0.0
    if k == E.CONFLICT:
        return 0.0 if item["p"] in h or item["target"] in h else p.conflict
    raise ValueError(f"unknown evidence kind {k!r}")


def posterior(others: list[str], k: int, items: list[dict[str, Any]],
              p: Detector) -> tuple[dict[frozenset[str], float], bool]:
    """(posterior over the k-subsets of ``others``, consistent). Evidence that rules out every hypothesis
    gives the uniform prior and ``consistent`` False. A ``Mixture`` sums each hypothesis over its kinds."""
    if isinstance(p, Linear):
        return p.posterior(others, k, items)
    if isinstance(p, Pool):
        return p.pooled(items, lambda m, its: posterior(others, k, its, m))
    hyps = hypotheses(others, k)
    comps = components(p)
    per_kind = []
    for _, pk in comps:
        logw = []
        for h in hyps:
            s = 0.0
            for it in items:
                s += log_factor(it, h, pk)
                if s == -math.inf:
                    break
            logw.append(s)
        per_kind.append(logw)
    w, consistent = normalised(mix(per_kind, [lp for lp, _ in comps]))
    return dict(zip(hyps, w)), consistent


# The largest factor a memo column keeps: a sum of such factors cannot overflow to -inf (that would take
# 10^8 items), so a hypothesis is ruled out exactly when a -inf factor is added, as posterior sees it.
BIG = 1e300


class PosteriorMemo:
    """``posterior`` and ``beliefs`` for one reader that asks again and again as its evidence grows (a
    scripted crewmate): each item's log factors over the hypotheses (its column: ``log_factor`` of each
    hypothesis) are computed once and kept, keyed by the item's fields, and each player's hypotheses are
    listed once. Each
    hypothesis still sums the same factors in the same order, and each marginal the same weights in the same
    order, so the answers equal ``posterior``'s and ``beliefs``' bit for bit (tests/test_infer.py compares
    them). A ``Mixture`` keeps each kind's columns. Plain data (deep-copyable with its owner); the columns
    of at most 8 parameter sets are kept (a fit's steps would grow it)."""

    def __init__(self) -> None:
        # (others, k) -> the hypotheses, and each player's indices among them (in order)
        self._hyps: dict[tuple[tuple[str, ...], int], tuple[list[frozenset[str]], dict[str, list[int]]]] = {}
        # a kind's parameters (their values) -> (others, k) -> item key -> its column over those hypotheses;
        # a mixture keeps one such store per kind
        self._cols: dict[tuple[float, ...], dict[tuple[tuple[str, ...], int], dict[Any, list[float]]]] = {}

    def posterior(self, others: list[str], k: int, items: list[dict[str, Any]],
                  p: Detector) -> tuple[dict[frozenset[str], float], bool]:
        """``posterior(others, k, items, p)``."""
        if isinstance(p, Linear):  # no columns to keep: its scores read the items as a whole
            return p.posterior(others, k, items)
        if isinstance(p, Pool):  # each member through the memo (a likelihood member keeps its columns)
            return p.pooled(items, lambda m, its: self.posterior(others, k, its, m))
        hyps, _, w, ok = self._weights(others, k, items, p)
        return dict(zip(hyps, w)), ok

    def beliefs(self, others: list[str], candidates: list[str], k: int, items: list[dict[str, Any]],
                p: Detector) -> tuple[dict[str, float], bool]:
        """``beliefs`` of the reader whose other players are ``others``."""
        if isinstance(p, (Linear, Pool)):
            post, ok = self.posterior(others, k, items, p)
            return {n: round(v, 6) for n, v in marginals(post, candidates).items()}, ok
        _, members, w, ok = self._weights(others, k, items, p)
        # marginals(): each candidate's weights summed in the hypotheses' order (sum of none: the int 0)
        return {n: round(sum([w[i] for i in members.get(n, ())]), 6) for n in candidates}, ok

    def _store(self, others: list[str], k: int,
               p: Params) -> tuple[list[frozenset[str]], dict[str, list[int]], dict[Any, list[float]]]:
        """(hypotheses, each player's indices among them, the kept columns of kind ``p`` there)."""
        vec = tuple(vars(p).values())  # the parameters' values (p.vector(), without pydantic's lookups)
        if vec not in self._cols and len(self._cols) >= 8:
            self._cols = {}  # parameters that change (a fit's steps): keep the memo small
        where = (tuple(others), k)
        if where not in self._hyps:
            hs = hypotheses(others, k)
            self._hyps[where] = hs, {n: [i for i, h in enumerate(hs) if n in h] for n in others}
        hyps, members = self._hyps[where]
        return hyps, members, self._cols.setdefault(vec, {}).setdefault(where, {})

    def columns(self, others: list[str], k: int, items: list[dict[str, Any]],
                p: Params) -> list[list[float]] | None:
        """Each item's log factors over ``hypotheses(others, k)`` under one kind's ``p`` (the kept columns;
        computed and kept where missing), or None when one item cannot be kept (then ask ``log_factor`` item
        by item)."""
        hyps, _, cols = self._store(others, k, p)
        out = []
        for it in items:
            col = _column(it, hyps, p, cols)
            if col is None:
                return None
            out.append(col)
        return out

    def _weights(self, others: list[str], k: int, items: list[dict[str, Any]],
                 p: Detector) -> tuple[list[frozenset[str]], dict[str, list[int]], list[float], bool]:
        """(hypotheses, each player's indices among them, posterior's weight of each, consistent)."""
        comps = components(p)
        per_kind = []
        for _, pk in comps:
            hyps, members, cols = self._store(others, k, pk)
            per_kind.append(self._logw(hyps, items, pk, cols))
        w, consistent = normalised(mix(per_kind, [lp for lp, _ in comps]))
        return hyps, members, w, consistent

    @staticmethod
    def _logw(hyps: list[frozenset[str]], items: list[dict[str, Any]], p: Params,
              cols: dict[Any, list[float]]) -> list[float]:
        """Each hypothesis's sum of log factors under one kind, as ``posterior`` adds them."""
        # The items whose columns are kept, up to the first that is not: each hypothesis's sum of their
        # factors in item order, as posterior adds them (0.0, then + each: reduce with operator.add is that
        # loop in C). A hypothesis posterior rules out on the way stops there at -inf; here it reads on, and
        # -inf + f stays -inf for every kept factor f (finite, at most BIG, or -inf).
        kept = []
        for it in items:
            col = _column(it, hyps, p, cols)
            if col is None:
                break
            kept.append(col)
        if kept:
            logw = [reduce(operator.add, row, 0.0) for row in zip(*kept)]
        else:
            logw = [0.0] * len(hyps)
        live = [i for i, s in enumerate(logw) if s != -math.inf]
        for it in items[len(kept):]:  # from an item not kept on (malformed evidence): item by item
            if not live:
                break  # every hypothesis is ruled out: posterior reads no further item (nor raises on one)
            col = _column(it, hyps, p, cols)
            for i in live:
                logw[i] += log_factor(it, hyps[i], p) if col is None else col[i]
            live = [i for i in live if logw[i] != -math.inf]
        return logw


def _column(it: dict[str, Any], hyps: list[frozenset[str]], p: Params,
            cols: dict[Any, list[float]]) -> list[float] | None:
    """The item's log factors over ``hyps``, from ``cols`` or computed and kept there; None for an item not
    kept: one whose factors cannot all be computed, or include +inf, nan or a number beyond ``BIG``
    (``log_factor`` then decides hypothesis by hypothesis, raising only where ``posterior`` would), or whose
    key would not pin them."""
    try:
        key = _memo_key(it)
        if key is None:
            return None
        col = cols.get(key)
        if col is None:
            col = _factors(it, hyps, p)
            # each distinct factor tested once (a column holds a few values, repeated across hypotheses)
            if not all(-BIG <= f <= BIG or f == -math.inf for f in set(col)):
                return None
            cols[key] = col
        return col
    except Exception:  # noqa: BLE001 - see above: the reference path raises as posterior does
        return None


def _factors(it: dict[str, Any], hyps: list[frozenset[str]], p: Params) -> list[float]:
    """``log_factor(it, h, p)`` for each h. Every kind but a death depends on h only through whether h holds
    the item's player and its target: ``log_factor`` is called once per such case, at its first h."""
    if it["k"] == E.DEATH:
        return [log_factor(it, h, p) for h in hyps]
    a, b = it.get("p"), it.get("target")
    cases: dict[tuple[bool, bool], float] = {}
    out = []
    for h in hyps:
        case = (a in h, b in h)
        f = cases.get(case)
        if f is None:
            f = cases[case] = log_factor(it, h, p)
        out.append(f)
    return out


def _memo_key(it: dict[str, Any]) -> Any:
    """A hashable key that pins ``log_factor`` of an item: its fields (equal fields, equal factors); a death,
    its bins as tuples when they are plain lists of ints (else None: not kept)."""
    if it["k"] != E.DEATH:
        return tuple(it.items())
    bins = it["bins"]
    if type(bins) is not dict or not all(
        type(row) is list and all(type(b) is int for b in row) for row in bins.values()
    ):
        return None
    return E.DEATH, bool(it.get("uniform")), tuple((m, tuple(row)) for m, row in bins.items())


def marginals(post: dict[frozenset[str], float], players: list[str]) -> dict[str, float]:
    """P(imposter) of each player: the posterior mass of the hypotheses that contain it."""
    return {n: sum(w for h, w in post.items() if n in h) for n in players}


def beliefs(me: str, roster: list[str], candidates: list[str], k: int, items: list[dict[str, Any]],
            p: Detector, memo: PosteriorMemo | None = None) -> tuple[dict[str, float], bool]:
    """P(imposter) of each candidate (the players ``me`` believes alive) and consistency; ``memo``: the
    reader's ``PosteriorMemo`` (the same answer, sooner)."""
    others = [n for n in roster if n != me]
    if memo is not None:
        return memo.beliefs(others, candidates, k, items, p)
    post, ok = posterior(others, k, items, p)
    return {n: round(v, 6) for n, v in marginals(post, candidates).items()}, ok


def knows_nothing(candidates: list[str], k: int) -> dict[str, float]:
    """The reference belief that knows nothing: k/n for each of the n candidates (k living imposters)."""
    n = len(candidates)
    return {c: round(min(1.0, k / n), 6) for c in candidates} if n else {}

