"""The ``minecraft`` backend: the sim's rules and action programs, with bodies, movement, positions and
first-person frames from a Minecraft-protocol world (flying-squid + mineflayer bots, ``minecraft/host.js``).

The rules engine (``mau.env.rules``) stays the single authority. Each sub-step is two-phase (MineLand-style):
the action programs run on the positions Minecraft reported last and say where each body should walk (the
map's doorway path); the host walks the bots there by stepping prismarine-physics by hand for
``substep_ticks`` ticks, emitting as many server ticks; the reported positions become the players' positions.
So a step costs what it computes, not game time. The map is built in blocks from the same floor grid, so the
map's line of sight (used for witnesses and seen bodies) is the blocks' line of sight; frames are drawn from
the blocks.

One host process serves the matches of this process one after the other (``mau.env.minecraft.host.POOL``):
taken at ``reset(seed)`` (a fresh one the first time, else the last match's, reset), handed back when the
match ends; ended on any error inside a step, by ``close()`` before the match ended, when idle and at
interpreter exit. This match's part of its log lives in ``log_dir`` (a temp folder the runner copies into the
match folder as ``logs/``). See docs/minecraft.md.
"""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from mau.env.actions import ActionRun
from mau.env.config import COLOR_RGB, WorldConfig
from mau.env.map import GameMap
from mau.env.minecraft.blocks import carpet, map_blocks
from mau.env.minecraft.host import HOST_LOG, MC_VERSION, POOL, MinecraftHost, frames_installed
from mau.env.sim import SimWorld
from mau.env.state import ENDED, GameState, PlayerState
from mau.errors import MauError

ARRIVED = 1e-3  # the host steps a body exactly onto its waypoint; this only absorbs float rounding
MOVED = 1e-3  # a held station is left when the body moves more than this in a sub-step
TELEPORTED = 1e-2  # a rules-side position change (meeting teleport) larger than this is sent to the host
GHOST_OFFSET = 12  # blocks outside the map where the dead bots are parked (never drawn, never simulated)

_LIVE: "weakref.WeakSet[MinecraftWorld]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for w in list(_LIVE):
        w._abort()


def _remove_dirs(dirs: list[Path]) -> None:
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


class MinecraftWorld(SimWorld):
    name = "minecraft"

    def __init__(self, config: WorldConfig | None = None, game_map: GameMap | None = None):
        super().__init__(config, game_map)
        self.host: MinecraftHost | None = None
        self.log_dir: Path | None = None
        self._log_since = 0  # where this match's part of the host's log begins
        self._goals: dict[str, list[tuple[float, float]]] = {}
        self._goal_runs: dict[str, ActionRun] = {}
        self._mc_pos: dict[str, tuple[float, float]] = {}
        self._carpets: dict[tuple[int, int], str] = {}
        self._frames: dict[tuple, np.ndarray] = {}
        self._lock = threading.Lock()
        self.frame_ms: list[float] = []  # host render time per frame, for bench
        # sub-steps, their round trips' wall s, the host's physics s (for bench)
        self.substep_s = [0, 0.0, 0.0]
        _LIVE.add(self)
        # This world's log folder goes with the world (collect and eval build one world per match; the runner
        # has copied the log into the match folder by then).
        self._log_dirs: list[Path] = []
        weakref.finalize(self, _remove_dirs, self._log_dirs)

    # -- lifecycle -----------------------------------------------------------------------------------------
    def _host_config(self) -> dict[str, Any]:
        m, cfg = self.map, self.cfg
        xs = [v for r in m.regions for v in r.rect[:2]]
        zs = [v for r in m.regions for v in r.rect[2:]]
        extent = max(max(xs) - min(xs), max(zs) - min(zs))
        fr = self.config.frames
        return {
            "version": MC_VERSION, "floor_y": m.floor_y, "walk_speed": cfg.walk_speed,
            "spawn": [int(m.button[0]), int(m.button[1])], "eye_height": cfg.eye_height, "view_distance": 8,
            "players": [{"name": p.name, "color": p.color, "rgb": list(COLOR_RGB[p.color])}
                        for p in cfg.players[: cfg.num_players]],
            "blocks": map_blocks(m),
            "frames": {"width": fr.width, "height": fr.height, "fov_vertical_deg": cfg.fov_vertical_deg,
                       "center": [(min(xs) + max(xs)) / 2, (min(zs) + max(zs)) / 2],
                       "view_chunks": int(extent // 32) + 3},
        }

    def reset(self, seed: int) -> GameState:
        self.close()
        if self.log_dir is not None:  # the last match's log was copied into its match folder by now
            shutil.rmtree(self.log_dir, ignore_errors=True)
        state = super().reset(seed)
        self.log_dir = Path(tempfile.mkdtemp(prefix="mau-minecraft-"))
        self._log_dirs[:] = [self.log_dir]
        self.host = POOL.acquire(self._host_config(), frames=frames_installed() is None)
        self._log_since = self.host.log_size()
        self._mc_pos, self._carpets, self._frames = {}, {}, {}
        try:
            if self.host.matches:
                self._call("reset")  # a reused host: the map's blocks and the bots' state as at ready
            self._sync_from_rules()  # everyone to the start
        except BaseException:
            self._abort()
            raise
        return state

    def close(self) -> None:
        """Let go of the host (idempotent): handed back for the next match when this one has ended, else ended
        (a match stopped half-way, by an error or by the caller, leaves no host in an unknown state to the
        next). Its part of the log stays in ``log_dir``."""
        if self.host is not None and (self.state is None or self.state.phase != ENDED):
            self._abort()
        elif self.host is not None:
            host, self.host = self.host, None
            self._save_log(host)
            POOL.release(host)

    def _abort(self) -> None:
        """End the host's process group now (after an error: it is not reused)."""
        if self.host is not None:
            host, self.host = self.host, None
            self._save_log(host)
            host.close()

    def _save_log(self, host: MinecraftHost) -> None:
        if self.log_dir is not None:
            try:
                host.write_log(self.log_dir / HOST_LOG, self._log_since)
            except OSError:
                pass

    def __enter__(self) -> "MinecraftWorld":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def log_files(self) -> list[Path]:
        """The host's log of the last match: its start-up, then this match's part (the runner copies it into
        the match folder)."""
        if self.host is not None:
            self._save_log(self.host)
        return sorted(self.log_dir.glob("minecraft-host*.log")) if self.log_dir else []

    def parts(self, *_: Any):
        raise MauError("world.backend minecraft: snapshot/restore is not supported (the bodies live in "
                       "another process); use world.backend=sim for branching")

    snapshot = restore = restore_parts = parts  # type: ignore[assignment]

    def step(self, actions):
        """The sim's step; any error ends the host before it propagates."""
        if self.host is None and self.state is not None and self.state.phase != ENDED:
            raise MauError("world.backend minecraft: the host is not running; call reset(seed)")
        try:
            res = super().step(actions)
            if self.state.phase == ENDED:
                self.close()
            else:
                self._sync_from_rules()
            return res
        except BaseException:
            self._abort()
            raise

    # -- rules -> Minecraft --------------------------------------------------------------------------------
    def _sync_from_rules(self) -> None:
        """Send what the rules changed: teleports (match start, meetings), the dead out of sight, bodies."""
        st = self.state
        ox, oz = self.map.origin
        moves: dict[str, list[float]] = {}
        for p in st.players:
            if p.active:
                last = self._mc_pos.get(p.name)
                if last is None or math.hypot(last[0] - p.x, last[1] - p.z) > TELEPORTED:
                    moves[p.name] = [p.x, p.z, p.yaw]
            elif self._mc_pos.get(p.name) is not None:
                moves[p.name] = [ox - GHOST_OFFSET - p.seat * 2, oz - GHOST_OFFSET, 0.0]
        if moves:
            reply = self._call("teleport", players=moves)
            self._frames.clear()
            for p in st.players:
                if p.active:
                    x, _, z, _ = reply["positions"][p.name]
                    self._mc_pos[p.name] = (x, z)
                else:
                    self._mc_pos[p.name] = None  # type: ignore[assignment]
        want = {(math.floor(b.x), math.floor(b.z)): carpet(b.color) for b in st.bodies}
        changes = [
            [x, self.map.floor_y, z, name]
            for (x, z), name in want.items()
            if self._carpets.get((x, z)) != name
        ]
        changes += [[x, self.map.floor_y, z, "air"] for (x, z) in self._carpets if (x, z) not in want]
        if changes:
            self._call("set_blocks", blocks=changes)
            self._carpets = want
            self._frames.clear()

    def _call(self, op: str, **kw: Any) -> dict[str, Any]:
        if self.host is None:
            raise MauError("world.backend minecraft: the host is not running; call reset(seed)")
        with self._lock:
            return self.host.call(op, **kw)

    # -- movement: two-phase sub-steps ---------------------------------------------------------------------
    def _advance(self, ticks: int) -> None:
        """The sim's sub-step loop (its two hooks below), then the bodies follow the rules' teleports."""
        super()._advance(ticks)
        self._sync_from_rules()

    def _substep_begin(self) -> None:
        self._goals, self._goal_runs = {}, {}  # the programs of this sub-step set the walking goals

    def _substep_move(self, ticks: int) -> None:
        self._physics(ticks)

    def _physics(self, ticks: int) -> None:
        st = self.state
        active = [p for p in st.players if p.active]
        goals = {p.name: self._goals.get(p.name) for p in active}
        yaws = {p.name: p.yaw for p in active if not goals[p.name]}
        self._sync_from_rules()  # a kill in this sub-step parks the victim before the bodies move
        t0 = time.perf_counter()
        reply = self._call("step", goals=goals, ticks=ticks, yaws=yaws)
        self.substep_s[0] += 1
        self.substep_s[1] += time.perf_counter() - t0
        self.substep_s[2] += reply["ms_physics"] / 1000
        self._frames.clear()
        for p in active:
            if not p.active:
                continue
            x, _, z, yaw = reply["positions"][p.name]
            moved = math.hypot(x - p.x, z - p.z)
            p.x, p.z = x, z
            if goals[p.name]:
                p.yaw = yaw
            self._mc_pos[p.name] = (x, z)
            k = reply["consumed"].get(p.name, 0)
            if k and p.name in self._goal_runs:
                del self._goal_runs[p.name].path[:k]  # the waypoints the body reached
            if moved > MOVED and p.holding_station is not None:
                self.rules.on_moved(st, p)

    def _move(self, p: PlayerState, run: ActionRun, gx: float, gz: float, dt: int, stop: float = 0.0,
              replan: bool = False) -> bool:
        """Plan, don't move: record the route the host walks this sub-step; True once within ``stop``."""
        if math.hypot(gx - p.x, gz - p.z) <= stop + ARRIVED:
            return True
        if replan or run.path_goal != (gx, gz) or not run.path:
            run.path = self.map.path(p.x, p.z, gx, gz)
            run.path_goal = (gx, gz)
        while len(run.path) > 1 and math.hypot(run.path[0][0] - p.x, run.path[0][1] - p.z) <= ARRIVED:
            run.path.pop(0)
        route = [tuple(q) for q in run.path]
        if stop > 0:
            px, pz = route[-2] if len(route) > 1 else (p.x, p.z)
            d = math.hypot(gx - px, gz - pz)
            if d > stop:
                route[-1] = (gx - (gx - px) / d * stop, gz - (gz - pz) / d * stop)
            else:
                route.pop()
        self._goals[p.name] = route
        self._goal_runs[p.name] = run
        return False

    # -- frames --------------------------------------------------------------------------------------------
    def render(self, name: str, yaw: float | None = None) -> np.ndarray:
        """``name``'s first-person RGB frame (H x W x 3 uint8) from the Minecraft world. The first request
        at a state renders every active player's forward view in one call and keeps them for the others."""
        st = self.state
        key = (st.tick, st.step, st.meeting_steps, name, None if yaw is None else round(yaw, 6))
        frame = self._frames.get(key)
        if frame is not None:
            return frame
        missing = frames_installed()
        if missing:
            raise MauError(f"world.backend minecraft: frames need {missing}")
        active = [p.name for p in st.players if p.active]
        if yaw is None and name in active:
            views = [[n, None] for n in active]
        else:
            views = [[name, yaw]]
        with self._lock:
            frames, ms = self.host.frames_rgb(views, active)
        self.frame_ms.append(ms / len(views))
        for (n, y), f in zip(views, frames):
            self._frames[(st.tick, st.step, st.meeting_steps, n, None if y is None else round(y, 6))] = f
        return self._frames[key]

    def render_image(self, name: str, yaw: float | None = None):
        from PIL import Image

        return Image.fromarray(self.render(name, yaw))


World = MinecraftWorld

__all__ = ["World", "MinecraftWorld"]
