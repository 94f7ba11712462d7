"""mau student-rl --config configs/student/rl.yaml --set grpo.max_steps=5 --out runs/student/rl-smoke

GRPO of the CPU student's VOTE over its candidates (docs/student.md): at each recorded crewmate VOTE decision
of ``decisions.runs``, ``grpo.num_generations`` candidates are sampled from the student's candidate scores and
rewarded by the vote terms read from the match's roles (no forks, so the meeting and crew-win terms must be
0), with the exact KL to the start policy over the candidates. The lower layers' outputs come from a
``mau student-train`` run's ``features.pt`` (``grpo.feature_cache``) where there. The run folder holds the
resolved config, provenance, trainer_log.jsonl, the model with its tokenizer (``OUT/model``) and rl.json
(written last). Prints one line. ``--resume`` keeps a finished run. Needs the ``ml`` extra.
"""

from __future__ import annotations

from mau.commands.common import Flag, config_flags
from mau.options import RunOptions
from mau.student.config import StudentRLConfig

FLAGS = [*config_flags("grpo.max_steps=5"), Flag("--out", "run folder (output.dir)", key="output.dir"),
         Flag("--resume", "keep a finished run in --out", key="resume", type=bool)]
CONFIG = "mau.student.config:StudentRLConfig"


def main(cfg: StudentRLConfig, opts: RunOptions = RunOptions()) -> int:
    from mau.commands.common import require_modules
    from mau.rundir import RunDir

    out = RunDir.choose(cfg.output.dir, "student-rl", opts.tag("student-rl"), "rl run").path
    require_modules("mau student-rl")
    from mau.student.grpo import train_candidates_rl

    s = train_candidates_rl(cfg, out)
    rewards = f"reward {s['reward_first']:.3f} -> {s['reward_last']:.3f}"
    print(f"student-rl steps={s['steps']} decisions={s['decisions']} {rewards} "
          f"frac_reward_zero_std={s['frac_reward_zero_std']:.3f} -> {s['saved']}", flush=True)
    return 0
