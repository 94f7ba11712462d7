"""mau tiny-model --out runs/tiny-qwen3_5

Build a tiny local Qwen3.5 VLM (``Qwen3_5ForConditionalGeneration``, ~0.5 M parameters, random weights) and
its processor (``Qwen3VLProcessor``: a byte-level BPE tokenizer trained on game text, the stock Qwen3.5 chat
template, the Qwen2-VL image processor) into one folder, with no hub access. ``AutoProcessor`` and
``AutoModelForImageTextToText.from_pretrained(out)`` reload it; the ``hf`` backend and training accept it in
place of a real checkpoint, so the whole pipeline runs on a CPU. Same seed, same files. Prints one line.
Needs the ``ml`` extra (``pip install -e '.[ml]'``).
"""

from __future__ import annotations

import argparse

from pydantic import Field

from mau.commands.common import add_config_arguments
from mau.env.config import Model


class TinyModelConfig(Model):
    """``mau tiny-model``: a tiny Qwen3.5 VLM + processor for CPU tests."""

    out: str = Field("runs/tiny-qwen3_5", description="Folder to write the model and processor into.")
    seed: int = Field(0, description="Seed of the tokenizer's training text and of the weights' random init.")
    vocab_size: int = Field(800, ge=300, le=32000, description="Tokenizer size, special tokens included.")
    max_pixels: int = Field(256 * 256, ge=64 * 64, description="Image processor's pixel cap (one token per 32x32 px).")
    hidden_size: int = Field(64, ge=32, description="Hidden size of the text and vision stacks (head_dim stays 32).")
    num_layers: int = Field(4, ge=4, description="Text layers (3 Gated DeltaNet per full-attention layer).")
    vision_depth: int = Field(2, ge=1, description="Vision transformer blocks.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--out", help="folder to write the model and processor into")
    p.add_argument("--seed", type=int, help="seed of the tokenizer text and the weights")


def config_from_args(args: argparse.Namespace) -> TinyModelConfig:
    from mau.config import load_config, parse_overrides

    over = parse_overrides(args.set)
    if args.out is not None:
        over["out"] = args.out
    if args.seed is not None:
        over["seed"] = args.seed
    return load_config(TinyModelConfig, args.config, over)


def main(cfg: TinyModelConfig) -> int:
    import importlib.util

    from mau.errors import MauError

    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None:
        raise MauError("mau tiny-model needs the ml extra: pip install -e '.[ml]'")
    from transformers.utils import logging as hf_logging

    from mau.train.tiny import build_tiny_model

    hf_logging.disable_progress_bar()  # the verb's output is its one line

    info = build_tiny_model(cfg.out, seed=cfg.seed, vocab_size=cfg.vocab_size, max_pixels=cfg.max_pixels,
                            hidden=cfg.hidden_size, layers=cfg.num_layers, vision_depth=cfg.vision_depth)
    print(f"tiny Qwen3.5 VLM seed={cfg.seed} parameters={info.parameters} vocab={info.vocab_size} "
          f"image_token_id={info.image_token_id} -> {info.out}")
    return 0
