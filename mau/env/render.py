"""Frames: a first-person RGB view (a column raycaster, Wolfenstein-style) and a top-down image of the state.

The world is the map's floor grid: walls are ``wall_height`` blocks tall, floors take their region's colour,
stations are 1x1x1 blocks, the emergency button a small red block, players upright billboards in their colour
and bodies lying figures (boxes) in the victim's colour. Lighting is Minecraft's flat daylight: tops at full
brightness, faces along z at 0.8, faces along x at 0.6.

Speed comes from the map being made of axis-aligned rectangles: a ray crosses one whole region per step
(exit through the rectangle's side, look up what lies beyond), so a frame needs a handful of vectorized steps
over all columns instead of one step per block. Each column is then a few runs of constant colour (sky, wall,
one floor run per region crossed), expanded with ``np.repeat`` into a palette-index image; sprites are painted
onto it with a per-column depth test, and the palette lookup makes the RGB frame.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from mau.env.config import COLOR_RGB, DEFAULT_PLAYERS
from mau.env.map import GameMap
from mau.env.state import Body, GameState, PlayerState

RGB = tuple[int, int, int]

SKY_RGB: RGB = (120, 167, 255)  # Minecraft's clear daytime sky
DARK_RGB: RGB = (18, 18, 22)  # outside the map / beyond every wall
FALLBACK_WALL_RGB: RGB = (128, 128, 128)  # wall blocks that touch no floor
STATION_RGB: RGB = (168, 118, 62)  # crafting-table wood
BUTTON_RGB: RGB = (214, 24, 24)  # a red that no player colour uses, so a player's colour test stays exact
SHADE_X, SHADE_Z, SHADE_TOP = 0.6, 0.8, 1.0  # Minecraft's face brightness (east/west, north/south, top)
HEAD_SHADE = 0.75  # players' head band, so a billboard reads as a figure

PLAYER_WIDTH, PLAYER_HEIGHT, HEAD_HEIGHT = 0.6, 1.8, 0.45
STATION_SIZE = 1.0
BUTTON_WIDTH, BUTTON_HEIGHT = 0.6, 0.5
# A body: a lying figure in the victim's colour where it fell, as long as a player is tall and half a block
# high, so that SURVEILLANCE can see it in a frame (a 1/16-block carpet was nearly invisible beyond a few
# blocks).
BODY_LENGTH, BODY_WIDTH, BODY_HEIGHT = 1.8, 0.9, 0.5

NEAR = 0.05  # near plane (blocks): nothing closer to the eye is drawn
MAX_STEPS = 64  # region crossings per ray; a ray on skeld crosses at most a few


def _shade(rgb: RGB, k: float) -> RGB:
    return (int(round(rgb[0] * k)), int(round(rgb[1] * k)), int(round(rgb[2] * k)))


def color_rgb(name: str) -> RGB:
    """A player colour name -> RGB (``mau.env.config.COLOR_RGB``)."""
    try:
        return COLOR_RGB[name]
    except KeyError:
        raise ValueError(f"colour {name!r} is unknown; use one of {sorted(COLOR_RGB)}") from None


class _Palette:
    """Distinct RGB colours -> uint8 indices; the frame is drawn in indices and looked up once at the end."""

    def __init__(self) -> None:
        self.colors: list[RGB] = []
        self._index: dict[RGB, int] = {}

    def add(self, rgb: RGB) -> int:
        i = self._index.get(rgb)
        if i is None:
            if len(self.colors) == 256:
                raise ValueError("the renderer's palette is full (256 colours); the map uses too many "
                                 "colours")
            i = self._index[rgb] = len(self.colors)
            self.colors.append(rgb)
        return i


class Renderer:
    """First-person and top-down frames of a ``GameState`` on one map. Not thread-safe (reuses buffers)."""

    def __init__(self, game_map: GameMap, width: int = 640, height: int = 360, fov_vertical_deg: float = 70.0,
                 eye_height: float = 1.62):
        if width < 1 or height < 1:
            raise ValueError(f"frame size {width}x{height} must be positive")
        self.map = game_map
        self.width, self.height = int(width), int(height)
        self.eye = float(eye_height)
        self.wall_height = float(game_map.wall_height)
        # Square pixels: the same focal length (pixels) in both axes gives hfov = 2 atan(tan(vfov/2) *
        # aspect).
        self.focal = (self.height / 2) / math.tan(math.radians(fov_vertical_deg) / 2)
        self.fov_horizontal = 2 * math.atan((self.width / 2) / self.focal)
        # Column c looks along forward + k[c] * right; forward has length 1, so a ray's parameter t is the
        # perpendicular (camera-plane) distance, which is what removes the fisheye.
        self._k = (np.arange(self.width) + 0.5 - self.width / 2) / self.focal
        self._rows = np.arange(self.height)
        self._cols = np.arange(self.width)

        pal = self._pal = _Palette()
        self._sky = pal.add(SKY_RGB)
        self._dark = pal.add(DARK_RGB)
        self._build_grids()
        self._build_traversal_tables()
        self._station_idx = [pal.add(_shade(STATION_RGB, s)) for s in (SHADE_X, SHADE_Z, SHADE_TOP)]
        self._button_idx = [pal.add(_shade(BUTTON_RGB, s)) for s in (SHADE_X, SHADE_Z, SHADE_TOP)]
        self._player_idx: dict[str, tuple[int, int]] = {}
        self._carpet_idx: dict[str, list[int]] = {}
        for name in COLOR_RGB:  # every known colour up front, so the palette is fixed after __init__
            self._colour_indices(name)
        # Static boxes: stations (1x1x1 on their block) and the button, as (x0, x1, z0, z1, height, shades).
        boxes = []
        for sx, sz in game_map.stations:
            h = STATION_SIZE / 2
            boxes.append((sx - h, sx + h, sz - h, sz + h, STATION_SIZE, self._station_idx))
        bx, bz = game_map.button
        h = BUTTON_WIDTH / 2
        boxes.append((bx - h, bx + h, bz - h, bz + h, BUTTON_HEIGHT, self._button_idx))
        self._static_boxes = boxes
        self._static_centres = np.array([((b[0] + b[1]) / 2, (b[2] + b[3]) / 2) for b in boxes])

        self._T = np.empty((MAX_STEPS, self.width))
        self._C = np.empty((MAX_STEPS, self.width), dtype=np.uint8)
        self._finish_palette()
        self._topdown_base: dict[int, np.ndarray] = {}

    # -- set-up ----------------------------------------------------------------------------------------------
    def _build_grids(self) -> None:
        """Per-cell palette indices: floor colour of each floor cell, wall colour (both shades) of each wall
        cell."""
        m, pal = self.map, self._pal
        grid = m.region_grid
        nx, nz = grid.shape
        regions = m.regions
        self._floor_idx = np.array([pal.add(r.floor_rgb) for r in regions], dtype=np.uint8)
        # A wall block takes the wall colour of a floor region it touches: a room before a corridor (so each
        # room's outline is one colour), then the lowest region index; edge neighbours before corner ones.
        rank = np.array([(0 if r.room else 1) * len(regions) + r.index for r in regions] + [1 << 30])
        padded = np.full((nx + 2, nz + 2), -1, dtype=np.int64)
        padded[1:-1, 1:-1] = grid
        wall_region = np.full((nx, nz), -1, dtype=np.int64)  # the region whose wall colour each cell takes
        for ring in (((1, 0), (-1, 0), (0, 1), (0, -1)), ((1, 1), (1, -1), (-1, 1), (-1, -1))):
            best = np.full((nx, nz), 1 << 30, dtype=np.int64)
            for ox, oz in ring:
                nb = padded[1 + ox: 1 + ox + nx, 1 + oz: 1 + oz + nz]
                r = np.where(nb >= 0, rank[nb], 1 << 30)
                best = np.minimum(best, r)
            found = (wall_region < 0) & (best < (1 << 30))
            wall_region[found] = best[found] % len(regions)
        wall_region[grid >= 0] = -1
        self._wall_region = wall_region  # kept for the top-down view
        base_rgb = [r.wall_rgb for r in regions] + [FALLBACK_WALL_RGB]
        wx = np.array([pal.add(_shade(c, SHADE_X)) for c in base_rgb], dtype=np.uint8)
        wz = np.array([pal.add(_shade(c, SHADE_Z)) for c in base_rgb], dtype=np.uint8)
        src = np.where(wall_region >= 0, wall_region, len(regions))
        self._wall_x_idx, self._wall_z_idx = wx[src], wz[src]

    def _build_traversal_tables(self) -> None:
        """Per (region, side) tables: the side's coordinate and a strip of what lies just beyond it.

        key = 4 * region + side, side 0/1 = low/high x face, 2/3 = low/high z face. The strip holds the cells
        outside the face, indexed by the coordinate along the face, padded with one copy of each end cell so a
        hit point that rounds a hair outside the face still finds a neighbour without clamping.
        """
        m = self.map
        ox, oz = m.origin
        grid = m.region_grid
        bound, lo_pad, offset = [], [], []
        strip_region4, strip_wx, strip_wz = [], [], []
        n = 0
        for r in m.regions:
            x0, x1, z0, z1 = r.rect
            faces = (
                (x0, [(x0 - 1, z) for z in range(z0, z1 + 1)], z0),
                (x1 + 1, [(x1 + 1, z) for z in range(z0, z1 + 1)], z0),
                (z0, [(x, z0 - 1) for x in range(x0, x1 + 1)], x0),
                (z1 + 1, [(x, z1 + 1) for x in range(x0, x1 + 1)], x0),
            )
            for b, cells, lo in faces:
                cells = [cells[0]] + cells + [cells[-1]]
                bound.append(float(b))
                lo_pad.append(float(lo - 1))
                offset.append(n)
                for cx, cz in cells:
                    g = int(grid[cx - ox, cz - oz])
                    strip_region4.append(4 * g if g >= 0 else -1)
                    strip_wx.append(int(self._wall_x_idx[cx - ox, cz - oz]))
                    strip_wz.append(int(self._wall_z_idx[cx - ox, cz - oz]))
                n += len(cells)
        self._bound = np.array(bound)
        self._lo_pad = np.array(lo_pad)
        self._offset = np.array(offset, dtype=np.intp)
        self._strip_region4 = np.array(strip_region4, dtype=np.intp)
        self._strip_wx = np.array(strip_wx, dtype=np.uint8)
        self._strip_wz = np.array(strip_wz, dtype=np.uint8)
        self._floor_idx4 = np.repeat(self._floor_idx, 4)  # floor colour by key // 4 without a division

    def _colour_indices(self, name: str) -> tuple[tuple[int, int], list[int]]:
        """Palette indices of a player colour: (body, head) and a carpet's (x side, z side, top)."""
        if name not in self._player_idx:
            rgb = color_rgb(name)
            self._player_idx[name] = (self._pal.add(rgb), self._pal.add(_shade(rgb, HEAD_SHADE)))
            self._carpet_idx[name] = [self._pal.add(_shade(rgb, s)) for s in (SHADE_X, SHADE_Z, SHADE_TOP)]
            if hasattr(self, "_pal32"):
                self._finish_palette()
        return self._player_idx[name], self._carpet_idx[name]

    def _finish_palette(self) -> None:
        """Lookup tables for index -> RGB, and a check that the fast lookup is exact on this numpy."""
        cols = np.zeros((256, 4), dtype=np.uint8)
        cols[: len(self._pal.colors), :3] = np.array(self._pal.colors, dtype=np.uint8)
        self._pal3 = np.ascontiguousarray(cols[:, :3])
        self._pal_bytes = self._pal3.reshape(-1).tobytes()
        self._pal32 = cols.view(np.uint32).reshape(256)
        n = self.width * self.height
        # The fast lookup writes each pixel as one 4-byte word at a 3-byte stride into a buffer with one spare
        # byte: every word's 4th byte lands on the next pixel's red, which the next (later) write then sets.
        # That is about twice as fast as np.take(..., axis=0) on (256, 3) rows, but it relies on numpy
        # writing in increasing order, so it is checked once here against the plain gather and replaced by it
        # if they differ.
        self._rgb_buf = np.empty(3 * n + 1, dtype=np.uint8)
        self._rgb_words = np.ndarray((n,), dtype=np.uint32, buffer=self._rgb_buf, strides=(3,))
        self._fast_lookup = True
        probe = (np.arange(n, dtype=np.int64) * 7919 % 256).astype(np.uint8).reshape(self.width, self.height)
        self._fast_lookup = bool(np.array_equal(self._to_rgb(probe), self._pal3[probe.T]))

    def _to_rgb(self, img: np.ndarray) -> np.ndarray:
        """Column-major (width, height) palette indices -> a fresh (height, width, 3) uint8 frame."""
        rows_first = np.ascontiguousarray(img.T)
        if not self._fast_lookup:
            return self._pal3[rows_first]
        np.take(self._pal32, rows_first.reshape(-1), out=self._rgb_words, mode="clip")
        return self._rgb_buf[:-1].reshape(self.height, self.width, 3).copy()

    # -- first person ----------------------------------------------------------------------------------------
    def first_person(self, state: GameState, viewer: str, yaw: float | None = None) -> np.ndarray:
        """The view from ``viewer``'s eye, facing its yaw (or ``yaw``): a (height, width, 3) uint8 array."""
        me = state.player(viewer)
        cx, cz = float(me.x), float(me.z)
        a = float(me.yaw if yaw is None else yaw)
        fx, fz = math.cos(a), math.sin(a)
        rx, rz = -fz, fx  # right of the view: yaw 0 (+x, east) has +z (south) on its right, as in Minecraft
        dx = fx + self._k * rx
        dz = fz + self._k * rz
        # A zero component would make 1/d infinite with the wrong sign on the far side; nudge it instead.
        dx = np.where(dx == 0.0, 1e-12, dx)
        dz = np.where(dz == 0.0, 1e-12, dz)
        depth, img = self._cast(cx, cz, dx, dz)
        self._draw_sprites(img, state, me, cx, cz, fx, fz, rx, rz, dx, dz, depth)
        return self._to_rgb(img)

    def first_person_image(self, state: GameState, viewer: str, yaw: float | None = None):
        """The same view as a Pillow RGB image, made by Pillow's palette conversion (faster when the frame is
        going to be encoded as JPEG or PNG anyway)."""
        from PIL import Image

        rgb_of = self._to_rgb
        self._to_rgb = lambda img: img  # keep the palette-index image
        try:
            idx = self.first_person(state, viewer, yaw)
        finally:
            self._to_rgb = rgb_of
        im = Image.frombuffer(
            "P", (self.height, self.width), np.ascontiguousarray(idx).tobytes(), "raw", "P", 0, 1
        )
        im.putpalette(self._pal_bytes)
        return im.transpose(Image.Transpose.TRANSPOSE).convert("RGB")

    def _cast(self, cx: float, cz: float, dx: np.ndarray, dz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Walls and floors: per-column wall distance (the depth buffer) and the (width, height) index
        image."""
        W, H, F = self.width, self.height, self.focal
        m = self.map
        ix, iz = math.floor(cx) - m.origin[0], math.floor(cz) - m.origin[1]
        inside = 0 <= ix < m.size[0] and 0 <= iz < m.size[1]
        r0 = int(m.region_grid[ix, iz]) if inside else -1
        if r0 < 0:  # the eye is inside a wall or off the map: sky over dark ground, nothing to hit
            img = np.empty((W, H), dtype=np.uint8)
            img[:, : H // 2] = self._sky
            img[:, H // 2:] = self._dark
            return np.full(W, np.inf), img

        T, C = self._T, self._C
        T.fill(np.inf)
        depth = np.empty(W)
        wall = np.empty(W, dtype=np.uint8)
        # Per active ray, packed so that dropping finished rays is two fancy-index calls, not seven.
        ray_f = np.stack([dx, dz, 1.0 / dx, 1.0 / dz])
        ray_i = np.stack([self._cols, (dx > 0).astype(np.intp), (dz > 0).astype(np.intp) + 2])
        key_base = np.full(W, 4 * r0, dtype=np.intp)
        bound, lo_pad, offset, strip = self._bound, self._lo_pad, self._offset, self._strip_region4
        steps = 0
        for k in range(MAX_STEPS):
            steps = k + 1
            ddx, ddz, idx, idz = ray_f
            cols, sx, sz = ray_i
            C[k, cols] = self._floor_idx4.take(key_base)
            kx = key_base + sx
            kz = key_base + sz
            tx = (bound.take(kx) - cx) * idx
            tz = (bound.take(kz) - cz) * idz
            xface = tx < tz
            t = np.where(xface, tx, tz)
            T[k, cols] = t
            # where the ray leaves, along the side it leaves by
            along = np.where(xface, cz + t * ddz, cx + t * ddx)
            key = np.where(xface, kx, kz)
            cell = offset.take(key) + (along - lo_pad.take(key)).astype(np.intp)
            nxt = strip.take(cell)
            hit = nxt < 0
            if hit.any():
                hc, hcell = cols[hit], cell[hit]
                depth[hc] = t[hit]
                wall[hc] = np.where(xface[hit], self._strip_wx.take(hcell), self._strip_wz.take(hcell))
                go = ~hit
                if not go.any():
                    break
                ray_f, ray_i, key_base = ray_f[:, go], ray_i[:, go], nxt[go]
            else:
                key_base = nxt
        else:  # rays still travelling after MAX_STEPS crossings: end them in the dark where they are
            depth[ray_i[0]] = T[MAX_STEPS - 1, ray_i[0]]
            wall[ray_i[0]] = self._dark

        # Each column is runs of one colour: sky, wall, then one floor run per region crossed, far to near.
        # A height h at distance t projects to y = H/2 - F (h - eye) / t; pixel row r (centre r + 0.5) is
        # covered from y0 to y1 when y0 <= r + 0.5 < y1, so a boundary y becomes row ceil(y - 0.5).
        dist = np.maximum(np.minimum(T[:steps], depth), 1e-6)  # segments after the hit collapse onto it
        y = np.empty((steps + 1, W))
        y[0] = H / 2 - F * (self.wall_height - self.eye) / np.maximum(depth, 1e-6)
        y[1:] = H / 2 + (F * self.eye) / dist[::-1]
        bounds = np.empty((steps + 3, W), dtype=np.intp)
        bounds[0] = 0
        bounds[1:-1] = np.clip(np.ceil(y - 0.5), 0, H)
        bounds[-1] = H
        colours = np.empty((steps + 2, W), dtype=np.uint8)
        colours[0] = self._sky
        colours[1] = wall
        colours[2:] = C[:steps][::-1]
        counts = np.diff(bounds, axis=0)
        img = np.repeat(colours.T.reshape(-1), counts.T.reshape(-1)).reshape(W, H)
        return depth, img

    def _draw_sprites(
        self, img: np.ndarray, state: GameState, me: PlayerState, cx: float, cz: float, fx: float, fz: float,
        rx: float, rz: float, dx: np.ndarray, dz: np.ndarray, depth: np.ndarray,
    ) -> None:
        """Bodies, then stations, the button and other players far to near; each column hides behind nearer
        walls."""
        W, F = self.width, self.focal
        half_tan = (W / 2) / F
        # (flat, view depth, order, kind, data), drawn far to near; the order keeps ties stable.
        sprites = []
        rel = self._static_centres - (cx, cz)
        sdepth = rel @ (fx, fz)
        slat = rel @ (rx, rz)
        # Cull boxes wholly behind the eye or outside the view (0.75: a generous half-diagonal of a block).
        near_enough = (sdepth > -0.75) & (np.abs(slat) - 0.75 <= (sdepth + 0.75) * half_tan)
        for i in np.flatnonzero(near_enough):
            sprites.append((False, float(sdepth[i]), len(sprites), "box", self._static_boxes[i]))
        for b in state.bodies:
            x0, x1, z0, z1 = body_box(b)
            d = (b.x - cx) * fx + (b.z - cz) * fz
            if d > -1.0:
                shades = self._colour_indices(b.color)[1]
                sprites.append((False, d, len(sprites), "box", (x0, x1, z0, z1, BODY_HEIGHT, shades)))
        for p in state.players:
            if p is me or p.name == me.name or not p.active:
                continue
            d = (p.x - cx) * fx + (p.z - cz) * fz
            if d > NEAR:
                sprites.append((False, d, len(sprites), "player", p))
        sprites.sort(key=lambda s: (not s[0], -s[1], s[2]))
        for _, d, _, kind, data in sprites:
            if kind == "box":
                self._draw_box(img, (cx, cz, fx, fz, rx, rz), dx, dz, depth, *data)
            else:
                self._draw_player(img, data, d, (data.x - cx) * rx + (data.z - cz) * rz, depth)

    def _draw_player(
        self, img: np.ndarray, p: PlayerState, d: float, lateral: float, depth: np.ndarray
    ) -> None:
        """An upright billboard facing the camera plane: body in the player's colour, a darker head band."""
        W, H, F = self.width, self.height, self.focal
        xc = W / 2 + F * lateral / d
        hw = F * (PLAYER_WIDTH / 2) / d
        c0 = max(0, math.ceil(xc - hw - 0.5))
        c1 = min(W, math.ceil(xc + hw - 0.5))
        if c0 >= c1:
            return
        top = min(H, max(0, math.ceil(H / 2 - F * (PLAYER_HEIGHT - self.eye) / d - 0.5)))
        neck = min(H, max(0, math.ceil(H / 2 - F * (PLAYER_HEIGHT - HEAD_HEIGHT - self.eye) / d - 0.5)))
        foot = min(H, max(0, math.ceil(H / 2 + F * self.eye / d - 0.5)))
        body, head = self._colour_indices(p.color)[0]
        seen = depth[c0:c1] > d
        if seen.all():
            cols: slice | np.ndarray = slice(c0, c1)
        else:
            cols = np.flatnonzero(seen) + c0
            if cols.size == 0:
                return
        img[cols, top:neck] = head
        img[cols, neck:foot] = body

    def _draw_box(
        self, img: np.ndarray, cam: tuple[float, ...], dx: np.ndarray, dz: np.ndarray, depth: np.ndarray,
        x0: float, x1: float, z0: float, z1: float, height: float, shades: list[int],
    ) -> None:
        """An axis-aligned box standing on the floor: the face each ray enters by, and the top seen from
        above."""
        W, H, F, eye = self.width, self.height, self.focal, self.eye
        cx, cz, fx, fz, rx, rz = cam
        # Columns that can see it: between the projections of its corners; a corner behind the eye means all.
        ks, ds = [], []
        for px, pz in ((x0, z0), (x0, z1), (x1, z0), (x1, z1)):
            d = (px - cx) * fx + (pz - cz) * fz
            if d <= NEAR:
                c0, c1 = 0, W
                break
            ds.append(d)
            ks.append(((px - cx) * rx + (pz - cz) * rz) / d)
        else:
            c0 = max(0, math.ceil(min(ks) * F + W / 2 - 0.5))
            c1 = min(W, math.ceil(max(ks) * F + W / 2 - 0.5))
            if c0 >= c1 or min(ds) >= depth[c0:c1].max():  # off screen, or wholly behind the walls there
                return
        ddx, ddz = dx[c0:c1], dz[c0:c1]
        ax = (x0 - cx) / ddx
        bx = (x1 - cx) / ddx
        az = (z0 - cz) / ddz
        bz = (z1 - cz) / ddz
        nx, far_x = np.minimum(ax, bx), np.maximum(ax, bx)
        nz, far_z = np.minimum(az, bz), np.maximum(az, bz)
        t_in = np.maximum(nx, nz)
        t_out = np.minimum(far_x, far_z)
        seen = (t_in < t_out) & (t_out > NEAR) & (t_in < depth[c0:c1])
        if not seen.any():
            return
        t_in = np.maximum(t_in, NEAR)  # standing on or over a box: its near edge is under the eye
        side_top = np.ceil(H / 2 - F * (height - eye) / t_in - 0.5)
        side_bot = np.ceil(H / 2 + F * eye / t_in - 0.5)
        lo = side_top
        if eye > height:  # the top face shows between the far and near top edges
            lo = np.ceil(H / 2 - F * (height - eye) / np.maximum(t_out, NEAR) - 0.5)
        lo = np.clip(lo, 0, H).astype(np.intp)
        side_top = np.clip(side_top, 0, H).astype(np.intp)
        side_bot = np.clip(side_bot, 0, H).astype(np.intp)
        r0 = int(lo[seen].min())
        r1 = int(side_bot[seen].max())
        if r0 >= r1:
            return
        rows = self._rows[r0:r1]
        # entered through an x side or a z side
        face = np.where(nx > nz, shades[0], shades[1]).astype(np.uint8)
        colour = np.where(rows >= side_top[:, None], face[:, None], np.uint8(shades[2]))
        mask = seen[:, None] & (rows >= lo[:, None]) & (rows < side_bot[:, None])
        np.copyto(img[c0:c1, r0:r1], colour, where=mask)

    # -- top down --------------------------------------------------------------------------------------------
    def topdown(self, state: GameState, scale: int = 4) -> np.ndarray:
        """The whole map from above, north (-z) up and east (+x) right: a (nz*scale, nx*scale, 3) uint8 image.

        Floors in their region's colour, walls in their darker wall colour, stations and the button as blocks,
        bodies as their block in the victim's colour crossed with dark lines, active players as discs of their
        colour with a dark dot on the side they face.
        """
        scale = int(scale)
        if scale < 1:
            raise ValueError(f"scale {scale} must be >= 1")
        img = self._topdown_base_image(scale).copy()
        ox, oz = self.map.origin
        h, w = img.shape[:2]
        dark = np.array(DARK_RGB, dtype=np.uint8)
        for b in state.bodies:
            px, pz = (math.floor(b.x) - ox) * scale, (math.floor(b.z) - oz) * scale
            if 0 <= px < w and 0 <= pz < h:
                img[pz: pz + scale, px: px + scale] = color_rgb(b.color)
                if scale >= 3:
                    diag = np.arange(scale)
                    img[pz + diag, px + diag] = dark
                    img[pz + diag, px + scale - 1 - diag] = dark
        radius = max(0.5 * scale, 1.0)
        for p in state.players:
            if not p.active:
                continue
            u, v = (p.x - ox) * scale, (p.z - oz) * scale  # pixel coordinates of the player's centre
            y0, y1 = max(0, int(v - radius) - 1), min(h, int(v + radius) + 2)
            x0, x1 = max(0, int(u - radius) - 1), min(w, int(u + radius) + 2)
            if y0 >= y1 or x0 >= x1:
                continue
            sub_y, sub_x = np.arange(y0, y1)[:, None] + 0.5, np.arange(x0, x1)[None, :] + 0.5  # pixel centres
            disc = (sub_x - u) ** 2 + (sub_y - v) ** 2 <= radius * radius
            if not disc.any():  # smaller than a pixel: light the pixel it stands on
                disc = (np.floor(sub_x) == math.floor(u)) & (np.floor(sub_y) == math.floor(v))
            img[y0:y1, x0:x1][disc] = color_rgb(p.color)
            if radius >= 2:
                fu = int(u + 0.6 * radius * math.cos(p.yaw))
                fv = int(v + 0.6 * radius * math.sin(p.yaw))
                if 0 <= fv < h and 0 <= fu < w:
                    img[fv, fu] = dark
        return img

    def _topdown_base_image(self, scale: int) -> np.ndarray:
        """The state-free part of the top-down view (floors, walls, stations, button), cached per scale."""
        if scale not in self._topdown_base:
            m = self.map
            regions = m.regions
            floor = np.array([r.floor_rgb for r in regions] + [DARK_RGB], dtype=np.uint8)
            # Wall blocks that touch no floor are never seen from inside: leave them dark, as outside.
            walls = np.array([_shade(r.wall_rgb, SHADE_X) for r in regions] + [DARK_RGB], dtype=np.uint8)
            grid = m.region_grid.astype(np.int64)
            cells = np.where((grid >= 0)[..., None], floor[np.where(grid >= 0, grid, -1)],
                             walls[np.where(self._wall_region >= 0, self._wall_region, -1)])
            cells = cells.transpose(1, 0, 2)  # [x, z] -> rows z, columns x
            ox, oz = m.origin
            for sx, sz in m.stations:
                cells[math.floor(sz) - oz, math.floor(sx) - ox] = STATION_RGB
            bx, bz = m.button
            cells[math.floor(bz) - oz, math.floor(bx) - ox] = BUTTON_RGB
            self._topdown_base[scale] = np.ascontiguousarray(np.repeat(np.repeat(cells, scale, 0), scale, 1))
        return self._topdown_base[scale]


def body_box(b) -> tuple[float, float, float, float]:
    """The footprint [x0, x1, z0, z1] of a body: centred where the victim fell, lying along the axis nearest
    to the way it faced."""
    along_x = abs(math.cos(b.yaw)) >= abs(math.sin(b.yaw))
    hx, hz = (BODY_LENGTH / 2, BODY_WIDTH / 2) if along_x else (BODY_WIDTH / 2, BODY_LENGTH / 2)
    return b.x - hx, b.x + hx, b.z - hz, b.z + hz


def save_png(array: np.ndarray, path: str | Path) -> None:
    """Write an (h, w, 3) uint8 array as a PNG (light compression: frames are many and written often)."""
    from PIL import Image

    Image.fromarray(np.ascontiguousarray(array, dtype=np.uint8)).save(path, compress_level=1)


def typical_scene() -> tuple[GameState, str]:
    """The benchmark scene: a viewer in Cafeteria looking along +z, seven players and two bodies around."""
    spots = [(87.5, 72.5), (86.0, 78.0), (90.0, 80.5), (84.0, 82.0), (92.5, 76.0), (88.5, 84.0), (81.0, 79.0),
             (94.0, 83.0)]
    players = [PlayerState(name=n, color=c, seat=i, role="crewmate", x=x, z=z, yaw=math.pi / 2 + 0.3 * i)
               for i, ((n, c), (x, z)) in enumerate(zip(DEFAULT_PLAYERS, spots))]
    players[0].yaw = math.pi / 2
    bodies = []
    for i, (name, colour, x, z) in enumerate((("Ava", "orange", 85.3, 80.6), ("Liam", "cyan", 91.2, 85.4))):
        players.append(
            PlayerState(name=name, color=colour, seat=8 + i, role="crewmate", x=x, z=z, alive=False)
        )
        bodies.append(Body(victim=name, color=colour, x=x, z=z, room="Cafeteria", tick=0))
    return GameState(players=players, seed=0, bodies=bodies), players[0].name


def bench_frame_ms(width: int = 640, height: int = 360, n: int = 200) -> float:
    """Median milliseconds per first-person frame of ``typical_scene`` (after one warm-up frame)."""
    from mau.env.map import load_map

    state, viewer = typical_scene()
    r = Renderer(load_map("skeld"), width, height)
    r.first_person(state, viewer)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        r.first_person(state, viewer)
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3)
