"""What a player can see: the view frustum, the ego distance cap and line of sight (walls block it)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mau.env.config import GameConfig
from mau.env.map import GameMap
from mau.env.state import PlayerState

TWO_PI = 2 * math.pi
# Angles computed by numpy within this of the frustum's edge are computed again by math.atan2: a libm (or a
# vectorised atan2) that differs in the last bit then cannot flip a pair.
EDGE_RECHECK = 1e-9
# The frustum test without atan2 (``frustum_test``) decides a pair only when it lies more than this (radians)
# inside or outside the frustum's edge; the others are decided by the plain atan2 expression.
FRUSTUM_MARGIN = 1e-6
# Headings beyond this (radians) leave the plain expression's reduction modulo TWO_PI (not exactly 2 pi) an
# error that is no longer negligible next to FRUSTUM_MARGIN: such viewers are decided by the plain expression
# (their cos and sin are passed as NaN).
YAW_LIMIT = 1e6


def in_frustum(dx: float, dz: float, d: float, yaw: float, half: float, radius: float) -> bool:
    """The plain frustum test of ``Vision.sees``: (dx, dz), at distance d = sqrt(dx * dx + dz * dz), within
    ``half`` of the heading ``yaw``, or an object of ``radius`` there partly so."""
    return abs((math.atan2(dz, dx) - yaw + math.pi) % TWO_PI - math.pi) <= half + math.atan2(radius, d)


def frustum_margin(half: float, radius: float) -> float:
    """``FRUSTUM_MARGIN`` when ``frustum_test`` holds for a frustum of half-width ``half`` and objects of
    ``radius`` (its reach, ``half + atan2(radius, d)``, stays within [0, pi] where cos is monotone); else
    infinity, which leaves every pair undecided (the plain expression decides them all)."""
    return FRUSTUM_MARGIN if 0.0 <= half < math.pi / 2 and radius >= 0.0 else math.inf


def frustum_test(dx: Any, dz: Any, d2: Any, cos_yaw: Any, sin_yaw: Any, half: float, radius: float,
                 margin: float) -> tuple[Any, Any]:
    """The frustum test ``abs((atan2(dz, dx) - yaw + pi) % TWO_PI - pi) <= half + atan2(radius, sqrt(d2))``
    (the plain expression of ``Vision.sees``) without atan2, for Python floats or numpy arrays alike: ``(g,
    m)``, the pair in view for sure where ``g > m``, out of view for sure where ``g < -m``; otherwise (within
    the margin, or NaN) the caller evaluates the plain expression.

    Why: with d = sqrt(d2), s = sqrt(d2 + radius**2) and the angle ``off`` between the heading and (dx, dz),
    ``dx * cos_yaw + dz * sin_yaw = d cos(off)`` and ``cos(half + atan2(radius, d)) = (d cos(half) -
    radius sin(half)) / s``; so ``g = d s (cos(off) - cos(reach))`` and ``m = margin d s``. Both angles lie in
    [0, pi] (``frustum_margin``), where cos is decreasing with a slope of at most 1: ``g > m`` means off <
    reach - margin (up to rounding), ``g < -m`` off > reach + margin.

    Rounding: g / (d s) is computed with an absolute error of a few 1e-16 (a handful of roundings of terms
    at most d s, and libm's cos/sin within a few ulp); the plain expression's two sides are off from the real
    angles by a few ulp of atan2, plus the reduction modulo TWO_PI, which is 2 pi less 2.4e-16: at most
    |yaw| / 2 pi * 2.4e-16 + ulp(|yaw|) < 2e-10 rad for |yaw| <= YAW_LIMIT (the caller passes NaN for the
    cos and sin of larger headings). Both errors together stay far below the margin of 1e-6 rad, so where
    this test decides, the plain expression decides the same way; only pairs within ~1e-6 rad of the edge
    (a handful a match) are left to it. ``tests/test_sights.py`` checks it on random and edge-of-frustum
    pairs."""
    d, s = np.sqrt(d2), np.sqrt(d2 + radius * radius)
    g = (dx * cos_yaw + dz * sin_yaw) * s - d * (math.cos(half) * d - math.sin(half) * radius)
    return g, margin * d * s


class Vision:
    def __init__(self, config: GameConfig, game_map: GameMap):
        self.map = game_map
        self.max_dist = config.ego_view_distance
        self.max_dist2 = config.ego_view_distance ** 2
        self.half_fov = config.fov_horizontal_rad / 2
        self._last: dict[str, tuple[float, float, float]] = {}  # each player's (x, z, yaw) at the last view
        self._view: set[tuple[str, str]] = set()
        self._key: list[tuple[str, float, float, float]] = []  # (name, x, z, yaw) of each, at the last view

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
        Python's floats): the frustum by ``frustum_test``, the pairs it leaves (near the frustum's edge) by
        ``pairs_in_view``'s expression, then line of sight."""
        n_samples, n = x.shape
        # every ordered pair at once by broadcasting (no gathers), laid out [i, j, k] = from i to j in sample
        # k: the samples innermost, so each numpy loop runs over K elements, not over N. x_j - x_i is, bit for
        # bit, minus x_i - x_j (IEEE rounding is symmetric), as pairs_in_view's (-dx, -dz) for a pair's b
        xt, zt, yt, rt = x.T.copy(), z.T.copy(), yaw.T.copy(), regions.T.copy()  # N x K
        dx = xt[None, :, :] - xt[:, None, :]
        dz = zt[None, :, :] - zt[:, None, :]
        d2 = dx * dx + dz * dz
        act = active.T
        other = ~np.eye(n, dtype=bool)[:, :, None]
        pairs = (d2 <= self.max_dist2) & act[None, :, :] & act[:, None, :] & other
        near = d2 <= 1e-12  # one spot: no direction to test, as pairs_in_view
        half = self.half_fov
        with np.errstate(invalid="ignore"):  # an infinite yaw, or an infinite margin at d = 0: NaN, undecided
            ok = np.abs(yt) <= YAW_LIMIT  # larger headings (and NaN): undecided, see frustum_test
            cos_yaw = np.where(ok, np.cos(yt), np.nan)[:, None, :]
            sin_yaw = np.where(ok, np.sin(yt), np.nan)[:, None, :]
            g, m = frustum_test(dx, dz, d2, cos_yaw, sin_yaw, half, radius, frustum_margin(half, radius))
            sure_in = g > m
            undecided = np.flatnonzero(pairs & ~near & ~sure_in & ~(g < -m))  # flat indices into N x N x K
        seen = pairs & (near | sure_in)  # a fresh C-ordered array: ravel() below is a view of it
        # a flat index e = (i * n + j) * K + k of N x N x K is the viewer's i * K + k and the seen's j * K + k
        # in the N x K arrays
        block = n * n_samples
        if len(undecided):
            seen.ravel()[undecided] = self._in_frustum_batch(
                dx.ravel()[undecided], dz.ravel()[undecided], d2.ravel()[undecided],
                yt.ravel()[undecided // block * n_samples + undecided % n_samples], radius)
        # regions are convex: within one, nothing blocks
        ri, rj = rt[:, None, :], rt[None, :, :]
        across = np.flatnonzero(seen & ((ri < 0) | (ri != rj)))
        if len(across):
            vi, si = across // block * n_samples + across % n_samples, across % block
            xf, zf, rf = xt.ravel(), zt.ravel(), rt.ravel()
            blocked = ~self.map.lines_of_sight_across(xf[vi], zf[vi], xf[si], zf[si], rf[vi], rf[si])
            seen.ravel()[across[blocked]] = False
        return seen.transpose(2, 0, 1)  # K x N x N (a view)

    def _in_frustum_batch(self, dx: np.ndarray, dz: np.ndarray, d2: np.ndarray, yaw: np.ndarray,
                          radius: float) -> np.ndarray:
        """``in_frustum`` of each pair (1-D arrays): numpy's arctan2, the pairs within ``EDGE_RECHECK`` of the
        frustum's edge decided again by ``math.atan2`` (a vectorised atan2 may differ in the last bit)."""
        pi, half = math.pi, self.half_fov
        off = np.abs(np.remainder(np.arctan2(dz, dx) - yaw + pi, TWO_PI) - pi)
        reach = half + np.arctan2(radius, np.sqrt(d2))
        seen = off <= reach
        for e in np.flatnonzero(np.abs(off - reach) < EDGE_RECHECK).tolist():
            seen[e] = in_frustum(float(dx[e]), float(dz[e]), math.sqrt(float(d2[e])), float(yaw[e]), half,
                                 radius)
        return seen
