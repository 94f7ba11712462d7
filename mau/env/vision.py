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

    def sees(
        self, viewer: PlayerState, x: float, z: float, radius: float = 0.3, yaw: float | None = None
    ) -> bool:
        """True when a point (an object of ``radius``) is in the viewer's frustum, within the ego cap, in
        sight."""
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

    def sees_around(self, viewer: PlayerState, x: float, z: float, max_dist: float) -> bool:
        """True when a point is within ``max_dist`` and in line of sight, in any direction (privileged sight:
        turning the head is free, walls still block)."""
        dx, dz = x - viewer.x, z - viewer.z
        if dx * dx + dz * dz > max_dist * max_dist:
            return False
        return self.map.line_of_sight(viewer.x, viewer.z, x, z)

    def pairs_in_view(self, players: list[PlayerState], radius: float = 0.3) -> set[tuple[str, str]]:
        """Every (viewer, seen) pair of ``players`` with ``sees(viewer, seen.x, seen.z, radius)``: the same
        arithmetic, in one loop (the sight recorder asks this at every sub-step)."""
        out: set[tuple[str, str]] = set()
        max2, half, los = self.max_dist2, self.half_fov, self.map.line_of_sight
        atan2, sqrt, pi = math.atan2, math.sqrt, math.pi
        n = len(players)
        for i in range(n):
            a = players[i]
            ax, az = a.x, a.z
            for j in range(i + 1, n):
                b = players[j]
                dx, dz = b.x - ax, b.z - az
                d2 = dx * dx + dz * dz
                if d2 > max2:
                    continue
                for v, t, ddx, ddz in ((a, b, dx, dz), (b, a, -dx, -dz)):
                    if d2 > 1e-12:
                        d = sqrt(d2)
                        off = (atan2(ddz, ddx) - v.yaw + pi) % TWO_PI - pi
                        if abs(off) > half + atan2(radius, d):
                            continue
                    if los(v.x, v.z, t.x, t.z):
                        out.add((v.name, t.name))
        return out
