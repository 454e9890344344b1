"""Power: how many base items the gap test needs to detect a gap, and the smallest gap a
design detects (:func:`detectable_gap`, what marks a run *preliminary*), by simulation."""

from __future__ import annotations

import functools

import numpy as np

from phasebench.design.checks import check_alpha, check_modulus
from phasebench.design.settings import ALPHA, POWER, SEED
from phasebench.errors import StatsError
from phasebench.rng import derive_rng
from phasebench.specs import MAX_MODULUS


def power_curve(
    n_base: int,
    acc: float,
    gap: float,
    modulus: int,
    alpha: float = ALPHA,
    *,
    n_sim: int = 4000,
    seed: int = SEED,
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
    alpha: float = ALPHA,
    power: float = POWER,
    *,
    n_sim: int = 4000,
    seed: int = SEED,
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
    check_alpha(alpha)
    modulus = check_modulus(modulus)
    if modulus > MAX_MODULUS:  # checked before any simulation (1e6 ended in a memory error)
        raise StatsError(
            f"--modulus {modulus} is above {MAX_MODULUS}, the largest phase modulus a split may "
            f"have"
        )
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


@functools.lru_cache(maxsize=256)
def detectable_gap(n_base: int, phases: int) -> float:
    """The smallest best-minus-lowest gap (fraction, on a 0.02 grid) that the gap test of a
    design with ``n_base`` base items at ``phases`` phases detects with :data:`POWER`, by the
    simulation of ``phasebench power`` (:func:`power_curve`) at 50% accuracy; 1.0 when no gap
    below 100 points is detected that often.

    The simulation draws each phase's accuracy as an independent binomial, where the board
    tests the gap by permuting phase labels within each base item. That bound is conservative
    for the paired test: with no item heterogeneity the two coincide, and item difficulty
    shared by a row only makes the within-item test more powerful, so a run's real design
    detects a gap at most this large (``benchmarks/detectable_gap.py`` measures both,
    ``docs/stats.md``)."""
    if n_base < 1 or phases < 2:
        return 1.0
    grid = [k / 50 for k in range(1, 50)]
    lo, hi = -1, len(grid)  # power rises with the gap: bisect for the first grid point
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power_curve(n_base, 0.5, grid[mid], phases, ALPHA) >= POWER:
            hi = mid
        else:
            lo = mid
    return grid[hi] if hi < len(grid) else 1.0


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
