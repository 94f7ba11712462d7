"""The VOTE rows of a BC dataset read back as plain rows (prompt text, candidates, the expert's vote and
belief), for readers that are not trained through ``datasets`` batches: the linear reader of the compact
prompt (``mau.infer.compact_reader``), the peer of a student trained on the same rows."""

from __future__ import annotations

import json
from typing import Any

from mau import schema as F
from mau.infer.compact_reader import compact_candidates


def dataset_rows(path: str, max_rows: int | None = None) -> list[dict[str, Any]]:
    """The linear reader's rows (``mau.infer.compact_reader``) of a BC dataset's training split (``mau
    dataset``, compact VOTE prompts): text, candidates, the expert's vote and belief. Needs ``datasets``."""
    from datasets import load_from_disk

    from mau.datasets.build import read_dataset_header

    read_dataset_header(path)
    ds = load_from_disk(str(path))["train"]
    rows = []
    for r in ds.select_columns([F.DS_MESSAGES, F.DS_PARSED_JSON, F.DS_BELIEFS_JSON]):
        user = next((m for m in r[F.DS_MESSAGES] if m[F.ROLE] == "user"), None)
        text = "\n".join(str(p.get(F.DS_CONTENT_TEXT) or "") for p in (user or {}).get(F.DS_CONTENT) or [])
        cands = compact_candidates(text)
        if not cands:
            continue
        parsed = json.loads(r[F.DS_PARSED_JSON] or "null") or {}
        belief = json.loads(r[F.DS_BELIEFS_JSON] or "null")
        rows.append({"text": text, "candidates": cands, "vote": parsed.get(F.VOTE_TARGET),
                     "belief": belief if isinstance(belief, dict) else None})
        if max_rows and len(rows) >= max_rows:
            break
    return rows
