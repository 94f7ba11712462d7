"""Session-scoped fixtures for the model-stack tests: a tiny Qwen3.5 VLM (built once per session) and a LoRA
adapter on it (``build_tiny_adapter``, also used by tests directly). Import them into a test module: ``from
tests.ml_fixtures import tiny_model_dir``. Heavy imports
happen inside the fixtures, so importing this module needs no torch."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen3.5 VLM + processor (seed 0), saved with save_pretrained."""
    from mau.models.tiny import build_tiny_model

    out = tmp_path_factory.mktemp("tiny-qwen3_5")
    build_tiny_model(out, seed=0)
    return out


@pytest.fixture(scope="session")
def tiny_adapter_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoRA adapter (r=8, language model only, random non-zero B so it changes outputs) on
    ``tiny_model_dir``, with the processor saved beside it."""
    out = tmp_path_factory.mktemp("tiny-adapter")
    build_tiny_adapter(tiny_model_dir, out, seed=1)
    return out


def build_tiny_adapter(
    base: str | Path, out: str | Path, seed: int = 0, r: int = 8, scale: float = 0.5
) -> int:
    """A PEFT LoRA adapter (rank ``r``, language model only) for the model at ``base``, with random non-zero
    ``lora_B`` weights (std ``scale``) so that it changes the model's output; saved with ``save_pretrained``
    into ``out`` beside the base's processor. ``base`` is recorded as an absolute path. Returns the number of
    adapter parameters."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from mau.train.config import LANGUAGE_MODEL_LORA_TARGETS

    base = Path(base).resolve()
    model = AutoModelForImageTextToText.from_pretrained(base, dtype=torch.float32)
    torch.manual_seed(seed)
    with warnings.catch_warnings():  # peft 0.21 calls a transformers method that 5.24 marks deprecated
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        peft_model = get_peft_model(model, LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0,
                                                      target_modules=LANGUAGE_MODEL_LORA_TARGETS))
    n = 0
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_" in name:
                n += p.numel()
                if "lora_B" in name:  # PEFT initialises B to zero: the adapter would be a no-op
                    p.normal_(0.0, scale)
    out = Path(out)
    peft_model.save_pretrained(out)
    AutoProcessor.from_pretrained(base).save_pretrained(out)
    return n
