"""The candidate head of a pointer student (docs/student.md, "The read-out"): a VOTE candidate's score is a
linear head on the model's final hidden state at that candidate's own name in the prompt's ``Candidates:``
line. The ``lm`` backend plays a model folder that holds one (``candidate_head.safetensors``) through it;
``mau.student`` fits and trains it (``mau.student.pointer``). Heavy imports inside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

HEAD_FILE = "candidate_head.safetensors"
CANDIDATES_LINE = "Candidates:"
SKIP = "skip"


def candidate_positions(tokenizer: Any, context: str, candidates: list[str]) -> list[int] | None:
    """The index in ``tokenizer(context)``'s ids of the token holding the last character of each candidate's
    name in the last ``Candidates:`` line of ``context`` (names searched in order), or None where the line or
    a name is missing."""
    at = context.rfind(CANDIDATES_LINE)
    if at < 0:
        return None
    try:
        spans = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    except (NotImplementedError, ValueError):  # a slow tokenizer has no offsets: no pointer read-out
        return None
    out, cursor = [], at + len(CANDIDATES_LINE)
    for c in candidates:
        j = context.find(c, cursor)
        if j < 0:
            return None
        last = j + len(c) - 1
        k = next((i for i, (s, e) in enumerate(spans) if s <= last < e), None)
        if k is None:
            return None
        out.append(k)
        cursor = j + len(c)
    return out


class PointerHead:
    """Scores of the candidates from their name positions' states (C, H): standardised by the fitted mean
    and scale, then a shared weight vector (players) or the skip weight vector and bias (skip)."""

    def __init__(self, mean: Any, scale: Any, weight: Any = None, skip_weight: Any = None,
                 skip_bias: Any = None):
        import torch

        self.mean, self.scale = mean.detach().float(), scale.detach().float()
        h = self.mean.shape[0]
        self.weight = (torch.zeros(h) if weight is None else weight.detach().float().clone()).requires_grad_()
        self.skip_weight = (torch.zeros(h) if skip_weight is None else
                            skip_weight.detach().float().clone()).requires_grad_()
        self.skip_bias = (torch.zeros(1) if skip_bias is None else
                          skip_bias.detach().float().clone()).requires_grad_()

    def parameters(self) -> list[Any]:
        return [self.weight, self.skip_weight, self.skip_bias]

    def scores(self, states: Any, candidates: list[str]) -> Any:
        import torch

        z = (states.float() - self.mean) / self.scale
        is_skip = torch.tensor([c == SKIP for c in candidates], device=z.device)
        return torch.where(is_skip, z @ self.skip_weight + self.skip_bias, z @ self.weight)

    def l2(self) -> Any:
        return self.weight.pow(2).sum() + self.skip_weight.pow(2).sum()

    def save(self, folder: Path) -> None:
        from safetensors.torch import save_file

        save_file({"mean": self.mean, "scale": self.scale, "weight": self.weight.detach(),
                   "skip_weight": self.skip_weight.detach(), "skip_bias": self.skip_bias.detach()},
                  str(Path(folder) / HEAD_FILE))

    @classmethod
    def load(cls, folder: str | Path) -> "PointerHead | None":
        """The head saved in a model folder, or None where it has none (a first-token student)."""
        from safetensors.torch import load_file

        f = Path(folder) / HEAD_FILE
        if not f.is_file():
            return None
        t = load_file(str(f))
        return cls(t["mean"], t["scale"], t["weight"], t["skip_weight"], t["skip_bias"])
