"""The statistics every report shares: one estimate type (a value with its 95% interval and n), the Wilson
interval of a proportion, one percentile bootstrap and one paired bootstrap, and the estimates built on them:
a proportion, a ratio of sums over matches and a mean per match, each with its interval (eval's vote metrics,
its detection metrics, the claims report, collect's summary, forks). Seeded: the same data and seed give the
same interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Estimate:
    """A number with its 95% interval; ``value`` None when undefined (e.g. precision without ejections).
    ``method`` names the interval (wilson, bootstrap, paired_bootstrap, count)."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def bootstrap(statistic: Callable[[Any], Any], m: int, resamples: int = 2000,
              seed: int = 0) -> tuple[float | None, float | None]:
    """The 95% percentile interval of ``statistic`` over ``resamples`` resamples of ``m`` units (matches, or
    pairs) drawn with replacement. ``statistic`` gets the (resamples, m) index array and returns one value per
    resample (vectorised, or a list); a resample where it is undefined (None or NaN) is left out."""
    import numpy as np

    if m == 0:
        return None, None
    values = statistic(bootstrap_indices(m, resamples, seed))
    s = np.asarray([np.nan if v is None else v for v in values], float)
    return percentile_interval(s[~np.isnan(s)])


def paired_bootstrap(a: Mapping[Any, Any], b: Mapping[Any, Any],
                     diff: Callable[[list[Any], list[Any]], float | None], resamples: int = 2000,
                     seed: int = 0) -> tuple[list[Any], float | None, float | None, float | None]:
    """``diff(a's items, b's items)`` over the keys both have (the pairs: same seed and imposter model, or the
    same match), with the 95% interval of a bootstrap over the pairs. Returns (keys, difference, low, high);
    the difference is None without pairs or where ``diff`` is undefined (then no interval)."""
    keys = sorted(set(a) & set(b), key=str)

    def of(ks: list[Any]) -> float | None:
        return diff([a[k] for k in ks], [b[k] for k in ks])

    d = of(keys) if keys else None
    if d is None:
        return keys, None, None, None
    lo, hi = bootstrap(lambda idx: [of([keys[i] for i in row]) for row in idx], len(keys), resamples, seed)
    return keys, d, lo, hi


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


def proportion(k: int, n: int) -> Estimate:
    """k/n with its Wilson interval; undefined for n = 0."""
    if n == 0:
        return Estimate(None, None, None, 0, "wilson")
    lo, hi = wilson(k, n)
    return Estimate(k / n, lo, hi, n, "wilson")


def ratio_bootstrap(
    num: Iterable[float], den: Iterable[float], resamples: int = 2000, seed: int = 0
) -> Estimate:
    """sum(num) / sum(den) over matches, with a match-level bootstrap interval; ``n`` = sum(den).

    Undefined (value None, n 0) when the denominator is 0 (e.g. precision of an arm that never ejected
    anyone). Resamples whose denominator is 0 are left out of the interval (the ratio is undefined there)."""
    import numpy as np

    a, b = np.asarray(list(num), float), np.asarray(list(den), float)
    if b.sum() == 0:
        return Estimate(None, None, None, 0, "bootstrap")

    def ratio(idx: Any) -> Any:
        ns, ds = a[idx].sum(axis=1), b[idx].sum(axis=1)
        return np.divide(ns, ds, out=np.full(len(ds), np.nan), where=ds > 0)

    lo, hi = bootstrap(ratio, len(a), resamples, seed)
    return Estimate(float(a.sum() / b.sum()), lo, hi, int(b.sum()), "bootstrap")


def mean_bootstrap(x: Iterable[float], resamples: int = 2000, seed: int = 0) -> Estimate:
    """The mean per match with a match-level bootstrap interval; ``n`` = matches."""
    import numpy as np

    a = np.asarray(list(x), float)
    if a.size == 0:
        return Estimate(None, None, None, 0, "bootstrap")
    lo, hi = bootstrap(lambda idx: a[idx].mean(axis=1), len(a), resamples, seed)
    return Estimate(float(a.mean()), lo, hi, int(a.size), "bootstrap")
