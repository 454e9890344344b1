"""Periods: folding a per-phase profile onto the divisors of P, its spectrum, the smallest
period that explains it up to noise, and the code family's phase-lock rate."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

from phasebench.design.settings import ALPHA, ALPHA_STRICT
from phasebench.errors import StatsError
from phasebench.stats._common import _quiet


def divisors(modulus: int) -> list[int]:
    """Divisors of the modulus, ascending (per-phase results fold exactly onto each)."""
    return [d for d in range(1, modulus + 1) if modulus % d == 0]


def fold(profile: Sequence[float]) -> dict[int, list[float]]:
    """Fold a per-phase profile onto every divisor ``d > 1`` of P: residue r gets the mean of the
    phases ``p`` with ``p % d == r`` (phase mod d = (phase mod P) mod d, so results at modulus P
    fold exactly onto every divisor of P; ``docs/definitions.md``)."""
    x = np.asarray(profile, dtype=float)
    modulus = len(x)
    out = {}
    with _quiet():
        for d in divisors(modulus)[1:]:
            out[d] = [float(np.nanmean(x[r::d])) for r in range(d)]
    return out


def period_spectrum(profile: Sequence[float]) -> dict[int, float]:
    """Share of the profile's variation (DFT power without the mean) per *smallest* period.

    DFT bin k over P phases is a wave whose smallest integer period is ``P / gcd(k, P)``. At
    P = 8 a period-4 square profile ``[1,1,0,0,1,1,0,0]`` puts all its power in bins 2 and 6
    (period 4); a one-weak-phase-in-four profile ``[0,1,1,1,0,1,1,1]`` puts 2/3 there and 1/3 in
    bin 4 (period 2), which is why the period is not simply the strongest bin.
    A flat profile has no variation: every share is 0.
    """
    x = np.asarray(profile, dtype=float)
    modulus = len(x)
    power = np.abs(np.fft.fft(x - x.mean())) ** 2
    total = power[1:].sum()
    out = {d: 0.0 for d in divisors(modulus)[1:]}
    if total <= 1e-24:
        return out
    for k in range(1, modulus):
        out[modulus // math.gcd(k, modulus)] += float(power[k] / total)
    return out


def dominant_period(
    profile: Sequence[float],
    cov: np.ndarray | None,
    *,
    alpha: float = ALPHA,
    n_base: int | None = None,
) -> int | None:
    """The divisor S >= 2 of P whose period-S fold best explains the profile.

    Candidates are the divisors whose fold explains the profile up to noise: the residual
    ``profile - fold_S(profile)`` (the inverse DFT of the bins that are *not* multiples of P/S)
    is tested with ``W = r' pinv(cov_r) r``, ``cov`` being the covariance of the per-phase
    estimates (from the paired bootstrap over ``n_base`` items): Hotelling's T², F-distributed
    with rank(cov_r) and ``n_base - rank`` degrees of freedom if the profile truly has period S
    (chi-squared without ``n_base``); S = P always fits. Of the candidates, the one whose fold
    departs most significantly from a flat profile (the fold less its mean, tested the same
    way) is taken, then replaced by its smallest fitting divisor if what it adds to that
    divisor's fold is not significant on its own. So a stride-2 effect is named 2, a stride-4
    effect (square or one weak phase in four) 4, and at P = 24 a stride-3 effect 3, not 2:
    there a wrong short period shares no DFT bin with the true one, and its residual test,
    spread over 22 degrees of freedom, can fail to reject it (the smallest fitting divisor
    alone named the reference sweep's stride-3 model 2 and its stride-4 model 3). The F test
    matters with few items and many phases: with the chi-squared test, simulated true periods
    at P = 24 and 32 base items were named too long in 35-98% of runs, with F in 0-10%
    (``benchmarks/period_rule.py``, ``docs/stats.md``). Without ``cov`` only exact fits are
    candidates and the smallest is taken. A flat profile gives None. Callers gate this on the
    gap being significant (a period of noise is not a period).
    """
    x = np.asarray(profile, dtype=float)
    if np.isnan(x).any() or np.ptp(x) <= 1e-12:
        return None
    return _choose_period(x, cov, _residual_projectors(len(x)), alpha, n_base)


def consistent_periods(
    profile: Sequence[float],
    cov: np.ndarray | None,
    *,
    alpha: float = ALPHA,
    n_base: int | None = None,
) -> list[int]:
    """The periods the data are consistent with: the one :func:`dominant_period` names at
    ``alpha`` first, then the one it names at the stricter :data:`ALPHA_STRICT` if that is
    another (empty for a flat profile).

    Every step of the rule is a test at a level, and a name that changes with the level is one
    the data do not decide: ChunkPress c = 6 at 36 base items repeats every 6 phases by eye, and
    its period-6 fold misses the profile at p = 0.03, so it is named 12 at 0.05 and 6 at 0.01;
    both are shown. ``benchmarks/period_rule.py`` measures how often the true period is among
    them (``docs/stats.md``)."""
    x = np.asarray(profile, dtype=float)
    if np.isnan(x).any() or np.ptp(x) <= 1e-12:
        return []
    return _named_at_levels(x, cov, _residual_projectors(len(x)), alpha, n_base)


def _named_at_levels(
    x: np.ndarray,
    cov: np.ndarray | None,
    residuals: dict[int, np.ndarray],
    alpha: float,
    n: int | None,
) -> list[int]:
    """The period named at ``alpha``, then the one named at :data:`ALPHA_STRICT` if another."""
    named = [_choose_period(x, cov, residuals, a, n) for a in (alpha, min(alpha, ALPHA_STRICT))]
    return [s for i, s in enumerate(named) if s is not None and s not in named[:i]]


def phase_lock_rate(margins: np.ndarray, stride: int, *, require_flip: bool = False) -> float:
    """Share of sign patterns that repeat with period ``stride``: the code family's phase-lock
    rate (``docs/definitions.md``).

    ``margins`` is ``n_patterns x n_pad_lengths`` (one row per (item, padding style), columns the
    padding lengths in increasing token order, consecutive). A row repeats with period S when
    ``sign(m[j]) == sign(m[j + S])`` for every j where both are present. A constant sign pattern
    repeats with every period; ``require_flip=True`` counts only patterns that change sign (so a
    model that is always right is not called phase-locked). Rows with no comparable pair are
    left out; no rows gives NaN.
    """
    m = np.asarray(margins, dtype=float)
    if m.ndim != 2:
        raise StatsError(f"margins must be a 2-D array patterns x pad lengths (got {m.ndim}-D)")
    stride = int(stride)
    if stride < 1:
        raise StatsError(f"stride must be >= 1 (got {stride})")
    if m.shape[1] <= stride:
        return math.nan
    sign = np.sign(m)
    a, b = sign[:, :-stride], sign[:, stride:]
    both = ~np.isnan(a) & ~np.isnan(b)
    usable = both.any(axis=1)
    agree = np.where(both, a == b, True).all(axis=1)
    if require_flip:
        finite = np.where(np.isnan(sign), 0.0, sign)
        flips = (finite.max(axis=1) > 0) & (finite.min(axis=1) < 0)
        agree &= flips
    if not usable.any():
        return math.nan
    return float(agree[usable].mean())


def _phase_mean_cov(boot: np.ndarray, m: np.ndarray) -> np.ndarray | None:
    """Covariance of the per-phase means: from bootstrap replicates when there are enough,
    else from complete rows (column covariance / n)."""
    modulus = m.shape[1]
    good = boot[~np.isnan(boot).any(axis=1)] if boot.size else boot
    if len(good) > 2 * modulus:
        return np.cov(good, rowvar=False)
    rows = m[~np.isnan(m).any(axis=1)]
    if len(rows) >= 2:
        return np.cov(rows, rowvar=False) / len(rows)
    return None


def _residual_projectors(modulus: int) -> dict[int, np.ndarray]:
    """For each divisor S >= 2 of P, the projector onto ``profile - fold_S(profile)``: the
    inverse DFT of the bins that are not multiples of P/S (a real symmetric matrix)."""
    basis = np.fft.fft(np.eye(modulus), axis=0)
    out = {}
    for s in divisors(modulus)[1:]:
        keep_out = (np.arange(modulus) % (modulus // s)) != 0  # bins that are not period-S
        out[s] = np.fft.ifft(basis * keep_out[:, None], axis=0).real
    return out


def _period_fit_p(
    profile: np.ndarray, cov: np.ndarray | None, n: int | None = None
) -> dict[int, float]:
    x = np.asarray(profile, dtype=float)
    modulus = len(x)
    if np.isnan(x).any():
        return {}
    return {
        s: 1.0 if s == modulus else _residual_p(x, cov, proj, n)
        for s, proj in _residual_projectors(modulus).items()
    }


def _wald_logp(x: np.ndarray, cov: np.ndarray, proj: np.ndarray, n: int | None = None) -> float:
    """log p-value that ``proj @ x`` is noise under ``cov`` (log, so that strong effects at two
    periods still compare): ``W = r' pinv(cov_r) r`` on the projected covariance's own rank k.

    With ``n`` base items, ``cov`` is an estimate from those items and W is Hotelling's T²:
    ``W (n - k) / (k (n - 1))`` is F(k, n - k). The chi-squared limit (``n`` None, or n <= k)
    ignores that the covariance is estimated and rejects too often with few items and many
    phases (at 36 items and k = 6 its 5% test rejects about 1 in 8 true periods)."""
    r = proj @ x
    if np.max(np.abs(r)) <= 1e-12:
        return 0.0
    cov_r = proj @ cov @ proj.T
    scale = np.max(np.abs(np.diag(cov_r))) if cov_r.size else 0.0
    if scale <= 0:
        return -math.inf
    rank = int(np.linalg.matrix_rank(cov_r, tol=1e-9 * scale))
    if not rank:
        return -math.inf
    stat = float(r @ np.linalg.pinv(cov_r, rcond=1e-9, hermitian=True) @ r)
    if n is not None and n > rank:
        return float(sps.f.logsf(stat * (n - rank) / (rank * (n - 1)), rank, n - rank))
    return float(sps.chi2.logsf(stat, rank))


def _residual_p(
    x: np.ndarray, cov: np.ndarray | None, proj: np.ndarray, n: int | None = None
) -> float:
    """p-value that the residual ``proj @ x`` is noise under the covariance ``cov``: 1 when the
    residual vanishes, 0 when it does not and there is no covariance to judge it by."""
    if np.max(np.abs(proj @ x)) <= 1e-12:
        return 1.0
    if cov is None:
        return 0.0
    return math.exp(_wald_logp(x, cov, proj, n))


def _choose_period(
    x: np.ndarray,
    cov: np.ndarray | None,
    residuals: dict[int, np.ndarray],
    alpha: float,
    n: int | None = None,
) -> int | None:
    """Of the periods whose fold fits (residual not rejected at ``alpha``), the one whose fold
    departs most significantly from flat, then the smallest of its divisors that fits too,
    whose own fold departs significantly from flat, and that it does not beat significantly
    (the part of its fold beyond the divisor's tested on its own). Without ``cov`` only exact
    fits count and the smallest is taken."""
    fits = {s: _residual_p(x, cov, res, n) for s, res in residuals.items()}
    fits[len(x)] = 1.0  # the full profile always fits itself
    candidates = [s for s in sorted(fits) if fits[s] > alpha]
    if not candidates:
        return None
    if cov is None:
        return candidates[0]
    size = len(x)
    flat = np.full((size, size), 1.0 / size)
    explained = {s: _wald_logp(x, cov, np.eye(size) - residuals[s] - flat, n) for s in candidates}
    best = min(candidates, key=lambda s: (explained[s], s))
    for d in candidates:
        # a divisor takes over only if its own fold is an effect (a flat fold explains
        # nothing, however little the rest is significant) and the rest is not significant
        if d < best and best % d == 0 and explained[d] <= math.log(alpha):
            if _wald_logp(x, cov, residuals[d] - residuals[best], n) > math.log(alpha):
                return d
    return best


def _subset_residuals(residues: Sequence[int], modulus: int) -> dict[int, np.ndarray]:
    """For a profile over a subset of the residues mod ``modulus``: per divisor S, the projector
    onto the profile minus its mean within each class of ``residue mod S`` (on the full set of
    residues the same projection as the DFT one)."""
    r = np.asarray(residues)
    out = {}
    for s in divisors(modulus)[1:]:
        classes = r % s
        average = (classes[:, None] == classes[None, :]).astype(float)
        average /= average.sum(axis=1, keepdims=True)
        out[s] = np.eye(len(r)) - average
    return out


def _subset_period_fit_p(
    profile: np.ndarray,
    cov: np.ndarray | None,
    residues: Sequence[int],
    modulus: int,
    n: int | None = None,
) -> dict[int, float]:
    """:func:`_period_fit_p` for a profile over a subset of the residues: period S fits when the
    profile is a function of ``residue mod S`` up to noise; a divisor whose classes are all
    single residues cannot be told from P and fits trivially."""
    x = np.asarray(profile, dtype=float)
    residuals = _subset_residuals(residues, modulus)
    return {s: _residual_p(x, cov, res, n) for s, res in residuals.items()}


def _subset_periods(
    profile: np.ndarray,
    cov: np.ndarray | None,
    residues: Sequence[int],
    modulus: int,
    alpha: float,
    n: int | None = None,
) -> list[int]:
    """:func:`consistent_periods` for a profile over a subset of the residues mod ``modulus``."""
    x = np.asarray(profile, dtype=float)
    if np.isnan(x).any() or np.ptp(x) <= 1e-12:
        return []
    return _named_at_levels(x, cov, _subset_residuals(residues, modulus), alpha, n)
