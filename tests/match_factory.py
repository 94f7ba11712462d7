"""Hand-made match folders (format ``mau.match`` v1) for exact tests of the dataset builder: a header with the
roles and the outcome, an event log with votes, ejections and speech, call records of crewmates and imposters
(vote calls with known targets, fallbacks, text-only calls), and frames as small JPEGs.

    m = MatchSpec("won", outcome="CREWMATE WIN")
    m.call("Steve", "plan", tick=0, images=1)
    m.vote("Noah", "Olivia", tick=500)
    m.eject("Olivia", tick=500)
    m.write(tmp_path / "run" / "matches")
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.env.config import DEFAULT_PLAYERS

PAPER_ROLES = {n: ("imposter" if n in ("James", "Olivia") else "crewmate") for n, _ in DEFAULT_PLAYERS}
HARNESS = {"state": "privileged", "memory": "semantic", "planning": "reactive", "reflection": "meeting",
           "prompt_style": "minimal"}


def jpeg(color: tuple[int, int, int] = (40, 120, 200), size: tuple[int, int] = (64, 36)) -> bytes:
    """A small solid JPEG."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="JPEG", quality=80)
    return buf.getvalue()


def system_prompt(name: str, role: str) -> str:
    who = (f"You are {name}, an Imposter. Your fellow Imposter: {'Olivia' if name == 'James' else 'James'}."
           if role == "imposter" else f"You are {name}, a Crewmate. You do not know who the Imposters are.")
    return (f"You are playing Among Us inside a Minecraft world.\n{who}\nAnswer with one JSON object and "
            f"nothing else.")


@dataclass
class MatchSpec:
    """One match folder to write: add calls and events, then ``write``."""

    match_id: str
    outcome: str = "CREWMATE WIN"
    roles: dict[str, str] = field(default_factory=lambda: dict(PAPER_ROLES))
    seed: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    frames: dict[str, bytes] = field(default_factory=dict)
    # calls.jsonl line number -> bytes written instead
    raw_lines: dict[int, bytes] = field(default_factory=dict)
    tail: bytes = b""  # bytes appended after the last line (e.g. a truncated record)

    def call(self, agent: str, module: str, tick: int, *, text: str = "What do you do next?", images: int = 0,
             raw: str | None = '{"mode": "mission", "reasoning": "work"}', parsed: Any = None,
             fallback: bool = False, image_first: bool = False, missing_image: bool = False) -> str:
        """Record one call (its frames are written too); returns its call_id."""
        n = len(self.calls)
        call_id = f"{self.match_id}:{n}"
        role = self.roles[agent]
        parts: list[dict[str, Any]] = [{"type": "text", "text": f"Step {tick // 100}.\n{text}"}]
        for k in range(images):
            path = f"{F.FRAMES_DIR}/{tick // 100:04d}_{agent}_{n}_{k}.jpg"
            if not missing_image:
                self.frames[path] = jpeg((10 * k, 100, 5 * n % 255))
            parts.append({"type": "image", F.IMAGE_PATH: path})
        if image_first:
            parts = parts[1:] + parts[:1]
        if parsed is None and raw is not None:
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = {}
        self.calls.append(
            {
                F.CALL_ID: call_id, F.MATCH: self.match_id, F.SEED: self.seed, F.STEP: tick // 100,
                F.TICK: tick, F.PHASE: "voting" if module == "vote" else "roam", F.AGENT: agent, F.ROLE: role,
                F.MODULE: module, F.HARNESS: dict(HARNESS), F.MODEL: "expert-x", F.BACKEND: "scripted",
                F.MESSAGES: [
                    {"role": "system", "content": system_prompt(agent, role)},
                    {"role": "user", "content": parts},
                ],
                F.RAW_OUTPUT: raw, F.PARSED: parsed, F.FALLBACK: fallback,
                F.FALLBACK_REASON: "bad JSON" if fallback else None,
                F.ERROR: None if raw is not None else "timeout", F.LATENCY_S: 0.01, F.HARNESS_MS: 0.1,
                F.PROMPT_TOKENS: 0, F.COMPLETION_TOKENS: 0, "attempts": 1, "temperature": 0.2,
                "max_tokens": 256,
            }
        )
        return call_id

    def vote(self, agent: str, target: str, tick: int, *, fallback: bool = False, event: bool = True) -> str:
        raw = json.dumps({F.VOTE_TARGET: target, "reasoning": "the evidence"})
        parsed = {F.VOTE_TARGET: "skip" if fallback else target, "reasoning": ""}
        cid = self.call(agent, "vote", tick, text="Vote now.", raw=raw, parsed=parsed, fallback=fallback)
        if event:
            self.event(tick, F.EV_VOTE, voter=agent, target=parsed[F.VOTE_TARGET])
        return cid

    def eject(self, name: str, tick: int) -> None:
        role = self.roles[name]
        self.event(tick, F.EV_EJECTION, ejected=name, role=role, tally={name: 5},
                   text=f"{name} was {'an Imposter' if role == 'imposter' else 'a Crewmate'}.")

    def say(self, speaker: str, text: str, tick: int) -> None:
        self.event(tick, F.EV_UTTERANCE, speaker=speaker, round=1, text=text)

    def event(self, tick: int, kind: str, **fields: Any) -> None:
        self.events.append(
            {F.EVENT_INDEX: len(self.events), F.TICK: tick, F.STEP: tick // 100, F.TYPE: kind, **fields}
        )

    def header(self) -> dict[str, Any]:
        players = [
            {"name": n, "color": c, "seat": i, "role": self.roles[n]}
            for i, (n, c) in enumerate(DEFAULT_PLAYERS)
        ]
        last = max([e[F.TICK] for e in self.events] + [c[F.TICK] for c in self.calls] + [0])
        return {F.FORMAT: F.MATCH_FORMAT, F.FORMAT_VERSION: F.MATCH_FORMAT_VERSION, F.SEED: self.seed,
                F.BACKEND: "sim", F.MAP: "skeld", F.PLAYERS: players, F.ROLES: dict(self.roles),
                F.OUTCOME: self.outcome, F.END_REASON: "hand-made", F.STEPS: last // 100 + 1, F.TICKS: last,
                F.WALL_SECONDS: 0.0, F.N_EVENTS: len(self.events) + 2, F.CONFIG: {}, "provenance": {},
                F.MATCH_ID: self.match_id, F.N_FRAMES: len(self.frames)}

    def write(self, parent: Path) -> Path:
        """Write the folder ``parent/<match_id>`` and return it."""
        d = Path(parent) / self.match_id
        (d / F.FRAMES_DIR).mkdir(parents=True)
        events = [{F.EVENT_INDEX: 0, F.TICK: 0, F.STEP: 0, F.TYPE: F.EV_MATCH_START, F.SEED: self.seed,
                   F.ROLES: dict(self.roles), "missions": {}}]
        events += sorted(self.events, key=lambda e: e[F.TICK])
        events.append({F.TICK: events[-1][F.TICK], F.STEP: 0, F.TYPE: F.EV_MATCH_END, F.OUTCOME: self.outcome,
                       "reason": "hand-made"})
        for i, e in enumerate(events):
            e[F.EVENT_INDEX] = i
        (d / F.EVENTS_FILE).write_text("".join(json.dumps(e) + "\n" for e in events))
        with open(d / F.CALLS_FILE, "wb") as f:
            for n, c in enumerate(self.calls, 1):
                f.write(self.raw_lines.get(n, json.dumps(c).encode() + b"\n"))
            f.write(self.tail)
        for path, data in self.frames.items():
            (d / path).write_bytes(data)
        (d / F.RESOLVED_CONFIG).write_text("policy: aria\n")
        (d / F.MATCH_HEADER).write_text(json.dumps(self.header(), indent=1))
        return d


def filter_corpus(root: Path) -> dict[str, Any]:
    """A collect-like run ``root/run`` with two matches whose expected selections are known exactly.

    won (CREWMATE WIN; Olivia, an imposter, ejected at tick 500):
      won:0 Steve plan, 1 image            -> bcwin
      won:1 James plan (imposter)          -> never
      won:2 Noah surveillance, 2 images    -> bcwin
      won:3 Jason plan, fallback           -> never
      won:4 Steve votes Olivia (imposter)  -> bcwin, bcvote
      won:5 Noah votes Jason (crewmate)    -> bcwin
      won:6 Ethan mission, no raw output   -> never
    lost (IMPOSTER WIN):
      lost:0 Steve plan, 1 image           -> nothing (crew lost)
      lost:1 Steve votes James (imposter)  -> bcvote
      lost:2 Noah votes skip               -> bcvote (the expert's own skip; vote_skips=false: nothing)
      lost:3 Jason votes Olivia, fallback  -> never
      lost:4 Olivia votes Steve (imposter) -> never
    """
    matches = root / "run" / F.MATCHES_DIR
    won = MatchSpec("won", outcome="CREWMATE WIN", seed=1)
    won.call("Steve", "plan", 0, images=1)
    won.call("James", "plan", 0, images=1)
    won.call("Noah", "surveillance", 0, images=2, raw='{"players_seen": [], "suspect": "none"}')
    won.call("Jason", "plan", 100, raw="not json", fallback=True)
    won.vote("Steve", "Olivia", 500)
    won.vote("Noah", "Jason", 500)
    won.eject("Olivia", 500)
    won.call("Ethan", "mission", 600, raw=None, parsed={"station": 1}, fallback=True)
    lost = MatchSpec("lost", outcome="IMPOSTER WIN", seed=2)
    lost.call("Steve", "plan", 0, images=1)
    lost.vote("Steve", "James", 400)
    lost.vote("Noah", "skip", 400)
    lost.vote("Jason", "Olivia", 400, fallback=True)
    lost.vote("Olivia", "Steve", 400)
    won.write(matches)
    lost.write(matches)
    return {
        "run": root / "run", "bcwin": {"won:0", "won:2", "won:4", "won:5"},
        "bcvote": {"won:4", "lost:1", "lost:2"},
        "bcwin+vote": {"won:0", "won:2", "won:4", "won:5", "lost:1", "lost:2"},
    }
