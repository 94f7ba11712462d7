"""``mau bench collect``: one ``mau collect`` run (this process, ``--workers`` 1 by default) against mau's
mock OpenAI server at a given latency, jitter and fault rate, every match in flight at once: matches/hour,
calls/s, peak and mean calls in flight (the client's meter and the server's count), the client's CPU per
call, the mock server's own CPU per call and the ceiling that gives it, and the projected wall time of the
paper's RQ2 grid at this latency and this many matches in flight. One JSON object.

The matches are the paper's crewmate case 1A on both sides (privileged state, semantic memory, reactive
planner, meeting reflection, minimal prompts), both sides the mock-served model, first-person frames at
``--frames`` (``640x360`` as the paper; ``off``: none), with structured claims as in
configs/collect/smoke.yaml off.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

RQ2_MATCHES, RQ2_STEPS = 1152, 200  # the paper's grid (configs/collect/rq2.yaml) and its step budget


def bench_config(base_url: str, matches: int, steps: int, frames: str, in_flight: int, workers: int,
                 seed: int) -> dict[str, Any]:
    """The collect config of the bench (a dict for ``CollectConfig``)."""
    case = {"state": "privileged", "memory": "semantic", "planning": "reactive", "reflection": "meeting",
            "prompt_style": "minimal"}
    aria = {**case, "frames": frames != "off"}
    model = {"backend": "openai", "model": "mock", "base_url": base_url, "timeout_s": 20, "concurrency": 4096,
             "price_prompt_per_mtok": 0.4, "price_completion_per_mtok": 1.6}  # GPT-4.1-mini's list prices
    world: dict[str, Any] = {"game": {"max_steps": steps}}
    if frames != "off":
        w, h = (int(v) for v in frames.split("x"))
        world["frames"] = {"width": w, "height": h}
    return {
        "workers": workers, "matches_in_flight": in_flight,
        "grid": {
            "pool": [{"name": "mock", "model": model}], "repetitions": matches, "seed_scheme": "per_match",
            "seed": seed, "cases": [{"name": "1A", "crewmate": aria, "imposter": aria}],
        },
        "world": world,
    }


def _stats(url: str) -> dict[str, Any]:
    import urllib.request

    return json.loads(urllib.request.urlopen(url, timeout=10).read())


def bench_collect(matches: int, latency_ms: float, jitter_ms: float = 0.0, faults: str = "", steps: int = 60,
                  frames: str = "640x360", in_flight: int | None = None, workers: int = 1,
                  seed: int = 0, burst: str | None = None) -> dict[str, Any]:
    import resource
    import shutil
    import tempfile

    from mau.collect.run import CollectConfig, run_collect
    from mau.config import build
    from mau.harness.mock_server import mock_server
    from mau.options import RunOptions

    Path("runs").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-collect-", dir="runs"))
    in_flight = in_flight or max(1, matches // workers)
    try:
        with mock_server(str(tmp / "mock.log"), latency_ms=latency_ms, jitter_ms=jitter_ms, faults=faults,
                         burst=burst) as srv:
            cfg = build(
                CollectConfig, bench_config(srv.base_url, matches, steps, frames, in_flight, workers, seed),
                "bench",
            )
            before = _stats(srv.stats_url)
            cpu0, wall0 = _cpu(resource), time.perf_counter()
            s = run_collect(cfg, tmp / "run", RunOptions(progress=False, max_failures=matches))
            wall, cpu = time.perf_counter() - wall0, _cpu(resource) - cpu0
            after = _stats(srv.stats_url)
        m = s["meter"]
        headers = [json.loads(p.read_text()) for p in (tmp / "run" / "matches").glob("*/match.json")]
        chain = call_chain(tmp / "run" / "matches")
        steps_played = sum(h["steps"] + h.get("meeting_steps", 0) for h in headers)
        served = after["requests"] - before["requests"]
        server_cpu_ms = 1000 * (after["cpu_s"] - before["cpu_s"]) / max(served, 1)
        steps_per_s = steps_played / wall
        return {
            "bench": "collect", "matches": matches, "finished": len(headers), "failed": s["failed_now"],
            "workers": workers, "matches_in_flight": in_flight, "max_steps": steps, "frames": frames,
            "mock_latency_ms": latency_ms, "mock_jitter_ms": jitter_ms, "faults": faults or None,
            "burst": burst, "server_faults": after["faults"], "server_burst_429": after["burst_429"],
            "call_retries": m.get("retries"), "wall_s": round(wall, 1),
            "matches_per_hour": round(len(headers) / wall * 3600, 1), "steps_played": steps_played,
            "calls": m["calls"], "calls_per_step": round(m["calls"] / max(steps_played, 1), 2),
            "calls_per_s": round(m["calls"] / wall, 1), "peak_calls_in_flight": m["peak_in_flight"],
            "mean_calls_in_flight": round(m["mean_in_flight"], 1),
            "server_peak_in_flight": after["max_inflight"],
            "server_mean_in_flight": round(
                (after["inflight_s"] - before["inflight_s"])
                / max(after["elapsed_s"] - before["elapsed_s"], 1e-9), 1,
            ),
            "client_cpu_s": round(cpu, 2),
            "client_cpu_ms_per_call": round(1000 * cpu / max(m["calls"], 1), 3),
            "server_cpu_ms_per_call": round(server_cpu_ms, 3),
            "server_ceiling_calls_per_s": round(1000 / server_cpu_ms, 1) if server_cpu_ms > 0 else None,
            "tokens": m["tokens"], "cost_usd": round(m["cost_usd"], 4), **chain,
            # The paper's grid at this latency and this many matches in flight: its steps at this step rate.
            "rq2_projected_hours": round(RQ2_MATCHES * RQ2_STEPS / steps_per_s / 3600, 2),
            "rq2_assumes": f"{RQ2_MATCHES} matches x {RQ2_STEPS} steps at {steps_per_s:.2f} steps/s "
            f"({in_flight} matches in flight x {workers} workers)",
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def call_chain(matches_dir: Path) -> dict[str, Any]:
    """The waits of a step (docs/collect.md, "One step's calls"): an agent's calls in a step are made one
    after the other, so a step lasts about as many latencies as its longest chain. Per roam step: the mean
    longest chain; per agent and roam step: the mean chain and how often each sequence of modules occurs."""
    from collections import Counter

    longest, chains, seqs = [], [], Counter()
    for calls in matches_dir.glob("*/calls.jsonl"):
        per_step: dict[tuple[int, str], list[str]] = {}
        for line in calls.read_text().splitlines():
            r = json.loads(line)
            if r["phase"] == "roam":
                per_step.setdefault((r["step"], r["agent"]), []).append(r["module"])
        steps: dict[int, int] = {}
        for (step, _), mods in per_step.items():
            chains.append(len(mods))
            seqs[">".join(mods)] += 1
            steps[step] = max(steps.get(step, 0), len(mods))
        longest += steps.values()
    n = max(len(chains), 1)
    return {"roam_longest_chain_mean": round(sum(longest) / max(len(longest), 1), 2),
            "roam_chain_per_agent_mean": round(sum(chains) / n, 2),
            "roam_chains_top": {k: round(v / n, 3) for k, v in seqs.most_common(6)}}


def _cpu(resource: Any) -> float:
    """CPU seconds of this process and its finished children (the client side: the mock server is not one of
    them until it exits, and its own CPU is read from its /stats)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
