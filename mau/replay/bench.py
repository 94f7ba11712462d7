"""Speed of forks on the CPU (``mau bench fork``; see mau/commands/bench.py); the matches it forks
(``voted_matches``) also feed the RL bench (mau/rl/bench.py)."""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mau import schema as F

REPEATS = 20  # snapshots and restores timed per figure (the mean is printed)


def _play_aria(out: Path, seed: int, extra: list[str] | None = None) -> Path:
    from mau.config import load_config, parse_overrides
    from mau.runner import PlayConfig, play_one

    sets = [
        "seats.crewmate.aria.frames=false", "seats.imposter.aria.frames=false", f"seed={seed}", f"out={out}",
    ]
    cfg = load_config(PlayConfig, "configs/play/aria_scripted.yaml", parse_overrides(sets + (extra or [])))
    return play_one(cfg, out).folder


def voted_matches(tmp: Path, n: int, seed: int) -> list[Path]:
    """``n`` matches (seeds from ``seed`` on) that have a crewmate VOTE."""
    from mau.replay.record import read_match

    got, s = [], seed
    while len(got) < n and s < seed + 50 * n:
        m = _play_aria(tmp / f"m{s}", s)
        if any(c[F.MODULE] == "vote" and c[F.ROLE] == "crewmate" for c in read_match(m).calls):
            got.append(m)
        s += 1
    return got


async def _fork_one(folder: Path, branches: int) -> dict[str, Any]:
    from mau.replay.record import read_match
    from mau.replay.session import Session

    rec = read_match(folder)
    call = next(c for c in rec.calls if c[F.MODULE] == "vote" and c[F.ROLE] == "crewmate")
    answers = [call[F.RAW_OUTPUT], json.dumps({"vote_target": "skip"})]
    s = Session(rec)
    t0 = time.perf_counter()
    snap = await s.prepare_fork(call[F.CALL_ID])
    prepare = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(REPEATS):
        s.snapshot()
    snap_ms = (time.perf_counter() - t0) / REPEATS * 1000
    t0 = time.perf_counter()
    for _ in range(REPEATS):
        s.restore(snap)
    restore_ms = (time.perf_counter() - t0) / REPEATS * 1000
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(branches):
        await s.branch(snap, answers[k % 2], "meeting")
    meeting, meeting_cpu = time.perf_counter() - t0, time.process_time() - c0
    n_match = max(2, branches // 10)
    steps = []
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(n_match):
        o = await s.branch(snap, answers[k % 2], "match")
        steps.append(o.steps - call[F.STEP])
    match, match_cpu = time.perf_counter() - t0, time.process_time() - c0
    await s.close()
    return {
        "match": folder.name, "decision": call[F.CALL_ID], "step": call[F.STEP],
        "prepare_s": round(prepare, 4), "snapshot_ms": round(snap_ms, 3), "restore_ms": round(restore_ms, 3),
        "meeting_end_forks_per_s": round(branches / meeting, 1),
        "match_end_forks_per_s": round(n_match / match, 2),
        "match_end_steps_played": statistics.median(steps),
        "meeting_end_forks_per_cpu_s": round(branches / meeting_cpu, 1),
        "match_end_forks_per_cpu_s": round(n_match / match_cpu, 2),
    }


def bench_fork(matches: int, seed: int, branches: int) -> dict[str, Any]:
    import shutil

    Path("runs").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-fork-", dir="runs"))
    try:
        rows = [asyncio.run(_fork_one(m, branches)) for m in voted_matches(tmp, matches, seed)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "bench": "fork", "decisions": len(rows), "branches_per_decision": branches,
        "meeting_end_forks_per_s_median": statistics.median(r["meeting_end_forks_per_s"] for r in rows),
        "match_end_forks_per_s_median": statistics.median(r["match_end_forks_per_s"] for r in rows),
        # CPU time of this process: what one core does when it is not shared (the wall figures above
        # include waiting for a core on a busy machine)
        "meeting_end_forks_per_cpu_s_median": statistics.median(
            r["meeting_end_forks_per_cpu_s"] for r in rows
        ),
        "match_end_forks_per_cpu_s_median": statistics.median(r["match_end_forks_per_cpu_s"] for r in rows),
        "per_decision": rows, "cores": 1,
    }
