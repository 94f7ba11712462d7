"""The eval report, from the run folder's match folders: results.json, results.csv (long format), results.md
(the paper's Appendix U shape: rows = arms, columns = imposter models) and results.png (Pillow only)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.eval.config import POOLED, EvalConfig
from mau.eval.metrics import METHODS, METRICS, PERCENT, arm_health, evaluate, load_matches
from mau.rundir import atomic_write
from mau.schema import OUTCOMES
from mau.stats import fmt_estimate

RESULTS_FORMAT = "mau.eval.results"
RESULTS_VERSION = 1
CSV_COLUMNS = ["arm", "imposter", "metric", "value", "ci_low", "ci_high", "n", "method"]


def failure_reason(h: dict[str, Any]) -> str:
    """Why an arm failed, from its ``arm_health`` entry."""
    if h["answered"] == 0:
        return "its model never answered"
    return f"every one of its {h['calls']} own calls fell back"


def compute(cfg: EvalConfig, out: Path, planned: int) -> dict[str, Any]:
    """Every number of the report, as one JSON-able dict."""
    ms = load_matches(out)
    res = evaluate(ms, list(cfg.arms), list(cfg.imposters), cfg.baseline_arm, cfg.bootstrap_resamples,
                   cfg.bootstrap_seed)
    models = {"arms": {k: _describe(v) for k, v in cfg.arms.items()},
              "imposters": {k: _describe(v) for k, v in cfg.imposters.items()}}
    health = arm_health(ms, cfg.max_fallback_share)
    from mau.beliefs import metrics as B

    detection = B.evaluate(B.load_run(out), cfg.baseline_arm, cfg.bootstrap_resamples, cfg.bootstrap_seed,
                           pooled=POOLED, rows=list(cfg.arms), imposters=list(cfg.imposters))
    cost = B.probe_cost([p for p in sorted((out / F.MATCHES_DIR).glob("*")) if (p / F.MATCH_HEADER).is_file()])
    return {F.FORMAT: RESULTS_FORMAT, F.FORMAT_VERSION: RESULTS_VERSION, "planned": planned,
            "seeds": cfg.seed_list(), "models": models, "max_fallback_share": cfg.max_fallback_share,
            "arm_health": health, **res, "detection": detection, "probe_cost": cost}


def _describe(model) -> str:
    """One line naming a model: backend, model and adapter."""
    return f"{model.backend}: {model.model}" + (f" + adapter {model.adapter}" if model.adapter else "")


def write_report(cfg: EvalConfig, out: Path, planned: int) -> dict[str, Any]:
    """Compute and write results.json, results.csv, results.md and results.png; return the results (with the
    markdown under "markdown")."""
    res = compute(cfg, out, planned)
    md = markdown(res)
    atomic_write(out / F.RESULTS_JSON, json.dumps(res, indent=1).encode())
    atomic_write(out / F.RESULTS_CSV, rows_csv(res).encode())
    atomic_write(out / F.RESULTS_MD, md.encode())
    buf = io.BytesIO()
    plot(res).save(buf, format="PNG")
    atomic_write(out / F.RESULTS_PNG, buf.getvalue())
    return {**res, "markdown": md}


# -- CSV ----------------------------------------------------------------------------------------------------
def rows_csv(res: dict[str, Any]) -> str:
    """Long format: one row per (arm, imposter, metric); rates as fractions; endings as counts; the paired
    comparisons as ``paired_diff_crew_win_rate`` (n = pairs) and ``paired_p_mcnemar``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in res["cells"]:
        for name, e in c["metrics"].items():
            w.writerow([c["arm"], c["imposter"], name, *_nums(e["value"], e["ci_low"], e["ci_high"]), e["n"],
                        e["method"]])
        for outcome, k in c["endings"].items():
            w.writerow([c["arm"], c["imposter"], f"ending:{outcome}", k, "", "", c["matches"], "count"])
    from mau.beliefs.report import csv_rows

    for row in csv_rows(res["detection"]) if res.get("detection") else []:
        w.writerow([*row[:3], *_nums(*row[3:6]), row[6], row[7]])
    for p in res["paired"]:
        w.writerow([p["arm"], p["imposter"], "paired_diff_crew_win_rate", *_nums(p["diff"], p["ci_low"], p["ci_high"]),
                    p["n_pairs"], "paired_bootstrap"])
        w.writerow([p["arm"], p["imposter"], "paired_p_mcnemar", _num(p["p_mcnemar"]), "", "", p["n_pairs"],
                    "exact_mcnemar"])
    return buf.getvalue()


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


def _nums(*xs: float | None) -> list[str]:
    return [_num(x) for x in xs]


# -- markdown -------------------------------------------------------------------------------------------------
def _fmt(e: dict[str, Any], percent: bool) -> str:
    return fmt_estimate(e, percent, (1, 2))


def _col(imp: str) -> str:
    return "all imposters (pooled)" if imp == POOLED else f"vs {imp}"


def markdown(res: dict[str, Any]) -> str:
    cell = {(c["arm"], c["imposter"]): c for c in res["cells"]}
    arms, cols = res["arms"], res["columns"]
    n_seeds = len(res["seeds"])
    lines = ["# Evaluation results", "",
             f"Matches: {res['matches']} of {res['planned']} planned ({len(arms)} arms x {len(res['imposters'])} "
             f"imposter models x {n_seeds} seeds, the same seeds for every arm). The six crewmate seats play the "
             f"arm's model, the two imposter seats the imposter model. Baseline arm: {res['baseline']}.", ""]
    bad = {a: h for a, h in res.get("arm_health", {}).items() if h["over"]}
    for arm, h in bad.items():
        if h["failed"]:
            lines += [f"**Arm {arm} failed:** {failure_reason(h)}; it is not scored (its games measure the "
                      "fallback rule, not the model).", ""]
        else:
            lines += [f"**Arm {arm} failed:** {100 * h['share']:.1f} % of its own {h['calls']} calls fell back "
                      f"(limit {100 * res['max_fallback_share']:.0f} %); its numbers measure fallbacks, not the "
                      "model.", ""]
    if res["matches"] < res["planned"]:
        lines += [f"**Partial:** {res['planned'] - res['matches']} planned matches are not finished yet; "
                  "rerun with --resume (or wait for the other shards) and then --report-only.", ""]
    lines += ["| side | name | model |", "|---|---|---|"]
    lines += [f"| crewmates (arm) | {k} | {v} |" for k, v in res["models"]["arms"].items()]
    lines += [f"| imposters | {k} | {v} |" for k, v in res["models"]["imposters"].items()]
    header = "| arm | " + " | ".join(_col(i) for i in cols) + " |"
    sep = "|---" * (len(cols) + 1) + "|"
    for name, (title, n_what, method) in METRICS.items():
        lines += ["", f"## {title}", "", f"Value [{METHODS[method]}] n={n_what}.", "", header, sep]
        for arm in arms:
            if res.get("arm_health", {}).get(arm, {}).get("failed") and name not in ("fallback_share",
                                                                                      "imposter_fallback_share"):
                lines.append(f"| {arm} | " + " | ".join("FAILED (no usable answer)" for _ in cols) + " |")
                continue
            lines.append(f"| {arm} | " + " | ".join(_fmt(cell[(arm, i)]["metrics"][name], name in PERCENT)
                                                  for i in cols) + " |")
    lines += ["", "## Endings (matches)", "", "| arm | imposter | " + " | ".join(OUTCOMES) + " | n |",
              "|---" * (len(OUTCOMES) + 3) + "|"]
    for arm in arms:
        for i in cols:
            c = cell[(arm, i)]
            lines.append(f"| {arm} | {i} | " + " | ".join(str(c["endings"].get(o, 0)) for o in OUTCOMES)
                         + f" | {c['matches']} |")
    if res["paired"]:
        lines += ["", f"## Paired comparison with the baseline ({res['baseline']}), same seeds", "",
                  "Difference in crew win rate (percentage points; arm minus baseline) over the seeds both played, "
                  f"[{METHODS['paired_bootstrap']}]; seeds where the crew of the arm won and the baseline's lost "
                  "(arm better), the reverse (baseline better) and ties; exact McNemar p-value (two-sided sign "
                  "test on the discordant seeds).", "",
                  "| arm | imposter | pairs | arm win % | baseline win % | difference (pp) [95% CI] | "
                  "arm better / baseline better / ties | McNemar p |", "|---" * 8 + "|"]
        for p in res["paired"]:
            n = p["n_pairs"]
            if not n:
                lines.append(f"| {p['arm']} | {p['imposter']} | 0 | - | - | - | - | - |")
                continue
            diff = f"{p['diff'] * 100:+.1f} [{p['ci_low'] * 100:+.1f}, {p['ci_high'] * 100:+.1f}]"
            lines.append(f"| {p['arm']} | {p['imposter']} | {n} | {100 * p['arm_wins'] / n:.1f} | "
                         f"{100 * p['baseline_wins'] / n:.1f} | {diff} | {p['arm_better']} / "
                         f"{p['baseline_better']} / {p['ties']} | {p['p_mcnemar']:.3g} |")
    from mau.beliefs.report import markdown as detection_markdown

    if res.get("detection"):
        c = res["probe_cost"]
        lines += ["", detection_markdown(res["detection"]), "",
                  f"Probe cost: {c['probes']} model probes in {c['matches']} matches ({c['probes_per_match']:.1f} "
                  f"per match, {c['fallbacks']} fallbacks, {c['tokens']} tokens)."]
    b = res["bootstrap"]
    lines += ["", f"Bootstrap: {b['resamples']} resamples, seed {b['seed']}. Precision is undefined (n=0) where "
              "an arm ejected nobody. Method details: docs/evaluation.md.", ""]
    return "\n".join(lines)


# -- plot (Pillow only: no plotting library needed) -----------------------------------------------------------
HEADLINE_PLOT = (("crew_win_rate", "Crew win rate"), ("ejection_precision", "Ejection precision"),
                 ("ejection_recall", "Ejection recall"))
DETECTION_PLOT = (("auroc", "AUROC of P(imposter)"), ("brier", "Brier score (lower is better)"),
                  ("top2_hit_rate", "Top-2 hit rate"), ("detection_rate", "Detection rate"),
                  ("time_to_detection", "Time to detection (fraction of match)"))


def plot(res: dict[str, Any]):
    """Every headline metric, one panel each: bars per arm (and the ideal observer in the detection panels)
    grouped by imposter model, with their 95% intervals as error bars (Pillow only)."""
    from mau.beliefs.report import headline_panels

    arms, cols = res["arms"], res["columns"]
    cell = {(c["arm"], c["imposter"]): c["metrics"] for c in res["cells"]}
    panels = [(title, [(imp, [(arm, cell[(arm, imp)][name]) for arm in arms]) for imp in cols])
              for name, title in HEADLINE_PLOT]
    det = res.get("detection") or {"rows": [], "cells": []}
    dcell = {(c["row"], c["imposter"]): c["metrics"] for c in det["cells"]}
    if det["rows"]:
        panels += [(title, [(imp, [(r, dcell[(r, imp)][name]) for r in det["rows"] if (r, imp) in dcell])
                            for imp in cols]) for name, title in DETECTION_PLOT]
    return headline_panels(panels, "Eval: value per arm (and the ideal observer) by imposter model; "
                                   "error bars: 95% intervals (docs/evaluation.md)")
