"""The candidate objective of one example (docs/student.md, "Training it"): the vote's cross-entropy and the
belief's KL over the candidates' log-probabilities, shared by the student's trainer and its pointer head's
fit. Heavy imports inside."""

from __future__ import annotations

from typing import Any

from mau.student.examples import CandidateExample


def belief_kl(logprobs: Any, soft: list[float]) -> Any:
    """KL(q || p) of the expert's belief q (over the candidates, skip last) from the student's softmax p,
    given as log-probabilities: sum q (log q - log p), with 0 log 0 = 0. Zero when p equals q."""
    import torch

    q = torch.tensor(soft, dtype=logprobs.dtype, device=logprobs.device)
    return (torch.xlogy(q, q) - q * logprobs).sum()


def example_loss(logprobs: Any, e: CandidateExample, vote_weight: float, belief_weight: float) -> Any:
    """The objective of one example: ``vote_weight`` x the cross-entropy of the expert's choice plus
    ``belief_weight`` x ``belief_kl`` (each term only where the example has its target)."""
    loss = logprobs.new_zeros(())
    if vote_weight and e.target is not None:
        loss = loss - vote_weight * logprobs[e.target]
    if belief_weight and e.soft is not None:
        loss = loss + belief_weight * belief_kl(logprobs, e.soft)
    return loss
