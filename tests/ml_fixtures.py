"""Session-scoped fixtures for the model-stack tests: a tiny Qwen3.5 VLM (built once per session) and a LoRA
adapter on it. Import them into a test module: ``from tests.ml_fixtures import tiny_model_dir``. Heavy imports
happen inside the fixtures, so importing this module needs no torch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen3.5 VLM + processor (seed 0), saved with save_pretrained."""
    from mau.tiny import build_tiny_model

    out = tmp_path_factory.mktemp("tiny-qwen3_5")
    build_tiny_model(out, seed=0)
    return out


@pytest.fixture(scope="session")
def tiny_adapter_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoRA adapter (r=8, language model only, random non-zero B so it changes outputs) on ``tiny_model_dir``,
    with the processor saved beside it."""
    from mau.tiny import build_tiny_adapter

    out = tmp_path_factory.mktemp("tiny-adapter")
    build_tiny_adapter(tiny_model_dir, out, seed=1)
    return out
