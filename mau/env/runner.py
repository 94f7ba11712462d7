"""Play one match: a world, one policy per seat, the decision loop, and the match folder."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from mau import schema as F
from mau.config import dump_yaml
from mau.env.actions import Action
from mau.env.state import DISCUSSION, ENDED, ROAM
from mau.matchdir import MatchWriter
from mau.schema import TICKS_PER_SECOND


class Policy(Protocol):
    """One seat's decisions: ``act(obs)``, an Action or None (keep the running one). Optional: ``perceive``
    (the kills a scripted reader of frames is told) and ``listens`` (see ``play_match``)."""

    def act(self, obs: dict[str, Any]) -> Action | None: ...


@dataclass
class MatchResult:
    seed: int
    outcome: str
    end_reason: str
    steps: int
    ticks: int
    wall_seconds: float
    folder: Path | None


def play_match(world, policies: dict[str, Policy], seed: int, state_mode: str = "ego",
               writer: MatchWriter | None = None, frames: bool = False, topdown: bool = False,
               on_step: Callable[[Any], None] | None = None) -> MatchResult:
    """Reset ``world`` to ``seed`` and play until an ending. With ``frames``, every active player's
    first-person frame at each roam decision point is written to the match folder.

    Every active player is observed and asked to act at every step, but in a discussion step a policy whose
    ``listens`` is False is asked only on its turn: a listener's action is refused anyway (it is not its turn
    to speak), and such a policy reads every line said since it last acted when it next acts (its turn, the
    vote). The scripted policy is one (``ScriptedPolicy.listens``): its games are the same either way
    (tests/test_sim.py), and the listeners' turns were 12 % of a scripted match's instructions
    (docs/collect.md). A policy without the attribute listens (is asked at every step), as ARIA's listeners
    take in each line."""
    t0 = time.perf_counter()
    world.reset(seed)
    st = world.state
    # Each policy's methods, looked up once a match instead of at every step of every player: a scripted
    # reader of frames also has ``perceive``, to be told the kills they showed.
    by_name = {name: (pol.act, getattr(pol, "perceive", None), getattr(pol, "listens", True))
               for name, pol in policies.items()}
    observe = world.observe
    while st.phase != ENDED:
        if writer is not None and st.phase == ROAM and (frames or topdown):
            from mau.env.render import save_png

            tag = f"{st.step + 1:04d}"
            if frames:
                for p in st.players:
                    if p.active:
                        save_png(world.render(p.name), writer.frame_path(f"{tag}_{p.name}.png"))
            if topdown:
                save_png(world.topdown(), writer.frame_path(f"{tag}_topdown.png"))
        actions = {}
        speaker = st.meeting.speaker if st.phase == DISCUSSION else None  # None: every policy is asked
        for p in st.players:
            if p.alive and not p.ejected:  # PlayerState.active
                name = p.name
                act, perceive, listens = by_name[name]
                if speaker is not None and name != speaker and not listens:
                    continue
                if perceive is not None:
                    perceive(p.witnessed)
                actions[name] = act(observe(name, state_mode))
        world.step(actions)
        st = world.state
        if on_step is not None:
            on_step(st)
    wall = time.perf_counter() - t0
    return MatchResult(
        seed, st.outcome, st.end_reason, st.step, st.tick, wall, writer.final if writer else None
    )


def match_header(world, result: MatchResult, config, provenance: dict[str, Any]) -> dict[str, Any]:
    st = world.state
    return {
        F.SEED: result.seed, F.BACKEND: world.name, F.MAP: world.map.name,
        F.PLAYERS: [{"name": p.name, "color": p.color, "seat": p.seat, "role": p.role} for p in st.players],
        F.ROLES: {p.name: p.role for p in st.players}, F.OUTCOME: st.outcome, F.END_REASON: st.end_reason,
        F.STEPS: st.step, "meeting_steps": st.meeting_steps, F.TICKS: st.tick,
        "game_seconds": st.tick / TICKS_PER_SECOND, F.WALL_SECONDS: round(result.wall_seconds, 4),
        F.N_EVENTS: len(st.events), F.CONFIG: config.model_dump(mode="json"), "provenance": provenance,
    }


def copy_world_logs(world, folder: Path) -> None:
    """A backend with external processes (minecraft) keeps their logs; they go into the match folder."""
    import shutil

    files = getattr(world, "log_files", lambda: [])()
    if files:
        (folder / F.LOGS_DIR).mkdir(exist_ok=True)
        for f in files:
            shutil.copy2(f, folder / F.LOGS_DIR / f.name)


def write_match(writer: MatchWriter, world, result: MatchResult, config, provenance: dict[str, Any],
                extra: dict[str, Any] | None = None) -> Path:
    writer.write_events(world.state.events)
    writer.write_text(F.RESOLVED_CONFIG, dump_yaml(config))
    copy_world_logs(world, writer.staging)
    header = match_header(world, result, config, provenance)
    tracks = getattr(world, "tracks", None)  # a backend without tracks writes none (the viewer says so)
    if tracks:
        writer.write_text(F.TRACKS_FILE, "".join(json.dumps(t, separators=(",", ":")) + "\n" for t in tracks))
        header[F.TRACKS] = {"version": F.TRACKS_VERSION, "lines": len(tracks)}
    sights = getattr(world, "sights", None)
    if sights is not None and sights.lines:
        writer.write_text(F.SIGHTS_FILE, jsonl(sights.lines))
        header[F.SIGHTS] = {"version": F.SIGHTS_VERSION, "lines": len(sights.lines)}
        # the checker's verdicts, from memory (mau claims recomputes them from files)
        if world.config.claims.on:
            from mau.claims.check import check_match, counts

            records = check_match(world.state.events, sights.lines)
            writer.write_text(F.CLAIMS_FILE, jsonl(records))
            header[F.CLAIMS_HEADER] = {"version": F.CLAIMS_VERSION, "lines": len(records),
                                       "verdicts": counts(records)}
    return writer.publish({**header, **(extra or {})})


def jsonl(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines)
