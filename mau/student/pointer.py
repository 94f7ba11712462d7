"""The pointer read-out of the CPU student (docs/student.md, "A reader at the names"): a candidate's score is
a linear head on the model's last hidden state at that candidate's own name in the prompt's ``Candidates:``
line, instead of the log-probability of its first answer token at the prompt's last position.

Why: the compact prompt ends with ``Candidates: Steve, Michael, ..., skip.``; each name there comes after all
of the evidence, so in a causal model its hidden state can gather what the prompt says about that one player
(attending to its earlier mentions), and one weight vector shared by the players reads it: the shape of the
linear reader of the same prompt (per-candidate features, one shared weight per feature), with the features
learnt from the text instead of parsed. The first-token read-out must instead write the whole ranking into one
position. Skip has its own weight vector and bias (its name says nothing about a player).

With ``training.head_reads: names+mentions`` each candidate's input also holds the mean of its states at every
earlier mention of its name (the evidence, the meeting's speech): what the prompt says about that player, read
where it is said, instead of relying on the upper layers to carry it to the Candidates line.

The head is fitted first on the frozen model (a conditional logit over the candidates, L2-regularised, on
standardised states: a linear probe), then trained with the upper layers (linear probing then fine-tuning,
Kumar et al., ICLR 2022). The head itself and the positions of the names are the ``lm`` backend's
(``mau.harness.candidate_head``): it plays a model folder with ``candidate_head.safetensors`` through
it. Heavy imports inside."""

from __future__ import annotations

from typing import Any

from mau.harness.candidate_head import NAMES, PointerHead, head_inputs


def fit_head(states: list[Any], examples: list[Any], vote_weight: float, belief_weight: float,
             l2: float, reads: str = NAMES) -> PointerHead:
    """The linear probe: a head fitted on fixed inputs (one (C, D) tensor per example, ``head_inputs`` under
    ``reads``) by L-BFGS on the mean objective (the vote's cross-entropy and the belief's KL, as the
    student's) plus ``l2`` x the squared weights (standardised inputs)."""
    import torch

    from mau.student.objective import example_loss

    flat = torch.cat([s.float() for s in states])
    head = PointerHead(flat.mean(0), flat.std(0) + 1e-4, reads=reads)
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
        states = [head_inputs(split.upper_hidden(cache.get(e)), e.positions, e.mentions, training.head_reads)
                  for e in examples]
    return fit_head(states, examples, training.vote_weight, training.belief_weight, training.head_l2,
                    training.head_reads)
