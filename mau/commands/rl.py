"""mau rl --config configs/rl/tiny.yaml --set decisions.runs=[runs/collect/smoke] --out runs/rl/tiny

Decision-level GRPO of the crewmate with TRL's ``GRPOTrainer``: prompts are recorded crewmate decision
contexts (VOTE by default) from collect runs; for each, G completions are sampled and each is rewarded by
forking the sim at that decision with the completion as the answer and playing on (vote named a true
imposter, the meeting ejected one, the crew won; a penalty for an unparseable answer; docs/rl.md). Starts
from a BC model (a LoRA adapter from ``mau train``, merged, is also the KL reference). The run folder holds
trainer_log.jsonl (reward curve, KL, loss), rewards.jsonl (every completion's reward and terms), the trained
adapter, a merged model for ``mau eval`` and rl.json. Prints one line. ``--resume`` continues a run from its
last checkpoint (``grpo.save_steps``), also after a kill. Needs the ``ml`` extra.
"""

from __future__ import annotations

from mau.commands.common import Flag, config_flags
from mau.options import RunOptions
from mau.rl.config import RLConfig

FLAGS = [*config_flags("grpo.max_steps=5"), Flag("--out", "run folder (output.dir)", key="output.dir"),
         Flag("--resume", "continue the run in --out from its last checkpoint", key="resume", type=bool)]
CONFIG = "mau.rl.config:RLConfig"


def main(cfg: RLConfig, opts: RunOptions = RunOptions()) -> int:
    from mau.commands.common import require_modules
    from mau.rundir import RunDir

    require_modules("mau rl", ("torch", "transformers", "trl", "peft", "datasets"))
    from mau.rl.grpo import train_rl

    out = RunDir.choose(cfg.output.dir, "rl", opts.tag("rl"), "rl run").path
    s = train_rl(cfg, out)
    print(f"rl steps={s['steps']} decisions={s['decisions']} reward {s['reward_first']} -> "
          f"{s['reward_last']} steps_per_minute={s['steps_per_minute']} forks={s['forks']} "
          f"trainable_changed={s['trainable_changed']} -> {s['merged'] or s['saved']}", flush=True)
    return 0
