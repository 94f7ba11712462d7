"""What a player can see: the view frustum, the ego distance cap and line of sight (walls block it)."""

from __future__ import annotations

import math

from mau.env.config import GameConfig
from mau.env.map import GameMap
from mau.env.state import PlayerState

TWO_PI = 2 * math.pi


class Vision:
    def __init__(self, config: GameConfig, game_map: GameMap):
        self.map = game_map
        self.max_dist = config.ego_view_distance
        self.max_dist2 = config.ego_view_distance ** 2
        self.half_fov = config.fov_horizontal_rad / 2

    def sees(self, viewer: PlayerState, x: float, z: float, radius: float = 0.3, yaw: float | None = None) -> bool:
        """True when a point (an object of ``radius``) is in the viewer's frustum, within the ego cap, in sight."""
        dx, dz = x - viewer.x, z - viewer.z
        d2 = dx * dx + dz * dz
        if d2 > self.max_dist2:
            return False
        if d2 > 1e-12:
            d = math.sqrt(d2)
            off = (math.atan2(dz, dx) - (viewer.yaw if yaw is None else yaw) + math.pi) % TWO_PI - math.pi
            # Count the object as seen when any part of it is inside the frustum.
            if abs(off) > self.half_fov + math.atan2(radius, d):
                return False
        return self.map.line_of_sight(viewer.x, viewer.z, x, z)

    def pairs_in_view(self, players: list[PlayerState], radius: float = 0.3) -> set[tuple[str, str]]:
        """Every (viewer, seen) pair of ``players`` with ``sees(viewer, seen.x, seen.z, radius)``."""
        out: set[tuple[str, str]] = set()
        region = self.map.region_index
        regions = [region(p.x, p.z) for p in players]
        for i, a in enumerate(players):
            for j in range(i + 1, len(players)):
                b = players[j]
                both = self.pair_sight(a, b, regions[i], regions[j], radius)
                if both & 1:
                    out.add((a.name, b.name))
                if both & 2:
                    out.add((b.name, a.name))
        return out

    def pair_sight(self, a: PlayerState, b: PlayerState, ra: int, rb: int, radius: float = 0.3) -> int:
        """Who of a pair sees the other, as bits (1: a sees b, 2: b sees a), with the regions ``ra``, ``rb`` of
        their places known: the arithmetic of ``sees`` (the sight recorder asks this for every pair that moved,
        at every sub-step)."""
        dx, dz = b.x - a.x, b.z - a.z
        d2 = dx * dx + dz * dz
        if d2 > self.max_dist2:
            return 0
        same = ra >= 0 and ra == rb  # regions are convex: nothing between them blocks the view
        out = 0
        for bit, v, t, ddx, ddz in ((1, a, b, dx, dz), (2, b, a, -dx, -dz)):
            if d2 > 1e-12:
                off = (math.atan2(ddz, ddx) - v.yaw + math.pi) % TWO_PI - math.pi
                if abs(off) > self.half_fov + math.atan2(radius, math.sqrt(d2)):
                    continue
            if same or self.map.ray_clear(v.x, v.z, t.x, t.z):
                out |= bit
        return out
