"""A recorded match folder read back for replay: its header, its resolved config (seats, world, policy), its
call records and its event log as the exact bytes written. Nothing else is needed to replay it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.config import Model
from mau.env.config import WorldConfig
from mau.errors import MauError
from mau.harness.config import SeatConfig


@dataclass
class RecordedMatch:
    path: Path
    header: dict[str, Any]
    policy: str  # "aria" or "scripted"
    seed: int
    world: WorldConfig
    seats: dict[str, SeatConfig]
    state_mode: str
    match_id: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    event_lines: list[bytes] = field(default_factory=list)  # events.jsonl, one line each, newline stripped
    memory_lines: list[bytes] = field(default_factory=list)

    def call(self, call_id: str) -> dict[str, Any]:
        for c in self.calls:
            if c[F.CALL_ID] == call_id:
                return c
        raise MauError(f"{self.path}: no call {call_id!r} in {F.CALLS_FILE}")

    def find_decision(self, step: int, agent: str | None, module: str) -> dict[str, Any]:
        """The recorded call of ``module`` at roam step ``step`` (by ``agent``; default the first
        crewmate)."""
        found = [
            c
            for c in self.calls
            if c[F.STEP] == step
            and c[F.MODULE] == module
            and (agent is None or c[F.AGENT] == agent)
            and (agent is not None or c[F.ROLE] == "crewmate")
        ]
        if not found:
            have = sorted({(c[F.STEP], c[F.MODULE]) for c in self.calls if c[F.MODULE] == module})[:12]
            who = f" by {agent}" if agent else " by a crewmate"
            raise MauError(f"{self.path}: no {module} call at step {step}{who}; {module} calls are at steps "
                           f"{sorted({s for s, _ in have})} (fix --step / --agent / --module)")
        return found[0]


def _lines(path: Path) -> list[bytes]:
    if not path.is_file():
        return []
    return path.read_bytes().splitlines()


def read_match(path: str | Path) -> RecordedMatch:
    """Read a match folder (mau.match v1) for replay; refuse one that cannot be replayed, saying why."""
    from mau.matchdir import read_header

    path = Path(path)
    header = read_header(path)
    if header.get(F.BACKEND) != "sim":
        raise MauError(f"{path}: played on backend {header.get(F.BACKEND)!r}; only sim matches replay "
                       f"exactly")
    cfg = header.get(F.CONFIG) or {}
    if "world" not in cfg:
        raise MauError(f"{path}: the header's config has no world; this match folder cannot be replayed")
    world = WorldConfig.model_validate(cfg["world"])
    has_calls = (path / F.CALLS_FILE).is_file()
    policy = cfg.get("policy", "aria" if has_calls else "scripted")
    seats = {k: SeatConfig.model_validate(v) for k, v in (cfg.get("seats") or {}).items()}
    if policy == "aria" and not has_calls:
        raise MauError(f"{path}: an ARIA match without {F.CALLS_FILE}; its answers are not recorded, it "
                       f"cannot replay")
    calls = []
    if has_calls:
        for n, line in enumerate(_lines(path / F.CALLS_FILE), 1):
            try:
                calls.append(json.loads(line))
            except json.JSONDecodeError:
                raise MauError(f"{path / F.CALLS_FILE}:{n}: not valid JSON; the record is damaged") from None
    return RecordedMatch(
        path=path, header=header, policy=policy, seed=int(header[F.SEED]), world=world, seats=seats,
        state_mode=cfg.get("state_mode", "ego"), match_id=header.get(F.MATCH_ID) or path.name, calls=calls,
        event_lines=_lines(path / F.EVENTS_FILE), memory_lines=_lines(path / F.MEMORY_FILE))


class ReplayConfig(Model):
    """What a branch folder records as its config: its seats and its world (like a collected match)."""

    seats: dict[str, SeatConfig]
    world: WorldConfig


def match_folders(paths: list[str]) -> list[str]:
    """The finished match folders of ``paths`` (run folders or match folders), in order."""
    from mau.matchdir import finished_matches, is_match_dir

    out = []
    for p in paths:
        if is_match_dir(p):
            out.append(p)
        elif (Path(p) / F.MATCHES_DIR).is_dir():
            out += [str(m) for m in finished_matches(p)]
        else:
            raise MauError(f"{p}: neither a match folder (no {F.MATCH_HEADER}) nor a run folder with "
                           f"{F.MATCHES_DIR}/")
    return out
