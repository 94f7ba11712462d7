"""mau train --config configs/train/tiny.yaml --set data.dataset=runs/datasets/smoke-bcwin --out runs/train/tiny

LoRA SFT (TRL ``SFTTrainer`` + PEFT) of a Qwen3.5 VLM crewmate on a behaviour-cloning dataset built by
``mau dataset``: the vision tower frozen (checked bit-identical after training), LoRA on the language model
only, the loss on the expert's answer only, images never truncated (docs/training.md). The run folder holds
the resolved config, provenance, checkpoints, trainer_log.jsonl, checks.json, the adapter with its processor
(``OUT/adapter``) and, with ``output.merge``, a merged model. Prints one line: steps, final training loss,
trainable parameters, where the adapter is. Rerunning into a finished run folder needs ``--resume``, which
continues from its last checkpoint (also after a kill). Several GPUs or nodes: ``accelerate launch
--config_file configs/accelerate/multi_gpu.yaml -m mau train ...`` (slurm/train.sbatch). Needs the ``ml`` extra.
"""

from __future__ import annotations

import argparse

from mau.commands.common import add_config_arguments
from mau.train.config import TrainConfig


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--out", help="run folder (output.dir)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    from mau.config import load_config, parse_overrides, set_dotted

    over = parse_overrides(args.set)
    if args.out is not None:
        set_dotted(over, "output.dir", args.out)
    if args.resume:
        over["resume"] = True
    return load_config(TrainConfig, args.config, over)


def main(cfg: TrainConfig) -> int:
    import importlib.util

    from mau.errors import MauError

    missing = [m for m in ("torch", "transformers", "trl", "peft", "datasets") if importlib.util.find_spec(m) is None]
    if missing:
        raise MauError(f"mau train needs the ml extra ({missing[0]} is missing): pip install -e '.[ml]'")
    from mau.train.sft import process_state, train

    result = train(cfg)
    if process_state(cfg).is_main_process:
        print(result.line(), flush=True)
    return 0
