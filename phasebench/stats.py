"""Phase statistics (DESIGN section 4): numbers only, no I/O, no printing.

A gap between the best and the worst of P noisy estimates is never zero: the minimum of noisy
estimates is biased low and the range biased high. Everything here therefore comes with its
uncertainty, and a gap is only called significant when it clears a null distribution built from
the data itself.

Inputs are a *phase matrix*: one row per base item, one column per phase ``0..P-1``, NaN where a
rendering is missing. In the paired design every base item is rendered once at every phase, so
item difficulty is shared by a row and cancels in within-row comparisons:

- the bootstrap resamples **rows** (one resample of base items drives every phase at once);
- the null distribution permutes the phase labels **within each row** (exchangeable under "no
  phase effect" however much items differ in difficulty);
- Cochran's Q is the classical paired test for one binary outcome under P conditions.

Randomness comes only from :func:`phasebench.rng.derive_rng` keyed by the ``seed`` argument, so
the same matrix and seed give identical numbers.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from phasebench.errors import StatsError
from phasebench.metrics import ALPHA, N_BOOT, N_PERM, SEED, PhaseData, statistics
from phasebench.rng import derive_rng

__all__ = [
    "PhaseSummary",
    "cochran_q",
    "crossfit_worst",
    "divisors",
    "dominant_period",
    "fold",
    "period_spectrum",
    "phase_lock_rate",
    "phase_matrix",
    "power_curve",
    "power_n_base",
    "summarize",
    "summarize_samples",
    "wilson",
]

#: Elements of one (chunk x items x phases) block in the permutation loop; bounds peak memory.
_BLOCK_ELEMENTS = 2_000_000


def wilson(k: float, n: float, alpha: float = ALPHA) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes out of ``n``.

    Wilson rather than the normal (Wald) interval because per-phase accuracies sit near 0 or 1,
    where Wald collapses to a point. The closed form (the one
    ``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` returns, without its costly
    exact test) with ``z`` from :func:`scipy.stats.norm.isf`. ``n == 0`` gives ``(0.0, 1.0)``:
    no information, which is also the limit of the formula.
    """
    _check_alpha(alpha)
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
    modulus = _check_modulus(modulus)
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
    """Everything section 4 reports for one (task, length).

    Accuracies are fractions in 0..1 (for ``binary=False`` they are means of the value, e.g. a
    code margin). Intervals are ``(lo, hi)`` at level ``1 - alpha``; NaN where undefined (no
    bootstrap requested, a single phase with data, ...). ``worst_phase`` is the worst phase's
    *accuracy*; ``worst_phase_index`` names the phase (ties go to the lowest index).

    The plain worst phase is the minimum of P noisy means and so biased low, the more so the
    fewer the base items and the more phases tie; ``worst_phase_crossfit`` removes that
    selection bias (see :func:`crossfit_worst` for what it costs).
    """

    acc: float
    acc_ci: tuple[float, float]
    worst_phase: float
    worst_phase_ci: tuple[float, float]
    worst_phase_index: int | None
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
    alpha: float = 0.05
    n_boot: int = 0
    n_perm: int = 0
    seed: int = 0
    #: Share of the profile's variation whose smallest period is S (DFT power, DC excluded).
    spectrum: dict[int, float] = field(default_factory=dict)
    #: p-value of "the profile is periodic with period S" for each divisor S (Wald, see below).
    period_fit_p: dict[int, float] = field(default_factory=dict)
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
      far less than nominal when phases tie, e.g. a square stride-4 profile). They are derived
      from a simultaneous band instead: c = the 1-alpha quantile of max_p |boot_p - est_p|, so
      every true phase mean lies in est_p +- c with probability ~1-alpha, and the true worst
      in [min(est - c), min(est + c)]. The gap uses the same construction on the phase
      contrasts (phase minus average; item difficulty cancels): gap +- 2 c_contrast, clipped
      at 0. Conservative by construction;
    - ``p_value``: permutation test of the gap, phase labels shuffled within each base item,
      ``(1 + #{null at least as extreme}) / (1 + n_perm)`` so it is never 0 and the test is
      exact at any ``n_perm``; equal gaps (common with 0/1 data) are ordered by the spread of
      the profile; ``significant`` is ``p_value <= alpha``;
    - Cochran's Q on complete rows (binary only);
    - ``dominant_period``: see :func:`dominant_period`; None unless the gap is significant.
    """
    m = _check_matrix(matrix, binary)
    _check_alpha(alpha)
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
    worst_i = int(np.nanargmin(acc_p))
    best_i = int(np.nanargmax(acc_p))
    worst, best = float(acc_p[worst_i]), float(acc_p[best_i])
    gap = best - worst

    # Paired bootstrap: multinomial row weights are exactly "resample n rows with replacement".
    boot = _bootstrap_phase_means(filled, present, n_boot, derive_rng(seed, "stats", "bootstrap"))
    acc_ci = worst_ci = gap_ci = (math.nan, math.nan)
    if boot.shape[0]:
        with _quiet():
            acc_ci = _percentile(np.nanmean(boot, axis=1), alpha)
            # Simultaneous band: every phase mean within +-c of its estimate with prob 1-alpha.
            c = _quantile(np.nanmax(np.abs(boot - acc_p), axis=1), 1 - alpha)
            # Same for the phase contrasts (phase minus average of phases): item difficulty,
            # shared by a row, cancels, so the gap band is as tight as the pairing allows.
            contrast = boot - np.nanmean(boot, axis=1, keepdims=True)
            c_gap = _quantile(np.nanmax(np.abs(contrast - (acc_p - acc)), axis=1), 1 - alpha)
        lo_p, hi_p = acc_p - c, acc_p + c
        if binary:
            lo_p, hi_p = np.clip(lo_p, 0.0, 1.0), np.clip(hi_p, 0.0, 1.0)
        worst_ci = (float(np.nanmin(lo_p)), float(np.nanmin(hi_p)))
        gap_ci = (max(0.0, gap - 2 * c_gap), gap + 2 * c_gap)
        if binary:
            gap_ci = (gap_ci[0], min(1.0, gap_ci[1]))

    crossfit, crossfit_ci = crossfit_worst(filled, present, n_boot=n_boot, seed=seed, alpha=alpha)

    null, null_spread = _permutation_null(m, n_perm, derive_rng(seed, "stats", "permutation"))
    if len(null):
        # At least as extreme: a larger gap, or the same gap with at least the same spread.
        # The tie-break keeps the test exact (any statistic of the shuffled matrix is) while
        # making it less conservative on binary data, where equal gaps are common.
        spread = float(_gap_and_spread(acc_p)[1])
        tied = np.abs(null - gap) <= 1e-12
        exceed = int(np.sum((null > gap + 1e-12) | (tied & (null_spread >= spread - 1e-12))))
        p_value = (1 + exceed) / (1 + len(null))
        null_mean, null_q95 = float(np.mean(null)), float(np.quantile(null, 0.95))
    else:
        p_value = null_mean = null_q95 = math.nan
    significant = bool(p_value <= alpha)

    q = q_p = None
    if binary:
        q, q_p = cochran_q(m)

    if subset is not None and len(subset) > 1:
        cols = np.array(subset)
        cov = _phase_mean_cov(boot[:, cols] if boot.size else boot, m[:, cols])
        fit_p = _subset_period_fit_p(acc_p[cols], cov, subset, modulus)
        period = _first_fit(fit_p, alpha) if significant and np.ptp(acc_p[cols]) > 1e-12 else None
    else:
        cov = _phase_mean_cov(boot, m)
        fit_p = _period_fit_p(acc_p, cov) if have.all() else {}
        period = dominant_period(acc_p, cov, alpha=alpha) if significant and have.all() else None

    return PhaseSummary(
        acc=acc,
        acc_ci=acc_ci,
        worst_phase=worst,
        worst_phase_ci=worst_ci,
        worst_phase_index=worst_i,
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
        dominant_period=period,
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


#: Random half-splits averaged into the cross-fitted worst phase's point estimate, and into
#: each of its bootstrap replicates (fewer there, for speed: with 4 the interval's measured
#: coverage is 94-99% and it is narrower than with 1, see tests/test_stats.py).
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


def summarize_samples(
    units: Sequence[Hashable],
    phases: Sequence[int],
    acc: Sequence[float],
    modulus: int,
    *,
    margins: Sequence[float] | None = None,
    pads: Sequence[int] | None = None,
    n_boot: int = N_BOOT,
    n_perm: int = N_PERM,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """Every number phasebench reports for one set of scored samples, as a JSON-ready dict.

    The one computation behind the lm-eval aggregates, ``phasebench report`` and the
    leaderboard, so the three cannot disagree. ``units`` are the paired units of the samples
    (:func:`phasebench.rows.paired_unit`); a unit seen more than once at a phase (a code
    sweep visits each phase 16/P times) enters there as the mean of its visits. Rows of the phase
    matrix follow the sorted units, so the bootstrap and permutation streams do not depend on
    the order samples come in.

    The result is :meth:`PhaseSummary.to_dict` of the accuracy (binary when every cell is 0 or
    1) plus, with ``margins`` (code): ``margin`` (phase-balanced mean), ``margin_ci``,
    ``margin_worst_phase``, ``margin_gap_p_value``, ``per_phase_margin`` and ``code``: the
    margin sweeps (one row per unit, in padding order from ``pads``) with their phase-lock rates
    at every divisor of the modulus, also counting only patterns that flip sign.
    """
    import pandas as pd

    if not (len(units) == len(phases) == len(acc)):
        raise StatsError(
            f"units, phases and acc must have the same length (got {len(units)}, "
            f"{len(phases)}, {len(acc)})"
        )
    if not len(units):
        raise StatsError("no samples to summarize")
    frame = pd.DataFrame(
        {
            "unit": list(units),
            "phase": np.asarray(phases, dtype=np.int64),
            "acc": np.asarray(acc, dtype=float),
            "margin": np.asarray(margins, dtype=float) if margins is not None else np.nan,
            "pad": np.asarray(pads, dtype=np.int64) if pads is not None else 0,
        }
    )
    cells = frame.groupby(["unit", "phase"], sort=False)[["acc", "margin"]].mean().reset_index()
    matrix = phase_matrix(cells["unit"], cells["phase"], cells["acc"], modulus)
    binary = bool(np.isin(cells["acc"], (0.0, 1.0)).all())
    summary = summarize(matrix, binary=binary, n_boot=n_boot, n_perm=n_perm, seed=seed,
                        alpha=alpha)  # fmt: skip
    out = summary.to_dict()
    out["n_samples"] = int(len(frame))
    margin_matrix = None
    if margins is not None:
        margin_matrix = phase_matrix(cells["unit"], cells["phase"], cells["margin"], modulus)
        out.update(_margin_summary(frame, margin_matrix, modulus, n_boot, n_perm, seed, alpha))
    data = PhaseData(matrix, margin_matrix, binary, n_boot, n_perm, seed, alpha)
    for stat in statistics():
        if stat.compute is None or (stat.needs_margin and margin_matrix is None):
            continue
        value = stat.compute(data)
        if stat.interval is not None:
            value, out[stat.interval] = value[0], _jsonable(value[1])
        out[stat.key] = _jsonable(value)
    return out


def _margin_summary(
    frame: Any,
    margin_matrix: np.ndarray,
    modulus: int,
    n_boot: int,
    n_perm: int,
    seed: int,
    alpha: float,
) -> dict[str, Any]:
    """The margin's statistics (families with a margin): mean, interval, lowest phase, gap
    p-value, per phase, and the sweeps with their phase-lock rates."""
    out: dict[str, Any] = {}
    m = summarize(margin_matrix, binary=False, n_boot=n_boot, n_perm=n_perm, seed=seed,
                  alpha=alpha).to_dict()  # fmt: skip
    out["margin"] = m["acc"]
    out["margin_ci"] = m["acc_ci"]
    out["margin_worst_phase"] = m["worst_phase"]
    out["margin_gap_p_value"] = m["p_value"]
    out["per_phase_margin"] = [
        {"phase": r["phase"], "margin": r["acc"], "ci": r["ci"], "n": r["n"]}
        for r in m["per_phase"]
    ]
    out["margin_sweeps"] = _margin_sweeps(frame, modulus)
    return out


def _margin_sweeps(frame: Any, modulus: int) -> dict[str, Any]:
    """One row of margins per unit in padding order (cut to the shortest sweep), and the share
    of sign patterns that repeat with each period S dividing the modulus."""
    labels, firsts, rows = [], [], []
    for unit, group in sorted(frame.groupby("unit", sort=False), key=lambda kv: kv[0]):
        ordered = group.sort_values("pad", kind="stable")
        labels.append(str(unit))
        firsts.append(int(ordered["pad"].iloc[0]))
        rows.append(ordered["margin"].to_numpy(dtype=float))
    width = min(len(r) for r in rows)
    margins = np.array([r[:width] for r in rows])
    strides = divisors(modulus)[1:]
    return _jsonable(
        {
            "patterns": labels,
            "pad_first": firsts,
            "margins": margins,
            "phase_lock_rate": {s: phase_lock_rate(margins, s) for s in strides},
            "phase_lock_rate_flipping": {
                s: phase_lock_rate(margins, s, require_flip=True) for s in strides
            },
        }
    )


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


def divisors(modulus: int) -> list[int]:
    """Divisors of the modulus, ascending (per-phase results fold exactly onto each)."""
    return [d for d in range(1, modulus + 1) if modulus % d == 0]


def fold(profile: Sequence[float]) -> dict[int, list[float]]:
    """Fold a per-phase profile onto every divisor ``d > 1`` of P: residue r gets the mean of the
    phases ``p`` with ``p % d == r`` (phase mod d = (phase mod P) mod d, DESIGN section 2)."""
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
    """Share of sign patterns that repeat with period ``stride`` (DESIGN section 4, code).

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


def power_curve(
    n_base: int,
    acc: float,
    gap: float,
    modulus: int,
    alpha: float = 0.05,
    *,
    n_sim: int = 4000,
    seed: int = 0,
) -> float:
    """Power of the gap test with ``n_base`` items, estimated by simulation (see power_n_base)."""
    hi, lo = _power_profile(acc, gap, modulus)
    probs = np.full(modulus, acc)
    probs[0], probs[1] = hi, lo
    rng_null = derive_rng(seed, "stats", "power", "null", n_base, modulus, acc)
    rng_alt = derive_rng(seed, "stats", "power", "alt", n_base, modulus, acc, gap)
    null = rng_null.binomial(n_base, acc, size=(n_sim, modulus)) / n_base
    null_gap = np.ptp(null, axis=1)
    crit = float(np.quantile(null_gap, 1 - alpha, method="higher"))
    alt = rng_alt.binomial(n_base, probs, size=(n_sim, modulus)) / n_base
    return float(np.mean(np.ptp(alt, axis=1) > crit + 1e-12))


def power_n_base(
    acc: float,
    gap: float,
    modulus: int,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    n_sim: int = 4000,
    seed: int = 0,
    max_n: int = 1_000_000,
) -> int:
    """Base items needed so the gap test detects ``gap`` at average accuracy ``acc``.

    Simulation, not a formula, because the statistic is a range of P binomial proportions near
    0 or 1, where normal approximations are poor. Assumptions, both conservative:

    - the alternative is the least favourable profile for a range test: one phase at
      ``acc + gap/2``, one at ``acc - gap/2``, the other P-2 at ``acc`` (average ``acc``);
    - items are independent across phases. Item difficulty shared across a row makes the paired
      within-item test *more* powerful, so real paired splits need at most this many items.

    The critical value is the simulated ``1 - alpha`` quantile of the null range. The answer is
    rounded up to a multiple of ``modulus`` (``phasebench generate --n-base`` needs one).
    """
    _check_alpha(alpha)
    modulus = _check_modulus(modulus)
    if not 0 < power < 1:
        raise StatsError(f"power must be in (0, 1) (got {power})")
    _power_profile(acc, gap, modulus)

    def ok(n: int) -> bool:
        return power_curve(n, acc, gap, modulus, alpha, n_sim=n_sim, seed=seed) >= power

    hi = modulus
    while not ok(hi):
        hi *= 2
        if hi > max_n:
            raise StatsError(
                f"a gap of {gap} at accuracy {acc} needs more than {max_n} base items; "
                "ask about a larger gap"
            )
    lo = hi // 2 if hi > modulus else 0
    # Bisection over multiples of the modulus: lo fails (or is 0), hi passes.
    lo_k, hi_k = lo // modulus, hi // modulus
    while hi_k - lo_k > 1:
        mid = (lo_k + hi_k) // 2
        if ok(mid * modulus):
            hi_k = mid
        else:
            lo_k = mid
    return hi_k * modulus


# --------------------------------------------------------------------------- internals


def _power_profile(acc: float, gap: float, modulus: int) -> tuple[float, float]:
    if not 0 < acc < 1:
        raise StatsError(f"'acc' must be strictly between 0 and 1 (got {acc})")
    if not 0 < gap < 1:
        raise StatsError(f"'gap' must be a fraction in (0, 1), e.g. 0.06 (got {gap})")
    hi, lo = acc + gap / 2, acc - gap / 2
    if hi > 1 or lo < 0:
        raise StatsError(
            f"a gap of {gap} around accuracy {acc} leaves 0..1 (phases at {lo:.3f} and "
            f"{hi:.3f}); ask about a smaller gap or an accuracy nearer 0.5"
        )
    if modulus < 2:
        raise StatsError(f"modulus must be >= 2 (got {modulus})")
    return hi, lo


def _check_modulus(modulus: int) -> int:
    if int(modulus) != modulus or modulus < 2:
        raise StatsError(f"modulus must be an integer >= 2 (got {modulus!r})")
    return int(modulus)


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise StatsError(f"alpha must be in (0, 1) (got {alpha})")


def _check_matrix(matrix: np.ndarray, binary: bool) -> np.ndarray:
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[1] < 2:
        raise StatsError(
            f"expected a base items x phases matrix with >= 2 phases (got shape {m.shape})"
        )
    if m.shape[0] == 0 or np.isnan(m).all():
        raise StatsError("no results to summarize: the phase matrix has no values")
    if np.isinf(m).any():
        raise StatsError("the phase matrix holds an infinite value; pass NaN for missing")
    if binary:
        seen = m[~np.isnan(m)]
        if not np.isin(seen, (0.0, 1.0)).all():
            raise StatsError(
                "binary=True needs 0/1 values; pass binary=False for margins or scores"
            )
    return m


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


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


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence 'mean of empty slice' / all-NaN warnings where NaN is the intended answer."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, float | np.floating):
        f = float(value)
        return None if math.isnan(f) or math.isinf(f) else f
    return value
