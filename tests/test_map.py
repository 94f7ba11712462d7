"""The map file: the paper's coordinates, the derived doorways and navigation, and clear refusals of bad
files."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import yaml

from mau.env.map import MAPS_DIR, GameMap, load_map, load_map_spec
from mau.errors import ConfigError

PAPER_STATIONS = [
    (81, 65), (101, 89), (107, 125), (118, 114), (106, 94), (123, 62), (97, 39), (91, 116), (97, 125),
    (107, 87), (119, 82), (111, 79), (102, 35), (98, 61), (86, 56), (81, 55), (106, 60), (127, 73), (114, 51),
    (126, 67),
]
ROOMS = {
    "Cafeteria", "Weapons", "O2", "Navigation", "Shields", "Communications", "Storage", "Admin", "Electrical",
    "Lower Engine", "Upper Engine", "Reactor", "Security", "Medbay",
}


def test_skeld_has_the_papers_layout():
    m = load_map("skeld")
    assert set(m.room_names) == ROOMS
    assert [(int(x), int(z)) for x, z in m.stations] == PAPER_STATIONS
    assert m.room_at(87.5, 76.5) == "Cafeteria" and m.button == (87.5, 76.5)
    assert m.floor_y == 65


def test_every_station_reachable_by_a_path_on_floor():
    m = load_map("skeld")
    sx, sz = m.button
    for x, z in m.stations:
        pts = [(sx, sz)] + m.path(sx, sz, x, z)
        assert pts[-1] == (x, z)
        for (ax, az), (bx, bz) in zip(pts, pts[1:]):
            # sample the segment: every sample is on floor
            n = max(2, int(math.hypot(bx - ax, bz - az) * 4))
            for k in range(n + 1):
                t = k / n
                assert m.is_floor(ax + (bx - ax) * t, az + (bz - az) * t)


def test_line_of_sight_walls_block():
    m = load_map("skeld")
    assert m.line_of_sight(80.5, 70.5, 95.5, 85.5)  # across Cafeteria
    assert not m.line_of_sight(80.5, 84.5, 85.5, 95.5)  # Cafeteria -> Medbay through the wall
    assert m.line_of_sight(89.5, 80.5, 89.5, 98.5)  # straight through the Cafeteria-Medbay corridor



def _floor_point(m: GameMap, rng: random.Random) -> tuple[float, float]:
    """A point on the floor, often on a block edge or a hair from one (where the walk's rounding lives)."""
    x0, z0 = m.origin
    while True:
        x, z = rng.uniform(x0, x0 + m.size[0]), rng.uniform(z0, z0 + m.size[1])
        k = rng.random()
        if k < 0.2:
            x = float(round(x))
        elif k < 0.4:
            z = float(round(z))
        elif k < 0.5:
            x, z = round(x * 2) / 2, round(z * 2) / 2
        elif k < 0.6:
            x = round(x) + rng.choice([1e-7, -1e-7, 1e-13, -1e-13, 1e-3])
        if m.is_floor(x, z):
            return x, z


def _doorway_and_wall_ends(m: GameMap) -> list[tuple[float, float]]:
    ends = []
    for r, sides in enumerate(m._doors):
        x0, x1, z0, z1 = m._boxes[r]
        for side, doors in enumerate(sides):
            for lo, hi, _ in doors:
                for v in (lo, hi):
                    ends.append(((x1, x0)[side], v) if side < 2 else (v, (z1, z0)[side - 2]))
        ends += [(x0, z0), (x0, z1), (x1, z0), (x1, z1)]  # and every region's corners (the walls' ends)
        # and block corners on the lines half a block beyond the region, where the wall probe looks
        ends += [(x, z) for x in (x0 - 0.5, x1 + 0.5) for z in range(int(z0) - 1, int(z1) + 2)]
        ends += [(x, z) for z in (z0 - 0.5, z1 + 0.5) for x in range(int(x0) - 1, int(x1) + 2)]
    return ends


def test_line_of_sight_proofs_agree_with_the_cell_walk():
    """The shortcuts of line_of_sight_across (a wall half a block beyond a region; a path through doorways;
    both also batched in numpy for the sight recorder) answer as the plain cell walk does: on random segments,
    on segments along block edges, and on segments aimed a hair either side of every doorway's end, region
    corner and block corner where the wall probe looks (issue 32: sights.jsonl must not change by a byte).
    A doorway margin below zero, a doorway cell taken for wall, or a wall probe that is not strictly inside
    its cell makes this fail."""
    m = load_map("skeld")
    rng = random.Random(11)
    segments = []
    for _ in range(6000):
        (ax, az), (bx, bz) = _floor_point(m, rng), _floor_point(m, rng)
        segments.append((ax, az, bx, bz))
    ends = _doorway_and_wall_ends(m)
    offsets = [0.0, 1e-13, -1e-13, 1e-9, -1e-9, 1e-4, -1e-4, 1e-3, -1e-3, 2e-3, -2e-3, 0.3, -0.3]
    while len(segments) < 20000:
        cx, cz = rng.choice(ends)
        cx, cz = cx + rng.choice(offsets), cz + rng.choice(offsets)
        ax, az = _floor_point(m, rng)
        s = rng.uniform(1.05, 4)
        bx, bz = ax + (cx - ax) * s, az + (cz - az) * s
        if m.is_floor(bx, bz):
            segments.append((ax, az, bx, bz))
    # along a block edge, one ulp off its line: the wall probe's point rounds onto the edge while the segment
    # runs beside it (a probe that is not strictly inside its cell takes the wrong cell for the segment's)
    while len(segments) < 24000:
        ax, az = _floor_point(m, rng)
        bx, bz = _floor_point(m, rng)
        if rng.random() < 0.5:
            az = float(round(az))
            bz = math.nextafter(az, rng.choice([-math.inf, math.inf]))
        else:
            ax = float(round(ax))
            bx = math.nextafter(ax, rng.choice([-math.inf, math.inf]))
        if m.is_floor(ax, az) and m.is_floor(bx, bz):
            segments.append((ax, az, bx, bz))
    walked, proved, batch_in = [], [], []
    for ax, az, bx, bz in segments:
        ra, rb = m.region_index(ax, az), m.region_index(bx, bz)
        if ra >= 0 and ra == rb:
            continue  # line_of_sight's own shortcut (regions are convex), not under test
        walked.append(m.line_of_sight_across(ax, az, bx, bz))  # no regions given: the walk alone
        proved.append(m.line_of_sight_across(ax, az, bx, bz, ra, rb))
        batch_in.append((ax, az, bx, bz, ra, rb))
    cols = list(zip(*batch_in))
    arrays = [np.array(c, dtype=np.float64) for c in cols[:4]]
    arrays += [np.array(c, dtype=np.int64) for c in cols[4:]]
    batched = m.lines_of_sight_across(*arrays).tolist()
    assert len(walked) > 15000 and 500 < sum(walked) < len(walked) - 500  # both answers, many times
    assert proved == walked
    assert batched == walked


def test_batched_region_indices_are_region_index():
    """``region_indices`` (the sight recorder's places) gives ``region_index`` of every point: on the floor,
    on block edges, in walls and beyond the grid on every side."""
    m = load_map("skeld")
    rng = random.Random(3)
    (x0, z0), (w, h) = m.origin, m.size
    points = [(rng.uniform(x0 - 5, x0 + w + 5), rng.uniform(z0 - 5, z0 + h + 5)) for _ in range(4000)]
    points += [_floor_point(m, rng) for _ in range(2000)]
    points += [(float(rng.randint(x0 - 2, x0 + w + 2)), float(rng.randint(z0 - 2, z0 + h + 2)))
               for _ in range(2000)]
    x, z = np.array(points).T
    assert m.region_indices(x.reshape(80, 100), z.reshape(80, 100)).ravel().tolist() == [
        m.region_index(px, pz) for px, pz in points]


def test_batched_doorway_proofs_are_the_scalar_ones():
    """``_through_doorways_batch`` (the sight recorder's doorway proofs, a region at a time in numpy) proves
    exactly the segments ``_through_doorways`` proves, through one doorway or many: a missed proof would only
    cost a walk, so the comparison with the walk above cannot see it. Random segments between two regions, and
    segments aimed a hair either side of doorway ends and corners."""
    m = load_map("skeld")
    rng = random.Random(5)
    ends = _doorway_and_wall_ends(m)
    offsets = [0.0, 1e-13, -1e-13, 1e-4, -1e-4, 1e-3, -1e-3, 2e-3, -2e-3]
    segments = []
    while len(segments) < 12000:
        ax, az = _floor_point(m, rng)
        if len(segments) % 2:
            bx, bz = _floor_point(m, rng)
        else:
            cx, cz = rng.choice(ends)
            s = rng.uniform(1.05, 4)
            bx, bz = ax + (cx + rng.choice(offsets) - ax) * s, az + (cz + rng.choice(offsets) - az) * s
        ra, rb = m.region_index(ax, az), m.region_index(bx, bz)
        if ra >= 0 and rb >= 0 and ra != rb:
            segments.append((ax, az, bx, bz, ra, rb))
    scalar = [m._through_doorways(*seg) for seg in segments]
    cols = list(zip(*segments))
    arrays = [np.array(c, dtype=np.float64) for c in cols[:4]]
    arrays += [np.array(c, dtype=np.int64) for c in cols[4:]]
    clear, blocked = m._through_doorways_batch(*arrays)
    assert [True if c else False if b else None for c, b in zip(clear.tolist(), blocked.tolist())] == scalar
    neighbours = [{j for doors in sides for _, _, j in doors} for sides in m._doors]
    hops = sum(ok is True and seg[5] not in neighbours[seg[4]] for ok, seg in zip(scalar, segments))
    n_clear, n_blocked = scalar.count(True), scalar.count(False)
    # all three answers, many times; many doorways too
    assert n_clear > 300 and n_blocked > 300 and len(scalar) - n_clear - n_blocked > 300 and hops > 50
    # each wall proof is the plain walk's answer (a probe beyond a region a's segment only passes through)
    assert all(not m.line_of_sight_across(*seg[:4]) for ok, seg in zip(scalar, segments) if ok is False)


def _write(tmp_path, data) -> str:
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(data))
    return str(p)


def _skeld() -> dict:
    return yaml.safe_load((MAPS_DIR / "skeld.yaml").read_text())


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d.update(format_version=9), "format_version: Value error, map format 9 is unknown"),
    (lambda d: d["rooms"][0].update(rect=[5, 1, 0, 0]), "rooms.0.rect"),
    (lambda d: d["rooms"][0].update(colour=[1, 2, 3]), "rooms.0.colour: Extra inputs"),
    (lambda d: d.update(spawn_room="Bridge"), "spawn_room: 'Bridge' is not a room"),
    (lambda d: d["stations"].append([0, 0]), "stations[20] = [0, 0] is not inside a room"),
    (lambda d: d["rooms"].append({"name": "Attic", "rect": [200, 210, 200, 210]}), "Attic cannot be reached"),
    (lambda d: d["rooms"].append({"name": "Overlap", "rect": [80, 82, 66, 68]}), "overlaps"),
    (lambda d: d.update(button=[50, 50]), "button [50, 50] is not in spawn_room"),
])
def test_bad_map_files_are_refused_with_one_line(tmp_path, mutate, expected):
    data = _skeld()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as e:
        spec, source = load_map_spec(path)
        GameMap(spec, source)
    msg = str(e.value)
    assert expected in msg and "\n" not in msg


def test_missing_map_names_the_builtins():
    with pytest.raises(ConfigError, match=r"world.map: 'nowhere' is neither a built-in map \['skeld'\]"):
        load_map_spec("nowhere")


def test_nearest_room_of_a_corridor_point_is_a_room_a_move_can_name():
    """A scripted crewmate going to look at a player lying in a corridor names a room (ARIA's move refuses a
    corridor: it was a fallback in 10 of 180 matches)."""
    m = load_map("skeld")
    corridors = [r for r in m.regions if r.room is None]
    assert corridors
    for r in corridors:
        x0, x1, z0, z1 = r.rect
        x, z = (x0 + x1 + 1) / 2, (z0 + z1 + 1) / 2
        assert m.region_index(x, z) == r.index
        assert m.place_name(x, z).startswith("corridor ") and m.nearest_room(x, z) in m.room_names
    cx, cz = m.room_centers["Admin"]
    assert m.nearest_room(cx, cz) == "Admin"


def test_batched_wall_probe_is_the_scalar_one():
    """``_walls_beyond`` (the sight batch's wall probe) answers as ``_wall_beyond`` for segments leaving every
    region in every direction: short and long, axis-aligned, and ending a hair either side of the probe's
    half block beyond the region."""
    m = load_map("skeld")
    rng = random.Random(11)
    segs = []
    for r, region in enumerate(m.regions):
        x0, x1, z0, z1 = region.rect
        for _ in range(300):
            ax, az = rng.uniform(x0, x1 + 1), rng.uniform(z0, z1 + 1)
            angle, length = rng.uniform(-math.pi, math.pi), rng.choice([1.0, 3.0, 8.0, 20.0, 40.0])
            segs.append((ax, az, ax + length * math.cos(angle), az + length * math.sin(angle), r))
            # straight across one side, ending just short of / just past the probe line
            bx = rng.choice([x0 - 0.5, x1 + 1.5]) + rng.choice([-1e-9, 0.0, 1e-9, 2.0])
            segs.append((ax, az, bx, az, r))
            bz = rng.choice([z0 - 0.5, z1 + 1.5]) + rng.choice([-1e-9, 0.0, 1e-9, 2.0])
            segs.append((ax, az, ax, bz, r))
    ax, az, bx, bz, rr = (np.array(c) for c in zip(*segs))
    batched = m._walls_beyond(ax, az, bx, bz, rr.astype(np.int64)).tolist()
    scalar = [m._wall_beyond(*s) for s in segs]
    assert batched == scalar
    assert 0 < sum(scalar) < len(scalar)  # both answers occur
