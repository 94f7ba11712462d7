"""Whether this machine computes bfloat16 natively, and so which dtype a CPU run of the training path should
use.

Production trains in bf16 on GPUs. On a CPU, bf16 matrix products are fast only with the instructions for
them: x86 ``avx512_bf16`` or ``amx_bf16`` (Cooper Lake / Sapphire Rapids and later, AMD Zen 4 and later),
arm64 ``bf16`` / ``sve_bf16``. Without them (e.g. an AVX2-only AMD EPYC) torch emulates bf16 products, far
slower than float32, so the CPU tests of the 9B path train in float32 there (tests/test_train_9b.py;
docs/training.md).

``MAU_NATIVE_BF16=0`` forces the non-native answer (reproduces an AVX2-only machine anywhere), ``=1`` the
native one; unset: detected from ``torch.cpu.get_capabilities()`` (cpuinfo, the same flags as /proc/cpuinfo).
Light imports: torch is imported inside the functions.
"""

from __future__ import annotations

import os

from mau.errors import MauError

ENV = "MAU_NATIVE_BF16"
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16", "sve_bf16")


def native_bf16(device: str = "cpu") -> bool:
    """True when ``device`` (cpu or cuda) computes bfloat16 matrix products in hardware."""
    forced = os.environ.get(ENV, "")
    if forced:
        if forced not in ("0", "1"):
            raise MauError(f"{ENV}={forced!r}: set 1 (bf16 is native here), 0 (it is not) or leave it unset")
        return forced == "1"
    import torch

    if device == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    caps = torch.cpu.get_capabilities()
    return any(caps.get(flag) is True for flag in CPU_BF16_FLAGS)


def native_dtype(device: str = "cpu") -> str:
    """The dtype to train in on ``device``: bfloat16 where it is native, else float32."""
    return "bfloat16" if native_bf16(device) else "float32"
