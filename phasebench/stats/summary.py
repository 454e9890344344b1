"""The summary of one phase matrix: every statistic of one (task, length) at once."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from phasebench.design.checks import check_alpha, check_modulus
from phasebench.design.settings import ALPHA, N_BOOT, N_PERM, SEED
from phasebench.errors import StatsError
from phasebench.rng import derive_rng
from phasebench.stats._common import (
    _check_matrix,
    _jsonable,
    _quiet,
    _ratio,
)
from phasebench.stats.crossfit import crossfit_worst
from phasebench.stats.intervals import (
    _bootstrap_phase_means,
    _percentile,
    _quantile,
    _t_interval,
    wilson,
)
from phasebench.stats.periods import (
    _period_fit_p,
    _phase_mean_cov,
    _subset_period_fit_p,
    _subset_periods,
    consistent_periods,
    fold,
    period_spectrum,
)
from phasebench.stats.permutation import cochran_q, gap_test


def phase_matrix(
    base_ids: Sequence[Hashable],
    phases: Sequence[int],
    values: Sequence[float],
    modulus: int,
) -> np.ndarray:
    """Arrange per-sample results as an ``n_base x modulus`` array, NaN where missing.

    Rows follow the sorted base ids (not the input order), so the bootstrap and permutation
    streams, which index rows, do not depend on the order lm-eval happened to write samples in.
    A (base item, phase) pair given twice is an error: it would silently weight one item double.
    """
    modulus = check_modulus(modulus)
    if not (len(base_ids) == len(phases) == len(values)):
        raise StatsError(
            "base_ids, phases and values must have the same length "
            f"(got {len(base_ids)}, {len(phases)}, {len(values)})"
        )
    try:
        order = sorted(set(base_ids))
    except TypeError:
        order = sorted(set(base_ids), key=lambda b: (type(b).__name__, str(b)))
    row_of = {b: i for i, b in enumerate(order)}
    out = np.full((len(order), modulus), np.nan)
    seen = np.zeros(out.shape, dtype=bool)
    for base, phase, value in zip(base_ids, phases, values, strict=True):
        p = int(phase)
        if p != phase or not 0 <= p < modulus:
            raise StatsError(
                f"phase must be an integer in 0..{modulus - 1} (got {phase!r} for base item "
                f"{base!r}); is the modulus right?"
            )
        r = row_of[base]
        if seen[r, p]:
            name = base.item() if isinstance(base, np.generic) else base
            raise StatsError(
                f"base item {name!r} has two results at phase {p}; pass one sample per "
                "(base item, phase) (without lm-eval repeats), or use summarize_samples, "
                "which averages a unit's repeated visits of a phase"
            )
        seen[r, p] = True
        out[r, p] = np.nan if value is None else float(value)
    return out


@dataclass(frozen=True)
class PhaseSummary:
    """Every number phasebench reports for one phase matrix (one task at one length).

    Accuracies are fractions in 0..1 (for ``binary=False`` they are means of the value, e.g. a
    code margin). Intervals are ``(lo, hi)`` at level ``1 - alpha``; NaN where undefined (no
    bootstrap requested, a single phase with data, ...). ``lowest_phase`` is the lowest
    phase's *accuracy* (the plain minimum); ``lowest_phase_index`` names the phase (ties go to
    the lowest index).

    The lowest phase is the minimum of P noisy means and so biased low, the more so the fewer
    the base items and the more phases tie; the worst phase, ``worst_phase_crossfit``, removes
    that selection bias (see :func:`crossfit_worst` for what it costs).
    """

    acc: float
    acc_ci: tuple[float, float]
    lowest_phase: float
    lowest_phase_ci: tuple[float, float]
    lowest_phase_index: int | None
    #: Cross-fitted worst phase (:func:`crossfit_worst`) and its paired-bootstrap interval:
    #: the worst phase chosen on one half of the base items and measured on the other.
    worst_phase_crossfit: float
    worst_phase_crossfit_ci: tuple[float, float]
    best_phase: float
    best_phase_index: int | None
    gap: float
    gap_ci: tuple[float, float]
    p_value: float
    null_gap_mean: float
    null_gap_q95: float
    significant: bool
    cochran_q: float | None
    cochran_p: float | None
    dominant_period: int | None
    per_phase: list[dict[str, Any]]
    folded: dict[int, list[float]]
    # Additions beyond the contract.
    modulus: int = 0
    n_base: int = 0
    binary: bool = True
    alpha: float = ALPHA
    n_boot: int = 0
    n_perm: int = 0
    seed: int = SEED
    #: Share of the profile's variation whose smallest period is S (DFT power, DC excluded).
    spectrum: dict[int, float] = field(default_factory=dict)
    #: p-value of "the profile is periodic with period S" for each divisor S (Hotelling's T²
    #: on the bootstrap covariance, see :func:`dominant_period`).
    period_fit_p: dict[int, float] = field(default_factory=dict)
    #: Every period the data are consistent with, ``dominant_period`` first: the periods the
    #: rule names at ``alpha`` and at :data:`~phasebench.design.settings.ALPHA_STRICT`
    #: (:func:`consistent_periods`); empty where none is named. Two entries mean the data do
    #: not decide between them.
    consistent_periods: list[int] = field(default_factory=list)
    #: The residues the samples cover when they are a subset of 0..P-1 (a phase subset, for a
    #: long period), else None. Every statistic is then over these residues only (``per_phase``
    #: still lists every phase, the others with ``n`` 0), and a period S is found from how the
    #: profile folds over them.
    phases: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: plain floats, lists for intervals, ``None`` for NaN, string dict keys."""
        return _jsonable(asdict(self))


def summarize(
    matrix: np.ndarray,
    *,
    binary: bool = True,
    n_boot: int = N_BOOT,
    n_perm: int = N_PERM,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> PhaseSummary:
    """Summarize a phase matrix (rows = base items, columns = phases, NaN = missing).

    - average = mean of the per-phase accuracies (phase-balanced, so a phase with missing
      samples does not weigh less);
    - intervals come from a paired bootstrap over base items (one resample of rows drives
      every phase). The average is smooth: percentile interval. Worst and gap are not (a min
      or range of tied noisy means is biased, and percentile intervals of it cover the truth
      far less than nominal when phases tie, e.g. a square stride-4 profile). The lowest
      phase's interval is derived from a simultaneous band instead: c = the 1-alpha quantile
      of max_p |boot_p - est_p|, so every true phase mean lies in est_p +- c with probability
      ~1-alpha, and the true lowest in [min(est - c), min(est + c)]. Conservative by
      construction;
    - ``p_value``: permutation test of the gap, phase labels shuffled within each base item,
      ``(1 + #{null gap >= gap}) / (1 + n_perm)`` so it is never 0 and the test is exact at
      any ``n_perm``; ``significant`` is ``p_value <= alpha``;
    - ``gap_ci``: from the same shuffles (:func:`~phasebench.stats.permutation.gap_test`):
      gap +- the test's critical value, cut at 0 (and at 1 for 0/1 data), so its lower end is
      above 0 exactly when the gap is significant;
    - Cochran's Q on complete rows (binary only);
    - ``dominant_period``: see :func:`dominant_period`; None unless the gap is significant;
      ``consistent_periods``: it and any other period the data are consistent with.
    """
    m = _check_matrix(matrix, binary)
    check_alpha(alpha)
    if n_boot < 0 or n_perm < 0:
        raise StatsError(f"n_boot and n_perm must be >= 0 (got {n_boot}, {n_perm})")
    n, modulus = m.shape
    present = ~np.isnan(m)
    filled = np.where(present, m, 0.0)
    counts = present.sum(axis=0)
    acc_p = _ratio(filled.sum(axis=0), counts)

    covered = [p for p in range(modulus) if counts[p]]
    subset = covered if len(covered) < modulus else None
    per_phase = []
    for p in range(modulus):
        column = m[present[:, p], p]
        ci = wilson(column.sum(), len(column), alpha) if binary else _t_interval(column, alpha)
        per_phase.append({"phase": p, "acc": float(acc_p[p]), "ci": ci, "n": int(counts[p])})

    have = ~np.isnan(acc_p)
    acc = float(np.mean(acc_p[have]))
    lowest_i = int(np.nanargmin(acc_p))
    best_i = int(np.nanargmax(acc_p))
    lowest, best = float(acc_p[lowest_i]), float(acc_p[best_i])
    gap = best - lowest

    # Paired bootstrap: multinomial row weights are exactly "resample n rows with replacement".
    boot = _bootstrap_phase_means(filled, present, n_boot, derive_rng(seed, "stats", "bootstrap"))
    acc_ci = lowest_ci = (math.nan, math.nan)
    if boot.shape[0]:
        with _quiet():
            acc_ci = _percentile(np.nanmean(boot, axis=1), alpha)
            # Simultaneous band: every phase mean within +-c of its estimate with prob 1-alpha.
            c = _quantile(np.nanmax(np.abs(boot - acc_p), axis=1), 1 - alpha)
        lo_p, hi_p = acc_p - c, acc_p + c
        if binary:
            lo_p, hi_p = np.clip(lo_p, 0.0, 1.0), np.clip(hi_p, 0.0, 1.0)
        lowest_ci = (float(np.nanmin(lo_p)), float(np.nanmin(hi_p)))

    crossfit, crossfit_ci = crossfit_worst(filled, present, n_boot=n_boot, seed=seed, alpha=alpha)

    test = gap_test(m, acc_p, n_perm, derive_rng(seed, "stats", "permutation"), alpha)
    p_value, null_mean, null_q95 = test.p, test.null_mean, test.null_q95
    significant = bool(test.significant)
    gap_ci = test.interval
    if binary:
        gap_ci = (gap_ci[0], min(1.0, gap_ci[1]))

    q = q_p = None
    if binary:
        q, q_p = cochran_q(m)

    if subset is not None and len(subset) > 1:
        cols = np.array(subset)
        cov = _phase_mean_cov(boot[:, cols] if boot.size else boot, m[:, cols])
        fit_p = _subset_period_fit_p(acc_p[cols], cov, subset, modulus, n)
        periods = (
            _subset_periods(acc_p[cols], cov, subset, modulus, alpha, n) if significant else []
        )
    else:
        cov = _phase_mean_cov(boot, m)
        fit_p = _period_fit_p(acc_p, cov, n) if have.all() else {}
        periods = (
            consistent_periods(acc_p, cov, alpha=alpha, n_base=n)
            if significant and have.all()
            else []
        )

    return PhaseSummary(
        acc=acc,
        acc_ci=acc_ci,
        lowest_phase=lowest,
        lowest_phase_ci=lowest_ci,
        lowest_phase_index=lowest_i,
        worst_phase_crossfit=crossfit,
        worst_phase_crossfit_ci=crossfit_ci,
        best_phase=best,
        best_phase_index=best_i,
        gap=gap,
        gap_ci=gap_ci,
        p_value=p_value,
        null_gap_mean=null_mean,
        null_gap_q95=null_q95,
        significant=significant,
        cochran_q=q,
        cochran_p=q_p,
        dominant_period=periods[0] if periods else None,
        consistent_periods=periods,
        per_phase=per_phase,
        folded=fold(acc_p),
        modulus=modulus,
        n_base=n,
        binary=binary,
        alpha=alpha,
        n_boot=n_boot,
        n_perm=n_perm,
        seed=seed,
        spectrum=period_spectrum(acc_p) if have.all() else {},
        period_fit_p=fit_p,
        phases=subset,
    )
