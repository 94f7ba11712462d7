"""The linear detector: a logistic reader of per-player evidence counts inside the exact posterior (issue 43;
docs/detection.md, "A linear detector").

Each other player x gets a score s(x) = w . f(x) + b, where f(x) is log(1 + count) of each kind of evidence
about x (``LINEAR_FEATURES``: accusations and votes it received, whom it accused or voted among the revealed,
sightings near each death, reports, calls, kills seen, contradictions, conflicts, skipped votes, alibis).
s(x) is the log odds of a logistic model of "x is an imposter" fitted on the truth of training matches
(``fit_linear``; ``mau beliefs RUN... --fit --linear``). Read as independent Bernoulli variables conditioned
on exactly k imposters, the posterior over the hypotheses H is exact: P(H) proportional to exp(sum over x in H
of s(x)), with the hard facts (the dead are crewmates; an ejection reveals a role) ruling hypotheses out as in
the likelihood model. Unlike that model it reads no accusation by the roles of both its speaker and its
target, so an imposter that accuses its own partner raises that partner's score instead of clearing the pair:
the trick that inverts the pairwise model (docs/detection.md, "Exploitability").
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

from pydantic import Field, field_validator

from mau.config import Model
from mau.infer import evidence as E
from mau.infer.normalise import normalised
from mau.schema import IMPOSTER

# The counts of the linear baseline (mau.eval.baselines.FEATURES), then the two kinds issue 43 added.
BASE_FEATURES = ("strong_got", "weak_got", "votes_got", "accused_imposter", "accused_crew", "voted_imposter",
                 "voted_crew", "accused_by_imposter", "near0", "near1", "near2", "reported", "called",
                 "saw_kill", "contradicted", "conflict")
LINEAR_FEATURES = BASE_FEATURES + ("skipped", "alibi")
# Named groups of features for ``--fit --linear --without``: ``own_acts``, the counts a player sets by its own
# acts at no cost (whom it accused or voted among the revealed, its reports, calls and skips), which a planner
# steers at will.
LINEAR_GROUPS: dict[str, tuple[str, ...]] = {
    "own_acts": ("accused_imposter", "accused_crew", "voted_imposter", "voted_crew", "reported", "called",
                 "skipped"),
}
# The likelihood model's ratios (``Params``) by the features that read the same evidence: --ablate and the
# "no speech" baseline name ratios, and a linear detector zeroes the features fed by the same items.
_FEATURES_OF_RATIO = {
    "strong": ("strong_got", "accused_imposter", "accused_crew", "accused_by_imposter"),
    "weak": ("weak_got", "accused_imposter", "accused_crew", "accused_by_imposter"),
    "vote": ("votes_got", "voted_imposter", "voted_crew"), "near": ("near0", "near1", "near2"),
    "saw": ("saw_kill",),
}


def counts(items: list[dict[str, Any]], players: list[str]) -> dict[str, dict[str, float]]:
    """Per player, the count of each of ``LINEAR_FEATURES`` in ``items``."""
    revealed = {it["p"]: it["role"] for it in items if it["k"] == E.EJECTED}
    f = {c: dict.fromkeys(LINEAR_FEATURES, 0.0) for c in players}
    for it in items:
        k, p, t = it["k"], it.get("p"), it.get("target")
        if k == E.ACCUSE and t in f:
            f[t]["strong_got" if it.get("s") == "strong" else "weak_got"] += 1
            f[t]["accused_by_imposter"] += revealed.get(p) == IMPOSTER
        if k == E.VOTE and t in f:
            f[t]["votes_got"] += 1
        if k in (E.ACCUSE, E.VOTE) and p in f and t in revealed:
            kind = "accused" if k == E.ACCUSE else "voted"
            f[p][f"{kind}_{'imposter' if revealed[t] == IMPOSTER else 'crew'}"] += 1
        if k == E.DEATH:
            for c, bins in it["bins"].items():
                if c in f:
                    for b in bins:
                        if b < 3:
                            f[c][f"near{b}"] += 1
        if k in (E.REPORTED, E.CALLED, E.SAW_KILL, E.CONTRADICTED, E.SKIPPED, E.ALIBI) and p in f:
            f[p][k] += 1
        if k == E.CONFLICT:
            for x in (p, t):
                if x in f:
                    f[x]["conflict"] += 1
    return f


class Linear(Model):
    """A linear detector (module docstring): the weight of each feature (missing: 0) and the bias, the log
    odds of a player with no evidence about it."""

    weights: dict[str, float] = Field(description="Weight of each feature (log(1 + count)); names of "
                                                  "LINEAR_FEATURES.")
    bias: float = Field(description="The log odds of a player with no evidence.")

    @field_validator("weights")
    @classmethod
    def _known(cls, v: dict[str, float]) -> dict[str, float]:
        bad = sorted(set(v) - set(LINEAR_FEATURES))
        if bad:
            raise ValueError(f"linear weights {bad}: not features ({', '.join(LINEAR_FEATURES)})")
        return v

    def scores(self, items: list[dict[str, Any]], players: list[str]) -> dict[str, float]:
        """s(x) of each player: its log odds of being an imposter before the exactly-k constraint."""
        return {c: self.bias + sum(self.weights.get(n, 0.0) * math.log1p(v) for n, v in fc.items())
                for c, fc in counts(items, players).items()}

    def posterior(self, others: list[str], k: int,
                  items: list[dict[str, Any]]) -> tuple[dict[frozenset[str], float], bool]:
        """(posterior over the k-subsets of ``others``, consistent), as ``mau.infer.model.posterior``."""
        s = self.scores(items, others)
        dead = {it["p"] for it in items if it["k"] == E.DEAD}
        roles = {it["p"]: it["role"] == IMPOSTER for it in items if it["k"] == E.EJECTED}
        hyps = [frozenset(c) for c in combinations(sorted(others), k)]
        logw = [-math.inf if (h & dead or any((p in h) != imp for p, imp in roles.items()))
                else sum(s[x] for x in h) for h in hyps]
        w, consistent = normalised(logw)
        return dict(zip(hyps, w)), consistent

    def zeroed(self, ratios: list[str]) -> Linear:
        """The same detector with the features that read the evidence of the likelihood model's ``ratios``
        (``Params`` names, e.g. the group ``speech``) at 0."""
        drop: set[str] = set()
        for r in ratios:
            head = r.split("_")[0]
            drop |= set(_FEATURES_OF_RATIO.get(head, (r,)))
        return Linear(weights={n: 0.0 if n in drop else w for n, w in self.weights.items()}, bias=self.bias)

    def weighs(self, ratio: str) -> bool:
        """Whether a feature that reads the evidence of the likelihood ratio ``ratio`` has a weight."""
        feats = _FEATURES_OF_RATIO.get(ratio.split("_")[0], (ratio,))
        return any(self.weights.get(n, 0.0) != 0.0 for n in feats)

    def to_dict(self) -> dict[str, Any]:
        """As observer_fit.json version 3 holds it (``linear``)."""
        return {"weights": {n: round(float(self.weights.get(n, 0.0)), 6) for n in LINEAR_FEATURES},
                "bias": round(float(self.bias), 6)}


def fit_logistic(x: Any, y: Any, l2: float = 1.0, iters: int = 50) -> Any:
    """Weights (bias last) of an L2-penalised logistic regression, by Newton's method (numpy arrays)."""
    import numpy as np

    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(xb @ w, -30, 30)))
        g = xb.T @ (p - y) + reg * w
        h = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def expand(spec: list[str], flag: str) -> list[str]:
    """Feature names or groups (``LINEAR_GROUPS``) as feature names; an unknown one is a one-line error."""
    out: list[str] = []
    for word in spec:
        names = LINEAR_GROUPS.get(word, (word,))
        bad = [n for n in names if n not in LINEAR_FEATURES]
        if bad:
            raise ValueError(f"{flag} {word}: not a feature of the linear detector nor a group "
                             f"({', '.join(LINEAR_GROUPS)}; features: {', '.join(LINEAR_FEATURES)})")
        out += [n for n in names if n not in out]
    return out


def fit_linear(rows: list[tuple[list[dict[str, Any]], list[str], frozenset[str]]], l2: float = 1.0,
               hold: tuple[str, ...] = ()) -> Linear:
    """The maximum-likelihood logistic model (L2 ``l2`` on the weights, not the bias) of "x is an imposter"
    over every candidate x of every (evidence items, candidates, true imposters) row; ``hold``: features
    left out (weight 0)."""
    import numpy as np

    used = [n for n in LINEAR_FEATURES if n not in hold]
    x, y = [], []
    for items, cands, truth in rows:
        for c, fc in counts(items, cands).items():
            x.append([math.log1p(fc[n]) for n in used])
            y.append(float(c in truth))
    if len(set(y)) < 2:
        raise ValueError("a linear fit needs candidates of both roles")
    w = fit_logistic(np.asarray(x).reshape(len(x), len(used)), np.asarray(y), l2)
    weights = dict.fromkeys(LINEAR_FEATURES, 0.0) | {n: float(v) for n, v in zip(used, w[:-1])}
    return Linear(weights=weights, bias=float(w[-1]))
