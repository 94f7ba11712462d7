"""What the world saw between step ends (``sights.jsonl``, docs/formats.md): every change of a player's place
(a room or corridor of the map; null once dead or ejected) and of who has whom in view (the ego view: frustum,
line of sight and distance cap, ``mau.env.vision``), sampled at the sim's sub-step rate (0.25 s) and after
each meeting. Players and places are written as indices into the first line's lists (a match's file stays
small). It is what the claim checker (``mau.claims.check``) reads to say where a player was and whether a
speaker could have seen what it claims. Both worlds record it: the sim and minecraft share the sub-step loop.
"""

from __future__ import annotations

from typing import Any

from mau import schema as F

_UNSET = object()


class SightRecorder:
    """Keeps the changes as lines (the first: the legend); ``record(state)`` samples the world now."""

    def __init__(self, game_map: Any, vision: Any):
        self.map = game_map
        self.vision = vision
        self.places = list(dict.fromkeys(r.name for r in game_map.regions)) + ["outside"]
        self._place_index = {p: i for i, p in enumerate(self.places)}
        self.lines: list[dict[str, Any]] = []
        self.place: dict[str, int | None] = {}
        self.view: set[tuple[int, int]] = set()

    def reset(self) -> None:
        self.lines, self.place, self.view = [], {}, set()

    def record(self, state: Any, after_meeting: bool = False) -> None:
        """Sample the world now; ``after_meeting``: the table after a meeting (the clock stood still, so the
        states it replaces held at this same tick too)."""
        if not self.lines:
            self.lines.append(
                {
                    F.SIGHTS_VERSION_FIELD: F.SIGHTS_VERSION,
                    F.SIGHT_PLAYERS: [p.name for p in state.players], F.SIGHT_PLACE_NAMES: self.places,
                }
            )
        changed: list[list[int | None]] = []
        place_name, index = self.map.place_name, self._place_index
        active = []
        seat = {}
        for i, p in enumerate(state.players):
            seat[p.name] = i
            if p.active:
                active.append(p)
                where: int | None = index[place_name(p.x, p.z)]
            else:
                where = None
            if self.place.get(p.name, _UNSET) != where:
                self.place[p.name] = where
                changed.append([i, where])
        view = {(seat[a], seat[b]) for a, b in self.vision.pairs_in_view(active)}
        if changed or view != self.view:
            line: dict[str, Any] = {F.SIGHT_TICK: state.tick}
            if after_meeting:
                line[F.SIGHT_AFTER_MEETING] = True
            if changed:
                line[F.SIGHT_PLACES] = changed
            gained, lost = view - self.view, self.view - view
            if gained:
                line[F.SIGHT_GAINED] = [list(pair) for pair in sorted(gained)]
            if lost:
                line[F.SIGHT_LOST] = [list(pair) for pair in sorted(lost)]
            self.lines.append(line)
            self.view = view
