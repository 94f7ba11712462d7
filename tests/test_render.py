"""The numpy raycaster: frame format, determinism, what is seen and what is hidden, and the top-down view."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mau.env.config import COLOR_RGB
from mau.env.map import load_map
from mau.env.render import Renderer, bench_frame_ms, save_png, typical_scene
from mau.env.state import Body, GameState, PlayerState

NORTH, SOUTH = -math.pi / 2, math.pi / 2  # yaw: 0 looks along +x, pi/2 along +z
W, H = 640, 360


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    return Renderer(load_map("skeld"), W, H)


def player(name: str, color: str, x: float, z: float, yaw: float = 0.0, seat: int = 0, **kw) -> PlayerState:
    return PlayerState(name=name, color=color, seat=seat, role="crewmate", x=x, z=z, yaw=yaw, **kw)


def has_colour(img: np.ndarray, color: str) -> bool:
    return bool((img == np.array(COLOR_RGB[color], dtype=np.uint8)).all(axis=-1).any())


def test_shape_dtype_and_determinism(renderer: Renderer) -> None:
    state, viewer = typical_scene()
    a = renderer.first_person(state, viewer)
    b = renderer.first_person(state, viewer)
    c = Renderer(load_map("skeld"), W, H).first_person(state, viewer)
    assert a.shape == (H, W, 3) and a.dtype == np.uint8 and a.flags.c_contiguous
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert a is not b  # frames are fresh arrays, not a reused buffer
    assert not np.array_equal(a, renderer.first_person(state, viewer, yaw=0.0))  # yaw overrides the facing


def test_player_ahead_is_seen_at_the_centre(renderer: Renderer) -> None:
    state = GameState(
        players=[player("me", "white", 82.5, 70.5, SOUTH), player("red", "red", 82.5, 75.5, seat=1)], seed=0
    )
    img = renderer.first_person(state, "me")
    mid = img[H // 2 + 20: H // 2 + 60, W // 2 - 2: W // 2 + 2]  # 5 blocks ahead, about 0.9 blocks up
    assert (mid == np.array(COLOR_RGB["red"], dtype=np.uint8)).all()
    # Turned away, it is gone.
    assert not has_colour(renderer.first_person(state, "me", yaw=NORTH), "red")


def test_player_behind_a_wall_is_hidden(renderer: Renderer) -> None:
    # Cafeteria ends at z = 86; x = 85 is wall up to Medbay (z >= 92); the doorway is at x 88-90.
    m = load_map("skeld")
    assert not m.line_of_sight(85.5, 84.5, 85.5, 93.5)
    state = GameState(
        players=[player("me", "white", 85.5, 84.5, SOUTH), player("red", "red", 85.5, 93.5, seat=1)], seed=0
    )
    assert not has_colour(renderer.first_person(state, "me"), "red")
    # Moved into the doorway's line, the same player shows again.
    state.players[1].x = state.players[0].x = 89.5
    assert has_colour(renderer.first_person(state, "me"), "red")


def test_nearer_player_hides_farther_one(renderer: Renderer) -> None:
    state = GameState(
        players=[
            player("me", "white", 82.5, 70.5, SOUTH), player("blue", "blue", 82.5, 79.0, seat=1),
            player("red", "red", 82.5, 74.5, seat=2),
        ],
        seed=0,
    )
    img = renderer.first_person(state, "me")
    assert has_colour(img, "red") and not has_colour(img, "blue")


def test_dead_players_stand_no_more_and_bodies_lie_on_the_floor(renderer: Renderer) -> None:
    ghost = player("ghost", "green", 82.5, 73.5, seat=1, alive=False)
    state = GameState(players=[player("me", "white", 82.5, 70.5, SOUTH), ghost], seed=0)
    assert not has_colour(renderer.first_person(state, "me"), "green")
    state.bodies.append(Body(victim="ghost", color="green", x=82.5, z=73.5, room="Cafeteria", tick=0))
    img = renderer.first_person(state, "me")
    assert has_colour(img[H // 2:], "green") and not has_colour(img[: H // 2], "green")


def test_viewer_is_never_drawn(renderer: Renderer) -> None:
    state = GameState(players=[player("me", "yellow", 89.5, 98.5)], seed=0)  # alone in Medbay
    for yaw in (0.0, SOUTH, math.pi, NORTH, 0.7):
        assert not has_colour(renderer.first_person(state, "me", yaw=yaw), "yellow")


def test_flat_wall_has_a_straight_bottom_edge(renderer: Renderer) -> None:
    # Facing the wall z = 87 squarely from 6.5 blocks: perpendicular distances give one bottom row, no
    # fisheye.
    state = GameState(players=[player("me", "white", 80.5, 80.5, SOUTH)], seed=0)
    img = renderer.first_person(state, "me")
    wall = np.array([164, 164, 168], dtype=np.uint8)  # Cafeteria's wall colour on a z-facing side (x 0.8)
    cols = img[:, 80:400]  # facing +z, +x is on the left: the wall spans x 78-87, columns ~63-418
    is_wall = (cols == wall).all(axis=-1)
    bottom = H - np.argmax(is_wall[::-1], axis=0)  # one past the last wall row, per column
    expected = math.ceil(H / 2 + renderer.focal * renderer.eye / 6.5 - 0.5)
    assert is_wall.any(axis=0).all() and (bottom == expected).all()


def test_odd_sizes_and_axis_aligned_yaws() -> None:
    r = Renderer(load_map("skeld"), 33, 17, fov_vertical_deg=60.0)
    state = GameState(
        players=[player("me", "white", 87.5, 72.5), player("red", "red", 90.5, 72.5, seat=1)], seed=0
    )
    for yaw in (0.0, math.pi / 2, math.pi, -math.pi / 2, 2 * math.pi):
        img = r.first_person(state, "me", yaw=yaw)
        assert img.shape == (17, 33, 3) and img.dtype == np.uint8
    assert has_colour(r.first_person(state, "me", yaw=0.0), "red")


def test_topdown_shows_active_players_only(renderer: Renderer, tmp_path) -> None:
    state, _ = typical_scene()
    state.players.append(player("gone", "purple", 88.0, 70.0, seat=20, ejected=True))
    img = renderer.topdown(state, scale=4)
    m = load_map("skeld")
    assert img.dtype == np.uint8 and img.shape == (m.size[1] * 4, m.size[0] * 4, 3)
    for p in state.players:
        assert has_colour(img, p.color) == (p.active or any(b.color == p.color for b in state.bodies)), p.name
    assert renderer.topdown(state, scale=1).shape == (m.size[1], m.size[0], 3)
    save_png(img, tmp_path / "top.png")
    from PIL import Image

    assert np.array_equal(np.asarray(Image.open(tmp_path / "top.png").convert("RGB")), img)


def test_bench_runs() -> None:
    assert bench_frame_ms(64, 36, n=3) > 0


def _dda_wall_distance(m, cx: float, cz: float, dx: float, dz: float) -> float:
    """Block-by-block reference: the ray parameter where it first enters a wall block."""
    ix, iz = math.floor(cx), math.floor(cz)
    sx, sz = (1 if dx > 0 else -1), (1 if dz > 0 else -1)
    tdx, tdz = abs(1 / dx), abs(1 / dz)
    tmx = ((ix + 1 - cx) if dx > 0 else (cx - ix)) * tdx
    tmz = ((iz + 1 - cz) if dz > 0 else (cz - iz)) * tdz
    while True:
        if tmx < tmz:
            ix, t, tmx = ix + sx, tmx, tmx + tdx
        else:
            iz, t, tmz = iz + sz, tmz, tmz + tdz
        if not m.is_floor(ix + 0.5, iz + 0.5):
            return t


def test_region_stepping_matches_block_stepping() -> None:
    m = load_map("skeld")
    r = Renderer(m, 48, 27)
    rng = np.random.default_rng(0)
    cells = np.argwhere(m.floor)
    for _ in range(60):
        ix, iz = cells[rng.integers(len(cells))]
        cx, cz = ix + m.origin[0] + rng.random(), iz + m.origin[1] + rng.random()
        yaw = rng.random() * 2 * math.pi
        dx = math.cos(yaw) - r._k * math.sin(yaw)
        dz = math.sin(yaw) + r._k * math.cos(yaw)
        depth, _ = r._cast(cx, cz, dx, dz)
        ref = [_dda_wall_distance(m, cx, cz, a, b) for a, b in zip(dx, dz)]
        np.testing.assert_allclose(depth, ref, rtol=0, atol=1e-9)


def test_pillow_image_path_matches_the_numpy_frame():
    from mau.env.render import typical_scene

    state, viewer = typical_scene()
    r = Renderer(load_map("skeld"), 96, 54)
    for yaw in (None, 0.3, 2.0, 4.5):
        assert np.array_equal(
            np.asarray(r.first_person_image(state, viewer, yaw)), r.first_person(state, viewer, yaw)
        )


def _colour_pixels(img: np.ndarray, color: str) -> int:
    """Pixels in any of the colour's face shades (top, x side, z side)."""
    rgb = np.array(COLOR_RGB[color], dtype=np.float64)
    shades = {tuple(int(round(c * k)) for c in rgb) for k in (0.6, 0.8, 1.0)}
    flat = img.reshape(-1, 3)
    return int(sum((flat == np.array(s, dtype=np.uint8)).all(axis=-1).sum() for s in shades))


@pytest.mark.parametrize("distance", [3.0, 6.0, 10.0])
@pytest.mark.parametrize("victim_yaw", [0.0, SOUTH])
def test_a_body_in_view_within_10_blocks_is_clearly_visible(renderer: Renderer, distance: float,
                                                            victim_yaw: float) -> None:
    """SURVEILLANCE perceives kills through frames only: a body in view must cover a clearly visible area.
    Threshold: at least 0.15 % of the frame (~350 px at 640x360) and at least half of what a standing
    player covers at the same spot (the old 1/16-block carpet covered ~0.03 % at 10 blocks)."""
    me = player("me", "white", 82.5, 70.5, SOUTH)
    dead = player("ghost", "green", 82.5, 70.5 + distance, seat=1, alive=False)
    state = GameState(players=[me, dead], seed=0,
                      bodies=[Body("ghost", "green", 82.5, 70.5 + distance, "Cafeteria", 0, victim_yaw)])
    body_px = _colour_pixels(renderer.first_person(state, "me"), "green")
    standing = GameState(players=[me, player("alive", "green", 82.5, 70.5 + distance, seat=1)], seed=0)
    stand_px = _colour_pixels(renderer.first_person(standing, "me"), "green")
    assert body_px >= 0.0015 * W * H, (body_px, distance)
    assert body_px >= 0.5 * stand_px, (body_px, stand_px)
