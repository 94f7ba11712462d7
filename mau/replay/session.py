"""One replayed match held in memory: replay it whole, stop at a decision, snapshot the world and every
agent's harness state between two world steps, restore the snapshot and play a branch from it.

A snapshot composes the snapshots of the state's owners (``mau.snapshot``): the ARIA match's (the world's game
state and running actions, each agent's memory, skills, strategy and bookkeeping, the call log's counts, the
frames' names, the probes' state), each live backend's (the scripted expert's brains and their random
streams) and the director's queues, in one pickle: the parts that never change are kept by reference (maps,
configs, prompt builders, backends) and the append-only logs (events, call records, memory dumps) as tuples of
their items, which are never mutated once written. Restoring is one unpickle, so a restore costs about as much
as the changing state and not the whole history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mau import schema as F
from mau.env.state import CREW_OUTCOMES, DISCUSSION, ENDED, VOTING
from mau.harness.calls import CallLog
from mau.harness.config import SeatConfig
from mau.replay.director import Director, ReachedFork, ReplayBackend
from mau.replay.record import RecordedMatch
from mau.snapshot import Parts, Restored, Snapshot, freeze, thaw


class KeepLog(CallLog):
    """A call log that keeps its records in memory (a branch writes them when it is done)."""

    def __init__(self) -> None:
        super().__init__(None)
        self.records: list[dict[str, Any]] = []

    def add(self, record: dict[str, Any], source: str = "model") -> None:
        super().add(record, source)
        self.records.append(record)

    def parts(self) -> Parts:
        p = super().parts()
        p.logs["records"] = self.records  # append-only: kept as a tuple, not copied
        return p

    def restore_parts(self, r: Restored) -> None:
        super().restore_parts(r)
        self.records = r.logs["records"]


@dataclass
class BranchOutcome:
    """What one branch did after the fork."""

    answer: str | None
    parsed: dict[str, Any] | None
    fallback: bool
    ended: bool
    outcome: str | None
    crew_win: bool | None
    # the first meeting that ended at or after the fork: who was ejected (None: nobody)
    meeting_ejected: str | None
    meeting_ejected_role: str | None
    meeting_tally: dict[str, int] | None
    ejections: list[dict[str, Any]] = field(default_factory=list)  # every ejection after the fork
    steps: int = 0
    roles: dict[str, str] = field(default_factory=dict)

    @property
    def vote_target(self) -> str | None:
        return (self.parsed or {}).get(F.VOTE_TARGET)

    def as_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "parsed": self.parsed, "fallback": self.fallback, "ended": self.ended,
                "outcome": self.outcome, "crew_win": self.crew_win, "meeting_ejected": self.meeting_ejected,
                "meeting_ejected_role": self.meeting_ejected_role, "meeting_tally": self.meeting_tally,
                "ejections": self.ejections, "steps": self.steps}


def with_frames(seats: dict[str, SeatConfig], frames: bool) -> dict[str, SeatConfig]:
    return {k: s.model_copy(update={"aria": s.aria.model_copy(update={"frames": frames and s.aria.frames})})
            for k, s in seats.items()}


class Session:
    """A recorded ARIA match, replayable and forkable. Use inside one event loop."""

    def __init__(self, rec: RecordedMatch, seats: dict[str, SeatConfig] | None = None, frames: bool = False,
                 live_models: bool = False):
        """``seats``: the seats that play live after a fork (default: the recorded ones). ``live_models``:
        build the seats' model backends (a fork plays on with them); without it only the scripted expert is
        built, and a replay needs no model at all."""
        from mau.env.backends import make_world
        from mau.harness.backends import make_backend
        from mau.harness.match import AriaMatch

        self.rec = rec
        self.director = Director(rec.calls)
        self.seats = with_frames(seats or rec.seats, frames)
        self.world = make_world(rec.world)
        self.director.world = self.world
        self.live: list[Any] = []  # the seats' own backends (a fork plays on with them)
        self.wrappers: list[ReplayBackend] = []

        def wrap(model) -> ReplayBackend:
            live = make_backend(model) if (live_models or model.backend == "scripted") else None
            if live is not None:
                self.live.append(live)
            self.wrappers.append(ReplayBackend(self.director, live, model.backend))
            return self.wrappers[-1]

        backends = {k: wrap(s.model) for k, s in self.seats.items()}
        rest = {k: wrap(s.rest_model) for k, s in self.seats.items() if s.modules is not None}
        self.match = AriaMatch(self.world, self.seats, backends, None, rec.match_id, rest_backends=rest)
        self.match.log = KeepLog()

    # -- driving -------------------------------------------------------------------------------------------
    def start(self) -> None:
        from mau.harness.calls import FrameStore

        m = self.match
        m.log, m.memory_dumps, m.frames = KeepLog(), [], FrameStore(self.world, None)
        m.start(self.rec.seed)
        self.director.advances = 0

    async def advance(self) -> None:
        await self.match.advance()
        self.director.advances += 1

    @property
    def ended(self) -> bool:
        return self.world.state.phase == ENDED

    async def replay(self) -> None:
        """Replay the whole match (raises ReplayDivergence at the first call the record does not have)."""
        self.start()
        while not self.ended:
            await self.advance()
        await self.match.finish()

    async def locate(self, call_id: str) -> int:
        """The number of world steps taken before the step in which the recorded call ``call_id`` is asked."""
        self.director.fork_call, self.director.stop_after_fork = call_id, True
        self.start()
        try:
            while not self.ended:
                await self.advance()
        except ReachedFork:
            return self.director.consumed_at[call_id]
        finally:
            self.director.stop_after_fork = False
        from mau.errors import MauError

        raise MauError(f"{self.rec.path}: the replay ended without asking {call_id}")

    async def prepare_fork(self, call_id: str) -> Snapshot:
        """Replay up to the world step of decision ``call_id`` and snapshot there."""
        k = await self.locate(call_id)
        self.director = self._fresh_director()
        self.start()
        for _ in range(k):
            await self.advance()
        self.director.fork_call = call_id
        return self.snapshot()

    def _fresh_director(self) -> Director:
        d = Director(self.rec.calls)
        d.world = self.world
        for b in self.wrappers:
            b.director = d
        for s in self.live:  # the scripted expert starts over too
            s.reset()
        return d

    async def branch(self, snap: Snapshot, answer: str, horizon: str = "match") -> BranchOutcome:
        """Restore ``snap`` and play on with ``answer`` in place of the recorded decision, to the end of the
        match (``horizon="match"``) or of the first meeting that ends after the fork (``"meeting"``)."""
        self.restore(snap)
        d = self.director
        d.fork_answer, d.live_all, d.live_agents, d.forked = answer, False, set(), False
        st = self.world.state
        n_events = len(st.events)
        n_records = len(self.match.log.records)
        await self.advance()  # the fork's own step: the others answer as recorded
        d.live_all = True
        while not self.ended:
            if horizon == "meeting" and any(e[F.TYPE] == F.EV_MEETING_END for e in st.events[n_events:]) \
                    and st.phase not in (DISCUSSION, VOTING):
                break
            await self.advance()
            st = self.world.state
        return self._outcome(n_events, n_records)

    def _outcome(self, n_events: int, n_records: int) -> BranchOutcome:
        st = self.world.state
        fork = next((r for r in self.match.log.records[n_records:] if r[F.BACKEND] == "fork"), None)
        after = st.events[n_events:]
        ej = [e for e in after if e[F.TYPE] == F.EV_EJECTION]
        first = ej[0] if ej else None
        ended = st.phase == ENDED
        return BranchOutcome(
            answer=fork[F.RAW_OUTPUT] if fork else None, parsed=fork[F.PARSED] if fork else None,
            fallback=bool(fork[F.FALLBACK]) if fork else True, ended=ended,
            outcome=st.outcome if ended else None, crew_win=(st.outcome in CREW_OUTCOMES) if ended else None,
            meeting_ejected=first[F.EJECTED] if first else None,
            meeting_ejected_role=first["role"] if first else None,
            meeting_tally=first["tally"] if first else None,
            ejections=[{"name": e[F.EJECTED], "role": e["role"]} for e in ej if e[F.EJECTED]], steps=st.step,
            roles={p.name: p.role for p in st.players},
        )

    # -- snapshots ---------------------------------------------------------------------------------------
    def parts(self) -> Parts:
        """The match's parts, each live backend's and the director's queues (the record never changes)."""
        p = Parts({"director": self.director.state(), "advances": self.director.advances},
                  shared=[self.director, self.rec])
        p.nest("match", self.match.parts())
        for i, b in enumerate(self.live):
            p.nest(f"live {i}", b.parts())
        return p

    def snapshot(self) -> Snapshot:
        """The changing state as one pickle (``mau.snapshot``); restoring is one unpickle plus list copies of
        the append-only logs."""
        return freeze(self.parts())

    def restore(self, snap: Snapshot) -> None:
        r = thaw(snap)
        self.match.restore_parts(r.part("match"))
        for i, b in enumerate(self.live):
            b.restore_parts(r.part(f"live {i}"))
        self.director.set_state(r.changing["director"])
        self.director.advances = r.changing["advances"]

    async def close(self) -> None:
        for b in self.wrappers:
            await b.aclose()
