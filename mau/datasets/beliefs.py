"""The teacher's belief column of a BC row (docs/datasets.md, "Beliefs"): what the expert believed at a VOTE,
as a distribution over the vote's candidates and skip, so that a student can learn beliefs and not only the
argmax.

A VOTE answer may carry ``beliefs``: the expert's P(imposter) of each living other (the scripted teacher's
exact posterior; an LLM expert's own numbers where it gave a complete set, ``mau.harness.modules``). These are
marginals (they sum to the living imposters, not to 1), so the row's distribution is made by one documented
rule: skip gets the chance that the top suspect is a crewmate, ``s = 1 - max_c P(c)``, and each candidate its
share of the rest in proportion to its P(imposter), ``(1 - s) P(c) / sum P``. The ranking of the candidates is
the expert's, and a sure expert puts almost nothing on skip.
"""

from __future__ import annotations

import json
from typing import Any

from mau import schema as F
from mau.schema import SKIP


def distribution(p_imposter: dict[str, float]) -> dict[str, float]:
    """The belief over candidates and skip (sums to 1) of an expert's P(imposter) per candidate."""
    if not p_imposter:
        return {SKIP: 1.0}
    top = max(p_imposter.values())
    skip = min(1.0, max(0.0, 1.0 - top))
    total = sum(p_imposter.values())
    out = {c: (1.0 - skip) * p / total if total > 0 else 0.0 for c, p in p_imposter.items()}
    out[SKIP] = skip if total > 0 else 1.0
    norm = sum(out.values())
    return {c: round(v / norm, 6) for c, v in out.items()}


def row_beliefs(call: dict[str, Any]) -> str | None:
    """The ``beliefs_json`` value of a call's row: the distribution of its VOTE answer's beliefs as JSON, or
    None where the expert recorded none (another module, or an answer without a usable set)."""
    parsed = call.get(F.PARSED)
    if call.get(F.MODULE) != "vote" or not isinstance(parsed, dict):
        return None
    bel = parsed.get(F.VOTE_BELIEFS)
    if not isinstance(bel, dict) or not bel:
        return None
    return json.dumps(distribution({str(k): float(v) for k, v in bel.items()}))

