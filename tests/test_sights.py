"""The sight recorder writes exactly the lines of a plain reference: every place and every ordered pair
through ``Vision.sees`` at every sample (sights.jsonl of commit 70b1b50), on scripted matches, on random
poses with players standing still between samples, and across a snapshot restore. A guard for any faster
recorder (issue 32: the recorder batches a match's samples in numpy, docs/collect.md): sights.jsonl must not
change by a byte."""

from __future__ import annotations

import json
import random

import pytest

from mau import schema as F
from mau.env.config import WorldConfig
from mau.env.runner import play_match
from mau.env.scripted import ScriptedPolicy
from mau.env.sights import SightRecorder
from mau.env.sim import SimWorld

_UNSET = object()


class ReferenceRecorder:
    """Every place and every ordered pair through ``Vision.sees`` at every sample: slow and plainly right."""

    def __init__(self, world: SimWorld):
        self.world = world
        gmap = world.map
        self.places = list(dict.fromkeys(r.name for r in gmap.regions)) + ["outside"]
        self.index = {p: i for i, p in enumerate(self.places)}
        self.lines: list[dict] = []
        self.place: dict = {}
        self.view: set = set()

    def record(self, state, after_meeting: bool = False) -> None:
        if not self.lines:
            self.lines.append(
                {
                    F.SIGHTS_VERSION_FIELD: F.SIGHTS_VERSION,
                    F.SIGHT_PLAYERS: [p.name for p in state.players], F.SIGHT_PLACE_NAMES: self.places,
                }
            )
        changed = []
        for i, p in enumerate(state.players):
            where = self.index[self.world.map.place_name(p.x, p.z)] if p.active else None
            if self.place.get(p.name, _UNSET) != where:
                self.place[p.name] = where
                changed.append([i, where])
        sees = self.world.vision.sees
        view = {(i, j) for i, a in enumerate(state.players) for j, b in enumerate(state.players)
                if i != j and a.active and b.active and sees(a, b.x, b.z, 0.3)}
        if changed or view != self.view:
            line: dict = {F.SIGHT_TICK: state.tick}
            if after_meeting:
                line[F.SIGHT_AFTER_MEETING] = True
            if changed:
                line[F.SIGHT_PLACES] = changed
            if view - self.view:
                line[F.SIGHT_GAINED] = [list(x) for x in sorted(view - self.view)]
            if self.view - view:
                line[F.SIGHT_LOST] = [list(x) for x in sorted(self.view - view)]
            self.lines.append(line)
            self.view = view


class Both(SightRecorder):
    """The recorder under test, with the reference fed the same samples."""

    def __init__(self, world: SimWorld):
        super().__init__(world.map, world.vision)
        self.ref = ReferenceRecorder(world)

    def reset(self) -> None:
        super().reset()
        self.ref.lines, self.ref.place, self.ref.view = [], {}, set()

    def record(self, state, after_meeting: bool = False) -> None:
        super().record(state, after_meeting)
        self.ref.record(state, after_meeting)


def _text(lines: list[dict]) -> str:
    return "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines)


@pytest.mark.parametrize("world_cfg,mode", [({}, "ego"), ({"claims": {"mode": "structured"}}, "privileged"),
                                            ({"game": {"step_ticks": 40}}, "ego")])
def test_sights_are_byte_identical_to_computing_everything_every_sample(world_cfg, mode):
    cfg = WorldConfig.model_validate(world_cfg)
    world = SimWorld(cfg)
    world.sights = rec = Both(world)
    lines = 0
    for seed in range(4):
        pols = {p.name: ScriptedPolicy(p.name, world.map, seed, claims=cfg.claims) for p in world.cfg.players}
        play_match(world, pols, seed, mode)
        assert _text(rec.lines) == _text(rec.ref.lines), seed
        lines += len(rec.lines)
    assert lines > 100


def test_random_poses_and_standing_players_give_the_reference_views():
    """Poses drawn anywhere on the floor, some players standing still between samples (the memo's case)."""
    world = SimWorld()
    st = world.reset(3)
    rec = Both(world)
    rng = random.Random(7)
    x0, z0 = world.map.origin
    for k in range(400):
        for p in st.players:
            if k and rng.random() < 0.5:
                continue  # stands still: its pairs come from the memo
            while True:
                p.x, p.z = rng.uniform(x0, x0 + world.map.size[0]), rng.uniform(z0, z0 + world.map.size[1])
                if world.map.is_floor(p.x, p.z):
                    break
            p.yaw = rng.uniform(-7, 7)
        if k == 200:
            st.players[2].alive = False  # leaves the view sets; its pairs are not asked again
        st.tick += 5
        rec.record(st)
    assert _text(rec.lines) == _text(rec.ref.lines)
    assert len(rec.lines) > 300


def test_a_restored_snapshot_continues_with_the_same_lines():
    world = SimWorld()
    pols = {p.name: ScriptedPolicy(p.name, world.map, 5) for p in world.cfg.players}
    play_match(world, pols, 5)
    whole = _text(world.sights.lines)
    world.reset(5)
    pols = {p.name: ScriptedPolicy(p.name, world.map, 5) for p in world.cfg.players}
    snap = None
    while not world.done:
        acts = {p.name: pols[p.name].act(world.observe(p.name)) for p in world.state.players if p.active}
        if world.state.step == 6 and snap is None:
            snap = world.snapshot()
            world.restore(snap)  # the recorder comes back from the world's snapshot; the lines go on the same
        world.step(acts)
    assert _text(world.sights.lines) == whole


def test_pairs_on_the_frustums_edge_are_decided_as_pairs_in_view():
    """``Vision.views_batch`` decides a pair within 1e-9 rad of the frustum's edge again with ``math.atan2``
    (a vectorised atan2 may differ in the last bit): players placed on the edge, a hair inside and outside,
    get exactly ``pairs_in_view``'s answers (where numpy's atan2 is libm's, as here, both agree anyway: this
    guards the recheck itself; inverting its answer makes this fail)."""
    import math

    import numpy as np

    world = SimWorld()
    st = world.reset(1)
    vision = world.vision
    viewer, others = st.players[0], st.players[1:]
    viewer.x, viewer.z, viewer.yaw = 87.5, 76.5, 0.3  # Cafeteria, by the button
    samples, expected = [], []
    for k, eps in enumerate([0.0, 1e-15, -1e-15, 1e-12, -1e-12, 5e-10, -5e-10, 0.0]):
        for j, p in enumerate(others):
            d = 3.0 + j
            side = 1 if (j + k) % 2 else -1
            angle = viewer.yaw + side * (vision.half_fov + math.atan2(0.3, d) + eps)
            p.x, p.z, p.yaw = viewer.x + d * math.cos(angle), viewer.z + d * math.sin(angle), 0.0
        samples.append([(p.x, p.z, p.yaw) for p in st.players])
        expected.append({(i, j) for i, a in enumerate(st.players) for j, b in enumerate(st.players)
                         if (a.name, b.name) in vision.pairs_in_view(st.players)})
    poses = np.array(samples)
    x, z, yaw = poses[..., 0], poses[..., 1], poses[..., 2]
    regions = world.map.region_indices(x, z)
    got = vision.views_batch(x, z, yaw, np.ones(x.shape, dtype=bool), regions)
    assert [{(i, j) for i, j in np.argwhere(view).tolist()} for view in got] == expected
    edge = sum((0, j) in e for e in expected for j in range(1, len(st.players)))
    assert 0 < edge < 7 * len(expected)  # some on the edge are in view, some not


def test_the_frustum_test_without_atan2_decides_as_the_plain_expression():
    """``frustum_test`` (the sight batch's frustum without atan2) decides a pair only as the plain expression
    (``in_frustum``) does, on random pairs and on pairs a hair either side of the frustum's edge (1e-15 to
    1e-5 rad), at distances from 1e-6 to the cap, headings past +-pi and 2 pi and up to ``YAW_LIMIT``, and
    radii 0, 0.3 and 0.5; it leaves undecided only pairs within a few margins of the edge. Lowering the margin
    to 0 (or dropping the radius from the reach) makes it fail."""
    import math

    import numpy as np

    from mau.env.vision import FRUSTUM_MARGIN, YAW_LIMIT, frustum_margin, frustum_test, in_frustum

    half = SimWorld().vision.half_fov
    rng = random.Random(17)
    cases = []  # (dx, dz, yaw, radius)
    for _ in range(20000):
        cases.append((rng.uniform(-40, 40), rng.uniform(-40, 40), rng.uniform(-7, 7),
                      rng.choice([0.0, 0.3, 0.5])))
    edge_offsets = [0.0] + [s * e for e in (1e-15, 1e-12, 1e-9, 5e-7, 1e-6, 2e-6, 1e-5) for s in (1, -1)]
    for _ in range(3000):
        radius = rng.choice([0.0, 0.3, 0.5])
        d = rng.choice([1e-6, 1e-3, 0.1, 0.3, rng.uniform(0.5, 36), 36.0])
        yaw = rng.choice([rng.uniform(-7, 7), math.pi, -math.pi, 2 * math.pi, 0.0, rng.uniform(-YAW_LIMIT,
                                                                                              YAW_LIMIT)])
        angle = yaw + rng.choice([1, -1]) * (half + math.atan2(radius, d) + rng.choice(edge_offsets))
        cases.append((d * math.cos(angle), d * math.sin(angle), yaw, radius))
    for dx, dz in [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0), (1e-6, 0.0)]:
        for yaw in [0.0, math.pi / 2, math.pi, -math.pi, half, -half, math.pi - half]:
            cases.append((dx, dz, yaw, 0.3))
    decided = near_edge = 0
    for radius in (0.0, 0.3, 0.5):
        sel = [c for c in cases if c[3] == radius]
        dx, dz, yaw = (np.array([c[i] for c in sel]) for i in range(3))
        d2 = dx * dx + dz * dz
        g, m = frustum_test(dx, dz, d2, np.cos(yaw), np.sin(yaw), half, radius, frustum_margin(half, radius))
        for e, (x, z, y, _) in enumerate(sel):
            plain = in_frustum(x, z, math.sqrt(x * x + z * z), y, half, radius)
            if g[e] > m[e]:
                assert plain, (x, z, y, radius)
                decided += 1
            elif g[e] < -m[e]:
                assert not plain, (x, z, y, radius)
                decided += 1
            else:
                # undecided: within a few margins of the edge (the slope of cos is at least sin(off))
                off = abs((math.atan2(z, x) - y + math.pi) % (2 * math.pi) - math.pi)
                reach = half + math.atan2(radius, math.sqrt(x * x + z * z))
                assert abs(off - reach) * max(math.sin(reach), 1e-3) < 4 * FRUSTUM_MARGIN, (x, z, y, radius)
                near_edge += 1
    assert decided > 20000 and 1000 < near_edge < 3000
