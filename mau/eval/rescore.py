"""The ideal observer's beliefs of one match re-scored from the evidence its probe records hold, with given
likelihoods (``mau beliefs --params``, the fits of ``mau.eval.observer_fit``). Its own module so that the
detection metrics (``mau.eval.detection``) and the fits both use it without importing each other."""

from __future__ import annotations

from typing import Any

from mau import schema as F
from mau.infer.fit import Probe, predict
from mau.infer.model import Detector


def as_probe(r: dict[str, Any], roles: dict[str, str]) -> Probe:
    """An ideal-observer probe record as the fit reads it: (evidence, the others, k, the true imposters)."""
    others = [n for n in roles if n != r[F.AGENT]]
    truth = frozenset(n for n in others if roles[n] == F.IMPOSTER)
    return Probe(r["evidence"], others, len(truth), truth, list(r[F.PROBE_BELIEFS]))


def rescore(recs: list[dict[str, Any]], roles: dict[str, str], params: Detector) -> list[dict[str, Any]]:
    """The ideal-observer records of one match with their beliefs recomputed from their evidence."""
    ideal = [r for r in recs if r[F.PROBE_SOURCE] == F.PROBE_SOURCE_IDEAL and r[F.PROBE_BELIEFS] is not None]
    if not ideal:
        return recs
    new = iter(predict([as_probe(r, roles) for r in ideal], params))
    ids = {id(r) for r in ideal}
    out = []
    for r in recs:
        if id(r) in ids:
            bel = {n: round(v, 6) for n, v in next(new).items()}
            top = sorted(bel, key=lambda n: (-bel[n], n))[:2]
            r = {**r, F.PROBE_BELIEFS: bel, F.PROBE_TOP2: top, "top2_source": "derived"}
        out.append(r)
    return out
