"""The tests of "no phase effect": the within-row permutation null of the gap (phase labels
shuffled within each base item, exchangeable however much items differ in difficulty) and
Cochran's Q, the classical paired test for one binary outcome under P conditions."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from phasebench.stats._common import _BLOCK_ELEMENTS, _check_matrix, _quiet, _ratio


def cochran_q(matrix: np.ndarray) -> tuple[float, float]:
    """Cochran's Q for a binary ``n x P`` matrix; rows with a missing value are dropped.

    Returns ``(Q, p)`` with p from the chi-square distribution with P-1 degrees of freedom.
    When no row is discordant (every item all-correct or all-wrong) the statistic is 0/0: there
    is no evidence of a phase effect, reported as ``(0.0, 1.0)``.
    """
    m = _check_matrix(matrix, binary=True)
    rows = m[~np.isnan(m).any(axis=1)]
    k = m.shape[1]
    col = rows.sum(axis=0)
    row = rows.sum(axis=1)
    total = row.sum()
    denom = k * total - np.sum(row**2)
    if denom <= 0:
        return (0.0, 1.0)
    q = (k - 1) * (k * np.sum(col**2) - total**2) / denom
    return (float(q), float(sps.chi2.sf(q, k - 1)))


def gap_p_value(
    m: np.ndarray, acc_p: np.ndarray, n_perm: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """The gap's permutation test: ``(p, mean null gap, 95% quantile of null gaps)`` from
    ``n_perm`` within-row shuffles of the phase matrix ``m`` (NaN for ``n_perm`` 0).

    ``p = (1 + #{null at least as extreme}) / (1 + n_perm)``, never 0 and exact at any
    ``n_perm``. At least as extreme: a larger gap, or the same gap with at least the same spread
    of the profile; the tie-break keeps the test exact (any statistic of the shuffled matrix
    is) while making it less conservative on binary data, where equal gaps are common."""
    null, null_spread = _permutation_null(m, n_perm, rng)
    if not len(null):
        return math.nan, math.nan, math.nan
    gap_spread = _gap_and_spread(np.asarray(acc_p, dtype=float))
    gap, spread = float(gap_spread[0]), float(gap_spread[1])
    tied = np.abs(null - gap) <= 1e-12
    exceed = int(np.sum((null > gap + 1e-12) | (tied & (null_spread >= spread - 1e-12))))
    return (1 + exceed) / (1 + len(null)), float(np.mean(null)), float(np.quantile(null, 0.95))


def _permutation_null(
    m: np.ndarray, n_perm: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Gap and profile spread (sum of squared deviations of the per-phase means) of ``n_perm``
    within-row shuffles of ``m``."""
    n, modulus = m.shape
    gaps, spreads = np.empty(n_perm), np.empty(n_perm)
    block = max(1, _BLOCK_ELEMENTS // (n * modulus))
    done = 0
    while done < n_perm:
        c = min(block, n_perm - done)
        order = rng.random((c, n, modulus)).argsort(axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(m, (c, n, modulus)), order, axis=2)
        present = ~np.isnan(shuffled)
        means = _ratio(np.where(present, shuffled, 0.0).sum(axis=1), present.sum(axis=1))
        gaps[done : done + c], spreads[done : done + c] = _gap_and_spread(means)
        done += c
    return gaps, spreads


def _gap_and_spread(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with _quiet():
        gap = np.nanmax(means, axis=-1) - np.nanmin(means, axis=-1)
        spread = np.nansum((means - np.nanmean(means, axis=-1, keepdims=True)) ** 2, axis=-1)
    return gap, spread
