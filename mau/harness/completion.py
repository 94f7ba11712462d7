"""A JSON-mode completion over any harness backend: what the after-match readers that ask a model (the claims
extractor, the deception judge) are handed, so that ``mau.eval`` itself imports no backend."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable

# messages -> (text or None, prompt tokens, completion tokens)
Completion = Callable[[list[dict[str, Any]]], Awaitable[tuple[str | None, int, int]]]


def model_config(model: str, backend: str, base_url: str | None, key_env: str | None, max_tokens: int = 512):
    """The ``ModelConfig`` of a reader's model: temperature 0, four calls in flight."""
    from mau.harness.backends.base import ModelConfig

    return ModelConfig(backend=backend, model=model, base_url=base_url, api_key_env=key_env,
                       max_tokens=max_tokens, temperature=0.0, concurrency=4)


def completion_fn(model_cfg: Any, module: str = "extract") -> tuple[Completion, Any]:
    """An async ``messages -> (text or None, prompt tokens, completion tokens)`` in JSON mode at temperature
    0, and the backend (the caller closes it)."""
    from mau.harness.backends import make_backend
    from mau.harness.backends.base import ModelRequest

    backend = make_backend(model_cfg)

    async def complete(messages: list[dict[str, Any]]) -> tuple[str | None, int, int]:
        r = await backend.complete(ModelRequest(messages=messages, module=module, json_mode=True,
                                                temperature=0.0, max_tokens=model_cfg.max_tokens))
        return (r.text if r.error is None else None), r.prompt_tokens or 0, r.completion_tokens or 0

    return complete, backend


@asynccontextmanager
async def open_completion(model: str, backend: str, base_url: str | None, key_env: str | None,
                          max_tokens: int) -> AsyncIterator[Completion]:
    """``completion_fn`` of ``model_config``, its backend closed on exit (the claims extractor's and the
    judge's model in ``mau claims`` and ``mau judge``)."""
    complete, b = completion_fn(model_config(model, backend, base_url, key_env, max_tokens))
    try:
        yield complete
    finally:
        await b.aclose()
