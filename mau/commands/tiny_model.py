"""mau tiny-model --out runs/tiny-qwen3_5

Build a tiny local Qwen3.5 VLM (``Qwen3_5ForConditionalGeneration``, ~0.5 M parameters, random weights) and
its processor (``Qwen3VLProcessor``: a byte-level BPE tokenizer trained on game text, the stock Qwen3.5 chat
template, the Qwen2-VL image processor) into one folder, with no hub access. ``AutoProcessor`` and
``AutoModelForImageTextToText.from_pretrained(out)`` reload it; the ``hf`` backend and training accept it in
place of a real checkpoint, so the whole pipeline runs on a CPU. Same seed, same files. Prints one line. An
existing model in ``--out`` is kept with ``--resume`` and replaced only with ``--force``.
Needs the ``ml`` extra (``pip install -e '.[ml]'``).
"""

from __future__ import annotations

from pydantic import Field

from mau.commands.common import DRY_RUN, FORCE, KEEP, Flag, config_flags
from mau.config import Model
from mau.options import RunOptions


class TinyModelConfig(Model):
    """``mau tiny-model``: a tiny Qwen3.5 VLM + processor for CPU tests."""

    out: str = Field("runs/tiny-qwen3_5", description="Folder to write the model and processor into.")
    seed: int = Field(0, description="Seed of the tokenizer's training text and of the weights' random init.")
    vocab_size: int = Field(800, ge=300, le=32000, description="Tokenizer size, special tokens included.")
    max_pixels: int = Field(256 * 256, ge=64 * 64, description="Image processor's pixel cap (one token per "
                                                               "32x32 px).")
    hidden_size: int = Field(64, ge=32, description="Hidden size of the text and vision stacks (head_dim "
                                                    "stays 32).")
    num_layers: int = Field(4, ge=4, description="Text layers (3 Gated DeltaNet per full-attention layer).")
    vision_depth: int = Field(2, ge=1, description="Vision transformer blocks.")
    resume: bool = Field(False, description="Keep a model already in out (a finished folder is never "
                                            "overwritten without --force).")


FLAGS = [*config_flags("vocab_size=1000"),
         Flag("--out", "folder to write the model and processor into", key="out"),
         Flag("--seed", "seed of the tokenizer text and the weights", key="seed", type=int),
         KEEP, FORCE, DRY_RUN]
CONFIG = "mau.commands.tiny_model:TinyModelConfig"


def main(cfg: TinyModelConfig, opts: RunOptions = RunOptions()) -> int:
    from mau.commands.common import model_folder_run

    run = model_folder_run(cfg.out, "tiny model", "mau tiny-model",
                           f"a tiny Qwen3.5 VLM seed={cfg.seed} vocab={cfg.vocab_size} -> {{run}} (~2 MB; "
                           f"nothing "
                           "written)", "tiny Qwen3.5 VLM (already built) -> {run}", cfg.resume, opts)
    if run is None:
        return 0
    from mau.models.tiny import build_tiny_model

    info = build_tiny_model(cfg.out, seed=cfg.seed, vocab_size=cfg.vocab_size, max_pixels=cfg.max_pixels,
                            hidden=cfg.hidden_size, layers=cfg.num_layers, vision_depth=cfg.vision_depth)
    print(f"tiny Qwen3.5 VLM seed={cfg.seed} parameters={info.parameters} vocab={info.vocab_size} "
          f"image_token_id={info.image_token_id} -> {info.out}")
    return 0
