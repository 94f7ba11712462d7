"""``mau replay``: replay a recorded match from its folder alone and compare what it produces with the record,
byte for byte: the event log (always), the memory dumps and the answers used (ARIA matches)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.replay.director import ReplayDivergence
from mau.replay.record import RecordedMatch, read_match


def event_line(e: dict[str, Any]) -> bytes:
    """An event exactly as MatchWriter.write_events writes it."""
    return json.dumps(e, separators=(",", ":")).encode()


def first_difference(recorded: list[bytes], replayed: list[bytes]) -> dict[str, Any] | None:
    for i in range(max(len(recorded), len(replayed))):
        a = recorded[i] if i < len(recorded) else None
        b = replayed[i] if i < len(replayed) else None
        if a != b:
            return {"index": i, "recorded": a.decode() if a is not None else None,
                    "replayed": b.decode() if b is not None else None}
    return None


def replay_scripted(rec: RecordedMatch) -> list[dict[str, Any]]:
    """A scripted-policy match: the same seeded policies on the same world config."""
    from mau.env.backends import make_world
    from mau.env.runner import play_match
    from mau.env.scripted import ScriptedPolicy

    world = make_world(rec.world)
    policies = {p.name: ScriptedPolicy(p.name, world.map, rec.seed, claims=rec.world.claims)
                for p in rec.world.game.players}
    play_match(world, policies, rec.seed, rec.state_mode)
    return world.state.events


async def replay_aria(rec: RecordedMatch) -> tuple[Any, str | None]:
    from mau.replay.session import Session

    s = Session(rec)
    divergence = None
    try:
        await s.replay()
    except ReplayDivergence as e:
        divergence = str(e)
    finally:
        await s.close()
    if divergence is None and s.director.left():
        divergence = f"the replay ended with {s.director.left()} recorded calls never asked"
    return s, divergence


def check(path: str | Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    rec = read_match(path)
    out: dict[str, Any] = {"match": str(rec.path), "policy": rec.policy, "seed": rec.seed}
    if rec.policy == "scripted":
        events, divergence = replay_scripted(rec), None
    else:
        session, divergence = asyncio.run(replay_aria(rec))
        events = session.world.state.events
        replayed_mem = [json.dumps(d, separators=(",", ":")).encode() for d in session.match.memory_dumps]
        records = session.match.log.records
        mismatch = sum(1 for a, b in zip(rec.calls, _in_agent_order(rec.calls, records))
                       if b is None or a[F.PARSED] != b[F.PARSED])
        out["calls"] = {"recorded": len(rec.calls), "replayed": len(records), "parsed_mismatches": mismatch}
        out["memory_identical"] = divergence is None and replayed_mem == rec.memory_lines
    lines = [event_line(e) for e in events]
    diff = first_difference(rec.event_lines, lines)
    out.update(
        events_recorded=len(rec.event_lines), events_replayed=len(lines), events_identical=diff is None,
        first_difference=diff, divergence=divergence, wall_s=round(time.perf_counter() - t0, 3),
    )
    out["ok"] = diff is None and divergence is None and out.get("memory_identical", True) \
        and out.get("calls", {}).get("parsed_mismatches", 0) == 0
    return out


def _in_agent_order(
    recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]
) -> list[dict[str, Any] | None]:
    """The replayed record that corresponds to each recorded one (the n-th call of the same agent)."""
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for r in replayed:
        by_agent.setdefault(r[F.AGENT], []).append(r)
    seen: dict[str, int] = {}
    out = []
    for r in recorded:
        k = seen.get(r[F.AGENT], 0)
        seen[r[F.AGENT]] = k + 1
        lst = by_agent.get(r[F.AGENT], [])
        out.append(lst[k] if k < len(lst) else None)
    return out
