"""Structured actions. An action is data (a kind and a few fields), never code; the world runs it as a small
program over ticks until it is done, fails, is interrupted by a meeting, or times out.

Roam actions: goto, follow, flee, mission, fake_mission, kill, report, button, wait, look_around.
Meeting actions: speak (text, or none to pass; with ``world.claims.mode: structured`` also a list of
structured claims, docs/claims.md), vote (a player's name or "skip").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

ROAM_KINDS = (
    "goto", "follow", "flee", "mission", "fake_mission", "kill", "report", "button", "wait", "look_around",
)
MEETING_KINDS = ("speak", "vote")
KINDS = ROAM_KINDS + MEETING_KINDS

# Action statuses (the result an agent sees at its next decision point).
RUNNING = "running"
DONE = "done"
FAILED = "failed"
TIMED_OUT = "timed_out"
INTERRUPTED = "interrupted"  # by a meeting
REPLACED = "replaced"  # a new action was chosen first


@dataclass(frozen=True, slots=True)
class Action:
    """One structured action. ``target`` is a player name (follow, flee, kill, report's body, vote), a room
    name or ``"button"`` (goto); ``station`` a station index; ``point`` an (x, z) position."""

    kind: str
    target: str | None = None
    station: int | None = None
    point: tuple[float, float] | None = None
    ticks: int | None = None
    text: str | None = None
    narration: str | None = None  # an imposter's private note of intent: logged, never shown to others
    claims: tuple[Any, ...] | None = None  # speak: structured claims (checked and made public by the world)
    # speak: private label per claim (lie, mistake): events.jsonl only
    intent: tuple[str | None, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        # What asdict gave (a copy of a point, None fields left out), without its recursive deep copy: this
        # runs for every action start and every observation.
        out: dict[str, Any] = {}
        for k in _ACTION_FIELDS:
            v = getattr(self, k)
            if v is not None:
                out[k] = type(v)(v) if isinstance(v, (list, tuple)) else v
        return out


_ACTION_FIELDS = tuple(f.name for f in fields(Action))


@dataclass(slots=True)
class ActionRun:
    """A running action: its program state. Plain data, so snapshots copy it exactly."""

    action: Action
    start_tick: int
    status: str = RUNNING
    reason: str = ""
    stage: str = "travel"  # travel -> (press | strike | hold | turn) -> end
    stage_tick: int = 0
    path: list[tuple[float, float]] = field(default_factory=list)
    path_goal: tuple[float, float] | None = None
    turned: float = 0.0
    # goto: its goal when it cannot move (a point, a station, a room, the button), resolved at the first
    # sub-step instead of at every one; None while unresolved and for a player as target (players move)
    fixed_goal: tuple[float, float] | None = None


def goto(
    target: str | None = None, *, station: int | None = None, point: tuple[float, float] | None = None
) -> Action:
    return Action("goto", target=target, station=station, point=point)


def parse_action(data: dict[str, Any] | Action) -> Action:
    """Build an action from a dict (e.g. a model's parsed answer); raises ValueError naming the bad field."""
    if isinstance(data, Action):
        return data
    if not isinstance(data, dict):
        raise ValueError(f"action: expected an object with a 'kind', got {type(data).__name__}")
    unknown = set(data) - {
        "kind", "target", "station", "point", "ticks", "text", "narration", "claims", "intent",
    }
    if unknown:
        raise ValueError(f"action: unknown field {sorted(unknown)[0]!r}; fields are kind, target, station, "
                         f"point, ticks, text, claims")
    kind = data.get("kind")
    if kind not in KINDS:
        raise ValueError(f"action.kind: {kind!r} is not one of {', '.join(KINDS)}")
    target = data.get("target")
    if target is not None and not isinstance(target, str):
        raise ValueError("action.target: must be a name (string)")
    station = data.get("station")
    if station is not None and (not isinstance(station, int) or isinstance(station, bool)):
        raise ValueError("action.station: must be a station index (integer)")
    point = data.get("point")
    if point is not None:
        if not (
            isinstance(point, (list, tuple))
            and len(point) == 2
            and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in point
            )
        ):
            raise ValueError("action.point: must be [x, z], two finite numbers")
        point = (float(point[0]), float(point[1]))
    ticks = data.get("ticks")
    if ticks is not None and (not isinstance(ticks, int) or ticks < 0):
        raise ValueError("action.ticks: must be a non-negative integer")
    text = data.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError("action.text: must be a string")
    narration = data.get("narration")
    if narration is not None and not isinstance(narration, str):
        raise ValueError("action.narration: must be a string")
    claims = data.get("claims")
    if claims is not None:  # each claim is checked by the world, which drops a bad one with its reason
        if not isinstance(claims, (list, tuple)):
            raise ValueError("action.claims: must be a list of claims (docs/claims.md)")
        claims = tuple(claims)
    intent = data.get("intent")
    if intent is not None:
        if not isinstance(intent, (list, tuple)) or not all(i is None or isinstance(i, str) for i in intent):
            raise ValueError("action.intent: must be a list with a label (or null) per claim")
        intent = tuple(intent)
    needs = {"follow": "target", "flee": "target", "kill": "target", "vote": "target",
             "mission": "station", "fake_mission": "station"}
    if kind in needs and data.get(needs[kind]) is None:
        raise ValueError(f"action.{needs[kind]}: a {kind} action needs one")
    if kind == "goto" and target is None and station is None and point is None:
        raise ValueError("action: goto needs a target (room, player or 'button'), a station or a point")
    return Action(kind, target, station, point, ticks, text, narration, claims, intent)
