"""mau bench env

Speed figures, printed as one JSON object. ``env``: game seconds simulated per wall second by a whole match of
8 scripted agents without frames (total over matches, and the median over matches), and the median time of
one 640x360 first-person frame. Runs pinned to one core; these machines are shared, so quote medians and ratios.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

TARGETS = ("env",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", choices=TARGETS, help="what to measure")
    p.add_argument("--matches", type=int, default=30, help="matches to play (env)")
    p.add_argument("--frames", type=int, default=300, help="frames to render (env)")
    p.add_argument("--seed", type=int, default=0, help="first seed")


def config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    return {"target": args.target, "matches": args.matches, "frames": args.frames, "seed": args.seed}


def _one_core() -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def bench_env(matches: int, frames: int, seed: int) -> dict[str, Any]:
    import statistics
    import time

    from mau.env.render import bench_frame_ms
    from mau.env.runner import play_match
    from mau.env.scripted import ScriptedPolicy
    from mau.env.sim import SimWorld

    world = SimWorld()
    rates, game_s, wall_s, outcomes = [], 0.0, 0.0, {}
    for s in range(seed, seed + matches):
        policies = {p.name: ScriptedPolicy(p.name, world.map, s) for p in world.cfg.players}
        t0 = time.perf_counter()
        r = play_match(world, policies, s)
        dt = time.perf_counter() - t0
        rates.append(r.ticks / 20 / dt)
        game_s += r.ticks / 20
        wall_s += dt
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    w, h = world.config.frames.width, world.config.frames.height
    return {
        "bench": "env",
        "matches": matches,
        "agents": world.cfg.num_players,
        "game_seconds_per_wall_second": round(game_s / wall_s, 1),
        "game_seconds_per_wall_second_median": round(statistics.median(rates), 1),
        "mean_game_seconds_per_match": round(game_s / matches, 1),
        "outcomes": dict(sorted(outcomes.items())),
        f"frame_ms_{w}x{h}": round(bench_frame_ms(w, h, n=frames), 3),
        "frames": frames,
        "cores": 1,
    }


def main(cfg: dict[str, Any]) -> int:
    import json

    _one_core()
    print(json.dumps(bench_env(cfg["matches"], cfg["frames"], cfg["seed"])))
    return 0
