"""The ideal observer's likelihoods fitted on training matches (``mau beliefs RUN... --fit``), and the observer's
beliefs re-scored from recorded evidence with given parameters (``mau beliefs RUN... --params FIT``).

Every ideal-observer probe record (``probes.jsonl`` version 2) holds the evidence the observer used, so a fit
needs no replay: each record is (evidence, the other players, k, the true imposters) and ``mau.infer.fit``
maximises the conditional likelihood of the truth. Re-scoring held-out matches with the fitted parameters gives
their detection and calibration without playing them again (docs/detection.md, "The fit").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.errors import MauError
from mau.eval.detection import read_probes
from mau.infer.fit import Probe, fit, predict
from mau.infer.model import Params
from mau.matchdir import finished_matches, read_header
from mau.rundir import atomic_write

FIT_FORMAT, FIT_VERSION = "mau.observer_fit", 1


def _ideal_records(folder: Path) -> list[dict[str, Any]]:
    recs = [r for r in read_probes(folder) if r[F.PROBE_SOURCE] == "ideal" and r[F.PROBE_BELIEFS] is not None]
    old = [r for r in recs if r.get(F.PROBES_VERSION_FIELD) not in F.PROBES_FIT_VERSIONS]
    if old:
        raise MauError(f"{folder}: probe records of version {old[0].get(F.PROBES_VERSION_FIELD)} hold the old "
                       f"observer's evidence; --fit and --params need version "
                       f"{' or '.join(map(str, F.PROBES_FIT_VERSIONS))} (collect the matches again with this mau)")
    return recs


def _probe(r: dict[str, Any], roles: dict[str, str]) -> Probe:
    others = [n for n in roles if n != r[F.AGENT]]
    truth = frozenset(n for n in others if roles[n] == "imposter")
    return Probe(r["evidence"], others, len(truth), truth, list(r[F.PROBE_BELIEFS]))


def training_probes(runs: list[str]) -> tuple[list[Probe], int]:
    """Every ideal-observer probe of the finished matches of ``runs`` (and how many matches)."""
    probes, n = [], 0
    for run in runs:
        for folder in finished_matches(run):
            recs = _ideal_records(folder)
            if recs:
                n += 1
                roles = read_header(folder)[F.ROLES]
                probes += [_probe(r, roles) for r in recs]
    return probes, n


def fit_runs(runs: list[str], out: Path, l2: float = 0.01, without: list[str] | None = None) -> dict[str, Any]:
    """Fit on ``runs`` and write ``observer_fit.json`` in ``out``; returns what it wrote. ``without``: log
    likelihood ratios held at 0 (those kinds of evidence count for nothing; the others are fitted without them)."""
    probes, matches = training_probes(runs)
    if not probes:
        raise MauError(f"{', '.join(runs)}: no ideal-observer probe records to fit on (the observer writes them "
                       "at meetings when aria.probes.observer is on, the default)")
    without = list(without or [])
    start = Params.from_dict({**Params().to_dict(), **dict.fromkeys(without, 0.0)})
    res = fit(probes, start=start, l2=l2, hold=tuple(without))
    doc = {F.FORMAT: FIT_FORMAT, F.FORMAT_VERSION: FIT_VERSION, "runs": [str(r) for r in runs],
           "matches": matches, "probes": res["probes"], "l2": l2, "without": without, "iterations": res["iterations"],
           "loglik_per_probe": round(res["loglik_per_probe"], 6),
           "start_loglik_per_probe": round(res["start_loglik_per_probe"], 6), "params": res["params"].to_dict()}
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / F.OBSERVER_FIT, (json.dumps(doc, indent=1) + "\n").encode())
    return doc


def read_fit(path: str | Path) -> Params:
    """The parameters of an ``observer_fit.json`` (or a folder holding one)."""
    p = Path(path)
    p = p / F.OBSERVER_FIT if p.is_dir() else p
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise MauError(f"--params {path}: cannot read an observer fit ({e}); give the observer_fit.json that "
                       "mau beliefs --fit wrote") from None
    if doc.get(F.FORMAT) != FIT_FORMAT or doc.get(F.FORMAT_VERSION) != FIT_VERSION:
        raise MauError(f"--params {path}: not a {FIT_FORMAT} version {FIT_VERSION} file")
    return Params.from_dict(doc["params"])


def rescore(recs: list[dict[str, Any]], roles: dict[str, str], params: Params) -> list[dict[str, Any]]:
    """The ideal-observer records of one match with their beliefs recomputed from their evidence."""
    ideal = [r for r in recs if r[F.PROBE_SOURCE] == "ideal" and r[F.PROBE_BELIEFS] is not None]
    if not ideal:
        return recs
    new = iter(predict([_probe(r, roles) for r in ideal], params))
    ids = {id(r) for r in ideal}
    out = []
    for r in recs:
        if id(r) in ids:
            bel = {n: round(v, 6) for n, v in next(new).items()}
            top = sorted(bel, key=lambda n: (-bel[n], n))[:2]
            r = {**r, F.PROBE_BELIEFS: bel, F.PROBE_TOP2: top, "top2_source": "derived"}
        out.append(r)
    return out


def ablation(runs: list[str], params: Params, drop: list[str], resamples: int = 1000,
             seed: int = 0) -> dict[str, Any]:
    """The ideal observer with ``params`` against the same observer with the ``drop`` kinds counting for nothing
    (their log likelihood ratios 0), re-scored on the same recorded probes: each metric of both, and their
    difference with a paired match-bootstrap interval (pairs: matches)."""
    from mau.eval.detection import IDEAL_ROW, KNOWS_NOTHING_ROW, cell, load_run, paired_diff

    unknown = [d for d in drop if d not in Params.ratios()]
    if unknown:
        raise MauError(f"--ablate {','.join(unknown)}: not a log likelihood ratio of the model "
                       f"({', '.join(Params.ratios())})")
    # kinds the observer weighs at 0 in both arms (a fit --without them): the base the lift is measured on
    absent = [n for n in Params.ratios() if getattr(params, n) == 0.0 and n not in drop]
    without = Params.from_dict({**params.to_dict(), **dict.fromkeys(drop, 0.0)})
    both = [m for r in runs for m in load_run(r, params)]
    full = {m.match_id: m for m in both if m.row == IDEAL_ROW}
    nothing = [m for m in both if m.row == KNOWS_NOTHING_ROW]  # the chance level, at the same probes
    less = {m.match_id: m for r in runs for m in load_run(r, without) if m.row == IDEAL_ROW}
    metrics = ("auroc_within", "auroc", "brier_within", "brier", "ece", "top2_hit_rate")
    rows = {name: {k: e.to_dict() for k, e in cell(list(ms), resamples, seed).items() if k in metrics}
            for name, ms in (("with", full.values()), ("without", less.values()), ("knows_nothing", nothing))}
    diffs = [paired_diff(full, less, k, resamples, seed) for k in metrics]
    return {"drop": drop, "absent_in_both": absent, "matches": len(full), "params": params.to_dict(),
            "rows": rows, "paired": diffs}


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def ablation_markdown(doc: dict[str, Any]) -> str:
    """The ablation as a small table: each metric with and without, and the paired difference."""
    out = [f"Ideal observer with and without {', '.join(doc['drop'])} ({doc['matches']} matches; paired "
           "match bootstrap; the knows-nothing (k/n) row at the same probes is the chance level)", "",
           "| metric | with | without | with - without [95 %] | knows nothing |", "|---|---|---|---|---|"]
    if doc.get("absent_in_both"):
        both = ", ".join(doc["absent_in_both"])
        out[1:1] = ["", f"Counting for nothing in both (weighed 0 by these parameters): {both}"]
    for d in doc["paired"]:
        k = d["metric"]
        a, b = doc["rows"]["with"][k]["value"], doc["rows"]["without"][k]["value"]
        kn = doc["rows"]["knows_nothing"][k]["value"]
        out.append(f"| {k} | {_fmt(a)} | {_fmt(b)} | {_fmt(d['diff'])} [{_fmt(d['ci_low'])}, {_fmt(d['ci_high'])}] "
                   f"| {_fmt(kn)} |")
    return "\n".join(out)
