"""The candidate head of a pointer student (docs/student.md, "The read-out"): a VOTE candidate's score is a
linear head on the model's final hidden state at that candidate's own name in the prompt's ``Candidates:``
line (``reads: names``), beside the mean of its states at every earlier mention of that name (``reads:
names+mentions``). The ``lm`` backend plays a model folder that holds one (``candidate_head.safetensors``)
through it; ``mau.student`` fits and trains it (``mau.student.pointer``). Heavy imports inside."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mau import schema as F

HEAD_FILE = "candidate_head.safetensors"
CANDIDATES_LINE = "Candidates:"
NAMES, NAMES_AND_MENTIONS = "names", "names+mentions"
READS = (NAMES, NAMES_AND_MENTIONS)


def _spans(tokenizer: Any, context: str) -> list[tuple[int, int]] | None:
    try:
        return tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    except (NotImplementedError, ValueError):  # a slow tokenizer has no offsets: no pointer read-out
        return None


def _token_at(spans: list[tuple[int, int]], char: int) -> int | None:
    return next((i for i, (s, e) in enumerate(spans) if s <= char < e), None)


def candidate_positions(tokenizer: Any, context: str, candidates: list[str]) -> list[int] | None:
    """The index in ``tokenizer(context)``'s ids of the token holding the last character of each candidate's
    name in the last ``Candidates:`` line of ``context`` (names searched in order), or None where the line or
    a name is missing."""
    at = context.rfind(CANDIDATES_LINE)
    spans = _spans(tokenizer, context) if at >= 0 else None
    if spans is None:
        return None
    out, cursor = [], at + len(CANDIDATES_LINE)
    for c in candidates:
        j = context.find(c, cursor)
        if j < 0:
            return None
        k = _token_at(spans, j + len(c) - 1)
        if k is None:
            return None
        out.append(k)
        cursor = j + len(c)
    return out


def name_mentions(tokenizer: Any, context: str, candidates: list[str]) -> list[list[int]] | None:
    """For each candidate, the token indices (as ``candidate_positions``: the token of the name's last
    character) of every whole-word mention of its name before the last ``Candidates:`` line: in the evidence,
    the meeting's speech and its speakers. Skip has none; None where the line is missing."""
    at = context.rfind(CANDIDATES_LINE)
    spans = _spans(tokenizer, context) if at >= 0 else None
    if spans is None:
        return None
    out = []
    for c in candidates:
        if c == F.SKIP:
            out.append([])
            continue
        found = (_token_at(spans, m.end() - 1) for m in
                 re.finditer(rf"(?<![A-Za-z]){re.escape(c)}(?![A-Za-z])", context[:at]))
        out.append([k for k in found if k is not None])
    return out


def head_inputs(hidden: Any, positions: list[int], mentions: list[list[int]] | None, reads: str) -> Any:
    """The head's input per candidate from the final hidden states ``hidden`` (T, H): the state at its name in
    the Candidates line (C, H); with ``names+mentions`` beside it the mean of its mentions' states (zeros
    where it has none: skip, or a player nobody named), (C, 2H)."""
    import torch

    at_names = hidden[positions]
    if reads == NAMES:
        return at_names
    if mentions is None:
        raise ValueError("a names+mentions head needs the mentions of every candidate (name_mentions)")
    pooled = [hidden[m].mean(0) if m else hidden.new_zeros(hidden.shape[1]) for m in mentions]
    return torch.cat([at_names, torch.stack(pooled)], dim=1)


class PointerHead:
    """Scores of the candidates from their inputs (C, D; ``head_inputs`` under ``reads``): standardised by
    the fitted mean and scale, then a shared weight vector (players) or the skip weight vector and bias
    (skip)."""

    def __init__(self, mean: Any, scale: Any, weight: Any = None, skip_weight: Any = None,
                 skip_bias: Any = None, reads: str = NAMES):
        import torch

        if reads not in READS:
            raise ValueError(f"reads: {reads!r} is not one of {', '.join(READS)}")
        self.reads = reads
        self.mean, self.scale = mean.detach().float(), scale.detach().float()
        h = self.mean.shape[0]
        self.weight = (torch.zeros(h) if weight is None else weight.detach().float().clone()).requires_grad_()
        self.skip_weight = (torch.zeros(h) if skip_weight is None else
                            skip_weight.detach().float().clone()).requires_grad_()
        self.skip_bias = (torch.zeros(1) if skip_bias is None else
                          skip_bias.detach().float().clone()).requires_grad_()

    def inputs(self, hidden: Any, positions: list[int], mentions: list[list[int]] | None) -> Any:
        return head_inputs(hidden, positions, mentions, self.reads)

    def parameters(self) -> list[Any]:
        return [self.weight, self.skip_weight, self.skip_bias]

    def scores(self, states: Any, candidates: list[str]) -> Any:
        import torch

        z = (states.float() - self.mean) / self.scale
        is_skip = torch.tensor([c == F.SKIP for c in candidates], device=z.device)
        return torch.where(is_skip, z @ self.skip_weight + self.skip_bias, z @ self.weight)

    def l2(self) -> Any:
        return self.weight.pow(2).sum() + self.skip_weight.pow(2).sum()

    def save(self, folder: Path) -> None:
        from safetensors.torch import save_file

        save_file({"mean": self.mean, "scale": self.scale, "weight": self.weight.detach(),
                   "skip_weight": self.skip_weight.detach(), "skip_bias": self.skip_bias.detach()},
                  str(Path(folder) / HEAD_FILE), metadata={"reads": self.reads})

    @classmethod
    def load(cls, folder: str | Path) -> "PointerHead | None":
        """The head saved in a model folder, or None where it has none (a first-token student)."""
        from safetensors import safe_open

        f = Path(folder) / HEAD_FILE
        if not f.is_file():
            return None
        with safe_open(str(f), framework="pt") as h:
            t = {k: h.get_tensor(k) for k in h.keys()}
            # a head saved before mentions existed has no metadata: it read the names alone
            reads = (h.metadata() or {}).get("reads", NAMES)
        return cls(t["mean"], t["scale"], t["weight"], t["skip_weight"], t["skip_bias"], reads)
