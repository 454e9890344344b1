"""The settings every statistic shares, at the bottom of the analysis layer: the bootstrap and
permutation sizes, the statistics' seed, the significance levels, the power a run's design is
judged by, and the stride the phase-lock rate tests. Standard library only and importing nothing
of phasebench, so the statistics modules (:mod:`phasebench.stats`) and the declarations
(:mod:`phasebench.metrics`, which re-exports them) both read them without an import circle."""

from __future__ import annotations

__all__ = [
    "ALPHA",
    "ALPHA_STRICT",
    "LOCK_STRIDE",
    "N_BOOT",
    "N_PERM",
    "POWER",
    "PRELIMINARY_GAP",
    "SEED",
]

#: Bootstrap resamples, permutations, statistics seed and level: the same everywhere a number
#: is computed (lm-eval aggregates, ``phasebench report``, the leaderboard), so all agree.
N_BOOT = 1000
N_PERM = 1000
SEED = 0
ALPHA = 0.05
#: The second level a period is named at: a period named at :data:`ALPHA` and another one
#: named at this stricter level are both shown (``consistent_periods``).
ALPHA_STRICT = 0.01
#: DeepSeek-V4's CSA stride: the period the reported phase-lock rate tests code margins against.
LOCK_STRIDE = 4
#: Evidence strength: a run is *preliminary* when the gap test of its design (base items x
#: phases) cannot detect a best-minus-lowest gap of :data:`PRELIMINARY_GAP` with :data:`POWER`
#: (:func:`phasebench.design.power.detectable_gap`, at 50% accuracy where noise is largest,
#: level :data:`ALPHA`).
PRELIMINARY_GAP = 0.20
POWER = 0.8
