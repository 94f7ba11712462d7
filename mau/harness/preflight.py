"""The preflight check: before the first match, every distinct model of a run answers one request, so that an
unreachable server, a misnamed model or LoRA module (HTTP 404), a missing adapter or model path fails the run
at once, in one line, instead of turning every answer of every match into a fallback. Its requests have module
``preflight``. ("Probe" in mau means one thing: the belief probes of ``mau.harness.beliefs.probe``.)

- ``openai``: one short chat request (no retries, at most 30 s); any error is fatal.
- ``hf``: the model and the adapter must exist: a local folder with ``config.json`` (or a hub id ``org/name``
  that is not a local path) and an adapter folder with ``adapter_config.json``. Loading is left to the workers
  (a load here would hold a second copy of the weights).
- ``scripted``: nothing to check.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mau.errors import MauError
from mau.harness.backends.base import ModelConfig, ModelRequest

PREFLIGHT_MESSAGES = [{"role": "system", "content": "Answer with one JSON object."},
                  {"role": "user", "content": [{"type": "text", "text": 'Reply with {"ok": true}.'}]}]


def _where(label: str, cfg: ModelConfig) -> str:
    at = f" at {cfg.base_url}" if cfg.base_url else ""
    return f"{label}: {cfg.backend} model {cfg.model!r}{at}"


def _check_hf(label: str, cfg: ModelConfig) -> None:
    model = Path(cfg.model)
    if model.exists() and not (model / "config.json").is_file():
        raise MauError(f"{_where(label, cfg)}: {model} has no config.json; give a model folder or a hub id")
    if not model.exists() and (cfg.model.startswith((".", "/", "~")) or cfg.model.count("/") != 1):
        raise MauError(f"{_where(label, cfg)}: no such model folder; build it (mau tiny-model) or fix the "
                       f"path")
    if cfg.adapter is not None and not (Path(cfg.adapter) / "adapter_config.json").is_file():
        raise MauError(f"{_where(label, cfg)}: adapter {cfg.adapter} does not exist (no "
                       f"adapter_config.json); "
                       "train it (mau train) or fix the path")


async def _check_openai(label: str, cfg: ModelConfig) -> None:
    from mau.harness.backends import make_backend

    quick = cfg.model_copy(update={"max_retries": 0, "timeout_s": min(cfg.timeout_s, 30.0), "concurrency": 1})
    backend = make_backend(quick)
    try:
        r = await backend.complete(
            ModelRequest(
                messages=PREFLIGHT_MESSAGES, module="preflight", agent="preflight", json_mode=cfg.json_mode,
                max_tokens=min(cfg.max_tokens, 64),
            )
        )
    finally:
        await backend.aclose()
    if r.error is not None and r.error != "empty answer":  # an empty answer still comes from a live model
        raise MauError(f"{_where(label, cfg)} does not answer ({r.error}); start the server, fix base_url or "
                       f"the "
                       "model / LoRA module name, or check the key variable")


def preflight_models(models: dict[str, ModelConfig]) -> None:
    """Check every distinct model (by label, e.g. 'arm bcwin', 'pool gpt5'); raise ``MauError`` on the first
    that cannot answer."""
    seen: set[str] = set()
    todo: list[tuple[str, ModelConfig]] = []
    for label, cfg in models.items():
        key = cfg.model_dump_json()
        if key in seen or cfg.backend == "scripted":
            continue
        seen.add(key)
        if cfg.backend == "hf":
            _check_hf(label, cfg)
        elif cfg.backend == "openai":
            todo.append((label, cfg))
    if todo:
        async def run() -> None:
            await asyncio.gather(*(_check_openai(label, cfg) for label, cfg in todo))

        asyncio.run(run())
