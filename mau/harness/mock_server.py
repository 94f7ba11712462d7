"""A small OpenAI-compatible chat server for offline runs, tests and benchmarks, with fault injection.

    python -m mau.harness.mock_server --port 8011 --latency-ms 100 --faults 429=0.1,500=0.05,malformed=0.1

It answers ``POST /v1/chat/completions`` with a JSON object that fits the answer format the prompt asks for
(the ``Answer: {...}`` line of an ARIA prompt: the first listed option of each field, or a fixed value), after
``latency-ms`` (+ uniform jitter). Faults, drawn per request from a seeded stream: ``429``, ``500``, ``503``,
``timeout`` (hang for ``--hang-s``), ``malformed`` (not JSON), ``empty`` (empty content), ``wrongtype``
(fields of the wrong type). ``GET /stats`` counts requests, faults and images received (decoded, to prove
they arrived).

Rate limits as an API has them: an injected ``429`` carries ``Retry-After: <--retry-after-s>``; ``--burst
START:SECONDS`` answers every chat request 429 (with ``Retry-After``) from START to START+SECONDS seconds
after the server started (a burst of rate limiting that lifts). ``/stats`` also says the calls in flight now,
at peak and on average over time (``mean_inflight``), and the server's own CPU seconds (its ceiling: ``mau
bench collect``).

``--api-key-env NAME``: like ``vllm serve --api-key`` (which reads ``VLLM_API_KEY``), every ``/v1`` request
must carry ``Authorization: Bearer <the value of $NAME>`` or is refused with 401; the key is read from the
environment, never from the command line. ``--vary-by-model``: the answer also depends on the request's
``model`` (as two different models, or a base and its active adapter, would answer differently).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import os
import random
import re
import time
from typing import Any

FAULTS = ("429", "500", "503", "timeout", "malformed", "empty", "wrongtype")
_PLACEHOLDER = re.compile(r'"<([^>]*)>"|<([^>]*)>')


def answer_for(prompt: str, rng: random.Random) -> dict[str, Any]:
    """Fill the ``Answer: {...}`` template of an ARIA prompt with valid-looking values."""
    line = next((ln[len("Answer: "):] for ln in reversed(prompt.splitlines()) if ln.startswith("Answer: "
                                                                                               "{")), None)
    if line is None:
        return {"reasoning": "mock"}

    def fill(m: re.Match) -> str:
        quoted, bare = m.group(1), m.group(2)
        text = quoted if quoted is not None else bare
        if "one of: " in text:
            opts = [
                o.strip()
                for o in re.split(r",\s*(?:or\s+)?|\s+or\s+", text.split("one of: ", 1)[1])
                if o.strip()
            ]
            opts = ["none" if o == "nobody" else o for o in opts]
            choice = rng.choice(opts) if opts else "none"
            return (
                json.dumps(choice)
                if quoted is not None
                else (choice if choice.isdigit() else json.dumps(choice))
            )
        if text == "true or false":
            return "false"
        if text.startswith("a number"):
            return "0"
        if text == "KILL, DEFER or STALK":
            return '"DEFER"'
        return '"ok"' if quoted is not None else "null"

    line = re.sub(r"\[<[^>]*>\]", "[]", line)  # a list of names: empty
    filled = _PLACEHOLDER.sub(fill, line)
    filled = re.sub(r"\[\s*\"?ok\"?\s*\]|\[\{[^\]]*\}\]", "[]", filled)  # lists of names / updates: empty
    try:
        value = json.loads(filled)
        return value if isinstance(value, dict) else {"reasoning": "mock"}
    except json.JSONDecodeError:
        return {"reasoning": "mock"}


class MockServer:
    def __init__(
        self, latency_ms: float, jitter_ms: float, faults: dict[str, float], hang_s: float, seed: int,
        api_key: str | None = None, vary_by_model: bool = False, retry_after_s: float = 1.0,
        burst: tuple[float, float] | None = None,
    ):
        self.latency_ms, self.jitter_ms, self.faults = latency_ms, jitter_ms, faults
        self.hang_s, self.seed = hang_s, seed
        self.api_key, self.vary_by_model = api_key, vary_by_model
        self.retry_after_s, self.burst = retry_after_s, burst
        self.stats: dict[str, Any] = {"requests": 0, "faults": {}, "images": 0, "images_decoded": 0,
                                      "auth_sha256": [], "json_mode": 0, "chat_template_kwargs": 0,
                                      "inflight": 0, "max_inflight": 0, "burst_429": 0}
        self._seen: dict[str, int] = {}
        self._t0 = self._t_last = time.perf_counter()
        self._inflight_s = 0.0  # the integral of requests in flight over time

    def _inflight(self, delta: int) -> None:
        now = time.perf_counter()
        st = self.stats
        self._inflight_s += st["inflight"] * (now - self._t_last)
        self._t_last = now
        st["inflight"] += delta
        st["max_inflight"] = max(st["max_inflight"], st["inflight"])

    def snapshot(self) -> dict[str, Any]:
        """The stats, with the time-weighted mean of requests in flight and the server's CPU seconds."""
        self._inflight(0)
        elapsed = max(time.perf_counter() - self._t0, 1e-9)
        return {
            **self.stats, "elapsed_s": round(elapsed, 3),
            "mean_inflight": round(self._inflight_s / elapsed, 3), "inflight_s": round(self._inflight_s, 3),
            "cpu_s": round(time.process_time(), 3),
        }

    def _fault(self, key: str) -> str | None:
        n = self._seen.get(key, 0)
        self._seen[key] = n + 1
        rng = random.Random(f"{self.seed}:{key}:{n}")
        x = rng.random()
        for name, p in self.faults.items():
            if x < p:
                return name
            x -= p
        return None

    async def chat(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any] | str]:
        st = self.stats
        st["requests"] += 1
        auth = headers.get("authorization", "")
        digest = hashlib.sha256(auth.encode()).hexdigest()
        if digest not in st["auth_sha256"]:
            st["auth_sha256"].append(digest)
        st["json_mode"] += body.get("response_format", {}).get("type") == "json_object"
        st["chat_template_kwargs"] += "chat_template_kwargs" in body
        prompt = ""
        for m in body.get("messages", []):
            content = m.get("content")
            if isinstance(content, str):
                prompt += content + "\n"
                continue
            for part in content or []:
                if part.get("type") == "text":
                    prompt += part["text"] + "\n"
                elif part.get("type") == "image_url":
                    st["images"] += 1
                    url = part["image_url"]["url"]
                    try:
                        raw = base64.b64decode(url.split(",", 1)[1], validate=True)
                        st["images_decoded"] += raw[:3] == b"\xff\xd8\xff" or raw[:8] == b"\x89PNG\r\n\x1a\n"
                    except (ValueError, IndexError):
                        pass
        salt = f"model={body.get('model')}\n" if self.vary_by_model else ""
        key = hashlib.sha256((salt + prompt).encode()).hexdigest()
        if self.burst is not None and self.burst[0] <= time.perf_counter() - self._t0 < sum(self.burst):
            st["burst_429"] += 1
            return 429, {"error": {"message": "rate limited (burst)", "type": "mock"}}
        fault = self._fault(key)
        if fault:
            st["faults"][fault] = st["faults"].get(fault, 0) + 1
        delay = self.latency_ms + random.Random(key).uniform(0, self.jitter_ms)
        self._inflight(1)
        try:
            await asyncio.sleep(delay / 1000)
        finally:
            self._inflight(-1)
        if fault in ("429", "500", "503"):
            return int(fault), {"error": {"message": f"injected {fault}", "type": "mock"}}
        if fault == "timeout":
            await asyncio.sleep(self.hang_s)
        answer = answer_for(prompt, random.Random(key))
        if fault == "malformed":
            content = "Sure! Here is my answer: {vote_target: skip"
        elif fault == "empty":
            content = ""
        elif fault == "wrongtype":
            content = json.dumps({k: 12345 for k in answer} or {"mode": 7})
        else:
            content = json.dumps(answer)
        return 200, {
            "id": f"mock-{st['requests']}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "mock"),
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
            "usage": {
                "prompt_tokens": len(prompt) // 4, "completion_tokens": len(content) // 4,
                "total_tokens": len(prompt) // 4 + len(content) // 4,
            },
        }

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # keep-alive: many requests per connection
                line = await reader.readline()
                if not line:
                    break
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, v = h.decode("latin-1").split(":", 1)
                    headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", 0) or 0))
                if self.api_key is not None and path.startswith("/v1") and not hmac.compare_digest(
                        headers.get("authorization", "").encode(), f"Bearer {self.api_key}".encode()):
                    status, payload = 401, {"error": {"message": "invalid or missing API "
                                                                 "key", "type": "auth"}}
                elif method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                    try:
                        status, payload = await self.chat(json.loads(body or b"{}"), headers)
                    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                        status, payload = 400, {"error": {"message": "bad request"}}
                elif method == "GET" and path.endswith("/models"):
                    status, payload = 200, {"object": "list", "data": [{"id": "mock", "object": "model"}]}
                elif method == "GET" and path == "/health":
                    status, payload = 200, {"ok": True}
                elif method == "GET" and path == "/stats":
                    status, payload = 200, self.snapshot()
                else:
                    status, payload = 404, {"error": {"message": "not found"}}
                data = json.dumps(payload).encode()
                reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
                          429: "Too Many Requests", 500: "Internal Server Error",
                          503: "Service Unavailable"}.get(status, "Error")
                extra = f"Retry-After: {self.retry_after_s:g}\r\n" if status == 429 else ""
                writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n{extra}"
                             f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()


def parse_faults(spec: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, p = item.partition("=")
        if name not in FAULTS:
            raise SystemExit(f"--faults: unknown fault {name!r}; use {', '.join(FAULTS)}")
        out[name] = float(p)
    if sum(out.values()) > 1:
        raise SystemExit("--faults: the probabilities add up to more than 1")
    return out


async def serve(host: str, port: int, server: MockServer) -> None:
    srv = await asyncio.start_server(server.handle, host, port, backlog=4096)
    print(f"mock server ready on http://{host}:{port}/v1", flush=True)
    async with srv:
        await srv.serve_forever()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--faults", default="")
    p.add_argument("--hang-s", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--api-key-env", default=None, help="refuse /v1 requests without the key held by this "
                                                       "variable")
    p.add_argument("--vary-by-model", action="store_true", help="answers depend on the request's model too")
    p.add_argument("--retry-after-s", type=float, default=1.0, help="the Retry-After of a 429")
    p.add_argument("--burst", default=None, help="START:SECONDS: every chat request 429 in that window")
    a = p.parse_args()
    key = None
    if a.api_key_env:
        key = os.environ.get(a.api_key_env)
        if not key:
            raise SystemExit(f"--api-key-env: the environment variable {a.api_key_env} is not set")
    burst = None
    if a.burst:
        try:
            start, _, length = a.burst.partition(":")
            burst = (float(start), float(length))
        except ValueError:
            raise SystemExit(f"--burst {a.burst!r}: write it as START:SECONDS, e.g. 10:5") from None
    server = MockServer(
        a.latency_ms, a.jitter_ms, parse_faults(a.faults), a.hang_s, a.seed, key, a.vary_by_model,
        a.retry_after_s, burst,
    )
    asyncio.run(serve(a.host, a.port, server))


def mock_server(
    log: str, latency_ms: float = 0.0, jitter_ms: float = 0.0, faults: str = "", hang_s: float = 30.0,
    seed: int = 0, timeout_s: float = 20.0, api_key_env: str | None = None, vary_by_model: bool = False,
    retry_after_s: float = 1.0, burst: str | None = None, port: int | None = None,
):
    """A ManagedProcess running this server on a free loopback port; ``.base_url`` is its /v1 endpoint.
    ``api_key_env``: the variable (in this process's environment) whose key every /v1 request must carry."""
    import sys

    from mau.procs import ManagedProcess, free_port, http_ok

    port = port or free_port()
    cmd = [
        sys.executable, "-m", "mau.harness.mock_server", "--port", str(port), "--latency-ms", str(latency_ms),
        "--jitter-ms", str(jitter_ms), "--faults", faults, "--hang-s", str(hang_s), "--seed", str(seed),
        "--retry-after-s", str(retry_after_s),
    ]
    if burst:
        cmd += ["--burst", burst]
    if api_key_env:
        cmd += ["--api-key-env", api_key_env]
    if vary_by_model:
        cmd.append("--vary-by-model")
    proc = ManagedProcess(cmd, log, ready=http_ok(f"http://127.0.0.1:{port}/health"), timeout_s=timeout_s,
                          name="mock OpenAI server")
    proc.base_url = f"http://127.0.0.1:{port}/v1"  # type: ignore[attr-defined]
    proc.stats_url = f"http://127.0.0.1:{port}/stats"  # type: ignore[attr-defined]
    return proc


if __name__ == "__main__":
    main()
