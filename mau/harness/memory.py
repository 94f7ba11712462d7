"""ARIA's memories: window (the last N steps), semantic (beliefs per player, meetings, notes), the suspicion
scores every agent keeps (shown in the state text in both state modes; bounded updates) and skill memory
(lessons from reflection, FIFO). All plain data: they render into prompts and are dumped into the match folder
at meeting ends."""

from __future__ import annotations

from collections import deque
from typing import Any

from mau.infer.evidence import EvidenceLog


def _clamp(v: float, lo: float, hi: float) -> float:
    return lo if v < lo else hi if v > hi else v


CLAIMS_MEMORY_LIMIT = 12  # placing claims of earlier meetings kept in the prompt (the newest)


def _evidence_block(evidence: EvidenceLog | None, claims: bool = False) -> list[str]:
    """The evidence memory (``aria.evidence_memory``): every line of the agent's evidence log, kept for the
    whole match whatever the memory kind (docs/harness.md, "Evidence memory"); with ``aria.claims_memory``
    also the placing claims heard in earlier meetings, as said (never a verdict)."""
    lines = evidence.lines() if evidence is not None else []
    out = ["Evidence:"] + [f"- {x}" for x in lines] if lines else []
    said = evidence.claim_lines(CLAIMS_MEMORY_LIMIT) if evidence is not None and claims else []
    return out + (["Claims heard in earlier meetings:"] + [f"- {x}" for x in said] if said else [])


class WindowMemory:
    kind = "window"

    def __init__(self, size: int):
        self.steps: deque[str] = deque(maxlen=size)
        self.evidence: EvidenceLog | None = None  # set by the agent when evidence memory is on
        self.claims_memory = False  # set by the agent (aria.claims_memory)

    def observe(self, obs: dict[str, Any]) -> None:
        seen = ", ".join(f"{p['name']} ({p['room']})" for p in obs["players_in_view"]) or "nobody"
        bodies = ", ".join(b["victim"] for b in obs["bodies_in_view"])
        last = obs.get("last_action_result") or {}
        line = f"step {obs['step']}, {obs['room']}: saw {seen}"
        if bodies:
            line += f"; body of {bodies}"
        if last:
            line += f"; last action {last.get('status')}"
        self.steps.append(line)

    def note(self, text: str) -> None:
        self.steps.append(text)

    def on_meeting(self, summary: str) -> None:
        self.steps.append(summary)

    def render(self) -> str:
        lines = ["Recent steps:"] + [f"- {s}" for s in self.steps] if self.steps else ["Recent steps: none "
                                                                                       "yet."]
        return "\n".join(lines + _evidence_block(self.evidence, self.claims_memory))

    def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "steps": list(self.steps)}
        if self.evidence is not None:
            out["evidence"] = self.evidence.lines()
        return out


class Suspicion:
    """Per-player suspicion in [0, 1], kept by every agent whatever its memory: a crewmate's belief that a
    player is an imposter, an imposter's belief that a player suspects it or its teammate (the paper's role
    conditioning; the scale and the delta bound are shared). Updates are clamped to +/- ``clamp``."""

    def __init__(self, me: str, players: list[str]):
        self.scores: dict[str, float] = {p: 0.0 for p in players if p != me}

    def update(self, player: str, delta: float, clamp: float) -> float | None:
        """Apply a bounded change; returns the delta applied (None: unknown player)."""
        if player not in self.scores:
            return None
        d = round(_clamp(delta, -clamp, clamp), 3)
        self.scores[player] = round(_clamp(self.scores[player] + d, 0.0, 1.0), 3)
        return d

    def render(self, players: list[str] | None = None) -> str:
        names = [n for n in self.scores if players is None or n in players]
        return (
            "Suspicion scores (0 to 1): "
            + (", ".join(f"{n} {self.scores[n]:.2f}" for n in names) or "nobody")
            + "."
        )

    def dump(self) -> dict[str, float]:
        return dict(self.scores)


class SemanticMemory:
    """Per-player beliefs (last sighting), meeting outcomes and notes. Suspicion lives in ``Suspicion``."""

    kind = "semantic"

    def __init__(self, me: str, players: list[str], notes_limit: int):
        self.me = me
        self.beliefs: dict[str, dict[str, Any]] = {p: {"last_seen": None} for p in players if p != me}
        self.meetings: list[str] = []
        self.notes: deque[str] = deque(maxlen=notes_limit)
        self.evidence: EvidenceLog | None = None  # set by the agent when evidence memory is on
        self.claims_memory = False  # set by the agent (aria.claims_memory)

    def observe(self, obs: dict[str, Any]) -> None:
        for p in obs["players_in_view"]:
            if p["name"] in self.beliefs:
                self.beliefs[p["name"]]["last_seen"] = f"step {obs['step']} in {p['room']}"
        for w in obs["witnessed_kills"]:  # empty unless the witness_text ablation is on
            note = f"I saw {w['killer']} kill {w['victim']} in {w['room']}."
            if note not in self.notes:
                self.notes.append(note)

    def note(self, text: str) -> None:
        if text and text not in self.notes:
            self.notes.append(text)

    def on_meeting(self, summary: str) -> None:
        self.meetings.append(summary)

    def render(self) -> str:
        lines = ["Beliefs about the others:"]
        for name, b in self.beliefs.items():
            lines.append(f"- {name}: last seen {b['last_seen']}" if b["last_seen"] else f"- {name}: not seen "
                                                                                        f"yet")
        if self.meetings:
            lines.append("Meetings so far:")
            lines += [f"- {m}" for m in self.meetings]
        if self.notes:
            lines.append("Notes:")
            lines += [f"- {n}" for n in self.notes]
        return "\n".join(lines + _evidence_block(self.evidence, self.claims_memory))

    def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "beliefs": {k: dict(v) for k, v in self.beliefs.items()},
                               "meetings": list(self.meetings), "notes": list(self.notes)}
        if self.evidence is not None:
            out["evidence"] = self.evidence.lines()
        return out


class SkillMemory:
    """Lessons learned in reflection: at most ``size`` (FIFO); the ``k`` most recent go into prompts."""

    def __init__(self, size: int, k: int):
        self.items: deque[str] = deque(maxlen=size)
        self.k = k

    def add(self, skill: str) -> None:
        skill = skill.strip()
        if skill:
            self.items.append(skill)

    def retrieve(self) -> list[str]:
        return list(self.items)[-self.k:] if self.k else []

    def render(self) -> str:
        got = self.retrieve()
        return ("Lessons from earlier meetings:\n" + "\n".join(f"- {s}" for s in got)) if got else ""
