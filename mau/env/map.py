"""The map as data: loading, validation and the compiled geometry (floor grid, rooms, doorways, navigation).

A map file (YAML, see ``docs/game.md``) lists rooms and corridors as axis-aligned rectangles of floor blocks.
Everything else is wall. Because every region is a convex rectangle, a straight line between two points of
one region never crosses a wall; navigation therefore only needs the doorways (shared edges) between regions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from mau.errors import ConfigError

MAP_FORMAT_VERSION = 1
# A point of a segment this far inside a wall cell proves the segment blocked: line_of_sight's floating-point
# walk strays from the exact cells only within about 1e-12 blocks of a cell corner (docs/game.md).
WALL_MARGIN = 1e-6
# A segment proven clear by its doorways (``_through_doorways``) starts and ends this far inside its regions
# and crosses each doorway this far from the doorway's ends (docs/game.md, "Line of sight").
INSIDE_MARGIN = 1e-6
DOOR_MARGIN = 1e-3
MAPS_DIR = Path(__file__).parent / "maps"

Rect = tuple[int, int, int, int]  # x0, x1, z0, z1 (inclusive block coordinates)
RGB = tuple[int, int, int]


def _check_rect(rect: list[int]) -> list[int]:
    if len(rect) != 4:
        raise ValueError("a rect is [x0, x1, z0, z1]")
    x0, x1, z0, z1 = rect
    if x1 < x0 or z1 < z0:
        raise ValueError(f"rect {rect} is empty: write it as [x0, x1, z0, z1] with x0 <= x1 and z0 <= z1")
    return rect


class RoomSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    rect: list[int]
    floor_color: list[int] = [128, 128, 128]
    wall_color: list[int] = [180, 180, 180]

    _v = field_validator("rect")(classmethod(lambda cls, v: _check_rect(v)))


class CorridorSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    rects: list[list[int]]

    @field_validator("rects")
    @classmethod
    def _rects(cls, v: list[list[int]]) -> list[list[int]]:
        if not v:
            raise ValueError("a corridor needs at least one rect")
        return [_check_rect(r) for r in v]


class MapSpec(BaseModel):
    """The map file, validated. Field names are the YAML keys."""

    model_config = ConfigDict(extra="forbid")
    format_version: int
    name: str
    floor_y: int = 65
    wall_height: int = 3
    spawn_room: str
    button: list[int]
    rooms: list[RoomSpec]
    corridors: list[CorridorSpec] = []
    corridor_floor_color: list[int] = [120, 120, 125]
    corridor_wall_color: list[int] = [165, 165, 170]
    stations: list[list[int]]

    @field_validator("format_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != MAP_FORMAT_VERSION:
            raise ValueError(f"map format {v} is unknown; this mau reads format {MAP_FORMAT_VERSION} (see "
                             f"docs/game.md)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "MapSpec":
        names = [r.name for r in self.rooms]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"rooms: duplicate room name {dup[0]!r}; give every room its own name")
        if self.spawn_room not in names:
            raise ValueError(f"spawn_room: {self.spawn_room!r} is not a room; use one of {names}")
        return self


@dataclass(frozen=True)
class Region:
    """One floor rectangle: a room or a piece of a corridor."""

    index: int
    name: str  # room name, or "corridor <name>"
    room: str | None  # the room's name; None for corridors
    rect: Rect
    floor_rgb: RGB
    wall_rgb: RGB

    def contains(self, x: float, z: float) -> bool:
        x0, x1, z0, z1 = self.rect
        return x0 <= x < x1 + 1 and z0 <= z < z1 + 1


@dataclass(frozen=True)
class Portal:
    """A doorway: the shared edge of two regions; ``point`` is its midpoint."""

    a: int
    b: int
    point: tuple[float, float]


class GameMap:
    """The compiled map: grids for fast lookups, doorways, and all-pairs doorway distances for navigation."""

    def __init__(self, spec: MapSpec, source: str = "<memory>"):
        self.spec = spec
        self.source = source
        self.name = spec.name
        self.floor_y = spec.floor_y
        self.wall_height = spec.wall_height
        regions: list[Region] = []
        for room in spec.rooms:
            regions.append(
                Region(
                    len(regions), room.name, room.name, tuple(room.rect), _rgb(room.floor_color),
                    _rgb(room.wall_color),
                )
            )
        for corridor in spec.corridors:
            for rect in corridor.rects:
                regions.append(Region(len(regions), f"corridor {corridor.name}", None, tuple(rect),
                                      _rgb(spec.corridor_floor_color), _rgb(spec.corridor_wall_color)))
        self.regions = regions
        self.room_names = [r.name for r in spec.rooms]
        xs = [v for r in regions for v in r.rect[:2]]
        zs = [v for r in regions for v in r.rect[2:]]
        # One block of wall around everything, so rays and lookups never leave the grid.
        self.origin = (min(xs) - 2, min(zs) - 2)
        self.size = (max(xs) - min(xs) + 5, max(zs) - min(zs) + 5)
        self.region_grid = np.full(self.size, -1, dtype=np.int16)
        for r in regions:
            x0, x1, z0, z1 = r.rect
            sub = self.region_grid[x0 - self.origin[0]: x1 - self.origin[0] + 1,
                                   z0 - self.origin[1]: z1 - self.origin[1] + 1]
            if (sub >= 0).any():
                other = regions[int(sub[sub >= 0][0])].name
                raise ConfigError(f"map {source}: {r.name} overlaps {other}; rectangles must not share "
                                  f"blocks")
            sub[...] = r.index
        self.floor = self.region_grid >= 0
        # Flat copies for the hot path (pure-Python indexing is faster on lists than on numpy scalars).
        self._sz = self.size[1]
        self._region_flat: list[int] = self.region_grid.ravel().tolist()
        self.portals = self._find_portals()
        # each region's box in continuous coordinates and, per side (x+, x-, z+, z-), its doorways
        self._boxes = [(float(x0), float(x1 + 1), float(z0), float(z1 + 1)) for x0, x1, z0, z1 in
                       (r.rect for r in regions)]
        self._doors = self._find_doors()
        self._door_tables()
        self._check_connected()
        self.stations: list[tuple[float, float]] = []
        self.station_rooms: list[str] = []
        for i, (sx, sz) in enumerate(spec.stations):
            self.stations.append((sx + 0.5, sz + 0.5))
            room = self.room_at(sx + 0.5, sz + 0.5)
            if room is None:
                raise ConfigError(f"map {source}: stations[{i}] = {[sx, sz]} is not inside a room; move it "
                                  f"onto a room's floor")
            self.station_rooms.append(room)
        bx, bz = spec.button
        self.button = (bx + 0.5, bz + 0.5)
        if self.room_at(*self.button) != spec.spawn_room:
            raise ConfigError(f"map {source}: button {spec.button} is not in spawn_room {spec.spawn_room}; "
                              f"move it there")
        self.room_centers = {r.name: _rect_center(r.rect) for r in regions if r.room}
        self._build_nav()

    # -- lookups ---------------------------------------------------------------------------------------------
    def region_index(self, x: float, z: float) -> int:
        ix = math.floor(x) - self.origin[0]
        iz = math.floor(z) - self.origin[1]
        if 0 <= ix < self.size[0] and 0 <= iz < self._sz:
            return self._region_flat[ix * self._sz + iz]
        return -1

    def is_floor(self, x: float, z: float) -> bool:
        return self.region_index(x, z) >= 0

    def room_at(self, x: float, z: float) -> str | None:
        i = self.region_index(x, z)
        return self.regions[i].room if i >= 0 else None

    def place_name(self, x: float, z: float) -> str:
        """Room name, or the corridor's name (``corridor Cafeteria-Weapons``), for observations and logs."""
        i = self.region_index(x, z)
        return self.regions[i].name if i >= 0 else "outside"

    # -- line of sight ---------------------------------------------------------------------------------------
    def line_of_sight(self, ax: float, az: float, bx: float, bz: float) -> bool:
        """True when the segment a-b crosses only floor blocks (walls are taller than the eye)."""
        ra, rb = self.region_index(ax, az), self.region_index(bx, bz)
        if ra >= 0 and ra == rb:
            return True  # regions are convex
        return self.line_of_sight_across(ax, az, bx, bz, ra, rb)

    def line_of_sight_across(self, ax: float, az: float, bx: float, bz: float, ra: int = -1,
                             rb: int = -1) -> bool:
        """``line_of_sight`` without its shortcut for two points of one region (the caller knows they are
        not); ``ra``, ``rb``: the regions of a and b when the caller knows them (``_wall_beyond`` and
        ``_through_doorways`` then answer most pairs without the traversal)."""
        if (ra >= 0 and self._wall_beyond(ax, az, bx, bz, ra)) or (
                rb >= 0 and self._wall_beyond(bx, bz, ax, az, rb)):
            return False
        if ra >= 0 and rb >= 0:
            proof = self._through_doorways(ax, az, bx, bz, ra, rb)
            if proof is not None:
                return proof
        # Amanatides-Woo grid traversal.
        ix, iz = math.floor(ax), math.floor(az)
        tx, tz = math.floor(bx), math.floor(bz)
        dx, dz = bx - ax, bz - az
        step_x = 1 if dx > 0 else -1
        step_z = 1 if dz > 0 else -1
        inf = float("inf")
        t_dx = abs(1.0 / dx) if dx else inf
        t_dz = abs(1.0 / dz) if dz else inf
        t_mx = ((ix + 1 - ax) if dx > 0 else (ax - ix)) * t_dx if dx else inf
        t_mz = ((iz + 1 - az) if dz > 0 else (az - iz)) * t_dz if dz else inf
        ox, oz, sz, flat = self.origin[0], self.origin[1], self._sz, self._region_flat
        n = abs(tx - ix) + abs(tz - iz)
        for _ in range(n):
            if t_mx < t_mz:
                ix += step_x
                t_mx += t_dx
            else:
                iz += step_z
                t_mz += t_dz
            if flat[(ix - ox) * sz + (iz - oz)] < 0:
                return False
        return True

    def _wall_beyond(self, ax: float, az: float, bx: float, bz: float, r: int) -> bool:
        """True when the segment from a (in region ``r``) to b passes through the inside of a wall cell half
        a block beyond the region, on the side it leaves by: then ``line_of_sight`` is False, whichever way
        its traversal walks (docs/game.md, "Line of sight"). False: no proof here (walk the cells)."""
        x0, x1, z0, z1 = self.regions[r].rect
        dx, dz = bx - ax, bz - az
        t = 1.0  # the parameter of the point half a block beyond the region's box (1: b itself)
        if dx > 0:
            t = (x1 + 1.5 - ax) / dx
        elif dx < 0:
            t = (x0 - 0.5 - ax) / dx
        if dz > 0:
            t = min(t, (z1 + 1.5 - az) / dz)
        elif dz < 0:
            t = min(t, (z0 - 0.5 - az) / dz)
        if not 0.0 < t < 1.0:
            return False  # b lies before that point
        px, pz = ax + t * dx, az + t * dz
        ix, iz = math.floor(px), math.floor(pz)
        if self._region_flat[(ix - self.origin[0]) * self._sz + (iz - self.origin[1])] >= 0:
            return False  # floor there: a doorway
        fx, fz = px - ix, pz - iz
        return WALL_MARGIN < fx < 1.0 - WALL_MARGIN and WALL_MARGIN < fz < 1.0 - WALL_MARGIN

    def _through_doorways(self, ax: float, az: float, bx: float, bz: float, ra: int,
                          rb: int) -> bool | None:
        """Follow the segment from a (in region ``ra``) to b (in ``rb``) region by region, through the
        doorway it leaves each one by. True when it reaches ``rb`` that way and a and b lie inside their
        regions: then it crosses only floor, and ``line_of_sight``'s cell walk finds every cell floor. False
        when it leaves a region beyond ``ra`` through a wall and ``_wall_beyond`` of that region proves it
        blocked (docs/game.md, "Line of sight"). None: no proof here (walk the cells). A region at a time: a
        few steps where the walk takes one per cell."""
        boxes, m = self._boxes, INSIDE_MARGIN
        inside = True  # a and b inside their boxes: needed for the path's proof, not for the wall probe's
        for px, pz, r in ((ax, az, ra), (bx, bz, rb)):
            x0, x1, z0, z1 = boxes[r]
            if not (x0 + m <= px <= x1 - m and z0 + m <= pz <= z1 - m):
                inside = False  # on (or next to) a wall: the walk decides
        dx, dz = bx - ax, bz - az
        inf, r = float("inf"), ra
        for _ in range(len(boxes)):
            if r == rb:
                return True if inside else None
            x0, x1, z0, z1 = boxes[r]
            tx = (x1 - ax) / dx if dx > 0 else (x0 - ax) / dx if dx < 0 else inf
            tz = (z1 - az) / dz if dz > 0 else (z0 - az) / dz if dz < 0 else inf
            if tx < tz:  # leaves by an x side, at z = along
                side, along = (0 if dx > 0 else 1), az + tx * dz
            elif tz < tx:
                side, along = (2 if dz > 0 else 3), ax + tz * dx
            else:
                return None  # through a corner
            for lo, hi, nxt in self._doors[r][side]:
                if lo + DOOR_MARGIN <= along <= hi - DOOR_MARGIN:
                    r = nxt
                    break
            else:
                # into a wall, or too near a doorway's end: the wall probe of this region (the caller probed
                # ra's already); it holds for any region the segment crosses, not only a's
                return False if r != ra and self._wall_beyond(ax, az, bx, bz, r) else None
        return None

    def _door_tables(self) -> None:
        """numpy copies for the batched lookups: the region grid flat, the boxes (a last dummy row for region
        -1) and each region's doorways per side (x+, x-, z+, z-) as rows of ``lo + DOOR_MARGIN``,
        ``hi - DOOR_MARGIN`` and the neighbour (padding: an empty span, lo inf and hi -inf). The margins added
        here are the same IEEE sums ``_through_doorways`` makes at each test."""
        n = len(self.regions)
        self._box_array = np.array(self._boxes + [(0.0, 0.0, 0.0, 0.0)])
        self._box_columns = tuple(np.ascontiguousarray(c) for c in self._box_array.T)  # x0, x1, z0, z1
        self._grid_flat = self.region_grid.ravel().astype(np.int64)
        width = max(1, max(len(doors) for sides in self._doors for doors in sides))
        self._door_lo = np.full((n, 4, width), np.inf)
        self._door_hi = np.full((n, 4, width), -np.inf)
        self._door_next = np.zeros((n, 4, width), dtype=np.int64)
        for i, sides in enumerate(self._doors):
            for s, doors in enumerate(sides):
                for d, (lo, hi, j) in enumerate(doors):
                    self._door_lo[i, s, d], self._door_hi[i, s, d] = lo + DOOR_MARGIN, hi - DOOR_MARGIN
                    self._door_next[i, s, d] = j
        self._door_lo_rows = self._door_lo.reshape(n * 4, width)
        self._door_hi_rows = self._door_hi.reshape(n * 4, width)

    def _find_doors(self) -> list[list[list[tuple[float, float, int]]]]:
        """Per region, per side (x+, x-, z+, z-): (lo, hi, neighbour) for each edge shared with a neighbour,
        lo..hi along the side."""
        doors: list[list[list[tuple[float, float, int]]]] = [[[], [], [], []] for _ in self.regions]
        for i, (ax0, ax1, az0, az1) in enumerate(self._boxes):
            for j, (bx0, bx1, bz0, bz1) in enumerate(self._boxes):
                if i == j:
                    continue
                for side, touch in ((0, ax1 == bx0), (1, ax0 == bx1)):
                    lo, hi = max(az0, bz0), min(az1, bz1)
                    if touch and hi > lo:
                        doors[i][side].append((lo, hi, j))
                for side, touch in ((2, az1 == bz0), (3, az0 == bz1)):
                    lo, hi = max(ax0, bx0), min(ax1, bx1)
                    if touch and hi > lo:
                        doors[i][side].append((lo, hi, j))
        return doors

    # -- the same, for many points at once (the sight recorder's batches) ------------------------------------
    def region_indices(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """``region_index`` of each point of the arrays ``x``, ``z`` (same shape): -1 outside every region."""
        ix = np.floor(x) - self.origin[0]
        iz = np.floor(z) - self.origin[1]
        inside = (ix >= 0) & (ix < self.size[0]) & (iz >= 0) & (iz < self._sz)
        # whole numbers in float64: the flat cell index is exact; points outside read cell 0, then -1
        cell = np.where(inside, ix * self._sz + iz, 0.0).astype(np.int64)
        return np.where(inside, self._grid_flat[cell], -1)

    def lines_of_sight_across(self, ax: np.ndarray, az: np.ndarray, bx: np.ndarray, bz: np.ndarray,
                              ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
        """``line_of_sight_across`` of each segment (1-D arrays): ``_wall_beyond`` of both ends and
        ``_through_doorways`` in numpy with the scalar code's IEEE arithmetic (so the same answers), then the
        cell walk for the segments neither proves."""
        m = len(ax)
        cat = np.concatenate
        both = self._walls_beyond(cat([ax, bx]), cat([az, bz]), cat([bx, ax]), cat([bz, az]), cat([ra, rb]))
        out = ~(both[:m] | both[m:])
        proven = np.zeros(m, dtype=bool)
        todo = np.flatnonzero(out & (ra >= 0) & (rb >= 0))
        if len(todo):
            clear, blocked = self._through_doorways_batch(ax[todo], az[todo], bx[todo], bz[todo], ra[todo],
                                                          rb[todo])
            proven[todo] = clear | blocked
            out[todo[blocked]] = False
        # the cell walk in Python: a few hundred segments a match, each a few dozen cells (numpy's per-call
        # cost made a vectorised walk, a call per cell step, no cheaper)
        walk = self.line_of_sight_across  # no regions given: the walk alone
        rest = np.flatnonzero(out & ~proven)
        for e, x0, z0, x1, z1 in zip(rest.tolist(), ax[rest].tolist(), az[rest].tolist(), bx[rest].tolist(),
                                     bz[rest].tolist()):
            out[e] = walk(x0, z0, x1, z1)
        return out

    def _through_doorways_batch(self, ax: np.ndarray, az: np.ndarray, bx: np.ndarray, bz: np.ndarray,
                                ra: np.ndarray, rb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``_through_doorways`` of each segment (``ra``, ``rb`` >= 0) as two masks, (True, False): the same
        tests, a region at a time for all segments still on their way (those that reach ``rb`` or stop drop
        out), then the wall probe of the regions where segments stopped at a wall."""
        cols, m = self._box_columns, INSIDE_MARGIN  # 1-D takes, cheaper than rows of the box array
        ax0, ax1, az0, az1 = (c[ra] for c in cols)
        bx0, bx1, bz0, bz1 = (c[rb] for c in cols)
        inside = ((ax0 + m <= ax) & (ax <= ax1 - m) & (az0 + m <= az) & (az <= az1 - m)
                  & (bx0 + m <= bx) & (bx <= bx1 - m) & (bz0 + m <= bz) & (bz <= bz1 - m))
        arrived = np.zeros(len(ax), dtype=bool)
        stopped = np.full(len(ax), -1)  # the region a segment left through a wall (-1: none)
        live = np.arange(len(ax))  # the segments on their way, in region r
        x, z, r, rb_live = ax, az, ra, rb
        dx, dz = bx - ax, bz - az
        inf = float("inf")
        for _ in range(len(self._boxes)):
            there = r == rb_live
            arrived[live[there]] = True
            go = np.flatnonzero(~there)
            if not len(go):
                break
            live, x, z, dx, dz, r, rb_live = live[go], x[go], z[go], dx[go], dz[go], r[go], rb_live[go]
            x0, x1, z0, z1 = (c[r] for c in cols)
            with np.errstate(divide="ignore", invalid="ignore"):
                tx = np.where(dx > 0, (x1 - x) / dx, np.where(dx < 0, (x0 - x) / dx, inf))
                tz = np.where(dz > 0, (z1 - z) / dz, np.where(dz < 0, (z0 - z) / dz, inf))
                by_x = tx < tz
                side = np.where(by_x, np.where(dx > 0, 0, 1), np.where(dz > 0, 2, 3))
                along = np.where(by_x, z + tx * dz, x + tz * dx)[:, None]
            # the doorway it leaves by (at most one matches: a side's doorways do not overlap); through a
            # corner (tx == tz) proves nothing
            row = r * 4 + side  # the rows of the tables as (region, side) x doorway: one index, not two
            hit = (self._door_lo_rows[row] <= along) & (along <= self._door_hi_rows[row])
            door = hit.argmax(axis=1)
            through = hit[np.arange(len(r)), door]
            by_side = by_x | (tz < tx)
            wall = np.flatnonzero(by_side & ~through)
            stopped[live[wall]] = r[wall]
            on = np.flatnonzero(through & by_side)
            live, x, z, dx, dz, rb_live = live[on], x[on], z[on], dx[on], dz[on], rb_live[on]
            r = self._door_next[r[on], side[on], door[on]]
        blocked = np.zeros(len(ax), dtype=bool)
        probe = np.flatnonzero((stopped >= 0) & (stopped != ra))  # ra's probe: the caller's
        if len(probe):
            blocked[probe] = self._walls_beyond(ax[probe], az[probe], bx[probe], bz[probe], stopped[probe])
        return arrived & inside, blocked

    def _walls_beyond(self, ax: np.ndarray, az: np.ndarray, bx: np.ndarray, bz: np.ndarray,
                      r: np.ndarray) -> np.ndarray:
        """``_wall_beyond`` of each segment, False where ``r`` is -1 (no region, no proof): operation for
        operation the scalar arithmetic (numpy's float64 ufuncs round as Python's floats do)."""
        # the box's far sides: rect x1 + 1.5 is box x1 + 0.5 exactly (whole numbers), as ``_wall_beyond`` adds
        # r = -1 reads the dummy last row; masked below. A column at a time: 1-D takes, cheaper than rows
        x0, x1, z0, z1 = (col[r] for col in self._box_columns)
        dx, dz = bx - ax, bz - az
        with np.errstate(divide="ignore", invalid="ignore"):
            # the side's line picked first: (x1 + 0.5 - ax) / dx is the same IEEE operations either way
            # (dx > 0) | (dx < 0), not dx != 0: a NaN gives 1.0, as in the scalar code
            t = np.where((dx > 0) | (dx < 0), (np.where(dx > 0, x1 + 0.5, x0 - 0.5) - ax) / dx, 1.0)
            tz = (np.where(dz > 0, z1 + 0.5, z0 - 0.5) - az) / dz
        t = np.where(dz != 0, np.minimum(t, tz), t)
        ok = (r >= 0) & (t > 0.0) & (t < 1.0)
        t = np.where(ok, t, 0.0)  # the points of the others are not looked up
        px, pz = ax + t * dx, az + t * dz
        ix, iz = np.floor(px), np.floor(pz)
        # whole numbers in float64: the flat cell index is exact (the others read cell 0, masked by ok)
        cell = np.where(ok, (ix - self.origin[0]) * self._sz + (iz - self.origin[1]), 0.0).astype(np.int64)
        wall = self._grid_flat[cell] < 0
        fx, fz = px - ix, pz - iz
        m = WALL_MARGIN
        return ok & wall & (fx > m) & (fx < 1.0 - m) & (fz > m) & (fz < 1.0 - m)

    # -- navigation ------------------------------------------------------------------------------------------
    def _find_portals(self) -> list[Portal]:
        portals = []
        rs = self.regions
        for i in range(len(rs)):
            for j in range(i + 1, len(rs)):
                p = _shared_edge(rs[i].rect, rs[j].rect)
                if p is not None:
                    portals.append(Portal(i, j, p))
        return portals

    def _check_connected(self) -> None:
        adj: dict[int, list[int]] = {r.index: [] for r in self.regions}
        for p in self.portals:
            adj[p.a].append(p.b)
            adj[p.b].append(p.a)
        seen, todo = {0}, [0]
        while todo:
            for n in adj[todo.pop()]:
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        missing = [r.name for r in self.regions if r.index not in seen]
        if missing:
            raise ConfigError(f"map {self.source}: {missing[0]} cannot be reached from "
                              f"{self.regions[0].name}; "
                              "join it with a corridor rect that shares an edge with both")

    def _build_nav(self) -> None:
        n = len(self.portals)
        self.region_portals: list[list[int]] = [[] for _ in self.regions]
        for k, p in enumerate(self.portals):
            self.region_portals[p.a].append(k)
            self.region_portals[p.b].append(k)
        inf = float("inf")
        dist = [[0.0 if i == j else inf for j in range(n)] for i in range(n)]
        nxt = [[j if i == j else -1 for j in range(n)] for i in range(n)]
        for plist in self.region_portals:
            for i in plist:
                for j in plist:
                    if i != j:
                        d = _dist(self.portals[i].point, self.portals[j].point)
                        if d < dist[i][j]:
                            dist[i][j] = d
                            nxt[i][j] = j
        for k in range(n):  # Floyd-Warshall; n is a few dozen doorways
            dk = dist[k]
            for i in range(n):
                dik = dist[i][k]
                if dik == inf:
                    continue
                di, ni = dist[i], nxt[i]
                for j in range(n):
                    if dik + dk[j] < di[j]:
                        di[j] = dik + dk[j]
                        ni[j] = ni[k]
        self._pdist, self._pnext = dist, nxt
        # each region's doorways as (index, x, z): what path() reads for every plan
        self._region_doors: list[list[tuple[int, float, float]]] = [
            [(k, *self.portals[k].point) for k in plist] for plist in self.region_portals
        ]

    def path(self, ax: float, az: float, bx: float, bz: float) -> list[tuple[float, float]]:
        """Waypoints from a to b (b last), through doorway midpoints; [] if a == b's region and a == b."""
        ra, rb = self.region_index(ax, az), self.region_index(bx, bz)
        if ra < 0 or rb < 0 or ra == rb:
            return [(bx, bz)]
        hypot, pdist = math.hypot, self._pdist
        # the last doorway's distance to b, once for each first doorway (the same float sums, in order)
        ends = [(j, hypot(bx - px, bz - pz)) for j, px, pz in self._region_doors[rb]]
        best, i0, j0 = float("inf"), -1, -1
        for i, px, pz in self._region_doors[ra]:
            d0 = hypot(px - ax, pz - az)
            row = pdist[i]
            for j, tail in ends:
                d = d0 + row[j] + tail
                if d < best:
                    best, i0, j0 = d, i, j
        i, j = i0, j0
        if i < 0:
            return [(bx, bz)]
        points = [self.portals[i].point]
        while i != j:
            i = self._pnext[i][j]
            points.append(self.portals[i].point)
        points.append((bx, bz))
        return points

    def farthest_room(self, x: float, z: float) -> str:
        """The room whose centre is farthest by path from (x, z): where a player goes to get away."""
        return max(self.room_names, key=lambda r: self.path_length(x, z, *self.room_centers[r]))

    def nearest_room(self, x: float, z: float) -> str:
        """The room at (x, z), or in a corridor the room whose centre is nearest by path (a walk's target)."""
        return self.room_at(x, z) or min(self.room_names,
                                         key=lambda r: self.path_length(x, z, *self.room_centers[r]))

    def path_length(self, ax: float, az: float, bx: float, bz: float) -> float:
        total, px, pz = 0.0, ax, az
        for qx, qz in self.path(ax, az, bx, bz):
            total += math.hypot(qx - px, qz - pz)
            px, pz = qx, qz
        return total

    def spawn_points(self, n: int) -> list[tuple[float, float]]:
        """n points on a circle of radius 3 around the button (the meeting table), all on floor."""
        bx, bz = self.button
        pts = []
        for k in range(n):
            a = 2 * math.pi * k / n
            x, z = bx + 3.0 * math.cos(a), bz + 3.0 * math.sin(a)
            pts.append((x, z) if self.is_floor(x, z) else (bx, bz))
        return pts


def _rgb(c: list[int]) -> RGB:
    return (int(c[0]), int(c[1]), int(c[2]))


def _rect_center(rect: Rect) -> tuple[float, float]:
    x0, x1, z0, z1 = rect
    return ((x0 + x1 + 1) / 2, (z0 + z1 + 1) / 2)


def _dist(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def _shared_edge(r: Rect, s: Rect) -> tuple[float, float] | None:
    """Midpoint of the edge two rectangles share (positive length), in continuous coordinates."""
    ax0, ax1, az0, az1 = r[0], r[1] + 1, r[2], r[3] + 1
    bx0, bx1, bz0, bz1 = s[0], s[1] + 1, s[2], s[3] + 1
    if ax1 == bx0 or bx1 == ax0:  # touching along an x = const edge
        lo, hi = max(az0, bz0), min(az1, bz1)
        if hi > lo:
            return (float(ax1 if ax1 == bx0 else ax0), (lo + hi) / 2)
    if az1 == bz0 or bz1 == az0:
        lo, hi = max(ax0, bx0), min(ax1, bx1)
        if hi > lo:
            return ((lo + hi) / 2, float(az1 if az1 == bz0 else az0))
    return None


def load_map_spec(path_or_name: str | Path) -> tuple[MapSpec, str]:
    path = Path(path_or_name)
    if not path.suffix:  # a built-in map name such as "skeld"
        path = MAPS_DIR / f"{path_or_name}.yaml"
    if not path.is_file():
        builtin = sorted(p.stem for p in MAPS_DIR.glob("*.yaml"))
        raise ConfigError(f"world.map: {str(path_or_name)!r} is neither a built-in map {builtin} nor a "
                          f"file; fix the path")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"map {path}: not valid YAML ({str(e).splitlines()[0]}); fix the file") from None
    try:
        return MapSpec.model_validate(data), str(path)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(f"map {path}: {loc}: {err['msg']}") from None


@lru_cache(maxsize=8)
def load_map(path_or_name: str = "skeld") -> GameMap:
    """Load and compile a map (cached: compiled maps are immutable)."""
    spec, source = load_map_spec(path_or_name)
    return GameMap(spec, source)
