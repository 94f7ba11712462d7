"""What the world saw between step ends (``sights.jsonl``, docs/formats.md): every change of a player's place
(a room or corridor of the map; null once dead or ejected) and of who has whom in view (the ego view: frustum,
line of sight and distance cap, ``mau.env.vision``), sampled at the sim's sub-step rate (0.25 s) and after
each meeting. Players and places are written as indices into the first line's lists (a match's file stays
small). It is what the claim checker (``mau.claims.check``) reads to say where a player was and whether a
speaker could have seen what it claims. Both worlds record it: the sim and minecraft share the sub-step loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mau import schema as F

_NO_PLACE = -1  # dead or ejected: the place is null
_UNSET = -2  # no sample yet


class SightRecorder:
    """Keeps the changes as lines (the first: the legend). ``record(state)`` samples the world now (a copy of
    each player's pose); the samples are turned into lines in batches (``flush``: the view pairs of all of
    them in numpy at once), before anyone reads ``lines``."""

    def __init__(self, game_map: Any, vision: Any):
        self.map = game_map
        self.vision = vision
        self.places = list(dict.fromkeys(r.name for r in game_map.regions)) + ["outside"]
        index = {p: i for i, p in enumerate(self.places)}
        # a region's place; region -1 (outside every region) indexes the last item, "outside"
        self._region_place = [index[r.name] for r in game_map.regions] + [index["outside"]]
        self._clear()

    def reset(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._lines: list[dict[str, Any]] = []
        self.names: list[str] = []
        self.place: list[int] = []  # each seat's place at the last line (_NO_PLACE: none, _UNSET: none yet)
        self.view: set[tuple[int, int]] = set()  # (viewer seat, seen seat) at the last line
        # the samples not yet turned into lines: their ticks, which were after a meeting, and their poses as
        # one flat list (x, z, yaw, active of each seat, sample after sample): no object per sample or player
        # outlives a record() call, so ~920 samples a match leave the garbage collector nothing to scan;
        # active as 1.0 / 0.0, as numpy reads Python floats several times faster than bools
        self._ticks: list[int] = []
        self._after_meeting: set[int] = set()
        self._poses: list[float] = []

    @property
    def lines(self) -> list[dict[str, Any]]:
        """Every line so far (the samples not yet turned into lines are, first)."""
        if self._ticks:
            self.flush()
        return self._lines

    def record(self, state: Any, after_meeting: bool = False) -> None:
        """Sample the world now; ``after_meeting``: the table after a meeting (the clock stood still, so the
        states it replaces held at this same tick too)."""
        if not self.names:
            self.names = [p.name for p in state.players]
            self.place = [_UNSET] * len(self.names)
            self._lines.append(
                {F.SIGHTS_VERSION_FIELD: F.SIGHTS_VERSION, F.SIGHT_PLAYERS: self.names,
                 F.SIGHT_PLACE_NAMES: self.places}
            )
        if after_meeting:
            self._after_meeting.add(len(self._ticks))
        self._ticks.append(state.tick)
        extend = self._poses.extend
        for p in state.players:
            extend((p.x, p.z, p.yaw, 1.0 if p.alive and not p.ejected else 0.0))

    def flush(self) -> None:
        """Turn the pending samples into lines: one for each sample where a place or a view pair changed."""
        ticks, after_meeting = self._ticks, self._after_meeting
        if not ticks:
            return
        n = len(self.names)
        poses = np.fromiter(self._poses, dtype=np.float64, count=len(self._poses)).reshape(len(ticks), n, 4)
        self._ticks, self._after_meeting, self._poses = [], set(), []
        x, z, yaw, active = poses[..., 0], poses[..., 1], poses[..., 2], poses[..., 3] > 0  # K x N each
        regions = self.map.region_indices(x, z)
        place = np.concatenate(
            [np.asarray([self.place]), np.where(active, np.asarray(self._region_place)[regions], _NO_PLACE)])
        view = np.zeros((len(ticks) + 1, n, n), dtype=bool)  # the last line's view, then each sample's
        for i, j in self.view:
            view[0, i, j] = True
        view[1:] = self.vision.views_batch(x, z, yaw, active, regions)
        # the changes, in the order of the lines: by sample, then seat (row-major nonzero)
        lines: dict[int, dict[str, Any]] = {}

        def new_line(k: int) -> dict[str, Any]:  # sample k's line, made at its first change
            lines[k] = {F.SIGHT_TICK: ticks[k], F.SIGHT_AFTER_MEETING: True} if k in after_meeting else {
                F.SIGHT_TICK: ticks[k]}
            return lines[k]

        pk, pi = np.nonzero(place[1:] != place[:-1])
        for k, i, w in zip(pk.tolist(), pi.tolist(), place[pk + 1, pi].tolist()):
            entry = lines.get(k) or new_line(k)
            entry.setdefault(F.SIGHT_PLACES, []).append([i, None if w == _NO_PLACE else w])
        now, was = view[1:], view[:-1]
        for field, diff in ((F.SIGHT_GAINED, now & ~was), (F.SIGHT_LOST, was & ~now)):
            dk, di, dj = np.nonzero(diff)
            for k, i, j in zip(dk.tolist(), di.tolist(), dj.tolist()):
                entry = lines.get(k) or new_line(k)
                entry.setdefault(field, []).append([i, j])
        self._lines.extend(lines[k] for k in sorted(lines))
        self.place = place[-1].tolist()
        self.view = {(i, j) for i, j in np.argwhere(view[-1]).tolist()}
