"""Recorded decisions read back as prompts: the crewmate calls of collect, eval or play runs (``decisions`` of
``mau rl`` and ``mau student-rl``), and recorded messages turned into a conversational prompt (also the BC
datasets' messages, for the student). Light imports at the top: the configs import ``DecisionsSection``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from mau import schema as F
from mau.config import Model
from mau.errors import MauError


class DecisionsSection(Model):
    """The prompts: crewmate decision contexts (X, S) recorded in collect (or eval, or play) runs."""

    runs: list[str] = Field(default_factory=list, description="Run folders (their matches/) or match "
                                                              "folders.")
    modules: list[str] = Field(default_factory=lambda: ["vote"], description="Decision modules to train "
                                                                             "(vote first; meeting, report).")
    role: Literal["crewmate", "imposter"] = Field("crewmate", description="Whose decisions.")
    exclude_seeds: list[int] = Field(default_factory=list, description="Matches with these seeds are left "
                                                                       "out (held-out evaluation seeds).")
    max_decisions: int | None = Field(None, ge=1, description="Use only the first N decisions (in folder "
                                                              "order).")


def to_prompt(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded messages -> TRL's conversational prompt (text parts, and image placeholders in order)."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        else:
            parts = [{"type": "image"} if p.get("type") == "image" else {"type": "text", "text": p["text"]}
                     for p in content]
        out.append({"role": m["role"], "content": parts})
    return out


def decision_rows(cfg) -> list[dict[str, Any]]:
    """One row per recorded decision of ``cfg`` (a DecisionsSection): prompt, match folder, call id (and
    images)."""
    from mau.replay.record import match_folders, read_match

    if not cfg.runs:
        raise MauError("decisions.runs is empty; give collect run folders (or match folders) to take "
                       "decisions from")
    rows: list[dict[str, Any]] = []
    for folder in match_folders(cfg.runs):
        rec = read_match(folder)
        if rec.policy != "aria" or rec.seed in cfg.exclude_seeds:
            continue
        for c in rec.calls:
            if c[F.MODULE] not in cfg.modules or c[F.ROLE] != cfg.role:
                continue
            row = {
                "prompt": to_prompt(c[F.MESSAGES]), "match": str(Path(folder).resolve()),
                "call_id": c[F.CALL_ID],
            }
            paths = [p[F.IMAGE_PATH] for m in c[F.MESSAGES] if isinstance(m["content"], list)
                     for p in m["content"] if p.get("type") == "image"]
            if paths:
                from PIL import Image

                row["images"] = [Image.open(Path(folder) / p).convert("RGB") for p in paths]
            rows.append(row)
            if cfg.max_decisions and len(rows) >= cfg.max_decisions:
                return rows
    if not rows:
        raise MauError(f"decisions: no {cfg.role} {'/'.join(cfg.modules)} calls in {cfg.runs} (seeds "
                       f"{cfg.exclude_seeds} left out); record some with mau collect")
    return rows
