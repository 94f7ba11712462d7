"""mau play --config configs/play/scripted.yaml --seed 1 --out runs/play/seed1

Play one whole match and write its match folder (docs/formats.md): header with seed, roles, config and
outcome; the ground-truth event log; first-person frames with ``--frames``. Prints the outcome on one line.
With ``policy: aria`` (e.g. ``configs/play/aria_scripted.yaml``) every seat is an ARIA agent whose modules
call its seat's model; the folder then also holds every call record (calls.jsonl), the frames the calls saw,
and each agent's memory at meeting ends (memory.jsonl). Rerunning into a finished match folder needs
``--resume`` (which keeps the finished match).
"""

from __future__ import annotations

from mau.commands.common import DRY_RUN, FORCE, KEEP, Flag, config_flags
from mau.options import RunOptions
from mau.runner import PlayConfig  # noqa: F401  (re-exported; the play config lives beside the match runner)
from mau.schema import TICKS_PER_SECOND

FLAGS = [*config_flags("world.game.max_steps=50"),
         Flag("--seed", "match seed", key="seed", type=int),
         Flag("--out", "match folder to write", key="out"),
         Flag("--frames", "save every player's first-person frame at every "
                          "step", key="world.frames.save", type=bool),
         KEEP, FORCE, DRY_RUN]
CONFIG = "mau.runner:PlayConfig"


def main(cfg: PlayConfig, opts: RunOptions = RunOptions()) -> int:
    import json

    from mau.matchdir import is_match_dir, read_header
    from mau.rundir import RunDir
    from mau.runner import play_one

    run = RunDir.choose(cfg.out, "play", f"seed{cfg.seed}", "match")
    out = run.path
    if opts.dry_run:
        print(f"mau play --dry-run: one {cfg.policy} match, seed {cfg.seed}, at most "
              f"{cfg.world.game.max_steps} steps -> {out} (nothing written)")
        return 0
    if run.keep_finished(is_match_dir(out), cfg.resume, opts.force):
        h = read_header(out)
        print(f"{h['outcome']} seed={h['seed']} steps={h['steps']} (already finished) -> {out}")
        return 0
    p = play_one(cfg, out, opts.progress)
    r = p.result
    print(f"{r.outcome} seed={cfg.seed} steps={r.steps} game_s={r.ticks / TICKS_PER_SECOND:.0f} "
          f"wall_s={r.wall_seconds:.2f} {json.dumps(p.summary)} -> {p.folder}")
    return 0
