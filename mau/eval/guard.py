"""The adapter guard: before ``mau eval`` scores an adapter arm, the arm and the baseline answer the same
fixed, recorded prompts (``guard_prompts.json``: ARIA crewmate prompts from tests/golden/prompts) at
temperature 0. Identical answers to every prompt mean the adapter is not active: vLLM silently serves the
base model for a Qwen3.5 adapter whose weight names lack the ``language_model`` segment (vLLM issue 49354),
and a wrong ``--lora-modules`` name or a zero adapter look the same from outside. The eval then stops with
one line, before any match is played. An adapter arm is any arm other than the baseline whose model differs
from the baseline's (another served model name, or an ``adapter`` path on the hf backend); scripted arms are
skipped, and with a scripted baseline no arm is checked (no base model to compare with; the scripted expert
answers structured observations, not prompts).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mau.errors import MauError

PROMPTS_FILE = Path(__file__).with_name("guard_prompts.json")
GUARD_MAX_TOKENS = 64  # enough for the answers to part; the guard compares them, it does not score them


def guard_prompts() -> list[dict[str, Any]]:
    return json.loads(PROMPTS_FILE.read_text())["prompts"]


def adapter_arms(cfg: Any) -> list[str]:
    """The arms the guard checks (see the module docstring)."""
    base_name = cfg.baseline or next(iter(cfg.arms))
    base = cfg.arms[base_name]
    if base.backend == "scripted":
        return []
    out = []
    for name, m in cfg.arms.items():
        if name == base_name or m.backend == "scripted":
            continue
        if m.adapter or (m.model, m.backend) != (base.model, base.backend):
            out.append(name)
    return out


@dataclass
class GuardResult:
    arm: str
    identical: int
    prompts: int
    answers: dict[str, list[str | None]]

    @property
    def active(self) -> bool:
        return self.identical < self.prompts


async def _answers(model_cfg: Any, prompts: list[dict[str, Any]]) -> list[str]:
    from mau.harness.backends import make_backend
    from mau.harness.backends.base import ModelRequest

    backend = make_backend(model_cfg)
    out = []
    try:
        for p in prompts:
            r = await backend.complete(ModelRequest(messages=p["messages"], module="guard", agent="guard",
                                                    json_mode=model_cfg.json_mode, temperature=0.0,
                                                    max_tokens=min(model_cfg.max_tokens or GUARD_MAX_TOKENS,
                                                                   GUARD_MAX_TOKENS)))
            if r.text is None:
                raise MauError(f"adapter guard: model {model_cfg.model!r} did not answer a guard prompt "
                               f"({r.error}); "
                               "is its server up?")
            out.append(r.text)
    finally:
        await backend.aclose()
    return out


def check_adapter_arms(cfg: Any) -> list[GuardResult]:
    """Ask the baseline and every adapter arm; raise MauError (one line) if an arm answers every prompt
    exactly as the baseline. Returns the comparisons (for the run's log)."""
    arms = adapter_arms(cfg)
    if not arms:
        return []
    prompts = guard_prompts()
    base_name = cfg.baseline or next(iter(cfg.arms))
    base = asyncio.run(_answers(cfg.arms[base_name], prompts))
    results = []
    for name in arms:
        got = asyncio.run(_answers(cfg.arms[name], prompts))
        same = sum(a == b for a, b in zip(got, base))
        res = GuardResult(
            arm=name, identical=same, prompts=len(prompts), answers={"baseline": base, name: got}
        )
        if not res.active:
            m = cfg.arms[name]
            where = f"adapter {m.adapter}" if m.adapter else f"served model {m.model!r} at {m.base_url}"
            raise MauError(f"arms.{name}: answered all {len(prompts)} guard prompts exactly as the baseline "
                           f"at temperature 0, so its adapter is not active ({where}; vLLM ignores a Qwen3.5 "
                           f"adapter "
                           "without the language_model segment in its weight names, vLLM issue 49354); fix "
                           "the adapter or set adapter_guard: false")
        results.append(res)
    return results
