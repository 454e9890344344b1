"""Intervals: Wilson for one phase's 0/1 accuracy, t for a mean of scores, and the paired
bootstrap over base items (one resample of rows drives every phase) with its percentile and
quantile helpers."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from phasebench.design.checks import check_alpha
from phasebench.design.settings import ALPHA
from phasebench.errors import StatsError
from phasebench.stats._common import _ratio


def wilson(k: float, n: float, alpha: float = ALPHA) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes out of ``n``.

    Wilson rather than the normal (Wald) interval because per-phase accuracies sit near 0 or 1,
    where Wald collapses to a point. The closed form (the one
    ``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` returns, without its costly
    exact test) with ``z`` from :func:`scipy.stats.norm.isf`. ``n == 0`` gives ``(0.0, 1.0)``:
    no information, which is also the limit of the formula.
    """
    check_alpha(alpha)
    n_int, k_int = int(round(n)), int(round(k))
    if n_int < 0 or k_int < 0 or k_int > n_int:
        raise StatsError(f"wilson needs 0 <= k <= n (got k={k}, n={n})")
    if n_int == 0:
        return (0.0, 1.0)
    z = float(sps.norm.isf(alpha / 2))
    p = k_int / n_int
    denom = 1 + z * z / n_int
    center = (p + z * z / (2 * n_int)) / denom
    half = z * math.sqrt(p * (1 - p) / n_int + z * z / (4 * n_int * n_int)) / denom
    lo = 0.0 if k_int == 0 else max(0.0, center - half)
    hi = 1.0 if k_int == n_int else min(1.0, center + half)
    return (lo, hi)


def _t_interval(values: np.ndarray, alpha: float) -> tuple[float, float]:
    if len(values) < 2:
        return (math.nan, math.nan)
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    if sd == 0:
        return (mean, mean)
    lo, hi = sps.t.interval(1 - alpha, len(values) - 1, loc=mean, scale=sd / math.sqrt(len(values)))
    return (float(lo), float(hi))


def _percentile(values: np.ndarray, alpha: float) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if not len(values):
        return (math.nan, math.nan)
    lo, hi = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))


def _quantile(values: np.ndarray, q: float) -> float:
    values = values[~np.isnan(values)]
    return float(np.quantile(values, q)) if len(values) else math.nan


def _bootstrap_phase_means(
    filled: np.ndarray, present: np.ndarray, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    n = filled.shape[0]
    if n_boot == 0:
        return np.empty((0, filled.shape[1]))
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
    return _ratio(weights @ filled, weights @ present.astype(float))
