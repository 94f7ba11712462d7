"""The ideal observer's likelihoods fitted on training matches (``mau beliefs RUN... --fit``), and the
observer's beliefs re-scored from recorded evidence with given parameters (``mau beliefs RUN... --params
FIT``).

Every ideal-observer probe record (``probes.jsonl`` version 2) holds the evidence the observer used, so a fit
needs no replay: each record is (evidence, the other players, k, the true imposters) and ``mau.infer.fit``
maximises the conditional likelihood of the truth. Re-scoring held-out matches with the fitted parameters
gives their detection and calibration without playing them again (docs/detection.md, "The fit").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.errors import MauError
from mau.eval.detection import read_probes
from mau.eval.rescore import as_probe
from mau.infer.fit import Probe, fit, read_params
from mau.infer.model import Detector, Params, weighs, zeroed
from mau.matchdir import finished_matches, read_header
from mau.rundir import atomic_write

FIT_FORMAT, FIT_VERSION = F.FIT_FORMAT, F.FIT_VERSION


def _ideal_records(folder: Path) -> list[dict[str, Any]]:
    recs = [r for r in read_probes(folder)
            if r[F.PROBE_SOURCE] == F.PROBE_SOURCE_IDEAL and r[F.PROBE_BELIEFS] is not None]
    old = [r for r in recs if r.get(F.PROBES_VERSION_FIELD) not in F.PROBES_FIT_VERSIONS]
    if old:
        raise MauError(f"{folder}: probe records of version {old[0].get(F.PROBES_VERSION_FIELD)} hold the "
                       f"old observer's evidence; --fit and --params need version "
                       f"{' or '.join(map(str, F.PROBES_FIT_VERSIONS))} (collect the matches again with this "
                       f"mau)")
    return recs


def training_probes(runs: list[str]) -> tuple[list[Probe], int]:
    """Every ideal-observer probe of the finished matches of ``runs`` (and how many matches)."""
    probes, n = [], 0
    for run in runs:
        for folder in finished_matches(run):
            recs = _ideal_records(folder)
            if recs:
                n += 1
                roles = read_header(folder)[F.ROLES]
                probes += [as_probe(r, roles) for r in recs]
    return probes, n


def fit_runs(
    runs: list[str], out: Path, l2: float = 0.01, without: list[str] | None = None
) -> dict[str, Any]:
    """Fit on ``runs`` and write ``observer_fit.json`` in ``out``; returns what it wrote. ``without``: log
    likelihood ratios held at 0 (those kinds of evidence count for nothing; the others are fitted without
    them)."""
    probes, matches = training_probes(runs)
    if not probes:
        raise MauError(f"{', '.join(runs)}: no ideal-observer probe records to fit on (the observer writes "
                       f"them "
                       "at meetings when aria.probes.observer is on, the default)")
    without = list(without or [])
    start = Params.from_dict({**Params().to_dict(), **dict.fromkeys(without, 0.0)})
    res = fit(probes, start=start, l2=l2, hold=tuple(without))
    doc = {
        F.FORMAT: FIT_FORMAT, F.FORMAT_VERSION: FIT_VERSION, "runs": [str(r) for r in runs],
        "matches": matches, "probes": res["probes"], "l2": l2, "without": without,
        "iterations": res["iterations"], "loglik_per_probe": round(res["loglik_per_probe"], 6),
        "start_loglik_per_probe": round(res["start_loglik_per_probe"], 6), "params": res["params"].to_dict(),
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / F.OBSERVER_FIT, (json.dumps(doc, indent=1) + "\n").encode())
    return doc


def fit_linear_runs(runs: list[str], out: Path, l2: float = 1.0,
                    without: list[str] | None = None) -> dict[str, Any]:
    """Fit the linear detector (``mau.infer.linear``) on the truth of every ideal-observer probe's candidates
    in ``runs`` and write it as ``observer_fit.json`` version 3 in ``out``; returns what it wrote.
    ``without``: features held at 0."""
    import math

    from mau.infer.linear import fit_linear

    probes, matches = training_probes(runs)
    rows = [(pr.items, pr.candidates, pr.truth) for pr in probes]
    try:
        lin = fit_linear(rows, l2, tuple(without or ()))
    except ValueError as e:
        raise MauError(f"{', '.join(runs)}: {e} (no probe with both roles among its candidates)") from None
    ll, n = 0.0, 0
    for items, cands, truth in rows:
        for c, s in lin.scores(items, cands).items():
            z = -s if c in truth else s  # log P(the truth) = -softplus(z), computed stably
            ll -= max(z, 0.0) + math.log1p(math.exp(-abs(z)))
            n += 1
    doc = {F.FORMAT: FIT_FORMAT, F.FORMAT_VERSION: F.FIT_LINEAR_VERSION, "runs": [str(r) for r in runs],
           "matches": matches, "probes": len(probes), "candidates": n, "l2": l2,
           "without": list(without or []),
           "loglik_per_candidate": round(ll / max(1, n), 6), "linear": lin.to_dict()}
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / F.OBSERVER_FIT, (json.dumps(doc, indent=1) + "\n").encode())
    return doc


def read_fit(path: str | Path) -> Detector:
    """The detector of an ``observer_fit.json`` (or a folder holding one): one kind, or a mixture."""
    try:
        return read_params(str(path), "--params")
    except ValueError as e:
        raise MauError(str(e)) from None


def ablation(runs: list[str], params: Detector, drop: list[str], resamples: int = 1000,
             seed: int = 0) -> dict[str, Any]:
    """The ideal observer with ``params`` against the same observer with the ``drop`` kinds counting for
    nothing (their log likelihood ratios 0), re-scored on the same recorded probes: each metric of both, and
    their difference with a paired match-bootstrap interval (pairs: matches)."""
    from mau.eval.detection import IDEAL_ROW, KNOWS_NOTHING_ROW, cell, load_run, paired_diff

    unknown = [d for d in drop if d not in Params.ratios()]
    if unknown:
        raise MauError(f"--ablate {','.join(unknown)}: not a log likelihood ratio of the model "
                       f"({', '.join(Params.ratios())})")
    # kinds the observer weighs at 0 in both arms (a fit --without them): the base the lift is measured on
    absent = [n for n in Params.ratios() if not weighs(params, n) and n not in drop]
    without = zeroed(params, drop)
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
        out.append(f"| {k} | {_fmt(a)} | {_fmt(b)} | {_fmt(d['diff'])} [{_fmt(d['ci_low'])}, "
                   f"{_fmt(d['ci_high'])}] | {_fmt(kn)} |")
    return "\n".join(out)


def _by_imposter(runs: list[str]) -> dict[str, list[Path]]:
    """The finished matches of ``runs`` with ideal-observer records, grouped by imposter model."""
    from mau.eval.detection import match_group

    out: dict[str, list[Path]] = {}
    for run in runs:
        for folder in finished_matches(run):
            if _ideal_records(folder):
                out.setdefault(match_group(read_header(folder))[1], []).append(folder)
    return out


def _probes_of(folders: list[Path]) -> list[Probe]:
    out = []
    for f in folders:
        roles = read_header(f)[F.ROLES]
        out += [as_probe(r, roles) for r in _ideal_records(f)]
    return out


def leave_one_out(runs: list[str], out: Path, l2: float = 0.01, resamples: int = 1000,
                  seed: int = 0) -> dict[str, Any]:
    """For each imposter model of ``runs``: the observer fitted on the matches of every other imposter model
    and scored on that one's (held out), beside the fit on all (in sample), the shipped defaults and k/n;
    each fit is written to ``out/fits/<imposter>/observer_fit.json`` (so a teacher can play with it: the
    scripted model's ``likelihood``). The split never fits on the imposter model it scores (tested)."""
    from mau.eval.detection import IDEAL_ROW, KNOWS_NOTHING_ROW, cell, match_beliefs

    groups = _by_imposter(runs)
    if len(groups) < 2:
        raise MauError(f"{', '.join(runs)}: leave-one-out needs matches of two imposter models or more; "
                       f"found {', '.join(groups) or 'none'}")
    probes = {g: _probes_of(fs) for g, fs in groups.items()}
    everything = [p for ps in probes.values() for p in ps]
    fit_all = fit(everything, start=Params(), l2=l2)["params"]
    metrics = ("auroc_within", "brier_within", "auroc", "ece")
    doc: dict[str, Any] = {
        "runs": [str(r) for r in runs], "l2": l2, "imposters": {}, "fit_all": fit_all.to_dict(),
    }
    for g in sorted(groups):
        train = [p for h, ps in probes.items() if h != g for p in ps]
        held = fit(train, start=Params(), l2=l2)["params"]
        fdir = out / "fits" / g
        fdir.mkdir(parents=True, exist_ok=True)
        atomic_write(fdir / F.OBSERVER_FIT, (json.dumps({
            F.FORMAT: FIT_FORMAT, F.FORMAT_VERSION: FIT_VERSION, "runs": doc["runs"], "held_out": g,
            "fitted_on": sorted(h for h in groups if h != g),
            "matches": sum(len(v) for h, v in groups.items() if h != g),
            "probes": len(train), "l2": l2, "params": held.to_dict()}, indent=1) + "\n").encode())
        rows: dict[str, dict[str, Any]] = {}
        for name, params in (("held out", held), ("in sample", fit_all), ("shipped", Params())):
            ms = [match_beliefs(f, params, baselines=False)[F.PROBE_SOURCE_IDEAL] for f in groups[g]]
            rows[name] = {k: e.to_dict() for k, e in cell(ms, resamples, seed).items() if k in metrics}
        kn = [match_beliefs(f, None, baselines=False)["knows_nothing"] for f in groups[g]]
        rows[KNOWS_NOTHING_ROW] = {
            k: e.to_dict() for k, e in cell(kn, resamples, seed).items() if k in metrics
        }
        doc["imposters"][g] = {"matches": len(groups[g]), "fitted_on": sorted(h for h in groups if h != g),
                               "rows": rows, "row_of": IDEAL_ROW}
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "leave_one_out.json", (json.dumps(doc, indent=1) + "\n").encode())
    atomic_write(out / "leave_one_out.md", (loo_markdown(doc) + "\n").encode())
    return doc


def loo_markdown(doc: dict[str, Any]) -> str:
    from mau.stats import fmt_estimate

    lines = ["# The ideal observer against imposters it was not fitted to (leave one imposter model out)", "",
             "Each row: the matches of one imposter model, scored by the observer fitted on the matches of "
             "all the others (held out), by the fit on every match (in sample), by the shipped defaults, and "
             "the knows-nothing row. AUROC within each probe (chance 0.5) [95% match-level bootstrap "
             "interval] n.", "",
             "| imposter | matches | held out | in sample | shipped | knows nothing | ECE held out |",
             "|---|---|---|---|---|---|---|"]
    for g, d in doc["imposters"].items():
        r = d["rows"]
        cols = ("held out", "in sample", "shipped", "knows nothing (k/n)")
        lines.append(
            f"| {g} | {d['matches']} | "
            + " | ".join(fmt_estimate(r[k]["auroc_within"], False) for k in cols)
            + f" | {fmt_estimate(r['held out']['ece'], False, with_n=False)} |"
        )
    return "\n".join(lines)
