"""Merge a LoRA adapter into its base model (``merge_and_unload``) and save the result with the processor, for
servers without adapter support (``transformers serve``). Done from the files on disk, in one process, so it
works the same after any distributed training strategy. Heavy imports happen inside the function."""

from __future__ import annotations

import warnings
from pathlib import Path


def merge_adapter(base: str, adapter: str | Path, out: str | Path, dtype: str = "auto") -> Path:
    """Load ``base`` (hub id or folder) on the CPU, apply the adapter, merge it into the weights and save the
    model and the adapter folder's processor into ``out``. ``dtype`` auto: the base's own dtype."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText, AutoProcessor

    out = Path(out)
    torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
    model = AutoModelForImageTextToText.from_pretrained(base, dtype=torch_dtype)
    with warnings.catch_warnings():  # peft 0.21 calls a transformers method that 5.24 marks deprecated
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        model = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    model.save_pretrained(out)
    AutoProcessor.from_pretrained(str(adapter)).save_pretrained(out)  # the training-time image caps included
    return out
