"""One line that says what an eval found for one arm against another, read from the paired 95% intervals of
its results: the within-probe AUROC (``detection.paired``) and the crew win rate (``paired``), pooled over
imposter
models where there are several. A difference is "lifted" / "lowered" only when its interval excludes 0."""

from __future__ import annotations

from typing import Any

from mau import schema as F

METRIC = "auroc_within"


def _column(res: dict[str, Any]) -> str:
    return "all" if "all" in res["columns"] else res["columns"][0]


def paired_auroc(res: dict[str, Any], arm: str, versus: str) -> dict[str, Any] | None:
    """The paired within-probe AUROC difference ``arm`` minus ``versus`` (pooled column), or None."""
    col = _column(res)
    return next(
        (
            p
            for p in (res.get("detection") or {}).get("paired", [])
            if p["row"] == arm
            and p["versus"] == versus
            and p["metric"] == METRIC
            and p[F.IMPOSTER_COLUMN] == col
        ),
        None,
    )


def paired_wins(res: dict[str, Any], arm: str, versus: str) -> dict[str, Any] | None:
    """The paired crew-win-rate difference ``arm`` minus ``versus`` (pooled column), or None."""
    col = _column(res)
    return next((p for p in res.get("paired", [])
                 if p["arm"] == arm and p["baseline"] == versus and p[F.IMPOSTER_COLUMN] == col), None)


def _direction(p: dict[str, Any]) -> str:
    lo, hi = p.get("ci_low"), p.get("ci_high")
    if p.get("diff") is None or lo is None or hi is None:
        return "undefined"
    return "lifted" if lo > 0 else "lowered" if hi < 0 else "did not clearly change"


def _phrase(direction: str, metric: str, value: str) -> str:
    if direction == "did not clearly change":
        return f"did not clearly change {metric} ({value})"
    return f"{direction} {metric} by {value}"


def verdict_line(res: dict[str, Any], arm: str, versus: str, what: str | None = None,
                 versus_name: str | None = None) -> str:
    """E.g. "Verdict: BC lifted within-probe AUROC by +0.31 [+0.23, +0.38] and lifted crew win rate by +50 pp
    [+25, +75] over the untrained student (paired 95% intervals, 12 seeds)." Each verb is read from its
    interval: lifted (above 0), lowered (below 0), "did not clearly change ... (+0.06 [-0.03, +0.15])" (it
    holds 0)."""
    what = what or arm
    versus_name = versus_name or versus
    parts = []
    a = paired_auroc(res, arm, versus)
    if a is not None and _direction(a) != "undefined":
        parts.append(_phrase(_direction(a), "within-probe AUROC",
                             f"{a['diff']:+.2f} [{a['ci_low']:+.2f}, {a['ci_high']:+.2f}]"))
    w = paired_wins(res, arm, versus)
    if w is not None and w.get("n_pairs") and _direction(w) != "undefined":
        parts.append(_phrase(_direction(w), "crew win rate", f"{100 * w['diff']:+.0f} pp "
                                                             f"[{100 * w['ci_low']:+.0f}, "
                                                             f"{100 * w['ci_high']:+.0f}]"))
    if not parts:
        return f"Verdict: no paired comparison of {what} with {versus_name} in these results."
    n = (a or {}).get("n_pairs") or (w or {}).get("n_pairs")
    return (f"Verdict: {what} " + " and ".join(parts) + f" over {versus_name} (paired 95% intervals, {n} "
                                                        f"pairs of "
            "matches).")
