"""Any OpenAI-compatible chat endpoint (hosted routers, vLLM, ``transformers serve``, other local servers),
through the ``openai`` package, async.

Per call: a timeout; retries with exponential backoff on timeouts, connection errors, 429 and 5xx (other 4xx
are final); at most ``concurrency`` calls in flight per endpoint, shared by every seat that uses it. Images
go as base64 data URLs of the saved JPEG. The API key is read from the environment variable the config names,
at call time, and is never written anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from typing import Any

from mau.errors import ConfigError
from mau.harness.backends.base import ModelBackend, ModelConfig, ModelRequest, ModelResponse

_SEMAPHORES: dict[tuple[int, str], asyncio.Semaphore] = {}


def _semaphore(base_url: str, limit: int) -> asyncio.Semaphore:
    """One limit per endpoint and event loop, shared by all seats (and backends) that call it."""
    key = (id(asyncio.get_running_loop()), base_url)
    if key not in _SEMAPHORES:
        _SEMAPHORES[key] = asyncio.Semaphore(limit)
    return _SEMAPHORES[key]


def to_openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    out = []
    for m in request.messages:
        content = m["content"]
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") == "image":
                    jpeg = request.images[part["image"]].jpeg
                    url = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")
                    parts.append({"type": "image_url", "image_url": {"url": url}})
                else:
                    parts.append(part)
            content = parts
        out.append({"role": m["role"], "content": content})
    return out


class Backend(ModelBackend):
    name = "openai"

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        if not config.base_url:
            raise ConfigError("model.base_url: the openai backend needs an endpoint, e.g. http://127.0.0.1:8000/v1")
        self._client = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _api_key(self) -> str:
        env = self.config.api_key_env
        if env is None:
            return "EMPTY"  # local servers (vLLM, transformers serve) accept any key
        key = os.environ.get(env)
        if not key:
            raise ConfigError(f"model.api_key_env: the environment variable {env} is not set; export it first")
        return key

    def client(self):
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self._client is None or self._client_loop is not loop:
            # An HTTP client belongs to the event loop it was made in; a new loop (the next match) gets its own.
            from openai import AsyncOpenAI  # imported when a seat really uses this backend

            self._client = AsyncOpenAI(base_url=self.config.base_url, api_key=self._api_key(),
                                       timeout=self.config.timeout_s, max_retries=0)
            self._client_loop = loop
        return self._client

    def body(self, request: ModelRequest) -> dict[str, Any]:
        c = self.config
        body: dict[str, Any] = {
            "model": c.model, "messages": to_openai_messages(request),
            "temperature": request.temperature if request.temperature is not None else c.temperature,
            "max_tokens": request.max_tokens or c.max_tokens,
        }
        if request.json_mode and c.json_mode:
            body["response_format"] = {"type": "json_object"}
        if c.reasoning_effort:
            body["reasoning_effort"] = c.reasoning_effort
        if c.enable_thinking is not None:
            body["extra_body"] = {"chat_template_kwargs": {"enable_thinking": c.enable_thinking}}
        return body

    async def complete(self, request: ModelRequest) -> ModelResponse:
        import openai

        c = self.config
        body = self.body(request)
        client = self.client()
        sem = _semaphore(c.base_url, c.concurrency)
        error = "no attempt"
        t0 = time.perf_counter()
        for attempt in range(1, c.max_retries + 2):
            async with sem:
                t_call = time.perf_counter()
                try:
                    r = await client.chat.completions.create(**body)
                except openai.APITimeoutError:
                    error = f"timeout after {c.timeout_s:g} s"
                except openai.APIConnectionError as e:
                    error = f"connection error ({type(e.__cause__ or e).__name__})"
                except openai.APIStatusError as e:
                    error = f"HTTP {e.status_code}"
                    if e.status_code != 429 and e.status_code < 500:
                        return ModelResponse(None, error, time.perf_counter() - t0, attempts=attempt, model=c.model)
                else:
                    latency = time.perf_counter() - t_call
                    text = r.choices[0].message.content if r.choices else None
                    usage = r.usage
                    return ModelResponse(
                        text=text, error=None if text else "empty answer", latency_s=latency,
                        prompt_tokens=usage.prompt_tokens if usage else None,
                        completion_tokens=usage.completion_tokens if usage else None,
                        attempts=attempt, model=r.model or c.model)
            if attempt <= c.max_retries:
                await asyncio.sleep(c.backoff_s * 2 ** (attempt - 1))
        return ModelResponse(None, error, time.perf_counter() - t0, attempts=c.max_retries + 1, model=c.model)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
