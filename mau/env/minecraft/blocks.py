"""The map in Minecraft blocks: floors, walls, stations, the button; players' and bodies' colours.

Players stand at ``floor_y``; floor blocks lie one below; walls are ``wall_height`` blocks tall on every cell
that touches floor (8-neighbourhood) and is not floor itself. Stations are crafting tables and the button a
redstone block, both set into the floor so that they never block a path. A region's RGB colour becomes the
nearest block of ``PALETTE``, which leaves out the wool-like concretes so that no floor or wall is mistaken
for a player's colour.
"""

from __future__ import annotations

import numpy as np

from mau.env.map import GameMap

# Block -> approximate mean RGB of its texture (Minecraft 1.21 textures).
PALETTE: dict[str, tuple[int, int, int]] = {
    "gray_concrete": (54, 57, 61), "light_gray_concrete": (125, 125, 115), "cyan_concrete": (21, 119, 136),
    "purple_concrete": (100, 31, 156), "brown_concrete": (96, 59, 31), "orange_concrete": (224, 97, 0),
    "magenta_concrete": (169, 48, 159), "lime_concrete": (94, 168, 24),
    "terracotta": (152, 94, 67), "white_terracotta": (209, 178, 161), "orange_terracotta": (161, 83, 37),
    "magenta_terracotta": (149, 88, 108), "light_blue_terracotta": (113, 108, 137),
    "yellow_terracotta": (186, 133, 35), "lime_terracotta": (103, 117, 52), "pink_terracotta": (161, 78, 78),
    "gray_terracotta": (57, 42, 35), "light_gray_terracotta": (135, 106, 97), "cyan_terracotta": (86, 91, 91),
    "purple_terracotta": (118, 70, 86), "blue_terracotta": (74, 59, 91), "brown_terracotta": (77, 51, 35),
    "green_terracotta": (76, 83, 42), "red_terracotta": (143, 61, 46),
    "stone": (125, 125, 125), "smooth_stone": (158, 158, 158), "polished_andesite": (132, 134, 133),
    "quartz_block": (235, 229, 222), "iron_block": (220, 220, 220), "oak_planks": (162, 130, 78),
    "spruce_planks": (114, 84, 48), "prismarine": (99, 156, 151), "dark_prismarine": (51, 91, 75),
    "lapis_block": (30, 67, 140), "stone_bricks": (122, 121, 122), "sandstone": (216, 203, 155),
    "polished_deepslate": (72, 72, 73), "warped_planks": (43, 104, 99),
}
STATION_BLOCK = "crafting_table"
BUTTON_BLOCK = "redstone_block"


def nearest_block(rgb: tuple[int, int, int], exclude: set[str] = frozenset()) -> str:
    best, name = None, "stone"
    for block, c in PALETTE.items():
        if block in exclude:
            continue
        d = sum((a - b) ** 2 for a, b in zip(rgb, c))
        if best is None or d < best:
            best, name = d, block
    return name


def carpet(color: str) -> str:
    """A player's colour name -> the carpet of that dye (the body marker); the paper's colours are dye
    colours."""
    return color.replace(" ", "_") + "_carpet"


def map_blocks(m: GameMap) -> list[list]:
    """Boxes ``[x0, x1, y0, y1, z0, z1, block]`` (inclusive) that build the map, floors first."""
    fy = m.floor_y
    boxes: list[list] = []
    for r in m.regions:
        x0, x1, z0, z1 = r.rect
        boxes.append([x0, x1, fy - 1, fy - 1, z0, z1, nearest_block(r.floor_rgb)])
    # Walls: non-floor cells next to floor take the colour of the first region they touch.
    floor = m.floor
    grid = m.region_grid
    ox, oz = m.origin
    nx, nz = floor.shape
    wall_of: dict[int, str] = {}
    for ix in range(nx):
        for iz in range(nz):
            if floor[ix, iz]:
                continue
            near = grid[max(0, ix - 1): ix + 2, max(0, iz - 1): iz + 2]
            touching = near[near >= 0]
            if touching.size == 0:
                continue
            region = m.regions[int(np.min(touching))]
            if region.index not in wall_of:
                wall_of[region.index] = nearest_block(
                    region.wall_rgb, exclude={nearest_block(region.floor_rgb)}
                )
            x, z = ix + ox, iz + oz
            boxes.append([x, x, fy - 1, fy - 1 + m.wall_height, z, z, wall_of[region.index]])
    for sx, sz in m.stations:
        boxes.append([int(sx), int(sx), fy - 1, fy - 1, int(sz), int(sz), STATION_BLOCK])
    bx, bz = m.button
    boxes.append([int(bx), int(bx), fy - 1, fy - 1, int(bz), int(bz), BUTTON_BLOCK])
    return boxes
