"""The complete state of a match: players, bodies, meeting, clock and the ground-truth event log.

Plain dataclasses: a deep copy is a full snapshot, so snapshot/restore is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mau import schema as F
from mau.schema import (  # noqa: F401  (re-exported: the format vocabulary lives in mau.schema)
    CREW_OUTCOMES,
    CREWMATE,
    CREWMATE_WIN,
    IMPOSTER,
    IMPOSTER_WIN,
    MISSION_WIN,
    OUTCOMES,
    TIMEOUT,
)

ROAM = "roam"
DISCUSSION = "discussion"
VOTING = "voting"
ENDED = "ended"



@dataclass(slots=True)
class PlayerState:
    name: str
    color: str
    seat: int
    role: str
    x: float
    z: float
    yaw: float = 0.0  # radians; 0 looks along +x, pi/2 along +z
    alive: bool = True
    ejected: bool = False
    missions: list[int] = field(default_factory=list)  # station indices (imposters: stations to fake)
    missions_done: list[bool] = field(default_factory=list)
    holding_station: int | None = None  # station pressed and held now
    holding_ticks: int = 0
    holding_fake: bool = False
    kill_cooldown: int = 0
    death_tick: int | None = None
    seen_bodies: list[str] = field(default_factory=list)  # victims whose body this player has seen
    witnessed: list[dict[str, Any]] = field(default_factory=list)  # kills this player saw happen
    # Privileged state: each other player's last known [x, z, tick] (privileged sight: its last sighting
    # alive; the paper's radar: its position within privileged_radius, through walls, a dead player where it
    # fell).
    last_known: dict[str, list[float]] = field(default_factory=dict)
    known_upto: int = 0  # the world's ``positions`` read into last_known so far (``SimWorld.last_known``)
    # the state mode of this player's observations (privileged sight also finds bodies around)
    sight: str = "ego"

    @property
    def is_imposter(self) -> bool:
        return self.role == IMPOSTER

    @property
    def active(self) -> bool:
        """Alive and not ejected: can act, speak and vote."""
        return self.alive and not self.ejected


@dataclass(slots=True)
class Body:
    victim: str
    color: str
    x: float
    z: float
    room: str
    tick: int
    yaw: float = 0.0  # the way the victim faced: the body lies along it


@dataclass(slots=True)
class Meeting:
    caller: str
    reason: str  # "report" or "emergency"
    body: str | None
    order: list[str]  # speaking order: the caller, then the other active players by seat
    start_tick: int
    round: int = 1
    turn: int = 0
    spoke_this_round: bool = False
    transcript: list[dict[str, Any]] = field(default_factory=list)
    votes: dict[str, str] = field(default_factory=dict)

    @property
    def speaker(self) -> str:
        return self.order[self.turn]


@dataclass(slots=True)
class GameState:
    players: list[PlayerState]
    seed: int
    tick: int = 0
    step: int = 0
    meeting_steps: int = 0
    phase: str = ROAM
    bodies: list[Body] = field(default_factory=list)
    meeting: Meeting | None = None
    last_meeting_end_tick: int | None = None
    meetings_held: int = 0
    public_dead: list[str] = field(default_factory=list)  # announced at meetings
    ejections: list[dict[str, Any]] = field(default_factory=list)  # public: name + revealed role
    # public: each finished meeting and its votes
    meeting_log: list[dict[str, Any]] = field(default_factory=list)
    outcome: str | None = None
    end_reason: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    # players by name, built at the first lookup (the roster is fixed once a match starts; a list that grew
    # or shrank is read again)
    by_name: dict[str, PlayerState] | None = field(default=None, repr=False, compare=False)

    def player(self, name: str) -> PlayerState:
        p = self.find(name)
        if p is None:
            raise KeyError(name)
        return p

    def find(self, name: str) -> PlayerState | None:
        index = self.by_name
        if index is None or len(index) != len(self.players):
            index = self.by_name = {p.name: p for p in reversed(self.players)}  # the first of a name wins
        return index.get(name)

    def emit(self, event_type: str, **fields: Any) -> dict[str, Any]:
        if self.events and self.events[-1][F.TYPE] == F.EV_MATCH_END:
            raise RuntimeError(f"{event_type} after match_end: match_end closes the event log")
        event = {
            F.EVENT_INDEX: len(self.events), F.TICK: self.tick, F.STEP: self.step, F.TYPE: event_type,
            **fields,
        }
        self.events.append(event)
        return event

    @property
    def active_crew(self) -> list[PlayerState]:
        return [p for p in self.players if p.active and not p.is_imposter]

    @property
    def active_imposters(self) -> list[PlayerState]:
        return [p for p in self.players if p.active and p.is_imposter]
