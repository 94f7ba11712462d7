"""``mau bench env --backend minecraft``: whole scripted matches on the minecraft backend, with every active
agent's 640x360 first-person frame rendered at every roam decision point (as an ARIA match with vision needs).

Reports game seconds per wall second over the whole matches (start-up of server and bots included) and over
the steps alone (start-up excluded), the start-up time, and the host's render time per frame. The matches
share one host (``mau.env.minecraft.host.POOL``, as the matches of a collect or eval worker do): the first
starts it (server, map, 8 joins; its first frame starts the frame viewer), the others reset it; both are
reported.
"""

from __future__ import annotations

import shutil
import statistics
import time
from typing import Any

from mau.schema import TICKS_PER_SECOND


def bench_minecraft(matches: int, seed: int, frames: bool = True) -> dict[str, Any]:
    from mau.env.backends import make_world
    from mau.env.config import WorldConfig
    from mau.env.scripted import ScriptedPolicy
    from mau.env.state import ENDED, ROAM

    world = make_world(WorldConfig(backend="minecraft"))
    game_s = wall_s = step_wall_s = 0.0
    startups, outcomes, n_frames, frame_wall, first_frames_s = [], {}, 0, 0.0, None
    for s in range(seed, seed + matches):
        policies = {p.name: ScriptedPolicy(p.name, world.map, s) for p in world.cfg.players}
        t0 = time.perf_counter()
        world.reset(s)
        t1 = time.perf_counter()
        st = world.state
        while st.phase != ENDED:
            if frames and st.phase == ROAM:
                tf = time.perf_counter()
                for p in st.players:
                    if p.active:
                        world.render(p.name)
                        n_frames += 1
                if first_frames_s is None:  # the host's frame viewer starts here (once per host)
                    first_frames_s, n_frames = time.perf_counter() - tf, 0
                else:
                    frame_wall += time.perf_counter() - tf
            world.step({p.name: policies[p.name].act(world.observe(p.name)) for p in st.players if p.active})
        t2 = time.perf_counter()
        world.close()
        startups.append(t1 - t0)
        game_s += st.tick / TICKS_PER_SECOND
        wall_s += t2 - t0
        step_wall_s += t2 - t1
        outcomes[st.outcome] = outcomes.get(st.outcome, 0) + 1
    if world.log_dir is not None:  # the last match's host log (a bench writes no match folder)
        shutil.rmtree(world.log_dir, ignore_errors=True)
    w, h = world.config.frames.width, world.config.frames.height
    out: dict[str, Any] = {
        "bench": "env", "backend": "minecraft", "matches": matches, "agents": world.cfg.num_players,
        "frames_every_step": frames, "game_seconds_per_wall_second": round(game_s / wall_s, 2),
        "game_seconds_per_wall_second_steps_only": round(game_s / step_wall_s, 2),
        "startup_s_first": round(startups[0], 2),
        "startup_s_reused_median": round(statistics.median(startups[1:]), 2) if matches > 1 else None,
        "mean_game_seconds_per_match": round(game_s / matches, 1), "outcomes": dict(sorted(outcomes.items())),
        # where the time goes: the sub-steps' round trips to the host (walking the bots), and in them the
        # host's physics (prismarine-physics and the walk along the waypoints)
        "substeps": world.substep_s[0], "substeps_wall_s": round(world.substep_s[1], 2),
        "substeps_physics_s_in_host": round(world.substep_s[2], 2),
    }
    if frames and n_frames:
        # the frame viewer's start, and the first step's frames
        out["first_frames_s"] = round(first_frames_s, 2)
        out[f"frame_ms_{w}x{h}_host"] = round(statistics.median(world.frame_ms[1:]), 2)
        out[f"frame_ms_{w}x{h}_wall"] = round(1000 * frame_wall / n_frames, 2)  # after the first step's
        out["frames_wall_s"] = round(frame_wall, 2)
        out["frames"] = n_frames
    return out
