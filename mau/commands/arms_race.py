"""mau arms-race --config configs/arms/race.yaml --out runs/arms/race

The arms race of issue 43 (docs/detection.md, "The arms race"): detector 0 is a likelihood file (issue 29's
teacher); in each round k the adversary that plans against detector k plays the teacher's crewmates (who
reason with it) on that round's training seeds, and detector k+1 is a mixture over the imposters' kinds
fitted on the habits' matches and every earlier adversary's (``mau.collect.arms_race``). Writes
round_<k>/observer_fit.json (the detectors; version 2 files hold a mixture), the training runs (habits/,
round_<k>/adversary/), race.json, and the two eval configs that score the race on held-out seeds:
cross.yaml (every detector against every adversary) and ladder.yaml (the first and last detectors against
the habit rungs); run them with the ``mau eval`` line each file opens with.
"""

from __future__ import annotations

from mau.commands.common import DRY_RUN, NO_PROGRESS, Flag, config_flags
from mau.options import RunOptions

FLAGS = [*config_flags("rounds=1"),
         Flag("--out", "run folder", key="out"),
         Flag("--resume", "keep the rounds already played and fitted in --out", key="resume", type=bool),
         NO_PROGRESS, DRY_RUN]
CONFIG = "mau.collect.arms_race:ArmsRaceConfig"


def main(cfg, opts: RunOptions = RunOptions()) -> int:
    from mau.collect.arms_race import run_race
    from mau.rundir import RunDir

    run = RunDir.choose(cfg.out, "arms-race", opts.tag("race"), "arms race")
    if opts.dry_run:
        print(f"mau arms-race --dry-run: {cfg.rounds} rounds from {cfg.base}, habits {cfg.habits} x "
              f"{cfg.habit_repetitions} repetitions, each adversary x {cfg.adversary_repetitions}, on "
              f"{cfg.collect} case {cfg.case}; eval seeds {cfg.eval_seeds[0]}..{cfg.eval_seeds[-1]} "
              f"({len(cfg.eval_seeds)}) -> {run.path} (nothing written)")
        return 0
    if not run.is_empty() and not cfg.resume:
        from mau.errors import MauError

        what = "a finished arms race" if (run.path / "race.json").exists() else "files"
        raise MauError(f"--out {run.path}: already holds {what}; pass --resume to go on with the race in it "
                       "(finished rounds are kept) or choose another --out")
    from mau.config import dump_yaml

    run.write_config(dump_yaml(cfg.model_copy(update={"resume": False})))
    s = run_race(cfg, run.path, progress=opts.progress)
    for r in s["rounds"]:
        print(f"round {r['round']}: detector {r['detector']}; adversary matches {r['adversary_run']} (seeds "
              f"{r['train_seeds'][0]}+{r['train_seeds'][1]})")
    print(f"score it: mau eval --config {run.path / 'cross.yaml'} --out {run.path / 'cross'}")
    print(f"          mau eval --config {run.path / 'ladder.yaml'} --out {run.path / 'ladder'}")
    return 0
