"""The eval's plots, drawn with Pillow only (no plotting library): results.png's bar panels with 95%
intervals, and the detection report's calibration diagram and belief curves (``mau beliefs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mau import schema as F
from mau.eval.detection import IDEAL_ROW, KNOWS_NOTHING_ROW, MatchBeliefs, read_probes

PALETTE = [(76, 114, 176), (221, 132, 82), (85, 168, 104), (196, 78, 82), (129, 114, 179), (147, 120, 96),
           (218, 139, 195), (140, 140, 140), (204, 185, 116), (100, 181, 205)]


def calibration_plot(ms: list[MatchBeliefs], bins: int = 10):
    """Reliability diagram: per row, the imposter frequency of each P(imposter) bin against the bin's mean
    P."""
    import numpy as np
    from PIL import Image, ImageDraw

    rows = sorted({m.row for m in ms if m.row != KNOWS_NOTHING_ROW}, key=lambda r: (r == IDEAL_ROW, r))
    size, left, top = 320, 50, 40 + 16 * len(rows)
    img = Image.new("RGB", (left + size + 30, top + size + 50), "white")
    d = ImageDraw.Draw(img)
    d.text((8, 6), "Calibration: imposter frequency by P(imposter) bin (10 bins)", fill="black")

    def xy(px: float, py: float) -> tuple[float, float]:
        return left + px * size, top + (1 - py) * size

    d.rectangle([left, top, left + size, top + size], outline="black")
    d.line([*xy(0, 0), *xy(1, 1)], fill=(200, 200, 200))
    for t in (0, 0.5, 1):
        d.text((xy(t, 0)[0] - 8, top + size + 4), f"{t:g}", fill="black")
        d.text((left - 24, xy(0, t)[1] - 6), f"{t:g}", fill="black")
    d.text((left + size / 2 - 50, top + size + 20), "mean P(imposter)", fill="black")
    for k, r in enumerate(rows):
        col = PALETTE[k % len(PALETTE)]
        d.rectangle([8, 24 + 16 * k, 18, 34 + 16 * k], fill=col)
        d.text((22, 22 + 16 * k), r[:40], fill="black")
        sel = [m for m in ms if m.row == r]
        p = np.concatenate([m.p for m in sel]) if sel else np.zeros(0)
        y = np.concatenate([m.y for m in sel]) if sel else np.zeros(0)
        if not len(p):
            continue
        b = np.minimum((p * bins).astype(int), bins - 1)
        pts = [xy(p[b == i].mean(), y[b == i].mean()) for i in range(bins) if (b == i).any()]
        if len(pts) > 1:
            d.line([c for pt in pts for c in pt], fill=col, width=2)
        for x, yy in pts:
            d.ellipse([x - 3, yy - 3, x + 3, yy + 3], fill=col)
    return img


def belief_curves(folder: str | Path, agent: str | None = None):
    """P(imposter) of each player over the probes of one crewmate of one match: model (left) and ideal
    observer (right); true imposters in red. ``agent`` default: the crewmate with the most model probes."""
    from PIL import Image, ImageDraw

    from mau.matchdir import read_header

    roles = read_header(folder)[F.ROLES]
    recs = read_probes(folder)
    if agent is None:
        counts: dict[str, int] = {}
        for r in recs:
            counts[r[F.AGENT]] = counts.get(r[F.AGENT], 0) + 2 * (r[F.PROBE_SOURCE] == "model") + 1
        agent = max(sorted(counts), key=lambda a: counts[a]) if counts else None
    w, h, left, top = 300, 220, 40, 40
    img = Image.new("RGB", (2 * (left + w) + 20, top + h + 60), "white")
    d = ImageDraw.Draw(img)
    d.text((8, 6), f"Belief curves of {agent} ({Path(folder).name[:60]}); red: true imposters", fill="black")
    for panel, source in enumerate((F.PROBE_SOURCE_MODEL, F.PROBE_SOURCE_IDEAL)):
        x0 = panel * (left + w) + left
        rs = sorted((r for r in recs if r[F.AGENT] == agent and r[F.PROBE_SOURCE] == source),
                    key=lambda r: r[F.PROBE_SEQ])
        d.rectangle([x0, top, x0 + w, top + h], outline="black")
        d.text((x0, top - 14), f"{source} ({len(rs)} probes)", fill="black")
        d.text((x0 - 20, top - 4), "1", fill="black")
        d.text((x0 - 20, top + h - 8), "0", fill="black")
        ok = [r for r in rs if r[F.PROBE_BELIEFS] is not None]
        if not ok:
            continue
        names = sorted({n for r in ok for n in r[F.PROBE_BELIEFS]})
        xs = {r[F.PROBE_SEQ]: x0 + (w * i / max(1, len(ok) - 1)) for i, r in enumerate(ok)}
        for k, n in enumerate(names):
            imp = roles.get(n) == F.IMPOSTER
            col = (200, 30, 30) if imp else [c for c in PALETTE if c != (196, 78, 82)][k % (len(PALETTE) - 1)]
            pts = [
                (xs[r[F.PROBE_SEQ]], top + h * (1 - r[F.PROBE_BELIEFS][n]))
                for r in ok
                if n in r[F.PROBE_BELIEFS]
            ]
            if len(pts) > 1:
                d.line([c for pt in pts for c in pt], fill=col, width=3 if imp else 1)
            for x, y in pts:
                d.ellipse([x - 2, y - 2, x + 2, y + 2], fill=col)
            if pts:
                d.text((pts[-1][0] - 40, pts[-1][1] - 11 - 9 * (k % 2)), n[:8], fill=col)
        d.text((x0, top + h + 6), "probe moments in order ->", fill=(90, 90, 90))
    return img


def headline_panels(panels: list[tuple[str, list[tuple[str, list[tuple[str, dict[str, Any]]]]]]], title: str):
    """A grid of bar panels, one per metric: groups (imposter columns) of bars (rows) with 95% intervals.
    ``panels``: [(metric title, [(group, [(row, estimate)])])]; values outside [0, 1] are clipped to the
    axis."""
    from PIL import Image, ImageDraw

    pw, ph, per_row = 330, 220, 3
    n = len(panels)
    rows_n = (n + per_row - 1) // per_row
    names: list[str] = []
    for _, groups in panels:
        for _, bars in groups:
            for r, _ in bars:
                if r not in names:
                    names.append(r)
    legend_h = 18 * ((len(names) + 2) // 3) + 24
    img = Image.new("RGB", (per_row * pw + 10, legend_h + rows_n * ph + 10), "white")
    d = ImageDraw.Draw(img)
    d.text((8, 4), title, fill="black")
    for k, r in enumerate(names):
        x, y = 8 + (k % 3) * 200, 22 + 18 * (k // 3)
        d.rectangle([x, y + 2, x + 10, y + 12], fill=PALETTE[k % len(PALETTE)])
        d.text((x + 14, y), r[:28], fill="black")
    for p, (t, groups) in enumerate(panels):
        ox, oy = 10 + (p % per_row) * pw, legend_h + (p // per_row) * ph
        left, top, hh, ww = ox + 30, oy + 22, ph - 60, pw - 50
        d.text((ox, oy + 4), t[:52], fill="black")
        d.line([left, top, left, top + hh], fill="black")
        for v in (0, 0.5, 1):
            yy = top + hh * (1 - v)
            d.line([left, yy, left + ww, yy], fill=(225, 225, 225))
            d.text((ox, yy - 6), f"{v:g}", fill="black")
        nb = max(1, sum(len(b) for _, b in groups))
        bw = max(6, min(26, (ww - 10 * len(groups)) // nb))
        x = left + 6
        for g, bars in groups:
            gx = x
            for r, e in bars:
                col = PALETTE[names.index(r) % len(PALETTE)]
                if e["value"] is not None:
                    v = min(1.0, max(0.0, e["value"]))
                    d.rectangle([x, top + hh * (1 - v), x + bw - 3, top + hh], fill=col)
                    if e["ci_low"] is not None and e["ci_high"] is not None:
                        cx = x + (bw - 3) / 2
                        lo = top + hh * (1 - min(1.0, max(0.0, e["ci_low"])))
                        hi = top + hh * (1 - min(1.0, max(0.0, e["ci_high"])))
                        d.line([cx, lo, cx, hi], fill="black")
                        d.line([cx - 3, lo, cx + 3, lo], fill="black")
                        d.line([cx - 3, hi, cx + 3, hi], fill="black")
                else:
                    d.text((x, top + hh - 12), "-", fill="black")
                x += bw
            d.text((gx, top + hh + 4), ("pooled" if g == "all" else g)[:max(4, (x - gx) // 6)], fill="black")
            x += 10
    return img


# -- results.png -------------------------------------------------------------------------------------------
HEADLINE_PLOT = (("crew_win_rate", "Crew win rate"), ("ejection_precision", "Ejection precision"),
                 ("ejection_recall", "Ejection recall"))
DETECTION_PLOT = (("auroc_within", "AUROC within each probe (chance 0.5)"), ("auroc", "AUROC pooled"),
                  ("brier_within", "Brier within each probe"), ("top2_hit_rate", "Top-2 hit rate"),
                  ("detection_rate", "Detection rate"),
                  ("time_to_detection", "Time to detection (fraction of match)"))


def panels_plot(res: dict[str, Any]):
    """Every headline metric, one panel each: bars per arm (and the ideal observer in the detection panels)
    grouped by imposter model, with their 95% intervals as error bars (Pillow only): results_panels.png."""
    arms, cols = res["arms"], res["columns"]
    cell = {(c["arm"], c[F.IMPOSTER_COLUMN]): c["metrics"] for c in res["cells"]}
    panels = [(title, [(imp, [(arm, cell[(arm, imp)][name]) for arm in arms]) for imp in cols])
              for name, title in HEADLINE_PLOT]
    det = res.get("detection") or {"rows": [], "cells": []}
    dcell = {(c["row"], c[F.IMPOSTER_COLUMN]): c["metrics"] for c in det["cells"]}
    if det["rows"]:
        panels += [(title, [(imp, [(r, dcell[(r, imp)][name]) for r in det["rows"] if (r, imp) in dcell])
                            for imp in cols]) for name, title in DETECTION_PLOT]
    return headline_panels(panels, "Eval: value per arm (and the ideal observer) by imposter model; "
                                   "error bars: 95% intervals (docs/evaluation.md)")


# -- results.png: the picture read at a glance --------------------------------------------------------------
GLANCE = (("auroc_within", "Detection: AUROC within each probe", "detection"),
          ("crew_win_rate", "Crew win rate", "cells"))


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: the fixed bitmap font
        return ImageFont.load_default()


def teacher_arms(res: dict[str, Any]) -> list[str]:
    """The arms played by the scripted expert (the teacher of the BC data): drawn as a line, not a bar."""
    return [a for a, d in res.get("models", {}).get("arms", {}).items() if str(d).startswith("scripted:")]


def plot(res: dict[str, Any]):
    """results.png: one bar per arm for the within-probe AUROC (left) and the crew win rate (right), pooled
    over imposter models, with 95% intervals; the chance line (AUROC 0.5) dotted, the teacher's value as a
    dashed line across each panel; an arm that failed (every answer fell back) reads FAILED (Pillow only)."""
    from PIL import Image, ImageDraw

    col = "all" if "all" in res["columns"] else res["columns"][0]
    teachers = teacher_arms(res)
    rows = [a for a in res["arms"] if a not in teachers]
    values = {"cells": {c["arm"]: c["metrics"] for c in res["cells"] if c[F.IMPOSTER_COLUMN] == col},
              "detection": {c["row"]: c["metrics"] for c in (res.get("detection") or {}).get("cells", [])
                            if c[F.IMPOSTER_COLUMN] == col}}
    failed = {a for a, h in res.get("arm_health", {}).items() if h.get("failed")}
    f_title, f_text, f_small = _font(20), _font(15), _font(13)
    label_w, pw, gap, row_h, top = 190, 380, 40, 34, 86
    w = label_w + 2 * pw + gap + 20
    h = top + row_h * len(rows) + 70
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    n = len(res.get("seeds", []))
    d.text((12, 10), "Each arm's detection and crew win rate", fill="black", font=f_title)
    d.text((12, 38), f"pooled over imposter models, {n} seeds per arm; black bars: 95% intervals",
           fill=(90, 90, 90), font=f_small)
    for k, r in enumerate(rows):
        d.text((12, top + row_h * k + 8), r[:22], fill="black", font=f_text)
    for p, (metric, title, source) in enumerate(GLANCE):
        x0 = label_w + p * (pw + gap)
        _glance_panel(
            d, x0, top, pw - 70, row_h, rows, values[source], metric, title, failed,
            [(t, values[source].get(t, {}).get(metric)) for t in teachers], metric == "auroc_within",
            (f_text, f_small),
        )
    return img


def _glance_panel(
    d, x0: int, top: int, pw: int, row_h: int, rows: list[str], values: dict[str, Any], metric: str,
    title: str, failed: set[str], teachers: list[tuple[str, Any]], chance: bool, fonts,
) -> None:
    """One panel of ``plot``: an axis 0..1, a bar per row with its interval and value, the reference lines."""
    f_text, f_small = fonts
    h = row_h * len(rows)

    def x(v: float) -> float:
        return x0 + pw * min(1.0, max(0.0, v))

    d.text((x0, top - 26), title, fill="black", font=f_text)
    for t in (0, 0.25, 0.5, 0.75, 1):
        d.line([x(t), top, x(t), top + h], fill=(232, 232, 232))
        d.text((x(t) - 8, top + h + 4), f"{t:g}", fill=(90, 90, 90), font=f_small)
    d.line([x0, top, x0, top + h], fill="black")
    for k, r in enumerate(rows):
        y = top + row_h * k
        e = values.get(r, {}).get(metric)
        if r in failed:
            d.text((x0 + 6, y + 8), "FAILED (every answer fell back)", fill=(196, 78, 82), font=f_small)
            continue
        if e is None or e.get("value") is None:
            d.text((x0 + 6, y + 8), "n/a", fill=(90, 90, 90), font=f_small)
            continue
        d.rectangle([x0, y + 6, x(e["value"]), y + row_h - 6], fill=PALETTE[k % len(PALETTE)])
        if e.get("ci_low") is not None and e.get("ci_high") is not None:
            cy = y + row_h / 2
            d.line([x(e["ci_low"]), cy, x(e["ci_high"]), cy], fill="black", width=2)
            for v in (e["ci_low"], e["ci_high"]):
                d.line([x(v), cy - 5, x(v), cy + 5], fill="black", width=2)
        d.text((x0 + pw + 6, y + 9), f"{e['value']:.2f}", fill="black", font=f_small)
    legend = top + h + 24
    if chance:
        _dashed(d, x(0.5), top, top + h, (120, 120, 120), 2)
        d.text((x0, legend), "dotted: chance (0.5)", fill=(120, 120, 120), font=f_small)
    for name, e in teachers:
        if e is not None and e.get("value") is not None:
            _dashed(d, x(e["value"]), top, top + h, (40, 140, 60), 6)
            d.text((x0 + 150 * chance, legend), f"dashed: {name} {e['value']:.2f}", fill=(40, 140, 60),
                   font=f_small)


def _dashed(d, xx: float, y0: float, y1: float, fill, dash: int) -> None:
    y = y0
    while y < y1:
        d.line([xx, y, xx, min(y1, y + dash)], fill=fill, width=2)
        y += 2 * dash
