"""Play one match with ARIA agents in every seat: the step loop, concurrent calls, records and frames.

The calls of a step run concurrently: every agent's pipeline is a coroutine and all of them are gathered, so a
step takes about as long as its slowest chain of calls. Model output only ever becomes a structured action.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.env.runner import MatchResult
from mau.env.state import DISCUSSION, ENDED, ROAM, VOTING
from mau.harness.agent import AriaAgent
from mau.harness.backends.base import ModelBackend
from mau.harness.calls import Caller, CallLog, FrameStore
from mau.harness.config import SeatConfig
from mau.harness.prompting import PromptBuilder
from mau.snapshot import Parts, Restored, Snapshot, freeze, thaw


def _meeting_outcome(st) -> str:
    """One public sentence about the meeting that just ended (from the event log's public part)."""
    start = next(e for e in reversed(st.events) if e[F.TYPE] == F.EV_MEETING_START)
    ej = next(e for e in reversed(st.events) if e[F.TYPE] == F.EV_EJECTION)
    why = f"{start['caller']} reported the body of {start['body']}" if start["reason"] == "report" \
        else f"{start['caller']} called an emergency meeting"
    votes = [e for e in st.events[start[F.EVENT_INDEX]:] if e[F.TYPE] == F.EV_VOTE]
    tally = ", ".join(f"{v['voter']}->{v['target']}" for v in votes)
    return f"{why}; votes: {tally}; {ej['text']}"


class AriaMatch:
    """Everything one ARIA match needs: the world, the seats' backends, the agents, the log and the frames."""

    def __init__(self, world, seats: dict[str, SeatConfig], backends: dict[str, ModelBackend],
                 folder: Path | None, match_id: str, progress: bool = False,
                 rest_backends: dict[str, ModelBackend] | None = None):
        """``rest_backends``: per seat with ``modules``, the backend of its other modules (default: made from
        the seat's ``rest_model`` on first use)."""
        self.world, self.seats, self.backends = world, seats, backends
        self.progress = progress  # a bar of steps on stderr (mau play); runs of matches have their own
        self.folder, self.match_id = folder, match_id
        self.log = CallLog(folder)
        self.frames = FrameStore(world, folder)
        self.memory_dumps: list[dict[str, Any]] = []
        self._rest: dict[str, ModelBackend] = dict(rest_backends or {})
        # the rest backends made here (closed at finish); given ones are shared
        self._own_rest: set[str] = set()
        self.beliefs = None  # the match's belief probes (mau.harness.beliefs.probe), made at start()
        self.probe_summary: dict[str, Any] | None = None

    def _seat(self, name: str, role: str) -> str:
        return name if name in self.seats else role

    def _rest_backend(self, key: str) -> ModelBackend | None:
        """The backend of a seat's other modules, when its model answers only some (e.g. a tuned VOTE)."""
        seat = self.seats[key]
        if seat.modules is None:
            return None
        if key not in self._rest:
            from mau.harness.backends import make_backend

            self._rest[key] = make_backend(seat.rest_model)
            self._own_rest.add(key)
        return self._rest[key]

    async def play(self, seed: int) -> MatchResult:
        from tqdm import tqdm

        self.start(seed)
        bar = tqdm(total=self.world.cfg.max_steps, desc=self.match_id, unit="step",
                   disable=None if self.progress else True, dynamic_ncols=True)
        while self.world.state.phase != ENDED:
            bar.update(self.world.state.step - bar.n)
            bar.set_postfix(calls=self.log.n, fallbacks=self.log.fallbacks, refresh=False)
            await self.advance()
        bar.close()
        return await self.finish()

    def start(self, seed: int) -> None:
        """Reset the world to ``seed`` and seat the agents. ``play`` is start, advance until the end, finish;
        replay and forks (mau/replay) drive the same three steps and snapshot between two advances."""
        self._t0 = time.perf_counter()
        self.seed = seed
        w = self.world
        w.reset(seed)
        st = w.state
        roster = [p.name for p in st.players]
        rooms = list(w.map.room_names)
        harness_of = {p.name: self.seats[self._seat(p.name, p.role)].aria.model_dump(
            include={"state", "memory", "planning", "reflection", "prompt_style"}) for p in st.players}
        self.caller = Caller(w, self.log, self.match_id, harness_of)
        builders: dict[str, PromptBuilder] = {}
        self.agents: dict[str, AriaAgent] = {}
        for p in st.players:
            key = self._seat(p.name, p.role)
            seat = self.seats[key]
            if key not in builders:
                builders[key] = PromptBuilder(seat.aria, w.cfg, w.map, w.config.claims)
            self.agents[p.name] = AriaAgent(
                p.name, p.role, roster, seat, self.backends[key], builders[key], self.caller, self.frames,
                rooms, rest_backend=self._rest_backend(key),
            )
        from mau.harness.beliefs.probe import BeliefProbes

        self.beliefs = BeliefProbes(w, self.agents, self.match_id, self.folder, rooms)
        self.meetings_done = 0

    async def advance(self) -> None:
        """One world step: a roam step of every active agent, one speaker's turn, or the vote; then the step's
        call records are written in their fixed order."""
        try:
            await self._advance()
        finally:
            self.caller.flush()
            self.frames.flush()

    async def _advance(self) -> None:
        w, st, agents = self.world, self.world.state, self.agents
        if st.phase == ROAM:
            if st.meetings_held > self.meetings_done:  # a meeting just ended: remember, reflect, dump memory
                self.meetings_done = st.meetings_held
                outcome = _meeting_outcome(st)
                dumps = await asyncio.gather(*(
                    agents[p.name].after_meeting(w.observe(p.name, agents[p.name].aria.state), outcome)
                    for p in st.players if p.active))
                self.memory_dumps += [{"meeting": self.meetings_done, F.STEP: st.step, **d} for d in dumps]
            await self.beliefs.point()
            active = [p.name for p in st.players if p.active]
            obs = {n: w.observe(n, agents[n].aria.state) for n in active}
            chosen = await asyncio.gather(*(agents[n].roam(obs[n]) for n in active))
            w.step(dict(zip(active, chosen)))
        elif st.phase == DISCUSSION:
            await self.beliefs.point()
            speaker = st.meeting.speaker
            action = await agents[speaker].speak(w.observe(speaker, agents[speaker].aria.state))
            n_events = len(st.events)
            w.step({speaker: action})
            heard = action.text
            if action.claims:  # what everyone heard: the text and the claims the world kept, rendered
                heard = next(
                    (e[F.UTTERANCE_TEXT] for e in st.events[n_events:] if e[F.TYPE] == F.EV_UTTERANCE), None
                )
            if heard and st.phase in (DISCUSSION, VOTING):  # the others take it in (BELIEF)
                listeners = [p.name for p in st.players if p.active and p.name != speaker]
                await asyncio.gather(*(agents[n].listen(w.observe(n, agents[n].aria.state), speaker, heard)
                                       for n in listeners))
        elif st.phase == VOTING:
            await self.beliefs.point()
            active = [p.name for p in st.players if p.active]
            obs = {n: w.observe(n, agents[n].aria.state) for n in active}
            hints = {n: self.beliefs.vote_hint(n, obs[n]) for n in active}
            votes = await asyncio.gather(*(agents[n].vote(obs[n], hints[n]) for n in active))
            w.step(dict(zip(active, votes)))

    async def finish(self) -> MatchResult:
        st = self.world.state
        self.log.close()
        self.probe_summary = self.beliefs.close()
        self.frames.close()
        self.end_backends()
        for key in self._own_rest:
            await self._rest[key].aclose()
        if self.folder is not None:
            with open(self.folder / F.MEMORY_FILE, "w") as f:
                for d in self.memory_dumps:
                    f.write(json.dumps(d, separators=(",", ":")) + "\n")
        return MatchResult(
            self.seed, st.outcome, st.end_reason, st.step, st.tick, time.perf_counter() - self._t0, None
        )

    def end_backends(self) -> None:
        """Tell every backend of the match that it is over (they drop its per-match state: brains, RNG
        streams); the runner calls it for a match that failed, too."""
        for b in {id(b): b for b in [*self.backends.values(), *self._rest.values()]}.values():
            b.end_match(self.match_id)

    # -- snapshots (mau.snapshot) --------------------------------------------------------------------------
    def parts(self) -> Parts:
        """Everything of the match that changes between two ``advance``s: the world's state, every agent's
        harness state, the call log's counts, the frames' names, the probes' state; the memory dumps are
        append-only; seats, backends and the caller never change. Between ``start`` and ``finish`` only."""
        p = Parts({"meetings_done": self.meetings_done, "memory_dumps": self.memory_dumps},
                  shared=[self, self.caller, *self.backends.values(), *self._rest.values()],
                  logs={"dumps": self.memory_dumps})
        p.nest("world", self.world.parts()).nest("log", self.log.parts()).nest("frames", self.frames.parts())
        p.nest("probes", self.beliefs.parts())
        for name, agent in self.agents.items():
            p.nest(f"agent {name}", agent.parts())
        return p

    def restore_parts(self, r: Restored) -> None:
        self.meetings_done, self.memory_dumps = r.changing["meetings_done"], r.changing["memory_dumps"]
        self.world.restore_parts(r.part("world"))
        self.log.restore_parts(r.part("log"))
        self.frames.restore_parts(r.part("frames"))
        self.beliefs.restore_parts(r.part("probes"))
        for name, agent in self.agents.items():
            agent.restore_parts(r.part(f"agent {name}"))

    def snapshot(self) -> Snapshot:
        return freeze(self.parts())

    def restore(self, snap: Snapshot) -> None:
        self.restore_parts(thaw(snap))

    def header_extra(self) -> dict[str, Any]:
        extra = {F.MATCH_ID: self.match_id, "calls": self.log.summary(), "frames_saved": self.frames.saved,
                 "seats": {k: v.model_dump(mode="json") for k, v in self.seats.items()}}
        if self.probe_summary is not None:
            extra[F.HEADER_PROBES] = self.probe_summary
        return extra
