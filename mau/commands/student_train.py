"""mau student-train --config configs/student/train.yaml --set training.max_steps=4 --out runs/student/t4

The CPU student (docs/student.md) learns the expert's VOTE as a choice among the candidates of a BC dataset of
compact VOTE prompts (``mau dataset --filter bcvote``): the cross-entropy of the expert's choice under the
softmax of the candidates' first-token scores, the last ``training.train_last_layers`` decoder layers and the
final norm trained, the lower layers frozen and their output cached once per prompt (``features.pt``). The run
folder holds the resolved config, provenance, trainer_log.jsonl, features.pt, the whole model with its
tokenizer (``OUT/model``, which the ``lm`` backend plays) and train.json (written last). Prints one line.
Rerunning into a finished run folder needs ``--resume`` (it keeps it). Needs the ``ml`` extra.
"""

from __future__ import annotations

from mau.commands.common import DRY_RUN, Flag, config_flags
from mau.options import RunOptions
from mau.student.config import StudentTrainConfig

FLAGS = [*config_flags("training.max_steps=30"),
         Flag("--out", "run folder (output.dir)", key="output.dir"),
         Flag("--resume", "keep a finished run in --out; an unfinished one reuses its feature "
                          "cache", key="resume",
              type=bool),
         DRY_RUN]
CONFIG = "mau.student.config:StudentTrainConfig"


def main(cfg: StudentTrainConfig, opts: RunOptions = RunOptions()) -> int:
    from mau.commands.common import require_modules
    from mau.rundir import RunDir

    out = RunDir.choose(cfg.output.dir, "student-train", opts.tag("student"), "training run").path
    if opts.dry_run:
        t = cfg.training
        steps = f"{t.max_steps} steps" if t.max_steps else f"{t.epochs:g} epochs"
        print(f"mau student-train --dry-run: {cfg.model.path} on {cfg.data.dataset}, {steps}, the last "
              f"{t.train_last_layers} layers -> {out} (nothing written)")
        return 0
    require_modules("mau student-train")
    from mau.student.train import train_candidates

    print(train_candidates(cfg, out).line(), flush=True)
    return 0
