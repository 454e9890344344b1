"""The cross-fitted worst phase: chosen on one half of the base items, measured on the other."""

from __future__ import annotations

import math

import numpy as np

from phasebench.design.settings import ALPHA, N_BOOT, SEED
from phasebench.rng import derive_rng
from phasebench.stats._common import _BLOCK_ELEMENTS, _quiet, _ratio
from phasebench.stats.intervals import _percentile

#: Random half-splits averaged into the cross-fitted worst phase's point estimate, and into
#: each of its bootstrap replicates (fewer there, for speed: with 4 the interval's measured
#: coverage is 94-99% and it is narrower than with 1, see tests/stats/test_stats.py).
CROSSFIT_SPLITS = 200


CROSSFIT_BOOT_SPLITS = 4


def crossfit_worst(
    filled: np.ndarray,
    present: np.ndarray,
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> tuple[float, tuple[float, float]]:
    """The worst phase's accuracy, cross-fitted: split the base items at random into two
    halves, pick the worst phase on one half and measure it on the other (both ways), and
    average over :data:`CROSSFIT_SPLITS` splits.

    The plain minimum picks and measures on the same data, so it is biased low. Here the
    measurement is independent of the choice, so the estimate is unbiased for the phase the
    choice lands on; when phases tie (no phase effect) that is any of them and the estimate is
    unbiased for the common value, and when one phase is clearly worst it is found. Its price is
    an upward bias when the true worst phase is close to others and the halves are too small to
    find it. ``filled`` is the phase matrix with NaN as 0 and ``present`` says where values are.

    The interval is a paired-bootstrap percentile interval: each replicate resamples the base
    items and averages :data:`CROSSFIT_BOOT_SPLITS` fresh splits. Streams come from ``seed``.
    Returns NaN for fewer than 2 items.
    """
    n, modulus = filled.shape
    if n < 2:
        return math.nan, (math.nan, math.nan)
    presentf = present.astype(float)
    rng = derive_rng(seed, "stats", "crossfit")
    halves = _random_halves(rng, CROSSFIT_SPLITS, n)
    ones = np.ones((CROSSFIT_SPLITS, n))
    point = float(np.nanmean(_crossfit_values(filled, presentf, ones, halves)))
    if n_boot == 0:
        return point, (math.nan, math.nan)
    boot_rng = derive_rng(seed, "stats", "crossfit", "bootstrap")
    per = CROSSFIT_BOOT_SPLITS
    values = np.empty(n_boot)
    block = max(1, _BLOCK_ELEMENTS // (n * per))
    for start in range(0, n_boot, block):
        k = min(block, n_boot - start)
        weights = boot_rng.multinomial(n, np.full(n, 1.0 / n), size=k).astype(float)
        halves = _random_halves(boot_rng, k * per, n)
        split_values = _crossfit_values(filled, presentf, np.repeat(weights, per, axis=0), halves)
        with _quiet():
            values[start : start + k] = np.nanmean(split_values.reshape(k, per), axis=1)
    with _quiet():
        return point, _percentile(values, alpha)


def _random_halves(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    """``k`` random splits of ``n`` items into two halves (True = first half), as a k x n mask."""
    order = rng.random((k, n)).argsort(axis=1)
    return order < n // 2


def _crossfit_values(
    filled: np.ndarray, presentf: np.ndarray, weights: np.ndarray, halves: np.ndarray
) -> np.ndarray:
    """Cross-fitted worst phase for each (item weights, half split) pair, vectorised."""
    values = []
    for half in (halves, ~halves):
        w_pick, w_measure = weights * half, weights * ~half
        pick = _ratio(w_pick @ filled, w_pick @ presentf)
        measure = _ratio(w_measure @ filled, w_measure @ presentf)
        with _quiet():
            usable = ~np.isnan(pick).all(axis=1)
            choice = np.nanargmin(np.where(usable[:, None], pick, 0.0), axis=1)
        value = measure[np.arange(len(choice)), choice]
        values.append(np.where(usable, value, np.nan))
    with _quiet():
        return np.nanmean(np.stack(values), axis=0)
