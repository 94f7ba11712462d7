"""Recorded answers fed back in place of the models.

Each agent's calls are sequential (its pipeline awaits one call before the next), so the records of one agent,
in file order, are the order in which that agent asks: a queue per agent gives every call its recorded answer
whatever order the calls of a step finished in. The ``Director`` hands them out, checks that each call is the
one recorded (agent, module, step), substitutes the answer of the forked decision, and turns agents live
after it. ``ReplayBackend`` wraps a seat's real backend: a live call goes to it; a replayed call does not,
except for the scripted expert, which is asked anyway (it is cheap) so that its own state (seeded random
stream, suspicions) stays where the recorded match had it, ready for live play after a fork.
"""

from __future__ import annotations

from typing import Any

from mau import schema as F
from mau.errors import MauError
from mau.harness.backends.base import ModelBackend, ModelRequest, ModelResponse


class ReplayDivergence(MauError):
    """The replayed match asked for a call the record does not have (or in another order)."""


class Director:
    def __init__(self, calls: list[dict[str, Any]]):
        self.queues: dict[str, list[dict[str, Any]]] = {}
        for c in calls:
            self.queues.setdefault(c[F.AGENT], []).append(c)
        self.pos: dict[str, int] = {a: 0 for a in self.queues}
        self.live_all = False
        self.live_agents: set[str] = set()
        self.fork_call: str | None = None  # call_id of the decision whose answer is replaced
        self.fork_answer: str | None = None
        self.forked = False
        self.world: Any = None  # the world being replayed, to check the step of each call
        self.advances = 0  # world steps taken so far (set by the session)
        self.consumed_at: dict[str, int] = {}  # call_id -> the world step (advance) it was asked in
        self.stop_after_fork = False

    def state(self) -> dict[str, Any]:
        return {"pos": dict(self.pos), "live_all": self.live_all, "live_agents": set(self.live_agents),
                "forked": self.forked}

    def set_state(self, s: dict[str, Any]) -> None:
        self.pos, self.live_all = dict(s["pos"]), s["live_all"]
        self.live_agents, self.forked = set(s["live_agents"]), s["forked"]

    def take(self, request: ModelRequest) -> tuple[str, dict[str, Any] | None]:
        """('live', None), ('recorded', record) or ('fork', record) for this call."""
        agent = request.agent
        if self.live_all or agent in self.live_agents:
            return "live", None
        queue = self.queues.get(agent, [])
        k = self.pos.get(agent, 0)
        st = self.world.state if self.world is not None else None
        if k >= len(queue):
            raise ReplayDivergence(f"{agent} asks {request.module} at step {st.step if st else '?'}, but the "
                                   f"record has no more calls of {agent}")
        rec = queue[k]
        if rec[F.MODULE] != request.module or (st is not None and rec[F.STEP] != st.step):
            raise ReplayDivergence(f"{agent} asks {request.module} at step {st.step if st else '?'}, but its "
                                   f"next recorded call is {rec[F.CALL_ID]} ({rec[F.MODULE]} at step "
                                   f"{rec[F.STEP]})")
        self.pos[agent] = k + 1
        self.consumed_at[rec[F.CALL_ID]] = self.advances
        if rec[F.CALL_ID] == self.fork_call:
            self.forked = True
            self.live_agents.add(agent)  # what it does next depends on the new answer
            if self.stop_after_fork:
                raise ReachedFork(rec[F.CALL_ID])
            return "fork", rec
        return "recorded", rec

    def left(self) -> int:
        return sum(len(q) - self.pos.get(a, 0) for a, q in self.queues.items())


class ReachedFork(Exception):
    """Raised (and caught by the session) when a locating pass reaches the forked decision."""


class ReplayBackend(ModelBackend):
    """A seat's backend during replay: recorded answers until the director says live."""

    def __init__(self, director: Director, live: ModelBackend | None, live_name: str):
        super().__init__(live.config if live is not None else None)
        self.director, self.live = director, live
        self.name = live_name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        mode, rec = self.director.take(request)
        if mode == "live":
            if self.live is None:
                raise MauError(f"{request.agent}'s {request.module} must be played live but its seat has no "
                               f"model")
            self.name = self.live.name
            return await self.live.complete(request)
        private = None
        if self.live is not None and self.live.name == "scripted":
            expert = await self.live.complete(request)  # keep the expert's state in step with the record
            if expert.text == rec[F.RAW_OUTPUT]:
                private = expert.private  # the labels of its claims, never recorded (docs/claims.md)
        self.name = rec[F.BACKEND]
        if mode == "fork":
            self.name = "fork"
            return ModelResponse(text=self.director.fork_answer, latency_s=0.0, model="fork")
        return ModelResponse(
            text=rec[F.RAW_OUTPUT], error=rec[F.ERROR], latency_s=rec.get(F.LATENCY_S) or 0.0,
            prompt_tokens=rec.get(F.PROMPT_TOKENS), completion_tokens=rec.get(F.COMPLETION_TOKENS),
            attempts=rec.get("attempts", 1), model=rec.get(F.MODEL) or "", private=private,
        )

    async def aclose(self) -> None:
        if self.live is not None:
            await self.live.aclose()
