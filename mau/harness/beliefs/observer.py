"""The ideal observer: the exact posterior over imposter pairs (or k-sets) from one crewmate's evidence.

With 2 imposters among the 7 others a crewmate has 21 hypotheses, so Bayes is exact: a uniform prior over the
k-subsets of the other players, times one likelihood factor per piece of evidence (``likelihood``, with its
parameters in ``ObserverConfig``). Evidence is plain data (``Evidence``); which evidence a crewmate has is
decided by ``mau.harness.beliefs.perceive`` from the world, never from prompt text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

from mau.harness.beliefs.config import ObserverConfig

# Evidence kinds
DEAD = "dead"  # a player I know is dead (body seen, kill seen, death announced): victims are crewmates
EJECTED = "ejected"  # an ejection and the role it revealed
WITNESSED_KILL = "witnessed_kill"  # I saw `player` kill
NEAR_BODY = "near_body"  # `players` were in my view near a body when I first saw it
FULL_HOLD = "full_hold"  # I saw `player` hold a station for a whole mission
VOTE = "vote"  # a public vote `player` -> `target` (unverified)


@dataclass
class Evidence:
    kind: str
    player: str | None = None
    players: list[str] = field(default_factory=list)
    target: str | None = None
    role: str | None = None
    tick: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, [])}


def likelihood(ev: Evidence, pair: frozenset[str], cfg: ObserverConfig) -> float:
    """P(evidence | the imposters are ``pair``), up to a factor that is the same for every pair."""
    if ev.kind == DEAD:
        return 0.0 if ev.player in pair else 1.0
    if ev.kind == EJECTED:
        return 1.0 if (ev.player in pair) == (ev.role == "imposter") else 0.0
    if ev.kind == WITNESSED_KILL:
        return 1.0 if ev.player in pair else cfg.witness_error
    if ev.kind == NEAR_BODY:
        lr = 1.0
        for p in ev.players:
            if p in pair:
                lr *= cfg.near_body_lr
        return lr
    if ev.kind == FULL_HOLD:
        return cfg.full_hold_lr if ev.player in pair else 1.0
    if ev.kind == VOTE:
        voter = "imposter" if ev.player in pair else "crew"
        target = "imposter" if ev.target in pair else "crew"
        return cfg.vote_weights.get(f"{voter}_on_{target}", 1.0)
    raise ValueError(f"unknown evidence kind {ev.kind!r}")


def posterior(others: list[str], n_imposters: int, evidence: list[Evidence],
              cfg: ObserverConfig) -> tuple[dict[frozenset[str], float], bool]:
    """(posterior over the k-subsets of ``others``, consistent). When the evidence rules out every hypothesis
    (it cannot with the default parameters) the uniform prior is returned and ``consistent`` is False."""
    hyps = [frozenset(c) for c in combinations(sorted(others), n_imposters)]
    weights = {}
    for h in hyps:
        w = 1.0
        for ev in evidence:
            w *= likelihood(ev, h, cfg)
            if w == 0.0:
                break
        weights[h] = w
    total = sum(weights.values())
    if total <= 0:
        return {h: 1.0 / len(hyps) for h in hyps}, False
    return {h: w / total for h, w in weights.items()}, True


def marginals(post: dict[frozenset[str], float], players: list[str]) -> dict[str, float]:
    """P(imposter) of each player: the posterior mass of the hypotheses that contain it."""
    return {p: sum(w for h, w in post.items() if p in h) for p in players}


def beliefs(me: str, roster: list[str], candidates: list[str], n_imposters: int, evidence: list[Evidence],
            cfg: ObserverConfig) -> tuple[dict[str, float], bool]:
    """The observer's P(imposter) of each candidate (the players ``me`` believes alive), and consistency."""
    others = [p for p in roster if p != me]
    post, ok = posterior(others, n_imposters, evidence, cfg)
    m = marginals(post, candidates)
    return {p: round(v, 6) for p, v in m.items()}, ok
