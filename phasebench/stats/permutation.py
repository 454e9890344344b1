"""The tests of "no phase effect": the within-row permutation null of the gap (phase labels
shuffled within each base item, exchangeable however much items differ in difficulty), the
gap's interval those same shuffles give (:func:`gap_test`), and Cochran's Q, the classical
paired test for one binary outcome under P conditions."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats as sps

from phasebench.design.settings import ALPHA
from phasebench.stats._common import _BLOCK_ELEMENTS, _check_matrix, _quiet, _ratio

#: Two gaps closer than this are equal (sums of float means; 0/1 data gives exact ties).
_TOL = 1e-12


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


class GapTest(NamedTuple):
    """The gap's permutation test and the interval it inverts to (:func:`gap_test`)."""

    p: float
    null_mean: float
    null_q95: float
    #: The test's critical value: the gap is significant exactly when it exceeds it.
    critical: float
    #: ``(max(0, gap - critical), gap + critical)``: above 0 exactly when significant.
    interval: tuple[float, float]
    #: ``p <= alpha``, decided on the count of null gaps, as the interval's lower end is.
    significant: bool


def gap_test(
    m: np.ndarray, acc_p: np.ndarray, n_perm: int, rng: np.random.Generator, alpha: float = ALPHA
) -> GapTest:
    """The gap's permutation test from ``n_perm`` within-row shuffles of the phase matrix ``m``
    (NaN throughout for ``n_perm`` 0), and the interval the same draws give the gap.

    ``p = (1 + #{null gap >= gap}) / (1 + n_perm)``, never 0 and exact at any ``n_perm``.
    The critical value is the null's ``k``-th largest gap, ``k = floor(alpha (1 + n_perm))``:
    ``p <= alpha`` exactly when the gap exceeds it (at most ``k - 1`` null gaps reach the
    gap). The interval is ``[max(0, gap - critical), gap + critical]``: the observed gap
    differs from the true one by at most the range of the phases' noise, and with no phase
    effect that range is what the shuffles draw, so the interval covers the true gap about
    ``1 - alpha`` of the time (``benchmarks/gap_interval.py`` measures it). Its lower end is
    above 0 exactly when ``p <= alpha``: interval and test cannot disagree. ``k < 1`` (too few
    shuffles to reach ``alpha``) gives a critical value of +inf: never significant."""
    null = _permutation_null(m, n_perm, rng)
    if not len(null):
        return GapTest(math.nan, math.nan, math.nan, math.nan, (math.nan, math.nan), False)
    gap = float(_gap(np.asarray(acc_p, dtype=float)))
    exceed = int(np.sum(null >= gap - _TOL))
    p = (1 + exceed) / (1 + len(null))
    k = math.floor(alpha * (1 + len(null)) + _TOL)
    critical = float(np.sort(null)[len(null) - k]) if k >= 1 else math.inf
    # p <= alpha  <=>  exceed <= k - 1  <=>  the k-th largest null gap < gap - _TOL
    lower = gap - critical if gap - critical > _TOL else 0.0
    return GapTest(
        p,
        float(np.mean(null)),
        float(np.quantile(null, 0.95)),
        critical,
        (lower, gap + critical),
        exceed <= k - 1,
    )


def _permutation_null(m: np.ndarray, n_perm: int, rng: np.random.Generator) -> np.ndarray:
    """The gaps of ``n_perm`` within-row shuffles of ``m``."""
    n, modulus = m.shape
    gaps = np.empty(n_perm)
    block = max(1, _BLOCK_ELEMENTS // (n * modulus))
    done = 0
    while done < n_perm:
        c = min(block, n_perm - done)
        order = rng.random((c, n, modulus)).argsort(axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(m, (c, n, modulus)), order, axis=2)
        present = ~np.isnan(shuffled)
        means = _ratio(np.where(present, shuffled, 0.0).sum(axis=1), present.sum(axis=1))
        gaps[done : done + c] = _gap(means)
        done += c
    return gaps


def _gap(means: np.ndarray) -> np.ndarray:
    with _quiet():
        return np.nanmax(means, axis=-1) - np.nanmin(means, axis=-1)
