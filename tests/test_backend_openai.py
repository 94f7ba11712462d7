"""The openai backend against a real OpenAI-compatible HTTP server on loopback (mau's mock server, started by
the test): images arrive, settings are sent, the API key stays secret, concurrency is real and bounded, and
injected faults (timeouts, 429, 5xx, malformed / empty JSON, wrong field types) never stop a match."""

from __future__ import annotations

import asyncio
import hashlib
import json
import urllib.request
from pathlib import Path

import pytest

from mau import schema as F
from mau.commands.play import PlayConfig
from mau.commands.play import main as play_main
from mau.config import load_config, parse_overrides
from mau.errors import ConfigError
from mau.harness.backends.base import ModelConfig, ModelRequest
from mau.harness.backends.openai import Backend
from mau.harness.mock_server import mock_server

SECRET = "sk-test-0123456789abcdef-never-log-me"


def _stats(srv) -> dict:
    return json.loads(urllib.request.urlopen(srv.stats_url).read())


def _play(tmp_path: Path, base_url: str, *sets: str, seed: int = 2, steps: int = 12) -> Path:
    out = tmp_path / "m"
    over = [f"seats.{side}.model.{k}" for side in ("crewmate", "imposter") for k in (
        "backend=openai", f"base_url={base_url}", "timeout_s=1", "backoff_s=0.01", "api_key_env=MAU_TEST_KEY",
        "enable_thinking=false")]
    cfg = load_config(PlayConfig, "configs/play/aria_scripted.yaml",
                      parse_overrides(over + list(sets) + [f"out={out}", f"seed={seed}",
                                                           f"world.game.max_steps={steps}"]))
    assert play_main(cfg) == 0
    return out


def test_match_through_the_openai_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("MAU_TEST_KEY", SECRET)
    with mock_server(str(tmp_path / "server.log"), latency_ms=2) as srv:
        out = _play(tmp_path, srv.base_url)
        stats = _stats(srv)
    recs = [json.loads(x) for x in (out / F.CALLS_FILE).read_text().splitlines()]
    assert recs and all(r[F.BACKEND] == "openai" for r in recs)
    assert sum(r[F.FALLBACK] for r in recs) == 0  # the mock answers in the requested format
    # Images reached the server as decodable JPEG data URLs, one per image part of the records.
    n_images = sum(p["type"] == "image" for r in recs for p in r[F.MESSAGES][1]["content"])
    assert stats["images"] == stats["images_decoded"] == n_images > 0
    assert stats["json_mode"] == stats["requests"] == stats["chat_template_kwargs"] == len(recs)
    # The key went to the server (as a bearer token) and nowhere else.
    assert stats["auth_sha256"] == [hashlib.sha256(f"Bearer {SECRET}".encode()).hexdigest()]
    for f in [*out.rglob("*"), tmp_path / "server.log"]:
        if f.is_file() and f.suffix != ".jpg":
            assert SECRET not in f.read_text(errors="replace"), f
    assert "MAU_TEST_KEY" in (out / F.RESOLVED_CONFIG).read_text()  # only the variable's name


def test_missing_api_key_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("MAU_TEST_KEY", raising=False)
    backend = Backend(
        ModelConfig(backend="openai", base_url="http://127.0.0.1:9/v1", api_key_env="MAU_TEST_KEY")
    )
    with pytest.raises(ConfigError, match="MAU_TEST_KEY is not set"):
        backend.client()
    with pytest.raises(ConfigError, match="model.base_url"):
        Backend(ModelConfig(backend="openai"))


def _request(i: int) -> ModelRequest:
    return ModelRequest(
        messages=[{"role": "user", "content": [{"type": "text", "text": f"call {i}"}]}], module="vote"
    )


async def _burst(backend: Backend, n: int):
    try:
        return await asyncio.gather(*(backend.complete(_request(i)) for i in range(n)))
    finally:
        await backend.aclose()


def test_calls_of_a_step_run_concurrently_and_the_endpoint_limit_holds(tmp_path):
    with mock_server(str(tmp_path / "s.log"), latency_ms=300) as srv:
        responses = asyncio.run(_burst(Backend(ModelConfig(backend="openai", base_url=srv.base_url)), 8))
        assert all(r.error is None for r in responses)
        assert _stats(srv)["max_inflight"] == 8
    with mock_server(str(tmp_path / "s2.log"), latency_ms=100) as srv:
        asyncio.run(_burst(Backend(ModelConfig(backend="openai", base_url=srv.base_url, concurrency=2)), 8))
        assert _stats(srv)["max_inflight"] == 2


def test_retries_then_gives_up_with_the_reason(tmp_path):
    with mock_server(str(tmp_path / "s.log"), faults="500=1.0") as srv:
        cfg = ModelConfig(backend="openai", base_url=srv.base_url, max_retries=2, backoff_s=0.01)
        (r,) = asyncio.run(_burst(Backend(cfg), 1))
        assert r.text is None and r.error.startswith("HTTP 500 after 3 "
                                                     "attempts") and r.attempts == 3 and r.fatal
        assert _stats(srv)["requests"] == 3
    # A 429 that says Retry-After is waited out within retry_budget_s, whatever max_retries says.
    with mock_server(str(tmp_path / "r.log"), faults="429=1.0", retry_after_s=0.4) as srv:
        cfg = ModelConfig(backend="openai", base_url=srv.base_url, max_retries=1, retry_budget_s=2.0)
        (r,) = asyncio.run(_burst(Backend(cfg), 1))
        assert r.fatal and r.error.startswith("HTTP 429 after") and 3 <= r.attempts <= 5, r
    with mock_server(str(tmp_path / "t.log"), faults="timeout=1.0", hang_s=5) as srv:
        cfg = ModelConfig(backend="openai", base_url=srv.base_url, max_retries=0, timeout_s=0.5)
        (r,) = asyncio.run(_burst(Backend(cfg), 1))
        assert r.text is None and r.error.startswith("timeout after 0.5 s") and r.fatal


def test_faults_never_stop_a_match_and_every_fallback_is_recorded(tmp_path, monkeypatch):
    """Transport faults (429, 5xx, timeouts) are retried away; bad answers (malformed, empty, wrong types)
    fall back, each with its reason."""
    monkeypatch.setenv("MAU_TEST_KEY", "x")
    faults = "429=0.08,500=0.05,503=0.05,timeout=0.03,malformed=0.1,empty=0.08,wrongtype=0.1"
    with mock_server(str(tmp_path / "server.log"), latency_ms=1, faults=faults, hang_s=3) as srv:
        out = _play(
            tmp_path, srv.base_url, "seats.crewmate.model.max_retries=8",
            "seats.imposter.model.max_retries=8", steps=10,
        )
        stats = _stats(srv)
    h = json.loads((out / F.MATCH_HEADER).read_text())
    recs = [json.loads(x) for x in (out / F.CALLS_FILE).read_text().splitlines()]
    assert h["outcome"] and h["calls"]["calls"] == len(recs)
    fallbacks = [r for r in recs if r[F.FALLBACK]]
    assert h["calls"]["fallbacks"] == len(fallbacks) > 0
    assert all(r[F.FALLBACK_REASON] for r in fallbacks)
    reasons = " | ".join(r[F.FALLBACK_REASON] for r in fallbacks)
    for expected in ("malformed JSON", "empty answer", "expected"):  # bad JSON, empty, wrong field types
        assert expected in reasons, expected
    from mau.harness.mock_server import FAULTS

    assert set(stats["faults"]) == set(FAULTS), stats["faults"]  # every kind of fault was injected
    errors = {r[F.ERROR] for r in recs if r[F.ERROR]}
    assert errors == {"empty answer"}, errors  # the transport faults were retried until an answer came
    assert max(r["attempts"] for r in recs) > 1
    assert all(r[F.PARSED] is not None for r in recs)  # every call still produced a usable answer
