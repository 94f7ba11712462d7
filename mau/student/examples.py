"""Candidate examples: a compact VOTE prompt as token ids, the first token of each candidate's answer, and the
expert's choice; read from a ``mau dataset`` folder (BC) or from recorded calls (GRPO). The prompt is rendered
exactly as the ``lm`` backend renders it at play time."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from mau import schema as F
from mau.errors import MauError
from mau.harness.backends.hf import chat_text
from mau.harness.backends.lm import TextProcessor, first_tokens
from mau.harness.candidate_head import candidate_positions, name_mentions
from mau.harness.modules import VOTE_PREFIX
from mau.harness.prompting import compact_candidates
from mau.replay.decisions import to_prompt


@dataclass
class CandidateExample:
    key: str  # the call id
    ids: list[int]  # chat-templated prompt + the VOTE answer's opening
    candidates: list[str]
    tokens: list[int]  # first answer token of each candidate (distinct)
    target: int | None  # index of the expert's choice (None: not among the candidates)
    meta: dict[str, Any] = field(default_factory=dict)
    # the expert's belief over the candidates (same order, skip last; sums to 1), where it recorded one
    soft: list[float] | None = None
    # token index of each candidate's name in the prompt's Candidates line (the pointer read-out), or None
    positions: list[int] | None = None
    # token indices of every earlier mention of each candidate's name (skip: none), for a names+mentions head
    mentions: list[list[int]] | None = None


def render(tokenizer: Any, messages: list[dict[str, Any]]) -> str:
    """The prompt text the ``lm`` backend generates from (``hf``'s ``_prepare`` through ``TextProcessor``)."""
    return chat_text(TextProcessor(tokenizer), messages)


def make_example(tokenizer: Any, key: str, messages: list[dict[str, Any]], choice: str | None,
                 meta: dict[str, Any] | None = None,
                 belief: dict[str, float] | None = None) -> CandidateExample:
    """One example from prompt messages (system, user; no answer), the expert's vote target and its belief
    over the candidates (``mau.datasets.beliefs``; kept only when it names exactly the prompt's
    candidates)."""
    user = next((m for m in messages if m["role"] == "user"), None)
    text = user["content"] if user and isinstance(user["content"], str) else \
        "\n".join(str(p.get("text") or "") for p in (user or {}).get("content", []))
    cands = compact_candidates(text)
    if not cands:
        raise MauError(f"call {key}: its prompt names no candidates; the candidate objective needs VOTE "
                       f"prompts in "
                       "the compact profile (collect with aria.prompt_profile: {vote: compact})")
    context = render(tokenizer, messages) + VOTE_PREFIX
    ids, toks = first_tokens(tokenizer, context, [f'{c}"' for c in cands])
    if toks is None:
        raise MauError(f"call {key}: two candidates of {cands} open with the same token; the candidate "
                       f"objective "
                       "needs distinct first tokens")
    target = cands.index(choice) if choice in cands else None
    return CandidateExample(key, ids, cands, toks, target, {**(meta or {}), "text": text},
                            soft_target(belief, cands), candidate_positions(tokenizer, context, cands),
                            name_mentions(tokenizer, context, cands))


def soft_target(belief: dict[str, float] | None, candidates: list[str]) -> list[float] | None:
    """The belief as a list over ``candidates`` (renormalised to 1), or None when it does not name exactly
    those candidates with finite non-negative numbers."""
    if not belief or set(belief) != set(candidates):
        return None
    vals = [belief[c] for c in candidates]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in vals) or sum(vals) <= 0:
        return None
    total = sum(vals)
    return [v / total for v in vals]


def from_dataset_rows(tokenizer: Any, rows: Any) -> list[CandidateExample]:
    """The VOTE rows of a ``mau dataset`` split (other modules' rows, which BCwin keeps, are skipped): the
    prompt is every message but the last (the expert's answer)."""
    out = []
    for row in rows:
        if row.get(F.MODULE, "vote") != "vote":
            continue  # BCwin keeps every module's calls; the student learns the VOTE
        parsed = json.loads(row[F.DS_PARSED_JSON] or "null") or {}
        msgs = to_prompt(row[F.DS_MESSAGES])
        if msgs and msgs[-1]["role"] == "assistant":
            msgs = msgs[:-1]
        belief = json.loads(row.get(F.DS_BELIEFS_JSON) or "null")
        meta = {F.MATCH: row[F.MATCH]} if F.MATCH in row else {}
        out.append(make_example(tokenizer, str(row[F.CALL_ID]), msgs, parsed.get("vote_target"), meta,
                                belief if isinstance(belief, dict) else None))
    return out


def prompt_lengths(dataset: str, model: str) -> dict[str, float]:
    """Token counts of every example's prompt (chat template and the answer's opening included) of a ``mau
    dataset`` folder of compact VOTE calls, with ``model``'s tokenizer: n, median, 90th percentile, max."""
    import statistics

    from datasets import load_from_disk
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    dd = load_from_disk(dataset)
    n = sorted(len(e.ids) for split in dd for e in from_dataset_rows(tok, dd[split]))
    return {"n": len(n), "median": statistics.median(n), "p90": n[int(0.9 * len(n))], "max": n[-1]}


if __name__ == "__main__":  # python -m mau.student.examples DATASET MODEL: the prompt lengths, as JSON
    import sys

    print(json.dumps(prompt_lengths(sys.argv[1], sys.argv[2])))
