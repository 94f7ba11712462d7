"""``world.claims``: whether meeting speech carries structured claims, and the scripted speakers' settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mau.config import Model

OFF, STRUCTURED = "off", "structured"


class ClaimsConfig(Model):
    """Structured claims (docs/claims.md). Off: speech is free text only, and a match plays exactly as without
    this option (its events are byte for byte the same)."""

    mode: Literal["off", "structured"] = Field(
        OFF, description="structured: a speak action may carry claims (at, task, saw, with, saw_kill, body, "
                         "accuse, vouch), rendered into the transcript, checked at match end into claims.jsonl; "
                         "off: none are accepted or asked for.")
    window_s: float = Field(60.0, gt=0, description="Scripted speakers: their claims cover the last window_s game "
                                                    "seconds before the meeting (never before the last meeting).")
    max_per_utterance: int = Field(6, ge=1, le=20, description="Claims one utterance may carry; the rest are "
                                                               "dropped with a reason.")
    honest_error: float = Field(0.0, ge=0, le=1, description="Scripted crewmates: the chance that a claim is an "
                                                             "honest mistake (a time 15-30 s off or a wrong room), "
                                                             "labelled 'mistake' in events.jsonl.")

    @property
    def on(self) -> bool:
        return self.mode != OFF
