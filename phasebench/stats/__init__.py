"""Phase statistics: numbers only, no I/O, no printing (what they mean: ``docs/definitions.md``,
``docs/stats.md``).

A gap between the best and the lowest of P noisy estimates is never zero: the minimum of noisy
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

One module per job: :mod:`~phasebench.stats.intervals` (Wilson, t, the paired bootstrap),
:mod:`~phasebench.stats.permutation` (the permutation test of the gap and the interval it
inverts to, Cochran's Q),
:mod:`~phasebench.stats.crossfit` (the cross-fitted worst phase), :mod:`~phasebench.stats.periods`
(folds, spectrum, period and the periods the data are consistent with, phase-lock rate),
:mod:`~phasebench.stats.compare` (two runs of one split: the difference in gap and worst phase,
paired), :mod:`~phasebench.stats.cache` (two reads of the same prompts, warm against cold or salted
against plain: agreement and the exact McNemar test),
:mod:`~phasebench.stats.summary` (every statistic of one phase matrix: :func:`summarize`) and
:mod:`~phasebench.stats.paired` (every number of a set of scored samples:
:func:`summarize_samples`, the one entry point the lm-eval aggregates, ``phasebench report`` and
the leaderboard call). The power of the gap test (``power_n_base``, ``power_curve``,
``detectable_gap``) lives below both this package and :mod:`phasebench.metrics`, in
:mod:`phasebench.design.power`, and is re-exported here. Import from here; the submodules'
layout is not part of the API.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name and the module that defines it. Imported on first use, so that importing
#: ``phasebench.stats`` (or the dependency-free :mod:`phasebench.stats.records`, which the
#: lm-eval task hooks do at start-up) does not import scipy; only a computation does.
_LAZY = {
    "PhaseSummary": "phasebench.stats.summary",
    "ReadPair": "phasebench.stats.cache",
    "cochran_q": "phasebench.stats.permutation",
    "compare_runs": "phasebench.stats.compare",
    "consistent_periods": "phasebench.stats.periods",
    "crossfit_worst": "phasebench.stats.crossfit",
    "detectable_gap": "phasebench.design.power",
    "divisors": "phasebench.stats.periods",
    "dominant_period": "phasebench.stats.periods",
    "fold": "phasebench.stats.periods",
    "period_spectrum": "phasebench.stats.periods",
    "phase_lock_rate": "phasebench.stats.periods",
    "paired_agreement": "phasebench.stats.cache",
    "phase_matrix": "phasebench.stats.summary",
    "power_curve": "phasebench.design.power",
    "power_n_base": "phasebench.design.power",
    "summarize": "phasebench.stats.summary",
    "summarize_samples": "phasebench.stats.paired",
    "wilson": "phasebench.stats.intervals",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'phasebench.stats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
