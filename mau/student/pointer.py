"""The pointer read-out of the CPU student (docs/student.md, "A reader at the names"): a candidate's score is
a linear head on the model's last hidden state at that candidate's own name in the prompt's ``Candidates:``
line, instead of the log-probability of its first answer token at the prompt's last position.

Why: the compact prompt ends with ``Candidates: Steve, Michael, ..., skip.``; each name there comes after all
of the evidence, so in a causal model its hidden state can gather what the prompt says about that one player
(attending to its earlier mentions), and one weight vector shared by the players reads it: the shape of the
linear reader of the same prompt (per-candidate features, one shared weight per feature), with the features
learnt from the text instead of parsed. The first-token read-out must instead write the whole ranking into one
position. Skip has its own weight vector and bias (its name says nothing about a player).

The head is fitted first on the frozen model (a conditional logit over the candidates, L2-regularised, on
standardised states: a linear probe), then trained with the upper layers (linear probing then fine-tuning,
Kumar et al., ICLR 2022). It is saved beside the model as ``candidate_head.safetensors``; the ``lm`` backend
reads a model folder with that file through the head. Heavy imports inside."""

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


def fit_head(states: list[Any], examples: list[Any], vote_weight: float, belief_weight: float,
             l2: float) -> PointerHead:
    """The linear probe: a head fitted on fixed name states (one (C, H) tensor per example) by L-BFGS on the
    mean objective (the vote's cross-entropy and the belief's KL, as the student's) plus ``l2`` x the squared
    weights (standardised states)."""
    import torch

    from mau.student.train import example_loss

    flat = torch.cat([s.float() for s in states])
    head = PointerHead(flat.mean(0), flat.std(0) + 1e-4)
    opt = torch.optim.LBFGS(head.parameters(), max_iter=200, line_search_fn="strong_wolfe")

    def closure() -> Any:
        opt.zero_grad()
        loss = sum(example_loss(torch.log_softmax(head.scores(s, e.candidates), -1), e, vote_weight,
                                belief_weight) for s, e in zip(states, examples)) / len(examples)
        loss = loss + l2 * head.l2()
        loss.backward()
        return loss

    opt.step(closure)
    return head


def fit_pointer_head(split: Any, cache: Any, examples: list[Any], training: Any) -> PointerHead:
    """The linear probe of ``split``'s current (frozen) upper layers on ``examples`` (cached features), under
    the objective of ``training`` (vote_weight, belief_weight, head_l2)."""
    import torch

    from mau.errors import MauError

    missing = [e.key for e in examples if e.positions is None]
    if missing:
        raise MauError(f"call {missing[0]}: its prompt has no Candidates line naming every candidate; the "
                       "pointer read-out (training.readout: pointer) needs compact VOTE prompts")
    with torch.no_grad():
        states = [split.upper_states(cache.get(e), e.positions) for e in examples]
    return fit_head(states, examples, training.vote_weight, training.belief_weight, training.head_l2)
