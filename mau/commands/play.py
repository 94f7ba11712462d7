"""mau play --config configs/play/scripted.yaml --seed 1 --out runs/play/seed1

Play one whole match and write its match folder (docs/formats.md): header with seed, roles, config and outcome;
the ground-truth event log; first-person frames with ``--frames``. Prints the outcome on one line.
With ``policy: aria`` (e.g. ``configs/play/aria_scripted.yaml``) every seat is an ARIA agent whose modules call
its seat's model; the folder then also holds every call record (calls.jsonl), the frames the calls saw, and
each agent's memory at meeting ends (memory.jsonl). Rerunning into a finished match folder needs ``--resume``
(which keeps the finished match).
"""

from __future__ import annotations

from mau.commands.common import DRY_RUN, FORCE, KEEP, Flag, config_flags
from mau.options import RunOptions
from mau.runner import PlayConfig  # noqa: F401  (re-exported; the play config lives beside the match runner)

FLAGS = [*config_flags("world.game.max_steps=50"),
         Flag("--seed", "match seed", key="seed", type=int),
         Flag("--out", "match folder to write", key="out"),
         Flag("--frames", "save every player's first-person frame at every step", key="world.frames.save", type=bool),
         KEEP, FORCE, DRY_RUN]
CONFIG = "mau.runner:PlayConfig"


def main(cfg: PlayConfig, opts: RunOptions = RunOptions()) -> int:
    import asyncio
    import json

    from mau.env.backends import make_world
    from mau.env.runner import play_match, write_match
    from mau.env.scripted import ScriptedPolicy
    from mau.matchdir import MatchWriter, is_match_dir, read_header
    from mau.provenance import provenance
    from mau.rundir import RunDir

    run = RunDir.choose(cfg.out, "play", f"seed{cfg.seed}", "match")
    out = run.path
    if opts.dry_run:
        print(f"mau play --dry-run: one {cfg.policy} match, seed {cfg.seed}, at most {cfg.world.game.max_steps} "
              f"steps -> {out} (nothing written)")
        return 0
    if run.keep_finished(is_match_dir(out), cfg.resume, opts.force):
        h = read_header(out)
        print(f"{h['outcome']} seed={h['seed']} steps={h['steps']} (already finished) -> {out}")
        return 0
    world = make_world(cfg.world)
    writer = MatchWriter(out)
    extra: dict = {}
    try:
        if cfg.policy == "aria":
            from mau.harness.backends import make_backend
            from mau.harness.match import AriaMatch
            from mau.runner import play_and_close

            backends = {k: make_backend(s.model) for k, s in cfg.seats.items()}
            match = AriaMatch(world, cfg.seats, backends, writer.staging, out.name, progress=opts.progress)
            result = asyncio.run(play_and_close(match, cfg.seed, backends.values()))
            extra = match.header_extra()
        else:
            policies = {p.name: ScriptedPolicy(p.name, world.map, cfg.seed) for p in cfg.world.game.players}
            result = play_match(world, policies, cfg.seed, cfg.state_mode, writer, frames=cfg.world.frames.save,
                                topdown=cfg.world.frames.topdown)
        folder = write_match(writer, world, result, cfg, provenance(), extra)
    except BaseException:
        writer.abort()
        getattr(world, "close", lambda: None)()  # a backend with a process (minecraft) ends it now
        raise
    st = world.state
    summary = {"ejections": len(st.ejections), "kills": sum(1 for p in st.players if p.death_tick is not None),
               "meetings": st.meetings_held}
    if extra:
        summary.update(calls=extra["calls"]["calls"], fallbacks=extra["calls"]["fallbacks"])
    print(f"{result.outcome} seed={cfg.seed} steps={result.steps} game_s={result.ticks / 20:.0f} "
          f"wall_s={result.wall_seconds:.2f} {json.dumps(summary)} -> {folder}")
    return 0
