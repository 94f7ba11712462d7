"""A tiny behaviour-cloning dataset folder, built directly (no matches, no ``mau dataset``), for the training
tests: a ``datasets.DatasetDict`` (train / validation / test) in TRL's conversational vision format, as
``mau dataset`` writes it (docs/datasets.md): ``messages`` = [system, user (image placeholders + text),
assistant (the expert's JSON answer)], ``images`` = the frames (``Image()`` values; empty for text-only
calls), plus metadata columns that training must drop. ``DIR/dataset.json`` carries the format header.

Rows cycle through three kinds: one 64x64 frame, one 128x128 frame (plus a second 64x64 one on every other
such row, so that multi-image rows occur), and text-only. Answers are vote or navigation JSON. Everything
follows from ``seed``. Heavy imports happen inside the functions.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

from mau import schema as F

NAMES = ["Noah", "Emma", "Liam", "Olivia", "James", "Ava", "Steve", "Mia"]
ROOMS = ["Cafeteria", "Admin", "Electrical", "Medbay", "Reactor", "Storage"]
SYSTEM = "You are {agent}, a crewmate in a game of Among Us. Answer with one JSON object."


def _png(size: int, rng: random.Random) -> bytes:
    """A small RGB PNG with a random colour and a block in a random place (not blank: the vision tower sees
    it)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (size, size), tuple(rng.randrange(256) for _ in range(3)))
    x, y = rng.randrange(size // 2), rng.randrange(size // 2)
    fill = tuple(rng.randrange(256) for _ in range(3))
    ImageDraw.Draw(img).rectangle([x, y, x + size // 3, y + size // 4], fill=fill)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def answer(i: int, rng: random.Random) -> dict[str, Any]:
    """The expert's answer of row ``i``: a vote on odd rows, a navigation decision on even ones."""
    if i % 2:
        return {"vote_target": rng.choice(NAMES), "reasoning": f"I saw {rng.choice(NAMES)} near the body."}
    return {"mode": "mission", "target": "none", "reasoning": f"Going to {rng.choice(ROOMS)} for my task."}


def make_row(i: int, rng: random.Random, match: str) -> dict[str, Any]:
    """One example: kind ``i % 3`` is 0: one 64x64 frame, 1: one or two frames (128x128 [+ 64x64]), 2:
    none."""
    kind = i % 3
    sizes = [64] if kind == 0 else ([128, 64] if i % 6 == 1 else [128]) if kind == 1 else []
    images = [{"bytes": _png(s, rng), "path": f"{match}/frames/{i}_{k}.png"} for k, s in enumerate(sizes)]
    agent = rng.choice(NAMES)
    state = (f"Step {i}. You are in {rng.choice(ROOMS)}. You see {', '.join(rng.sample(NAMES, 2))}. "
             f"Meeting: {'yes' if i % 2 else 'no'}.")
    user = [{F.DS_CONTENT_TYPE: "image", F.DS_CONTENT_TEXT: None} for _ in sizes]
    user.append({F.DS_CONTENT_TYPE: "text", F.DS_CONTENT_TEXT: state})
    ans = answer(i, rng)
    messages = [
        {
            F.ROLE: "system",
            F.DS_CONTENT: [{F.DS_CONTENT_TYPE: "text", F.DS_CONTENT_TEXT: SYSTEM.format(agent=agent)}],
        },
        {F.ROLE: "user", F.DS_CONTENT: user},
        {
            F.ROLE: "assistant",
            F.DS_CONTENT: [{F.DS_CONTENT_TYPE: "text", F.DS_CONTENT_TEXT: json.dumps(ans)}],
        },
    ]
    return {
        F.DS_MESSAGES: messages, F.DS_IMAGES: images, F.MATCH: match, F.CALL_ID: f"{match}-c{i}",
        F.MODULE: "vote" if i % 2 else "navigation", F.AGENT: agent, F.ROLE: "crewmate",
        F.DS_FILTERS: ["bcwin"], F.DS_N_IMAGES: len(sizes), F.DS_PARSED_JSON: json.dumps(ans),
    }


def features() -> Any:
    from datasets import Features, Image, List, Value

    s = Value("string")
    part = {F.DS_CONTENT_TYPE: s, F.DS_CONTENT_TEXT: s}
    return Features({
        F.DS_MESSAGES: List({F.ROLE: s, F.DS_CONTENT: List(part)}), F.DS_IMAGES: List(Image()),
        F.MATCH: s, F.CALL_ID: s, F.MODULE: s, F.AGENT: s, F.ROLE: s, F.DS_FILTERS: List(s),
        F.DS_N_IMAGES: Value("int32"), F.DS_PARSED_JSON: s,
    })


def build_bc_dataset(
    out: str | Path, n_train: int = 12, n_validation: int = 3, n_test: int = 3, seed: int = 0,
    filter_name: str = "bcwin",
) -> Path:
    """Write a BC dataset folder to ``out`` (``save_to_disk`` + ``dataset.json``); returns ``out``."""
    from datasets import Dataset, DatasetDict

    rng = random.Random(seed)
    out = Path(out)
    splits = {}
    for split, n in zip(F.DATASET_SPLITS, (n_train, n_validation, n_test)):
        rows = [make_row(i, rng, f"{split}-m{i // 4}") for i in range(n)]
        splits[split] = Dataset.from_list(rows, features=features())
    DatasetDict(splits).save_to_disk(str(out))
    header = {F.FORMAT: F.DATASET_FORMAT, F.FORMAT_VERSION: F.DATASET_FORMAT_VERSION, "filter": filter_name,
              "counts": {k: len(v) for k, v in splits.items()}}
    (out / F.DATASET_HEADER).write_text(json.dumps(header, indent=2) + "\n")
    (out / F.DATASET_CARD).write_text(f"# A test BC dataset ({filter_name})\n")
    return out
