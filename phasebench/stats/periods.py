"""Periods: folding a per-phase profile onto the divisors of P, its spectrum, the smallest
period that explains it up to noise, and the code family's phase-lock rate."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

from phasebench.errors import StatsError
from phasebench.metrics import ALPHA
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
    profile: Sequence[float], cov: np.ndarray | None, *, alpha: float = ALPHA
) -> int | None:
    """The smallest divisor S >= 2 of P whose period-S fold explains the profile up to noise.

    For each S the residual ``profile - fold_S(profile)`` is the inverse DFT of the bins that are
    *not* multiples of P/S. With ``cov`` the covariance of the per-phase estimates (from the
    paired bootstrap), ``W = r' pinv(cov_r) r`` is chi-square with rank(cov_r) degrees of freedom
    if the profile truly has period S. S is accepted when that fit is not rejected at ``alpha``;
    S = P always fits. So a stride-2 effect is named 2, a stride-4 effect (square or one weak
    phase in four) 4, an effect without a shorter period P. A flat profile gives None. Callers
    gate this on the gap being significant (a period of noise is not a period).
    """
    x = np.asarray(profile, dtype=float)
    if np.isnan(x).any() or np.ptp(x) <= 1e-12:
        return None
    fits = _period_fit_p(x, cov)
    for s in divisors(len(x))[1:]:
        if fits.get(s, 0.0) > alpha:
            return s
    return len(x)


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


def _period_fit_p(profile: np.ndarray, cov: np.ndarray | None) -> dict[int, float]:
    x = np.asarray(profile, dtype=float)
    modulus = len(x)
    out: dict[int, float] = {}
    if np.isnan(x).any():
        return out
    basis = np.fft.fft(np.eye(modulus), axis=0)
    for s in divisors(modulus)[1:]:
        if s == modulus:
            out[s] = 1.0
            continue
        keep_out = (np.arange(modulus) % (modulus // s)) != 0  # bins that are not period-S
        # Residual projector: inverse DFT of the non-period-S bins (a real symmetric matrix).
        proj = np.fft.ifft(basis * keep_out[:, None], axis=0).real
        out[s] = _residual_p(x, cov, proj)
    return out


def _residual_p(x: np.ndarray, cov: np.ndarray | None, proj: np.ndarray) -> float:
    """p-value that the residual ``proj @ x`` is noise under the covariance ``cov`` (a
    chi-squared test on the residual's own rank): 1 when the residual vanishes, 0 when it does
    not and there is no covariance to judge it by."""
    r = proj @ x
    if np.max(np.abs(r)) <= 1e-12:
        return 1.0
    if cov is None:
        return 0.0
    cov_r = proj @ cov @ proj.T
    scale = np.max(np.abs(np.diag(cov_r))) if cov_r.size else 0.0
    if scale <= 0:
        return 0.0
    rank = int(np.linalg.matrix_rank(cov_r, tol=1e-9 * scale))
    stat = float(r @ np.linalg.pinv(cov_r, rcond=1e-9, hermitian=True) @ r)
    return float(sps.chi2.sf(stat, rank)) if rank else 0.0


def _subset_period_fit_p(
    profile: np.ndarray, cov: np.ndarray | None, residues: Sequence[int], modulus: int
) -> dict[int, float]:
    """:func:`_period_fit_p` for a profile over a subset of the residues mod ``modulus``:
    period S fits when the profile is a function of ``residue mod S`` up to noise. The
    residual is the profile minus its mean within each class of ``residue mod S`` (on the full
    set of residues this is the same projection as the DFT one); a divisor whose classes are
    all single residues cannot be told from P and fits trivially."""
    x = np.asarray(profile, dtype=float)
    r = np.asarray(residues)
    out: dict[int, float] = {}
    for s in divisors(modulus)[1:]:
        classes = r % s
        average = (classes[:, None] == classes[None, :]).astype(float)
        average /= average.sum(axis=1, keepdims=True)
        out[s] = _residual_p(x, cov, np.eye(len(x)) - average)
    return out


def _first_fit(fits: dict[int, float], alpha: float) -> int | None:
    """The smallest period whose fit is not rejected at ``alpha``."""
    for s in sorted(fits):
        if fits[s] > alpha:
            return s
    return None
