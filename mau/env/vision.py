"""What a player can see: the view frustum, the ego distance cap and line of sight (walls block it)."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from mau.env.config import GameConfig
from mau.env.map import GameMap
from mau.env.state import PlayerState

TWO_PI = 2 * math.pi
# Angles computed by numpy within this of the frustum's edge are computed again by math.atan2: a libm (or a
# vectorised atan2) that differs in the last bit then cannot flip a pair.
EDGE_RECHECK = 1e-9


@lru_cache(maxsize=16)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n, 1)


class Vision:
    def __init__(self, config: GameConfig, game_map: GameMap):
        self.map = game_map
        self.max_dist = config.ego_view_distance
        self.max_dist2 = config.ego_view_distance ** 2
        self.half_fov = config.fov_horizontal_rad / 2
        self._last: dict[str, tuple[float, float, float]] = {}  # each player's (x, z, yaw) at the last view
        self._view: set[tuple[str, str]] = set()
        self._key: list[tuple[str, float, float, float]] = []  # (name, x, z, yaw) of each, at the last view
        # the observations' frame of the last moment observed (mau.env.observation.Frame: kept here, as the
        # view, because it lives as long as the world); a pure function of its key, so never stale
        self.frame: Any = None

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
        return self.sees_around_from(viewer.x, viewer.z, x, z, max_dist)

    def sees_around_from(self, vx: float, vz: float, x: float, z: float, max_dist: float) -> bool:
        """``sees_around`` from the point (vx, vz) (a position logged earlier, ``SimWorld.last_known``)."""
        dx, dz = x - vx, z - vz
        if dx * dx + dz * dz > max_dist * max_dist:
            return False
        return self.map.line_of_sight(vx, vz, x, z)

    def view(self, players: list[PlayerState]) -> set[tuple[str, str]]:
        """``pairs_in_view(players)`` (the default radius), recomputed only for the pairs with a player that
        moved or turned since the last call: each observation of a step asks it (the sight recorder computes
        its views in batches, ``views_batch``). The same set comes back while nobody moves."""
        key = [(p.name, p.x, p.z, p.yaw) for p in players]
        if key == self._key:
            return self._view
        self._key = key
        now = {name: (x, z, yaw) for name, x, z, yaw in key}
        last, view = self._last, self._view
        still = {n for n, s in now.items() if last.get(n) == s}
        if len(still) < 2:
            view = self.pairs_in_view(players)
        else:
            # a pair of players that both stand as they stood is seen as it was
            kept = {pair for pair in view if pair[0] in still and pair[1] in still}
            view = self.pairs_in_view(players, skip=still) | kept
        self._last, self._view = now, view
        return view

    def pairs_in_view(self, players: list[PlayerState], radius: float = 0.3,
                      skip: set[str] | frozenset[str] = frozenset()) -> set[tuple[str, str]]:
        """Every (viewer, seen) pair of ``players`` with ``sees(viewer, seen.x, seen.z, radius)``: the same
        arithmetic, in one loop; pairs of two players named in ``skip`` are left out."""
        out: set[tuple[str, str]] = set()
        max2, half, gmap = self.max_dist2, self.half_fov, self.map
        region, los = gmap.region_index, gmap.line_of_sight_across
        atan2, sqrt, pi = math.atan2, math.sqrt, math.pi
        at = [(p.name, p.x, p.z, p.yaw, region(p.x, p.z)) for p in players]
        n = len(at)
        for i in range(n):
            an, ax, az, ayaw, ar = at[i]
            a_still = an in skip
            for j in range(i + 1, n):
                bn, bx, bz, byaw, br = at[j]
                if a_still and bn in skip:
                    continue
                dx, dz = bx - ax, bz - az
                d2 = dx * dx + dz * dz
                if d2 > max2:
                    continue
                # regions are convex: within one, nothing blocks the line (line_of_sight's own shortcut)
                same = ar >= 0 and ar == br
                if d2 > 1e-12:
                    reach = half + atan2(radius, sqrt(d2))
                    if abs((atan2(dz, dx) - ayaw + pi) % TWO_PI - pi) <= reach and (
                            same or los(ax, az, bx, bz, ar, br)):
                        out.add((an, bn))
                    if abs((atan2(-dz, -dx) - byaw + pi) % TWO_PI - pi) <= reach and (
                            same or los(bx, bz, ax, az, br, ar)):
                        out.add((bn, an))
                else:
                    if same or los(ax, az, bx, bz, ar, br):
                        out.add((an, bn))
                    if same or los(bx, bz, ax, az, br, ar):
                        out.add((bn, an))
        return out

    def views_batch(self, x: np.ndarray, z: np.ndarray, yaw: np.ndarray, active: np.ndarray,
                    regions: np.ndarray, radius: float = 0.3) -> np.ndarray:
        """``pairs_in_view`` of K samples of N players at once, as a K x N x N array: ``[k, i, j]`` when
        player i sees player j in sample k. ``x``, ``z``, ``yaw``, ``active`` (alive and not ejected),
        ``regions`` (``map.region_index``): K x N arrays. The same arithmetic in numpy (IEEE float64, as
        Python's floats), the pairs near the frustum's edge decided by ``math.atan2`` as ``pairs_in_view``."""
        n_samples, n = x.shape
        first, second = _pairs(n)  # each unordered pair once: a = first, b = second
        dx_all = x[:, second] - x[:, first]
        dz_all = z[:, second] - z[:, first]
        d2_all = dx_all * dx_all + dz_all * dz_all
        k, q = np.nonzero(active[:, first] & active[:, second] & (d2_all <= self.max_dist2))
        a, b = first[q], second[q]
        dx, dz, d2 = dx_all[k, q], dz_all[k, q], d2_all[k, q]
        pi, half = math.pi, self.half_fov
        reach = half + np.arctan2(radius, np.sqrt(d2))
        near = d2 <= 1e-12  # one spot: no direction to test, as pairs_in_view
        # a looking at b, then b at a (pairs_in_view's atan2(-dz, -dx): IEEE negation is exact)
        off_ab = np.abs(np.remainder(np.arctan2(dz, dx) - yaw[k, a] + pi, TWO_PI) - pi)
        off_ba = np.abs(np.remainder(np.arctan2(-dz, -dx) - yaw[k, b] + pi, TWO_PI) - pi)
        kk = np.concatenate([k, k])
        ii, jj = np.concatenate([a, b]), np.concatenate([b, a])
        off, reach2, near2 = np.concatenate([off_ab, off_ba]), np.concatenate([reach, reach]), np.concatenate(
            [near, near])
        seen = near2 | (off <= reach2)
        for e in np.flatnonzero(~near2 & (np.abs(off - reach2) < EDGE_RECHECK)).tolist():
            s, i, j = int(kk[e]), int(ii[e]), int(jj[e])
            ddx, ddz = float(x[s, j]) - float(x[s, i]), float(z[s, j]) - float(z[s, i])
            d = math.sqrt(ddx * ddx + ddz * ddz)
            seen[e] = abs((math.atan2(ddz, ddx) - float(yaw[s, i]) + pi) % TWO_PI - pi) <= half + math.atan2(
                radius, d)
        kk, ii, jj = kk[seen], ii[seen], jj[seen]
        ri, rj = regions[kk, ii], regions[kk, jj]
        across = np.flatnonzero((ri < 0) | (ri != rj))  # regions are convex: within one, nothing blocks
        if len(across):
            ka, ia, ja = kk[across], ii[across], jj[across]
            blocked = ~self.map.lines_of_sight_across(
                x[ka, ia], z[ka, ia], x[ka, ja], z[ka, ja], ri[across], rj[across])
            keep = np.ones(len(kk), dtype=bool)
            keep[across[blocked]] = False
            kk, ii, jj = kk[keep], ii[keep], jj[keep]
        out = np.zeros((n_samples, n, n), dtype=bool)
        out[kk, ii, jj] = True
        return out
