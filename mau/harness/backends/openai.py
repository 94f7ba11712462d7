"""Any OpenAI-compatible chat endpoint (hosted routers, vLLM, ``transformers serve``, other local servers),
async, through mau's lean HTTP client (``http_client: mau``, mau/harness/http.py) or the ``openai`` package's.

Per call: a timeout; retries on timeouts, connection errors, 429 and 5xx, each after a jittered exponential
backoff ("full jitter": a uniform draw up to ``backoff_s * 2**k``, capped at ``max_backoff_s``) or, on a 429
or 503 that says so, after the server's ``Retry-After``; at most ``max_retries`` retries within
``retry_budget_s`` seconds (a wait the server asked for with ``Retry-After`` counts against the budget only:
a rate limit that lifts within it is waited out). A call that is still failing then comes back ``fatal``: the
harness fails its match loudly (a dead server or a rate limit that never lifts must not turn into a storm of
silent fallbacks; ``--resume`` plays the match again). So do 401, 403 and 404 (a wrong key, model or URL
fails every call alike); other 4xx (a prompt too long, say) are that call's own failure, a fallback. At most
``concurrency`` calls in flight per endpoint, shared by every seat and every match in flight in the worker's
event loop. Images go as base64 data URLs of the saved JPEG. The API key is read from the environment
variable the config names, at call time, and is never written anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import time
import weakref
from email.utils import parsedate_to_datetime
from typing import Any

from mau.errors import ConfigError
from mau.harness.backends.base import ModelBackend, ModelConfig, ModelRequest, ModelResponse

# Per event loop (a worker's), per endpoint: one limit shared by every seat, backend and match in flight.
_SEMAPHORES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]]" = \
    weakref.WeakKeyDictionary()
FATAL_STATUS = (401, 403, 404)  # the key, the model or the URL is wrong: every call would fail alike
_JITTER = random.Random()  # waiting times only: never an answer, never a match's stream


def _semaphore(base_url: str, limit: int) -> asyncio.Semaphore:
    """One limit per endpoint and event loop, shared by all seats (and backends) that call it."""
    per_loop = _SEMAPHORES.setdefault(asyncio.get_running_loop(), {})
    if base_url not in per_loop:
        per_loop[base_url] = asyncio.Semaphore(limit)
    return per_loop[base_url]


def retry_after_s(headers: Any) -> float | None:
    """The wait a 429 / 503 asks for (``Retry-After``: seconds or an HTTP date), or None."""
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def backoff_s(config: ModelConfig, retry: int, asked: float | None) -> float:
    """The wait before retry number ``retry`` (1, 2, ...): the server's Retry-After when it gave one (and up
    to a quarter more), else a uniform draw up to ``backoff_s * 2**(retry-1)``, both capped at
    ``max_backoff_s``. The jitter spreads the retries of hundreds of calls that failed together (a 429 burst)
    instead of sending them back at once."""
    if asked is not None:
        return min(asked * (1 + _JITTER.uniform(0, 0.25)), config.max_backoff_s)
    return _JITTER.uniform(0, min(config.backoff_s * 2 ** (retry - 1), config.max_backoff_s))


def to_openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    out = []
    for m in request.messages:
        content = m["content"]
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") == "image":
                    frame = request.images[part["image"]]
                    url = frame.data_url() if hasattr(frame, "data_url") else \
                        "data:image/jpeg;base64," + base64.b64encode(frame.jpeg).decode("ascii")
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
            raise ConfigError("model.base_url: the openai backend needs an endpoint, e.g. "
                              "http://127.0.0.1:8000/v1")
        self._client = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._endpoint = None  # mau.harness.http.Endpoint (http_client: mau)

    def _api_key(self) -> str:
        env = self.config.api_key_env
        if env is None:
            return "EMPTY"  # local servers (vLLM, transformers serve) accept any key
        key = os.environ.get(env)
        if not key:
            raise ConfigError(f"model.api_key_env: the environment variable {env} is not set; export it "
                              f"first")
        return key

    def client(self):
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self._client is None or self._client_loop is not loop:
            # An HTTP client belongs to the event loop it was made in; a new loop (the next match) gets its
            # own.
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

    async def _send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt: the answer as JSON, or ``_Failure``."""
        c = self.config
        if c.http_client == "openai":
            return await self._send_openai(body)
        from mau.harness.http import Endpoint, HttpStatusError

        if self._endpoint is None:
            self._endpoint = Endpoint(c.base_url)
        headers = {"Authorization": f"Bearer {self._api_key()}"}
        payload = dict(body)
        payload.update(payload.pop("extra_body", {}))  # the openai package merges extra_body into the body
        try:
            return await self._endpoint.post_json("/chat/completions", payload, headers, c.timeout_s)
        except asyncio.TimeoutError:
            raise _Failure(f"timeout after {c.timeout_s:g} s") from None
        except HttpStatusError as e:
            raise _Failure.status(e.status, e.headers) from None
        except (OSError, EOFError, asyncio.IncompleteReadError, ValueError) as e:
            raise _Failure(f"connection error ({type(e).__name__})") from None

    async def _send_openai(self, body: dict[str, Any]) -> dict[str, Any]:
        import openai

        c = self.config
        try:
            r = await self.client().chat.completions.create(**body)
        except openai.APITimeoutError:
            raise _Failure(f"timeout after {c.timeout_s:g} s") from None
        except openai.APIConnectionError as e:
            raise _Failure(f"connection error ({type(e.__cause__ or e).__name__})") from None
        except openai.APIStatusError as e:
            raise _Failure.status(e.status_code, e.response.headers) from None
        return r.model_dump()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        c = self.config
        body = self.body(request)
        sem = _semaphore(c.base_url, c.concurrency)
        t0 = time.perf_counter()
        attempt = retries = 0  # retries: those that count against max_retries (a Retry-After wait does not)
        while True:
            attempt += 1
            async with sem:
                t_call = time.perf_counter()
                try:
                    r = await self._send(body)
                except _Failure as f:
                    failure = f
                else:
                    choices = r.get("choices") or []
                    text = (choices[0].get("message") or {}).get("content") if choices else None
                    usage = r.get("usage") or {}
                    return ModelResponse(
                        text=text, error=None if text else "empty answer",
                        latency_s=time.perf_counter() - t_call, prompt_tokens=usage.get("prompt_tokens"),
                        completion_tokens=usage.get("completion_tokens"), attempts=attempt,
                        model=r.get("model") or c.model,
                    )
            if failure.fatal:
                return ModelResponse(None, f"{failure.error} from {c.base_url} for model {c.model!r}",
                                     time.perf_counter() - t0, attempts=attempt, model=c.model, fatal=True)
            if not failure.retryable:
                return ModelResponse(
                    None, failure.error, time.perf_counter() - t0, attempts=attempt, model=c.model
                )
            retries += failure.retry_after is None
            wait = backoff_s(c, retries or 1, failure.retry_after)
            if retries > c.max_retries or time.perf_counter() - t0 + wait > c.retry_budget_s:
                return ModelResponse(None, f"{failure.error} after {attempt} attempts in "
                                           f"{time.perf_counter() - t0:.1f} s (max_retries {c.max_retries}, "
                                           f"retry_budget_s {c.retry_budget_s:g})",
                                     time.perf_counter() - t0, attempts=attempt, model=c.model, fatal=True)
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._endpoint is not None:
            self._endpoint.close()


class _Failure(Exception):
    """One failed attempt: what went wrong, and whether to retry, give up on the call, or fail the match."""

    def __init__(
        self, error: str, retryable: bool = True, fatal: bool = False, retry_after: float | None = None
    ):
        super().__init__(error)
        self.error, self.retryable, self.fatal, self.retry_after = error, retryable, fatal, retry_after

    @classmethod
    def status(cls, code: int, headers: Any) -> "_Failure":
        error = f"HTTP {code}"
        if code in FATAL_STATUS:
            return cls(error, retryable=False, fatal=True)
        if code != 429 and code < 500:
            return cls(error, retryable=False)
        return cls(error, retry_after=retry_after_s(headers) if code in (429, 503) else None)
