"""``world.claims``: whether meeting speech carries structured claims, and the scripted speakers' settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from mau.config import Model

OFF, STRUCTURED, FREE = "off", "structured", "free"


class ClaimsConfig(Model):
    """Structured claims (docs/claims.md). Off: speech is free text only, and a match plays exactly as without
    this option (its events are byte for byte the same)."""

    mode: Literal["off", "structured", "free"] = Field(
        OFF, description="structured: a speak action may carry claims (at, task, saw, with, saw_kill, body, "
                         "accuse, vouch), rendered into the transcript, checked at match end into "
                         "claims.jsonl; off: none are accepted or asked for; free: as off for every seat, "
                         "but scripted speakers say their claims in words (paraphrases) and keep them, with "
                         "their labels, in events.jsonl only (the gold an extractor is scored on).")
    window_s: float = Field(60.0, gt=0, description="Scripted speakers: their claims cover the last window_s "
                                                    "game seconds before the meeting (never before the last "
                                                    "meeting).")
    max_per_utterance: int = Field(6, ge=1, le=20, description="Claims one utterance may carry; the rest are "
                                                               "dropped with a reason.")
    honest_error: float = Field(0.0, ge=0, le=1, description="Scripted crewmates: the chance that a claim is "
                                                             "an honest mistake (a time 15-30 s off or a "
                                                             "wrong room), labelled 'mistake' in "
                                                             "events.jsonl.")

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        """YAML reads an unquoted ``off`` (and ``no``, ``false``) as false: that is ``off`` as written. An
        unquoted ``on`` / ``yes`` / ``true`` names no mode."""
        if v is False:
            return OFF
        if v is True:
            raise ValueError("YAML reads on/yes/true as true, which names no mode: write structured, free or "
                             "off")
        return v

    @property
    def on(self) -> bool:
        """Structured claims: seats may make them, the world renders them into the transcript, the checker
        judges them at match end."""
        return self.mode == STRUCTURED

    @property
    def free(self) -> bool:
        return self.mode == FREE

    @property
    def speakers(self) -> bool:
        """Whether scripted speakers make claims (structured: said as templates; free: said in words)."""
        return self.mode != OFF
