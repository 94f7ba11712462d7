"""The reward of one answer to one recorded decision: fork the sim at the decision with that answer, play on,
and score what happened. Terms are configurable (docs/rl.md); an answer the harness cannot use (its module
fell back) gets ``unparseable`` and nothing else."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Literal

from pydantic import Field

from mau.config import Model
from mau.replay.session import BranchOutcome
from mau.schema import IMPOSTER


class RewardConfig(Model):
    """What a forked decision earns. Horizon ``meeting`` stops at the end of the meeting (cheap; enough for
    the vote terms); ``match`` plays to the end (needed for crew_win)."""

    horizon: Literal["meeting", "match"] = Field("meeting", description="Play each fork to the end of "
                                                                        "the meeting or of the match.")
    vote_imposter: float = Field(1.0, description="The vote named a true imposter.")
    vote_crewmate: float = Field(0.0, description="The vote named a crewmate (negative: a penalty).")
    vote_skip: float = Field(0.0, description="The vote skipped.")
    meeting_ejects_imposter: float = Field(0.5, description="The meeting (the first to end after the "
                                                            "fork) ejected an imposter.")
    meeting_ejects_crewmate: float = Field(-0.5, description="That meeting ejected a crewmate.")
    crew_win: float = Field(0.0, description="The crew won from the fork (horizon match only; an "
                                             "unfinished branch earns 0).")
    unparseable: float = Field(-1.0, description="The answer fell back (bad JSON, unknown name, ...): "
                                                 "this and nothing else.")
    continuation: Literal["scripted", "recorded"] = Field(
        "scripted", description="Who plays on after the fork: the scripted expert in every seat, or the "
                                "recorded seats' models.")
    cache_decisions: int = Field(256, ge=1, description="Snapshots of decisions kept in memory (one "
                                                        "replay each).")


def vote_term(target: str, roles: dict[str, str], cfg: RewardConfig) -> tuple[str, float]:
    """The vote's term of the reward: (its name, its value) for a vote on ``target`` given the match's
    roles."""
    if target == "skip":
        return "vote_skip", cfg.vote_skip
    if roles.get(target) == IMPOSTER:
        return "vote_imposter", cfg.vote_imposter
    return "vote_crewmate", cfg.vote_crewmate


def score(o: BranchOutcome, cfg: RewardConfig) -> tuple[float, dict[str, float]]:
    """(reward, its terms) of one branch."""
    if o.fallback:
        return cfg.unparseable, {"unparseable": cfg.unparseable}
    terms: dict[str, float] = {}
    if o.vote_target is not None:
        name, value = vote_term(o.vote_target, o.roles, cfg)
        terms[name] = value
    if o.meeting_ejected_role == IMPOSTER:
        terms["meeting_ejects_imposter"] = cfg.meeting_ejects_imposter
    elif o.meeting_ejected_role == "crewmate":
        terms["meeting_ejects_crewmate"] = cfg.meeting_ejects_crewmate
    if o.crew_win:
        terms["crew_win"] = cfg.crew_win
    return sum(terms.values()), terms


class ForkRewarder:
    """Rewards of answers to recorded decisions, each from a fork of its match. One replay per decision
    (cached: its snapshot serves every later answer to it)."""

    def __init__(self, cfg: RewardConfig):
        self.cfg = cfg
        self._cache: OrderedDict[str, tuple[Any, dict[str, Any]]] = OrderedDict()
        self.forks = 0
        self.fork_seconds = 0.0

    async def _prepared(self, match: str, call_id: str):
        key = f"{match}::{call_id}"
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        from mau.replay.record import read_match
        from mau.replay.session import Session

        rec = read_match(match)
        seats = rec.seats
        if self.cfg.continuation == "scripted":
            from mau.harness.backends.base import ModelConfig

            def expert_seed(s) -> int:  # the scripted expert that answered the seat's other modules, if any
                rest = s.modules is not None and s.rest_model.backend == "scripted"
                return s.rest_model.seed if rest else s.model.seed

            seats = {k: s.model_copy(update={"model": ModelConfig(seed=expert_seed(s)), "modules": None})
                     for k, s in rec.seats.items()}
        session = Session(rec, seats=seats, live_models=self.cfg.continuation == "recorded")
        snap = await session.prepare_fork(call_id)
        self._cache[key] = (session, snap)
        while len(self._cache) > self.cfg.cache_decisions:
            self._cache.popitem(last=False)
        return session, snap

    async def outcomes(self, items: list[tuple[str, str, str]]) -> list[BranchOutcome]:
        """``items``: (match folder, call_id, answer text)."""
        import time

        out = []
        for match, call_id, answer in items:
            session, snap = await self._prepared(match, call_id)
            t0 = time.perf_counter()
            out.append(await session.branch(snap, answer, self.cfg.horizon))
            self.fork_seconds += time.perf_counter() - t0
            self.forks += 1
        return out

    def rewards(
        self, items: list[tuple[str, str, str]]
    ) -> list[tuple[float, dict[str, float], BranchOutcome]]:
        outs = asyncio.run(self.outcomes(items))
        return [(*score(o, self.cfg), o) for o in outs]
