"""mau student-curve --config configs/student/curve.yaml --set 'sizes=[40]' --out runs/student/curve-smoke

The learning curve of the CPU student (docs/student.md, "The learning curve"): the student trained on nested
subsets of a BC dataset (``sizes``: the first N training rows, matches in a seeded random order) under each
objective (``objectives``: the weights of the vote cross-entropy and the belief KL), every point scored on the
same held-out VOTE prompts (``heldout.runs``: within-probe AUROC against the truth, per imposter rung), beside
the linear reader of the compact prompt fitted on the same rows with the same objective and the expert's own
beliefs. Writes points/*.json (one per point, kept by ``--resume``), curve.json, curve.csv, curve.md and
curve.png; prints the table. Needs the ``ml`` extra.
"""

from __future__ import annotations

from mau.commands.common import DRY_RUN, Flag, config_flags
from mau.options import RunOptions
from mau.student.config import StudentCurveConfig

FLAGS = [*config_flags("training.epochs=1"),
         Flag("--out", "run folder (output.dir)", key="output.dir"),
         Flag("--resume", "keep the finished points (or the finished curve) in --out", key="resume",
              type=bool),
         DRY_RUN]
CONFIG = "mau.student.config:StudentCurveConfig"


def main(cfg: StudentCurveConfig, opts: RunOptions = RunOptions()) -> int:
    from mau.commands.common import require_modules
    from mau.rundir import RunDir

    out = RunDir.choose(cfg.output.dir, "student-curve", opts.tag("curve"), "learning curve").path
    if opts.dry_run:
        t = cfg.training
        steps = f"{t.max_steps} steps" if t.max_steps else f"{t.epochs:g} epochs"
        points = sum(o.sizes is None or n in o.sizes for o in cfg.objectives.values() for n in cfg.sizes)
        print(f"mau student-curve --dry-run: {cfg.model.path} on {cfg.data.dataset}, sizes {cfg.sizes} x "
              f"objectives {list(cfg.objectives)} ({points} points, {steps} each), scored on "
              f"{cfg.heldout.runs} -> {out} (nothing written)")
        return 0
    require_modules("mau student-curve")
    from mau.student.curve import markdown, run_curve

    s = run_curve(cfg, out)
    table = markdown(s, list(s["references"]["expert's beliefs"]))
    print("\n".join(table[:len(s["points"]) + 2]), flush=True)
    print(f"-> {out}", flush=True)
    return 0
