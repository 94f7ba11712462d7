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

RESULTS_FORMAT = "mau.eval.results"
RESULTS_VERSION = 1
CSV_COLUMNS = ["arm", "imposter", "metric", "value", "ci_low", "ci_high", "n", "method"]


def compute(cfg: EvalConfig, out: Path, planned: int) -> dict[str, Any]:
    """Every number of the report, as one JSON-able dict."""
    ms = load_matches(out)
    res = evaluate(ms, list(cfg.arms), list(cfg.imposters), cfg.baseline_arm, cfg.bootstrap_resamples,
                   cfg.bootstrap_seed)
    models = {"arms": {k: _describe(v) for k, v in cfg.arms.items()},
              "imposters": {k: _describe(v) for k, v in cfg.imposters.items()}}
    health = arm_health(ms, cfg.max_fallback_share)
    return {F.FORMAT: RESULTS_FORMAT, F.FORMAT_VERSION: RESULTS_VERSION, "planned": planned,
            "seeds": cfg.seed_list(), "models": models, "max_fallback_share": cfg.max_fallback_share,
            "arm_health": health, **res}


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
    if e["value"] is None:
        return f"undefined (n={e['n']})"
    k, d = (100.0, 1) if percent else (1.0, 2)
    lo = "?" if e["ci_low"] is None else f"{e['ci_low'] * k:.{d}f}"
    hi = "?" if e["ci_high"] is None else f"{e['ci_high'] * k:.{d}f}"
    return f"{e['value'] * k:.{d}f} [{lo}, {hi}] n={e['n']}"


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
        why = "its model never answered (not scored)" if h["failed"] else \
            f"{100 * h['share']:.1f} % of its own {h['calls']} calls fell back"
        lines += [f"**Arm {arm} failed:** {why} (limit {100 * res['max_fallback_share']:.0f} %); its numbers "
                  "measure fallbacks, not the model.", ""]
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
                lines.append(f"| {arm} | " + " | ".join("FAILED (the model never answered)" for _ in cols) + " |")
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
    b = res["bootstrap"]
    lines += ["", f"Bootstrap: {b['resamples']} resamples, seed {b['seed']}. Precision is undefined (n=0) where "
              "an arm ejected nobody. Method details: docs/evaluation.md.", ""]
    return "\n".join(lines)


# -- plot (Pillow only: no plotting library needed) -----------------------------------------------------------
_PALETTE = [(76, 114, 176), (221, 132, 82), (85, 168, 104), (196, 78, 82), (129, 114, 179), (147, 120, 96),
            (218, 139, 195), (140, 140, 140), (204, 185, 116), (100, 181, 205)]


def plot(res: dict[str, Any]):
    """Crew win rate per arm, grouped by imposter model, with the 95% Wilson intervals as error bars."""
    from PIL import Image, ImageDraw

    arms, cols = res["arms"], res["columns"]
    cell = {(c["arm"], c["imposter"]): c["metrics"]["crew_win_rate"] for c in res["cells"]}
    bar, gap, left, top, plot_h = 26, 36, 56, 60 + 16 * ((len(arms) + 2) // 3), 260
    group_w = len(arms) * bar + gap
    width = max(left + len(cols) * group_w + 20, 8 + min(3, len(arms)) * 170, 440)
    img = Image.new("RGB", (width, top + plot_h + 60), "white")
    d = ImageDraw.Draw(img)
    d.text((8, 6), "Crew win rate (%) by arm and imposter model; error bars: 95% Wilson interval", fill="black")
    for k, arm in enumerate(arms):  # legend, three arms per row
        x, y = 8 + (k % 3) * 170, 26 + 16 * (k // 3)
        d.rectangle([x, y + 2, x + 10, y + 12], fill=_PALETTE[k % len(_PALETTE)])
        d.text((x + 14, y), arm[:24], fill="black")

    def ypos(v: float) -> float:
        return top + plot_h * (1 - v)

    for t in range(0, 101, 25):  # axis and grid
        y = ypos(t / 100)
        d.line([left, y, width - 10, y], fill=(225, 225, 225))
        d.text((left - 28, y - 6), f"{t:3d}", fill="black")
    d.line([left, top, left, top + plot_h], fill="black")
    for g, imp in enumerate(cols):
        x0 = left + 12 + g * group_w
        for k, arm in enumerate(arms):
            e = cell[(arm, imp)]
            x = x0 + k * bar
            if e["value"] is None:
                d.text((x + 4, ypos(0) - 14), "-", fill="black")
                continue
            d.rectangle([x, ypos(e["value"]), x + bar - 4, ypos(0)], fill=_PALETTE[k % len(_PALETTE)])
            cx = x + (bar - 4) / 2
            lo, hi = ypos(e["ci_low"]), ypos(e["ci_high"])
            d.line([cx, lo, cx, hi], fill="black", width=1)
            d.line([cx - 4, lo, cx + 4, lo], fill="black")
            d.line([cx - 4, hi, cx + 4, hi], fill="black")
            d.text((x, top + plot_h + 4 + 11 * (k % 2)), f"n={e['n']}", fill=(90, 90, 90))  # staggered: no overlap
        label = "all (pooled)" if imp == POOLED else f"vs {imp}"
        d.text((x0, top + plot_h + 30), label[: max(8, group_w // 6)], fill="black")
    return img
