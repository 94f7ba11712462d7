"""The eval report, from the run folder's match folders: results.json, results.csv (long format), results.md
(the paper's Appendix U shape: rows = arms, columns = imposter models) and results.png (``mau.eval.plots``).

Its numbers come from two modules, both over ``mau.stats``: ``mau.eval.metrics`` (wins, ejections, kills,
missions, fallbacks, the paired comparison) and ``mau.eval.detection`` (the belief probes' detection metrics).
The detection tables here are also ``mau beliefs``' report."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.eval import detection as D
from mau.eval import exploit
from mau.eval.baselines import ACCUSED_ROW, LINEAR_BC_ROW, LINEAR_ROW, NO_SPEECH_ROW, PUBLIC_ROW
from mau.eval.config import POOLED, EvalConfig
from mau.eval.detection import (
    DETECTION_METRICS,
    IDEAL_ROW,
    KNOWS_NOTHING_ROW,
    PERCENT_METRICS,
    REFERENCE_ROWS,
)
from mau.eval.metrics import METHODS, METRICS, PERCENT, arm_health, evaluate, load_matches
from mau.matchdir import finished_matches
from mau.rundir import atomic_write
from mau.schema import OUTCOMES
from mau.stats import fmt_estimate

RESULTS_FORMAT = "mau.eval.results"
RESULTS_VERSION = 1
CSV_COLUMNS = ["arm", F.IMPOSTER_COLUMN, "metric", "value", "ci_low", "ci_high", "n", "method"]


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
    reader = bc_reader(cfg.bc_rows) if cfg.bc_rows is not None else None
    detection = D.evaluate(D.load_run(out, bc_reader=reader), cfg.baseline_arm, cfg.bootstrap_resamples,
                           cfg.bootstrap_seed,
                           pooled=POOLED, rows=list(cfg.arms), imposters=list(cfg.imposters))
    cost = D.probe_cost(finished_matches(out))
    from mau.claimsread.report import run_claims

    claims = run_claims(out, cfg.bootstrap_resamples, cfg.bootstrap_seed)
    results = {F.FORMAT: RESULTS_FORMAT, F.FORMAT_VERSION: RESULTS_VERSION, "planned": planned,
               "seeds": cfg.seed_list(), "models": models, "max_fallback_share": cfg.max_fallback_share,
               "arm_health": health, **res, "detection": detection, "probe_cost": cost,
               **({"claims": claims} if claims is not None else {})}
    found = exploit.pairs(cfg.arms, cfg.imposters)
    return {**results, "exploitability": exploit.figures(results, found)} if found else results


def bc_reader(section: Any) -> Any:
    """The linear reader fitted on the BC rows of ``section`` (``BCRowsSection``)."""
    from mau.datasets.vote_rows import dataset_rows
    from mau.infer.compact_reader import LinearReader

    rows = dataset_rows(section.dataset, section.max_rows)
    return LinearReader.fit_rows(rows, section.vote_weight, section.belief_weight)


def _describe(model) -> str:
    """One line naming a model: backend, model and adapter."""
    return f"{model.backend}: {model.model}" + (f" + adapter {model.adapter}" if model.adapter else "")


def write_report(cfg: EvalConfig, out: Path, planned: int) -> dict[str, Any]:
    """Compute and write results.json, results.csv, results.md, results.png and results_panels.png; return the
    results (with the markdown under "markdown")."""
    res = compute(cfg, out, planned)
    md = markdown(res)
    atomic_write(out / F.RESULTS_JSON, json.dumps(res, indent=1).encode())
    atomic_write(out / F.RESULTS_CSV, rows_csv(res).encode())
    atomic_write(out / F.RESULTS_MD, md.encode())
    from mau.eval.plots import panels_plot, plot

    for name, draw in ((F.RESULTS_PNG, plot), (F.RESULTS_PANELS_PNG, panels_plot)):
        buf = io.BytesIO()
        draw(res).save(buf, format="PNG")
        atomic_write(out / name, buf.getvalue())
    return {**res, "markdown": md}


def write_detection_report(runs: list[str], out: Path, baseline: str | None = None, resamples: int = 1000,
                           seed: int = 0, curves_of: Path | None = None, params_from: str | None = None,
                           bc_rows: Any = None) -> dict[str, Any]:
    """``mau beliefs``: the detection tables of ``runs`` (run or match folders) as beliefs.md, beliefs.json,
    beliefs.csv, calibration.png and belief_curves.png (of ``curves_of``, default the first match with model
    probes) in ``out``; returns the numbers with "markdown" and the "files" written. ``params_from``: an
    observer fit whose likelihoods re-score the ideal observer from its recorded evidence."""
    from mau.eval.plots import belief_curves, calibration_plot

    params = None
    if params_from is not None:
        from mau.eval.observer_fit import read_fit

        params = read_fit(params_from)
    reader = bc_reader(bc_rows) if bc_rows is not None else None
    ms = [mb for r in runs for mb in D.load_run(r, params, bc_reader=reader)]
    det = D.evaluate(ms, baseline, resamples, seed)
    if params_from is not None:
        det["observer_params"] = {"from": str(params_from), **params.to_dict()}
    out.mkdir(parents=True, exist_ok=True)
    md = detection_markdown(det, title="# Detection report", level="##")
    if params_from is not None:
        md += (f"\n\nThe {IDEAL_ROW}'s beliefs were re-scored from its recorded evidence with the fit "
               f"{params_from}.")
    from mau.claimsread.report import run_claims, section

    claims = {str(r): ev for r in runs if (ev := run_claims(r, resamples, seed)) is not None}
    for r, ev in claims.items():  # what was said beside what was believed (docs/claims.md)
        lines = section(ev)
        if lines and len(runs) > 1:
            lines[0] += f": {r}"
        md += "\n\n" + "\n".join(lines).rstrip()
    if claims:
        det["claims"] = claims
    from mau.eval.phrasing import phrasing_markdown, phrasing_report

    tells = phrasing_report(runs)
    if tells["meetings"]:
        det["phrasing"] = tells
        md += "\n\n" + phrasing_markdown(tells)
    (out / F.BELIEFS_MD).write_text(md + "\n")
    (out / F.BELIEFS_JSON).write_text(json.dumps({"runs": [str(r) for r in runs], **det}, indent=1))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["row", F.IMPOSTER_COLUMN, "metric", "value", "ci_low", "ci_high", "n", "method"])
    w.writerows(detection_csv_rows(det))
    (out / F.BELIEFS_CSV).write_text(buf.getvalue())
    calibration_plot(ms).save(out / F.CALIBRATION_PNG)
    files = [F.BELIEFS_MD, F.BELIEFS_JSON, F.BELIEFS_CSV, F.CALIBRATION_PNG]
    if curves_of is None:
        for r in runs:
            cands = finished_matches(r)
            curves_of = next(
                (c for c in cands if any(x[F.PROBE_SOURCE] == "model" for x in D.read_probes(c))),
                cands[0] if cands else None,
            )
            if curves_of is not None:
                break
    if curves_of is not None:
        belief_curves(curves_of).save(out / F.CURVES_PNG)
        files.append(F.CURVES_PNG)
    return {**det, "markdown": md, "files": files}


# -- CSV ----------------------------------------------------------------------------------------------------
def rows_csv(res: dict[str, Any]) -> str:
    """Long format: one row per (arm, imposter, metric); rates as fractions; endings as counts; the structured
    claims' metrics as ``claims:<name>`` (arm ``all`` pooled, then per arm; imposter ``all``); the paired
    comparisons as ``paired_diff_crew_win_rate`` (n = pairs) and ``paired_p_mcnemar``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in res["cells"]:
        for name, e in c["metrics"].items():
            w.writerow(
                [
                    c["arm"], c[F.IMPOSTER_COLUMN], name, *_nums(e["value"], e["ci_low"], e["ci_high"]),
                    e["n"], e["method"],
                ]
            )
        for outcome, k in c["endings"].items():
            w.writerow(
                [c["arm"], c[F.IMPOSTER_COLUMN], f"ending:{outcome}", k, "", "", c["matches"], "count"]
            )
    for row in detection_csv_rows(res["detection"]) if res.get("detection") else []:
        w.writerow([*row[:3], *_nums(*row[3:6]), row[6], row[7]])
    claims = res.get("claims") or {}
    tables = [("all", claims["pooled"])] if claims.get("pooled") else []
    # structured claims (docs/claims.md)
    for arm, table in [*tables, *(claims.get("by_crewmate") or {}).items()]:
        for name, e in table["metrics"].items():
            w.writerow([arm, "all", f"claims:{name}", *_nums(e["value"], e["ci_low"], e["ci_high"]), e["n"],
                        "match_bootstrap"])
    for p in res["paired"]:
        w.writerow(
            [
                p["arm"], p[F.IMPOSTER_COLUMN], "paired_diff_crew_win_rate",
                *_nums(p["diff"], p["ci_low"], p["ci_high"]), p["n_pairs"], "paired_bootstrap",
            ]
        )
        w.writerow(
            [
                p["arm"], p[F.IMPOSTER_COLUMN], "paired_p_mcnemar", _num(p["p_mcnemar"]), "", "",
                p["n_pairs"], "exact_mcnemar",
            ]
        )
    return buf.getvalue()


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


def _nums(*xs: float | None) -> list[str]:
    return [_num(x) for x in xs]


# -- markdown ------------------------------------------------------------------------------------------------
def _fmt(e: dict[str, Any], percent: bool) -> str:
    return fmt_estimate(e, percent, (1, 2))


def _col(imp: str) -> str:
    return "all imposters (pooled)" if imp == POOLED else f"vs {imp}"


def markdown(res: dict[str, Any]) -> str:
    cell = {(c["arm"], c[F.IMPOSTER_COLUMN]): c for c in res["cells"]}
    arms, cols = res["arms"], res["columns"]
    n_seeds = len(res["seeds"])
    lines = ["# Evaluation results", "",
             f"Matches: {res['matches']} of {res['planned']} planned ({len(arms)} arms x "
             f"{len(res['imposters'])} imposter models x {n_seeds} seeds, the same seeds for every arm). The "
             f"six crewmate seats play the arm's model, the two imposter seats the imposter model. Baseline "
             f"arm: {res['baseline']}.", ""]
    bad = {a: h for a, h in res.get("arm_health", {}).items() if h["over"]}
    for arm, h in bad.items():
        if h["failed"]:
            lines += [f"**Arm {arm} failed:** {failure_reason(h)}; it is not scored (its games measure the "
                      "fallback rule, not the model).", ""]
        else:
            lines += [f"**Arm {arm} failed:** {100 * h['share']:.1f} % of its own {h['calls']} calls fell "
                      f"back (limit {100 * res['max_fallback_share']:.0f} %); its numbers measure fallbacks, "
                      f"not the "
                      "model.", ""]
    if res["matches"] < res["planned"]:
        lines += [f"**Partial:** {res['planned'] - res['matches']} planned matches are not finished yet; "
                  "rerun with --resume (or wait for the other shards) and then --report-only.", ""]
    lines += ["| side | name | model |", "|---|---|---|"]
    lines += [f"| crewmates (arm) | {k} | {v} |" for k, v in res["models"]["arms"].items()]
    lines += [f"| imposters | {k} | {v} |" for k, v in res["models"]["imposters"].items()]
    lines += ["", *paper_table(res)]
    if res.get("exploitability"):
        lines += ["", *exploit.markdown(res["exploitability"])]
    header = "| arm | " + " | ".join(_col(i) for i in cols) + " |"
    sep = "|---" * (len(cols) + 1) + "|"
    for name, (title, n_what, method) in METRICS.items():
        lines += ["", f"## {title}", "", f"Value [{METHODS[method]}] n={n_what}.", "", header, sep]
        for arm in arms:
            if res.get("arm_health", {}).get(arm, {}).get("failed") and name not in (
                "fallback_share", "imposter_fallback_share",
            ):
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
                  "Difference in crew win rate (percentage points; arm minus baseline) over the seeds both "
                  "played, "
                  f"[{METHODS['paired_bootstrap']}]; seeds where the crew of the arm won and the baseline's "
                  f"lost "
                  "(arm better), the reverse (baseline better) and ties; exact McNemar p-value (two-sided "
                  "sign test on the discordant seeds).", "",
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
    if res.get("detection"):
        c = res["probe_cost"]
        lines += ["", detection_markdown(res["detection"]), "",
                  f"Probe cost: {c['probes']} model probes in {c['matches']} matches "
                  f"({c['probes_per_match']:.1f} per match, {c['fallbacks']} fallbacks, {c['tokens']} "
                  f"tokens)."]
    if res.get("claims"):  # structured claims (docs/claims.md; mau claims gives the whole report)
        from mau.claimsread.report import section

        lines += [""] + section(res["claims"])
    b = res["bootstrap"]
    lines += ["", f"Bootstrap: {b['resamples']} resamples, seed {b['seed']}. Precision is undefined (n=0) "
                  f"where "
              "an arm ejected nobody. Method details: docs/evaluation.md.", ""]
    return "\n".join(lines)


# -- the detection tables (the eval's section, and mau beliefs' report) -----------------------------------
def readout_line(det: dict[str, Any]) -> str:
    """How each row's model beliefs were read (docs/harness.md, "Belief probes"); "" when no row was
    probed."""
    readouts = {r: x for r, x in det.get("readouts", {}).items() if x}
    if not readouts:
        return ""
    return ("Probe read-out: " + "; ".join(f"{r}: {' + '.join(x)}" for r, x in readouts.items())
            + " (answer: asked the probe question; vote: its VOTE answer's scored names, docs/harness.md).")


def detection_markdown(det: dict[str, Any], title: str = "## Detection (belief "
                                                         "probes)", level: str = "###") -> str:
    rows, cols = det["rows"], det["columns"]
    cell = {(c["row"], c[F.IMPOSTER_COLUMN]): c for c in det["cells"]}
    intro = (f"Probe records of {det['matches']} matches. Rows: each arm's model (its crewmates' answers to "
             f"the belief probe), the {IDEAL_ROW} (the exact posterior from what each crewmate perceived, "
             f"same moments), simple detectors at the same probes that a figure must beat ({PUBLIC_ROW}: the "
             f"observer on public evidence alone; {ACCUSED_ROW}: accusations and votes received; "
             f"{LINEAR_ROW}: a logistic model on counts of the evidence, fitted on the truth of the other "
             f"half of the seeds (an upper reference); {LINEAR_BC_ROW}, where shown: a linear reader of the "
             f"compact VOTE prompt fitted on a student's BC rows with its target (its peer); "
             f"{NO_SPEECH_ROW}: the "
             "observer with accusations and votes counting for nothing) and the reference that "
             f"{KNOWS_NOTHING_ROW.split(' (')[0]} (k/n for each of the n candidates, k living imposters). "
             f"Quote the "
             "AUROC within each probe (chance 0.5) beside the knows-nothing and the baselines' rows, and by "
             "moment (the last table); the pooled AUROC's chance level is the knows-nothing row's, not 0.5. "
             "Value [95% match-level bootstrap interval] n. Fallback probes are excluded from every metric. "
             "Definitions: docs/evaluation.md, \"Detection\".")
    lines = [title, "", intro]
    if readout_line(det):
        lines += ["", readout_line(det)]
    if not rows:
        return "\n".join(lines + ["", "No probe records in these matches."])
    head = "| row | " + " | ".join("all imposters (pooled)" if i == "all" else f"vs {i}" for i in cols) + " |"
    for name, (t, n_what, _) in DETECTION_METRICS.items():
        lines += ["", f"{level} {t}", "", f"n = {n_what}.", "", head, "|---" * (len(cols) + 1) + "|"]
        for r in rows:
            lines.append(
                f"| {r} | "
                + " | ".join(
                    fmt_estimate(cell[(r, i)]["metrics"][name], name in PERCENT_METRICS) for i in cols
                )
                + " |"
            )
    moments = det.get("by_moment") or {}
    if moments:
        names = list(next(iter(moments.values())))
        lines += ["", f"{level} AUROC within each probe, by moment (all imposter models pooled)", "",
                  "n = probes with both roles. Meeting 1 before speech holds only what was seen; before the "
                  "vote what was said too; later meetings add the earlier votes and revealed roles.", "",
                  "| row | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for r in rows:
            lines.append(f"| {r} | " + " | ".join(fmt_estimate(moments[r][mo], False) for mo in names) + " |")
    if det["paired"]:
        what = ("Difference row minus versus (same seed and imposter model for arms; the same matches for "
                "the ideal observer), 95% interval of a paired bootstrap.")
        lines += ["", f"{level} Paired comparisons", "", what, "",
                  "| row | versus | imposter | metric | pairs | difference [95% CI] |", "|---" * 6 + "|"]
        for p in det["paired"]:
            d = "undefined" if p["diff"] is None else \
                f"{p['diff']:+.3f} [{_s(p['ci_low'])}, {_s(p['ci_high'])}]"
            lines.append(f"| {p['row']} | {p['versus']} | {p['imposter']} | {p['metric']} | {p['n_pairs']} | "
                         f"{d} |")
    return "\n".join(lines)


def _s(x: float | None) -> str:
    return "?" if x is None else f"{x:+.3f}"


def detection_csv_rows(det: dict[str, Any]) -> list[list[Any]]:
    """(arm, imposter, metric, value, ci_low, ci_high, n, method) rows, as the eval's results.csv."""
    out = []
    for c in det["cells"]:
        for name, e in c["metrics"].items():
            out.append(
                [
                    c["row"], c[F.IMPOSTER_COLUMN], name, e["value"], e["ci_low"], e["ci_high"], e["n"],
                    e["method"],
                ]
            )
    for p in det["paired"]:
        out.append(
            [
                p["row"], p[F.IMPOSTER_COLUMN], f"paired_diff_{p['metric']}_vs_{p['versus']}", p["diff"],
                p["ci_low"], p["ci_high"], p["n_pairs"], p["method"],
            ]
        )
    for row, moments in (det.get("by_moment") or {}).items():
        for mo, e in moments.items():
            out.append(
                [
                    row, POOLED, f"auroc_within@{mo}", e["value"], e["ci_low"], e["ci_high"], e["n"],
                    e["method"],
                ]
            )
    return out


def paper_table(res: dict[str, Any]) -> list[str]:
    """The paper's table (Appendix U: win rate, ejection recall and precision), pooled over imposter models,
    with the within-probe AUROC and the paired differences from the baseline arm (same seeds), and the
    reference rows' AUROC beside (they play nothing)."""
    col = "all" if "all" in res["columns"] else res["columns"][0]
    cell = {c["arm"]: c for c in res["cells"] if c[F.IMPOSTER_COLUMN] == col}
    det = res.get("detection") or {"cells": [], "paired": []}
    dcell = {c["row"]: c["metrics"] for c in det["cells"] if c[F.IMPOSTER_COLUMN] == col}
    win_diff = {p["arm"]: p for p in res["paired"] if p[F.IMPOSTER_COLUMN] == col}
    auc_diff = {p["row"]: p for p in det.get("paired", []) if p[F.IMPOSTER_COLUMN] == col
                and p["versus"] == res["baseline"] and p["metric"] == "auroc_within"}

    def est(e: dict[str, Any] | None, percent: bool) -> str:
        return "-" if e is None else fmt_estimate(e, percent, (0, 3), with_n=False, undefined="n/a")

    def diff(p: dict[str, Any] | None, scale: float, digits: int) -> str:
        if p is None or p.get("diff") is None:
            return "-"
        lo, hi = p.get("ci_low"), p.get("ci_high")
        ci = f" [{lo * scale:+.{digits}f}, {hi * scale:+.{digits}f}]" if lo is not None else ""
        return f"{p['diff'] * scale:+.{digits}f}{ci}"

    lines = [f"## The paper's table ({_col(col)}; baseline {res['baseline']})", "",
             "Crew win rate, ejection recall (imposters ejected / fielded) and precision (imposters "
             "ejected / ejections), as the paper's Appendix U reports them, beside the AUROC within each "
             "probe (chance 0.5); value [95% interval]; the last two columns are paired differences from the "
             "baseline arm on the seeds both played (crew win in percentage points).", "",
             "| row | matches | crew win % | ejection recall % | ejection precision % | AUROC within probe | "
             "crew win minus baseline (pp) | AUROC minus baseline |", "|---" * 8 + "|"]
    failed = {a for a, h in res.get("arm_health", {}).items() if h.get("failed")}
    for arm in res["arms"]:
        m = (cell.get(arm) or {}).get("metrics") or {}
        if arm in failed:
            n = (cell.get(arm) or {}).get("matches", 0)
            lines.append(f"| {arm} | {n} | FAILED | FAILED | FAILED | - | - | - |")
            continue
        lines.append(f"| {arm} | {(cell.get(arm) or {}).get('matches', 0)} | "
                     f"{est(m.get('crew_win_rate'), True)} | {est(m.get('ejection_recall'), True)} | "
                     f"{est(m.get('ejection_precision'), True)} | "
                     f"{est((dcell.get(arm) or {}).get('auroc_within'), False)} | "
                     f"{diff(win_diff.get(arm), 100, 1) if arm != res['baseline'] else '-'} | "
                     f"{diff(auc_diff.get(arm), 1, 3) if arm != res['baseline'] else '-'} |")
    for row in REFERENCE_ROWS:
        if row in dcell:
            lines.append(f"| {row} | - | - | - | - | {est(dcell[row].get('auroc_within'), False)} | - | - |")
    readers = [r for r in (IDEAL_ROW, LINEAR_ROW, LINEAR_BC_ROW) if r in dcell]
    versus = {(p["row"], p["versus"]): p for p in det.get("paired", []) if p[F.IMPOSTER_COLUMN] == col
              and p["metric"] == "auroc_within"}
    if readers:
        lines += ["", "Each arm's within-probe AUROC minus a reader's at the same matches (paired by match, "
                  "95% interval): the ideal observer, the linear model fitted on the truth and, where shown, "
                  "the linear reader of a student's BC rows.", "",
                  "| arm | " + " | ".join(f"minus {r}" for r in readers) + " |",
                  "|---" * (len(readers) + 1) + "|"]
        for arm in (a for a in res["arms"] if a not in failed):
            cells = " | ".join(diff(versus.get((arm, r)), 1, 3) for r in readers)
            lines.append(f"| {arm} | {cells} |")
    return lines


def summary_table(res: dict[str, Any]) -> str:
    """One compact table of an eval's results: per arm, the vote-level metrics next to the detection metrics,
    and the ideal observer's row (it plays nothing: no win rate). Pooled over imposter models."""
    col = "all" if "all" in res["columns"] else res["columns"][0]
    cell = {c["arm"]: c["metrics"] for c in res["cells"] if c[F.IMPOSTER_COLUMN] == col}
    det = res.get("detection") or {"cells": [], "rows": []}
    dcell = {c["row"]: c["metrics"] for c in det["cells"] if c[F.IMPOSTER_COLUMN] == col}

    def short(e: dict[str, Any] | None, percent: bool) -> str:
        return "-" if e is None else fmt_estimate(e, percent, (0, 2), with_n=False, undefined="n/a")

    lines = ["| arm | crew win % | ejection precision % | fallback % (calls) | AUROC within probe | "
             "Brier within probe | top-2 hit % | probe fallback % |", "|---" * 8 + "|"]
    failed = {a for a, h in res.get("arm_health", {}).items() if h.get("failed")}
    for r in list(res["arms"]) + [r for r in REFERENCE_ROWS if r in dcell]:
        m, dm = cell.get(r), dcell.get(r)
        # An arm without a usable answer is not scored: its games measure the fallback rule, not the model.
        win, prec = (("FAILED", "FAILED") if r in failed else
                     (short(m and m['crew_win_rate'], True), short(m and m['ejection_precision'], True)))
        lines.append(f"| {r} | {win} | {prec} | {short(m and m['fallback_share'], True)} | "
                     f"{short(dm and dm['auroc_within'], False)} | {short(dm and dm['brier_within'], False)} "
                     f"| {short(dm and dm['top2_hit_rate'], True)} | "
                     f"{short(dm and dm['probe_fallback_share'], True)} |")
    if readout_line(det):
        lines += ["", readout_line(det)]
    return "\n".join(lines)
