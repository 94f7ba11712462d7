"""Matches in flight (mau/inflight.py, mau/runner.py): a match's files are the same whether it ran alone or
among many in one event loop; rate limits (429 + Retry-After, a burst) are waited out; a server that dies
mid-run fails the matches in flight loudly and --resume completes them; the cost meter is the sum of the
calls' tokens
at their prices. Every model here is mau's mock OpenAI server on loopback (started by the test)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from mau import schema as F
from mau.cli import main
from mau.harness.mock_server import mock_server
from tests.helpers import finished_matches as _names


def finished_matches(run: Path) -> list[Path]:
    return [run / F.MATCHES_DIR / n for n in _names(run)]

TIMING = {F.LATENCY_S, F.HARNESS_MS}  # the only fields of a call record that depend on the clock


def _config(tmp: Path, base_url: str, matches: int, steps: int = 5, **model: object) -> Path:
    """A collect config: one mock-served model on both sides, ``matches`` matches of their own seeds."""
    m = {
        "backend": "openai", "model": "mock", "base_url": base_url, "timeout_s": 5, "backoff_s": 0.05,
        "max_backoff_s": 2, "concurrency": 256, "price_prompt_per_mtok": 2.0,
        "price_completion_per_mtok": 8.0, **model,
    }
    cfg = {"grid": {"pool": [{"name": "mock", "model": m}], "cases": [{"name": "c"}], "repetitions": matches,
                    "seed_scheme": "per_match", "seed": 40},
           "world": {"game": {"max_steps": steps}, "frames": {"width": 64, "height": 36}}}
    path = tmp / f"collect_{matches}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _collect(cfg: Path, out: Path, *extra: str) -> int:
    return main(["collect", "--config", str(cfg), "--out", str(out), "--no-progress", *extra])


def _files(match: Path) -> dict[str, object]:
    """A match folder's content, the clock's fields left out: wall time in the header, latency and harness
    time in each call record; every other byte as it is."""
    out: dict[str, object] = {}
    for f in sorted(match.rglob("*")):
        if not f.is_file():
            continue
        rel = str(f.relative_to(match))
        if rel == F.MATCH_HEADER:
            h = json.loads(f.read_text())
            for k in (F.WALL_SECONDS, "provenance"):
                h.pop(k)
            for k in ("latency_s", "wall_s"):
                h.get(F.HEADER_PROBES, {}).pop(k, None)
            out[rel] = h
        elif rel == F.CALLS_FILE:
            out[rel] = [
                {k: v for k, v in json.loads(x).items() if k not in TIMING}
                for x in f.read_text().splitlines()
            ]
        else:
            out[rel] = f.read_bytes()
    return out


def test_a_match_is_the_same_alone_and_in_a_crowd(tmp_path):
    # Jitter: in the crowd the answers come back in another order than alone.
    with mock_server(str(tmp_path / "s.log"), latency_ms=5, jitter_ms=40) as srv:
        alone, crowd = tmp_path / "alone", tmp_path / "crowd"
        assert _collect(_config(tmp_path, srv.base_url, 3), alone, "--matches-in-flight", "1") == 0
        assert _collect(_config(tmp_path, srv.base_url, 24), crowd, "--matches-in-flight", "24") == 0
        peak = _stats(srv)["max_inflight"]
    assert peak > 24  # many matches' calls were in flight together
    solo = {m.name: m for m in finished_matches(alone)}
    many = {m.name: m for m in finished_matches(crowd)}
    assert len(solo) == 3 and len(many) == 24 and set(solo) <= set(many)
    for name, folder in solo.items():
        a, b = _files(folder), _files(many[name])
        assert a.keys() == b.keys()
        for rel in a:
            assert a[rel] == b[rel], (name, rel)
        assert any(k.endswith(".jpg") for k in a) and F.CALLS_FILE in a


def _stats(srv) -> dict:
    import urllib.request

    return json.loads(urllib.request.urlopen(srv.stats_url).read())


def test_rate_limits_are_waited_out_with_retry_after(tmp_path):
    """Every request of a 1.5 s burst gets 429 with Retry-After: 0.5; the calls wait and retry (not the
    backoff's doubling), and every match finishes with no call failed."""
    with mock_server(str(tmp_path / "s.log"), latency_ms=5, retry_after_s=0.5, burst="1:1.5",
                     faults="429=0.05") as srv:
        out = tmp_path / "run"
        t0 = time.perf_counter()
        assert _collect(_config(tmp_path, srv.base_url, 4, steps=6, backoff_s=30.0), out,
                        "--matches-in-flight", "4") == 0
        wall = time.perf_counter() - t0
        stats = _stats(srv)
    assert stats["burst_429"] > 10 and stats["faults"].get("429", 0) > 0
    assert wall < 25  # a 30 s backoff would have been drawn without Retry-After
    recs = [json.loads(x) for m in finished_matches(out) for x in (m / F.CALLS_FILE).read_text().splitlines()]
    assert len(finished_matches(out)) == 4 and all(r[F.ERROR] is None for r in recs)
    assert max(r["attempts"] for r in recs) > 1


def test_a_dead_server_fails_the_matches_in_flight_loudly_and_resume_completes_them(tmp_path, capsys):
    import threading

    out = tmp_path / "run"
    with mock_server(str(tmp_path / "s.log"), latency_ms=50) as srv:
        cfg = _config(tmp_path, srv.base_url, 6, steps=8, max_retries=2, retry_budget_s=3)

        def kill_soon() -> None:
            deadline = time.time() + 60
            while time.time() < deadline and _stats(srv)["requests"] < 300:
                time.sleep(0.05)
            srv.proc.kill()  # the server dies: no goodbye, connections refused from now on

        killer = threading.Thread(target=kill_soon)
        killer.start()
        # --max-failures 0: the first failure stops the run, and every match in flight still says why
        assert _collect(cfg, out, "--matches-in-flight", "6") == 2
        killer.join()
    err = capsys.readouterr().err
    done = {m.name for m in finished_matches(out)}
    lost = [f"0000{k}_c_I-mock_C-mock_r{k}" for k in range(6) if f"0000{k}_c_I-mock_C-mock_r{k}" not in done]
    assert len(lost) >= 2, "the server died before two matches were in flight"
    for name in lost:  # each one said why, in one line; none of them was written with fallbacks
        assert f"match {name} failed: ModelUnavailable: " in err and "connection error" in err
    assert f"{len(lost)} matches failed (--max-failures 0)" in err and "--resume" in err
    with mock_server(str(tmp_path / "s2.log"), latency_ms=5) as srv2:
        assert _collect(cfg, out, "--resume", "--matches-in-flight", "6", "--set",
                        f"grid.pool.0.model.base_url={srv2.base_url}") == 0
    assert len(finished_matches(out)) == 6
    assert not [p for p in (out / F.MATCHES_DIR).iterdir() if p.name.startswith(".")]  # no staging left


def test_the_cost_meter_is_the_sum_of_the_calls_tokens_at_their_prices(tmp_path):
    from mau.collect.run import CollectConfig, run_collect
    from mau.config import load_config
    from mau.options import RunOptions

    with mock_server(str(tmp_path / "s.log"), latency_ms=2) as srv:
        out = tmp_path / "run"
        cfg = load_config(CollectConfig, str(_config(tmp_path, srv.base_url, 3, steps=4)),
                          {"matches_in_flight": 3, "out": str(out)})
        s = run_collect(cfg, out, RunOptions(progress=False))
    recs = [json.loads(x) for m in finished_matches(out) for x in (m / F.CALLS_FILE).read_text().splitlines()]
    prompt = sum(r[F.PROMPT_TOKENS] or 0 for r in recs)
    completion = sum(r[F.COMPLETION_TOKENS] or 0 for r in recs)
    usd = (prompt * 2.0 + completion * 8.0) / 1e6
    assert prompt > 0 and completion > 0
    assert s["meter"]["calls"] == len(recs)
    assert s["meter"]["prompt_tokens"] == prompt and s["meter"]["completion_tokens"] == completion
    assert s["meter"]["cost_usd"] == pytest.approx(usd) and s["cost_now"] == pytest.approx(usd, abs=1e-4)
    assert s["cost_usd"] == pytest.approx(usd, abs=1e-5)  # the summary of the match folders says the same
