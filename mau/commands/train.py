"""mau train --config configs/train/tiny.yaml --out runs/train/tiny

(``data.dataset`` of that config: runs/datasets/smoke-bcwin, a ``mau dataset`` folder.)

LoRA SFT (TRL ``SFTTrainer`` + PEFT) of a Qwen3.5 VLM crewmate on a behaviour-cloning dataset built by
``mau dataset``: the vision tower frozen (checked bit-identical after training), LoRA on the language model
only, the loss on the expert's answer only, images never truncated (docs/training.md). The run folder holds
the resolved config, provenance, checkpoints, trainer_log.jsonl, checks.json, the adapter with its processor
(``OUT/adapter``) and, with ``output.merge``, a merged model. Prints one line: steps, final training loss,
trainable parameters, where the adapter is. Rerunning into a finished run folder needs ``--resume``, which
continues from its last checkpoint (also after a kill). ``--plan`` trains nothing and prints the dataset's
sequence lengths (text and image tokens), steps per epoch and the estimated peak memory per GPU
(mau.train.plan). Several GPUs or nodes: ``accelerate launch
--config_file configs/accelerate/multi_gpu.yaml -m mau train ...`` (slurm/train.sbatch). Needs the ``ml``
extra.
"""

from __future__ import annotations

from mau.commands.common import DRY_RUN, Flag, config_flags
from mau.options import RunOptions
from mau.train.config import TrainConfig

FLAGS = [*config_flags("training.max_steps=30"),
         Flag("--out", "run folder (output.dir)", key="output.dir"),
         Flag("--resume", "continue the run in --out from its last checkpoint", key="resume", type=bool),
         DRY_RUN,
         Flag("--plan", "train nothing: print the dataset's sequence lengths (text and image tokens), the "
              "steps per epoch and the estimated peak memory per GPU (1 GPU, DDP, "
              "ZeRO-3)", type=bool, option="plan"),
         Flag("--plan-gpus", "GPUs for the DDP and ZeRO-3 rows of --plan (default "
                             "8)", type=int, option="plan_gpus"),
         Flag("--plan-json", "with --plan: print the plan as JSON", type=bool, option="plan_json")]
CONFIG = "mau.train.config:TrainConfig"


def main(cfg: TrainConfig, opts: RunOptions = RunOptions()) -> int:
    import os

    from mau.commands.common import require_modules
    from mau.errors import MauError
    from mau.rundir import RunDir

    if opts.plan:
        require_modules("mau train --plan", ("transformers", "trl", "datasets"))
        import json

        from mau.train.plan import plan, render

        p = plan(cfg, processes=opts.plan_gpus)
        print(json.dumps(p, indent=1) if opts.plan_json else render(p), flush=True)
        return 0
    # each process would pick its own time
    if not cfg.output.dir and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise MauError("output.dir is unset: with several processes give it explicitly (--out DIR)")
    out = RunDir.choose(cfg.output.dir, "train", opts.tag("sft"), "training run").path
    if opts.dry_run:
        t = cfg.training
        steps = f"{t.max_steps} steps" if t.max_steps else f"{t.epochs:g} epochs"
        print(f"mau train --dry-run: {cfg.model.path} on {cfg.data.dataset}, {steps} "
              f"({'full fine-tune' if cfg.lora.full_finetune else f'LoRA r={cfg.lora.r}'}) -> {out} (nothing "
              f"written)")
        return 0
    _refuse_text_only_for_sft(cfg)
    require_modules("mau train", ("torch", "transformers", "trl", "peft", "datasets"))
    from mau.train.sft import process_state, train

    result = train(cfg, out)
    if process_state(cfg).is_main_process:
        print(result.line(), flush=True)
    return 0


def _refuse_text_only_for_sft(cfg: TrainConfig) -> None:
    """SFT trains a Qwen3.5 VLM; a local text-only causal LM (the CPU student) gets a one-line error that says
    which verb trains it."""
    import json
    from pathlib import Path

    from mau.errors import MauError

    conf = Path(cfg.model.path) / "config.json"
    if not conf.is_file():
        return
    archs = json.loads(conf.read_text()).get("architectures") or []
    if archs and all(a.endswith("ForCausalLM") for a in archs):
        raise MauError(f"model.path {cfg.model.path} is a text-only model ({archs[0]}); mau train trains a "
                       f"Qwen3.5 "
                       "VLM: train the student with mau student-train (docs/student.md)")
