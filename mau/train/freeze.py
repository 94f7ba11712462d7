"""What trains and what must not: the vision tower frozen by hand (TRL has no switch for it), trainable
parameters confined to the language model, and fingerprints that prove the vision weights came out of training
bit-identical. Works on the bare model and under PEFT (whose names gain a ``base_model.model.`` prefix).
Heavy imports happen inside the functions."""

from __future__ import annotations

import hashlib
from typing import Any

from mau.errors import MauError

VISION = ".visual."  # Qwen3.5: model.model.visual (the merger included)
LANGUAGE_MODEL = ".language_model."  # model.model.language_model (embeddings, layers, final norm)


def _numel(p: Any) -> int:
    """A parameter's size, also when DeepSpeed ZeRO-3 has partitioned it (numel() is then 0)."""
    return int(getattr(p, "ds_numel", 0) or p.numel())


def _named(name: str) -> str:
    """A leading dot, so that ``model.visual.x`` and ``base_model.model.model.visual.x`` both contain
    VISION."""
    return "." + name


def vision_tower(model: Any) -> Any:
    """The vision tower module of a Qwen3.5 VLM (bare or wrapped by PEFT)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    visual = getattr(getattr(base, "model", None), "visual", None)
    if visual is None:
        raise MauError(f"{type(base).__name__} has no model.visual: not a Qwen3.5 VLM "
                       "(load it with AutoModelForImageTextToText)")
    return visual


def freeze_vision(model: Any) -> int:
    """Set requires_grad=False on every vision-tower parameter; returns how many parameters that is."""
    n = 0
    for p in vision_tower(model).parameters():
        p.requires_grad_(False)
        n += _numel(p)
    return n


def freeze_all_but_language_model(model: Any) -> int:
    """Full fine-tuning: train the language model's weights only (not the vision tower, not lm_head).
    Returns the number of trainable parameters."""
    n = 0
    for name, p in model.named_parameters():
        train = LANGUAGE_MODEL in _named(name)
        p.requires_grad_(train)
        n += _numel(p) if train else 0
    return n


def parameter_counts(model: Any) -> dict[str, int]:
    """Parameter counts: total, trainable, vision, vision trainable, language model, lm_head trainable."""
    c = dict(
        total=0, trainable=0, vision=0, vision_trainable=0, language_model=0, lm_head_trainable=0, lora=0
    )
    for name, p in model.named_parameters():
        n, key = _numel(p), _named(name)
        c["total"] += n
        c["trainable"] += n if p.requires_grad else 0
        if VISION in key:
            c["vision"] += n
            c["vision_trainable"] += n if p.requires_grad else 0
        if LANGUAGE_MODEL in key:
            c["language_model"] += n
        if ".lm_head." in key and p.requires_grad:
            c["lm_head_trainable"] += n
        if "lora_" in key:
            c["lora"] += n
    return c


def check_trainable(model: Any, full_finetune: bool) -> list[str]:
    """Raise unless the trainable parameters are exactly what the run intends: some exist; none is in the
    vision tower or lm_head; all are in the language model; and with LoRA, all are LoRA weights. Returns the
    trainable names."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    if not names:
        raise MauError("no trainable parameters: check lora.target_modules (it matched no layer)")
    bad = [n for n in names if VISION in _named(n)]
    if bad:
        raise MauError(f"{len(bad)} vision-tower parameters would train (e.g. {bad[0]}); the vision tower "
                       f"must "
                       "stay frozen: fix lora.target_modules so it matches only the language model")
    bad = [n for n in names if LANGUAGE_MODEL not in _named(n)]
    if bad:
        raise MauError(f"{len(bad)} parameters outside the language model would train (e.g. {bad[0]}); fix "
                       "lora.target_modules so it matches only the language model")
    if not full_finetune:
        bad = [n for n in names if "lora_" not in n]
        if bad:
            raise MauError(f"{len(bad)} non-LoRA parameters would train (e.g. {bad[0]}) in a LoRA run")
    return names


def _full_tensor(p: Any) -> Any:
    """The whole tensor of a parameter, also when it is sharded (FSDP2 DTensor; DeepSpeed ZeRO-3)."""
    if hasattr(p, "full_tensor"):  # DTensor (FSDP2)
        return p.full_tensor()
    if hasattr(p, "ds_id"):  # DeepSpeed ZeRO-3: gather (a collective: every rank calls this)
        import deepspeed

        with deepspeed.zero.GatheredParameters([p], modifier_rank=None):
            return p.detach().clone()
    return p


def tensor_digest(t: Any) -> str:
    """SHA-256 of a tensor's bytes, dtype and shape: equal digests mean bit-identical tensors."""
    import torch

    t = _full_tensor(t).detach().to("cpu").contiguous()
    h = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
    h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())  # raw bytes: numpy has no bfloat16
    return h.hexdigest()


def _bare(name: str) -> str:
    """A parameter name without PEFT's ``base_model.model.`` prefix, to compare before and after wrapping."""
    return name.removeprefix("base_model.model.")


def vision_digests(model: Any) -> dict[str, str]:
    """{parameter name (PEFT prefix removed): digest} of every vision-tower parameter and buffer."""
    out = {}
    for name, t in list(vision_tower(model).named_parameters()) + list(vision_tower(model).named_buffers()):
        out[_bare(name)] = tensor_digest(t)
    return out


def trainable_digests(model: Any) -> dict[str, str]:
    """{name: digest} of every trainable parameter (to tell afterwards which ones training changed)."""
    return {_bare(n): tensor_digest(p) for n, p in model.named_parameters() if p.requires_grad}


def compare_digests(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Names whose digest differs, or that appear on one side only."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def prepare_for_tuning(model: Any, lora: Any) -> Any:
    """Freeze the vision tower always; with ``lora.full_finetune`` also everything but the language model and
    return None, else return the PEFT ``LoraConfig`` the trainer wraps the model with (SFT and GRPO alike)."""
    freeze_vision(model)
    if lora.full_finetune:
        freeze_all_but_language_model(model)
        return None
    from peft import LoraConfig

    return LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                      target_modules=lora.target_modules, task_type="CAUSAL_LM")
