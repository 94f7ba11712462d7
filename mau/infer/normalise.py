"""A posterior from unnormalised log weights: the one normalisation every detector's exact posterior ends with
(``mau.infer.model``: a kind, a mixture, a pool; ``mau.infer.linear``)."""

from __future__ import annotations

import math


def normalised(logw: list[float]) -> tuple[list[float], bool]:
    """(weights proportional to exp(``logw``) that sum to 1, True); (uniform, False) when every hypothesis is
    ruled out (all -inf): the evidence contradicts itself, and the reader falls back to knowing nothing."""
    top = max(logw)
    if top == -math.inf:
        return [1.0 / len(logw)] * len(logw), False
    w = [math.exp(x - top) for x in logw]
    total = sum(w)
    return [x / total for x in w], True
