"""What the world saw between step ends (``sights.jsonl``, docs/formats.md): every change of a player's place
(a room or corridor of the map; null once dead or ejected) and of who has whom in view (the ego view: frustum,
line of sight and distance cap, ``mau.env.vision``), sampled at the sim's sub-step rate (0.25 s) and after each
meeting. Players and places are written as indices into the first line's lists (a match's file stays small). It
is what the claim checker (``mau.claims.check``) reads to say where a player was and whether a speaker could have
seen what it claims. Both worlds record it: the sim and minecraft share the sub-step loop.
"""

from __future__ import annotations

from typing import Any

from mau import schema as F

_UNSET = object()


class SightRecorder:
    """Keeps the changes as lines (the first: the legend); ``record(state)`` samples the world now.

    Cheap to call at every sub-step: a player's place and a pair's view are computed again only when a player of
    it moved or turned since the last sample (a crewmate holding a station stands still for a minute), a pair out
    of range costs one distance, and a pair in one region (rooms and corridors are convex) needs no line-of-sight
    walk. The lines are those of computing everything at every sample (tests/test_sights.py compares them)."""

    def __init__(self, game_map: Any, vision: Any):
        self.map = game_map
        self.vision = vision
        self.places = list(dict.fromkeys(r.name for r in game_map.regions)) + ["outside"]
        self._place_index = {p: i for i, p in enumerate(self.places)}
        # region index -> place index; -1 (no region) is the last entry: "outside"
        self._place_of_region = [self._place_index[r.name] for r in game_map.regions] + [len(self.places) - 1]
        self.lines: list[dict[str, Any]] = []
        self.place: dict[str, int | None] = {}
        self.view: set[tuple[int, int]] = set()
        self._forget()

    def _forget(self) -> None:
        """Drop the per-player and per-pair memo (a new match, a restored snapshot)."""
        self._pose: list[tuple[float, float, float] | None] = []  # per seat: (x, z, yaw) at the last sample
        self._region: list[int] = []
        self._pair: list[int] = []  # i * n + j (i < j) -> Vision.pair_sight bits at those poses; -1: unknown
        self._active: list[int] = []  # the seats active at the last sample

    def reset(self) -> None:
        self.lines, self.place, self.view = [], {}, set()
        self._forget()

    def record(self, state: Any, after_meeting: bool = False) -> None:
        """Sample the world now; ``after_meeting``: the table after a meeting (the clock stood still, so the
        states it replaces held at this same tick too)."""
        players = state.players
        if not self.lines:
            self.lines.append({F.SIGHTS_VERSION_FIELD: F.SIGHTS_VERSION,
                               F.SIGHT_PLAYERS: [p.name for p in players], F.SIGHT_PLACE_NAMES: self.places})
        n = len(players)
        if len(self._pose) != n:
            self._pose, self._region, self._pair = [None] * n, [-1] * n, [-1] * (n * n)
        pose, region, pairs = self._pose, self._region, self._pair
        changed: list[list[int | None]] = []
        moved = [False] * n
        active: list[int] = []
        for i, p in enumerate(players):
            if p.active:
                active.append(i)
                now = (p.x, p.z, p.yaw)
                if now != pose[i]:
                    pose[i], moved[i] = now, True
                    region[i] = self.map.region_index(p.x, p.z)
                where: int | None = self._place_of_region[region[i]]
            else:
                pose[i], where = None, None
            if self.place.get(p.name, _UNSET) != where:
                self.place[p.name] = where
                changed.append([i, where])
        pair_sight, max2 = self.vision.pair_sight, self.vision.max_dist2
        seen_changed = active != self._active  # a player left the table: its pairs leave the view set
        self._active = active
        for k, i in enumerate(active):
            a, ma, row = players[i], moved[i], i * n
            for j in active[k + 1:]:
                if ma or moved[j] or pairs[row + j] < 0:
                    b = players[j]
                    dx, dz = b.x - a.x, b.z - a.z
                    # out of range: the first test of pair_sight, here without the call (a third of all pairs)
                    both = 0 if dx * dx + dz * dz > max2 else pair_sight(a, b, region[i], region[j])
                    if both != pairs[row + j]:
                        pairs[row + j], seen_changed = both, True
        view = self.view
        if seen_changed:  # else every pair's bits are as at the last sample, and so is the set
            view = set()
            for k, i in enumerate(active):
                row = i * n
                for j in active[k + 1:]:
                    both = pairs[row + j]
                    if both & 1:
                        view.add((i, j))
                    if both & 2:
                        view.add((j, i))
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

    # -- snapshots (the lines are never changed once written: shared, not copied) -----------------------------
    def snapshot(self) -> dict[str, Any]:
        return {"lines": tuple(self.lines), "place": dict(self.place), "view": set(self.view)}

    def restore(self, snap: dict[str, Any] | None) -> None:
        if snap is None:
            self.reset()
            return
        self.lines, self.place, self.view = list(snap["lines"]), dict(snap["place"]), set(snap["view"])
        self._forget()
