"""Statistics more than one stage reports: the Wilson interval of a proportion and match-level bootstrap
resampling (collect's summary, eval's metrics)."""

from __future__ import annotations

import math
from typing import Any


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson interval of a proportion k/n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def bootstrap_indices(m: int, resamples: int, seed: int) -> Any:
    """(resamples, m) indices drawn with replacement; the same for the same (m, resamples, seed)."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, m, size=(resamples, m))


def percentile_interval(samples: Any) -> tuple[float | None, float | None]:
    """The central 95% of bootstrap samples; (None, None) when there are none."""
    import numpy as np

    if samples.size == 0:
        return None, None
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)


def fmt_estimate(e: dict[str, Any], percent: bool, digits: tuple[int, int] = (1, 3), with_n: bool = True,
                 undefined: str = "undefined") -> str:
    """``value [low, high] n=N`` of an estimate dict (value, ci_low, ci_high, n); ``digits``: decimals for
    percentages and for the rest; an undefined value reads ``<undefined> (n=N)``."""
    if e["value"] is None:
        return f"{undefined} (n={e['n']})"
    k, d = (100.0, digits[0]) if percent else (1.0, digits[1])
    lo = "?" if e["ci_low"] is None else f"{e['ci_low'] * k:.{d}f}"
    hi = "?" if e["ci_high"] is None else f"{e['ci_high'] * k:.{d}f}"
    return f"{e['value'] * k:.{d}f} [{lo}, {hi}]" + (f" n={e['n']}" if with_n else "")
