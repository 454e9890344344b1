"""Stopping when the answer is known: the group-sequential design of the gap test.

A fixed design sends every prompt of a split (2,048 at the study's 256 base items x 8 phases)
before it looks. A staged run looks at the gap test after a prefix of the base items, four
times, at 1/8, 1/4, 1/2 and all of them (:data:`STAGE_FRACTIONS`), and stops

- **significant** when the gap's permutation p-value (the one ``summarize`` reports, same
  seed, same number of permutations) is at most the stage's nominal level (:data:`BOUNDARY`);
- **futile** when the upper end of the gap's 95% interval lies below a gap the user names
  (no phase effect that large is left to find; an early "no" only drops chances of a "yes",
  so this rule cannot raise the false-positive rate);
- at the last stage either way: **significant** or **not significant**.

Looking four times at 5% each would call a gap four times as often when there is none, so
every look spends part of the 5%. The boundary is a constant nominal level (Pocock's shape):
an O'Brien-Fleming shape spends almost nothing early, below the resolution of a permutation
p-value of 1,000 permutations (1/1001) at the first look and only 0.0002 at the second, which
is exactly where a large gap should stop. The level is not taken from a normal-theory formula:
``benchmarks/sequential.py`` calibrates it by simulating null runs of the real test (binary
outcomes, stages nested as a run nests them) and measures what it costs at the study's gaps
(``docs/stats.md``). The simulation uses :func:`fast_gap_p`, the same permutation test as
:func:`phasebench.stats.summarize` drawn a cheaper way, and :func:`fast_gap_upper` for the
futility rule.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from phasebench.design.settings import ALPHA, N_PERM
from phasebench.errors import StatsError

#: The looks, as fractions of the fixed design's base items (a prefix of them each time).
STAGE_FRACTIONS = (0.125, 0.25, 0.5, 1.0)
#: Nominal p-value level at each look (Pocock's constant shape), as ``benchmarks/sequential.py``
#: calibrates it: the larger of the union bound's 0.05 / 4 (5% whatever the data) and the largest
#: level whose simulated false-positive rate stays at most 4.5% (``docs/stats.md``).
BOUNDARY = (0.0125, 0.0125, 0.0125, 0.0125)

Verdict = Literal["significant", "futile", "not significant", "continue"]


def staged_n_base(n_base: int, modulus: int) -> int:
    """The nearest ``n_base`` at or below ``n_base`` (at least one look's worth) that a staged
    run can cut into looks: what a refusal of :func:`stage_sizes` suggests."""
    need = int(round(1 / STAGE_FRACTIONS[0])) * modulus
    return max(need, (n_base // need) * need)


def stage_sizes(n_base: int, modulus: int) -> tuple[int, ...]:
    """Base items at each look of a split of ``n_base`` items at modulus ``modulus``.

    Each look must be a multiple of the modulus, so that its prefix of base items keeps the
    matched position statistics the whole split has; hence ``n_base`` must be a multiple of
    ``8 * modulus`` (256 at P = 8: 32, 64, 128, 256)."""
    need = int(round(1 / STAGE_FRACTIONS[0])) * modulus
    if n_base < need or n_base % need:
        raise StatsError(
            f"a staged run needs n_base to be a multiple of {need} (8 x the modulus {modulus}) "
            f"so that every look covers whole groups of {modulus} base items (got {n_base})"
        )
    return tuple(int(n_base * f) for f in STAGE_FRACTIONS)


@dataclass(frozen=True)
class Decision:
    """What one look decides: ``verdict`` (``continue`` while the run goes on) and a sentence
    saying why, with the numbers it compared."""

    stage: int
    n_stages: int
    verdict: Verdict
    reason: str

    @property
    def stop(self) -> bool:
        return self.verdict != "continue"

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "n_stages": self.n_stages,
            "verdict": self.verdict,
            "stopped": self.stop,
            "reason": self.reason,
        }


def decide(
    summary: Mapping[str, Any],
    stage: int,
    futility_gap: float | None = None,
    boundary: tuple[float, ...] = BOUNDARY,
) -> Decision:
    """The decision at look ``stage`` (1-based) from the summary of the samples so far (a
    :func:`~phasebench.stats.summarize_samples` dict: ``p_value``, ``gap_ci``).

    ``futility_gap`` is a fraction (0.15 = 15 points): stop when the gap's interval lies
    wholly below it."""
    n_stages = len(boundary)
    if not 1 <= stage <= n_stages:
        raise StatsError(f"stage must be in 1..{n_stages} (got {stage})")
    if futility_gap is not None and not 0 < futility_gap < 1:
        raise StatsError(
            f"the futility gap is a fraction in (0, 1), e.g. 0.15 (got {futility_gap})"
        )
    level = boundary[stage - 1]
    p = summary.get("p_value")
    if p is None or (isinstance(p, float) and math.isnan(p)):
        raise StatsError("the summary has no p-value; a staged run needs n_perm > 0")
    p = float(p)
    if p <= level:
        return Decision(
            stage,
            n_stages,
            "significant",
            f"gap p = {p:.4f} <= {level} (the level of look {stage})",
        )
    hi = (summary.get("gap_ci") or [None, None])[1]
    if futility_gap is not None and hi is not None and float(hi) < futility_gap:
        return Decision(
            stage,
            n_stages,
            "futile",
            f"the gap's 95% interval ends at {100 * float(hi):.1f} points, below the "
            f"{100 * futility_gap:.1f} named with --futility_gap",
        )
    if stage == n_stages:
        return Decision(
            stage, n_stages, "not significant", f"gap p = {p:.4f} > {level} at the last look"
        )
    return Decision(stage, n_stages, "continue", f"gap p = {p:.4f} > {level}")


def run_design(
    summaries: list[Mapping[str, Any]],
    futility_gap: float | None = None,
    boundary: tuple[float, ...] = BOUNDARY,
) -> Decision:
    """Replay the looks on the summaries of the nested prefixes (first look first) and return
    the decision the design reaches: the first look that stops, else the last one given
    (``continue`` when the prefixes end before the design does)."""
    if not summaries:
        raise StatsError("no looks to replay")
    decision = None
    for stage, summary in enumerate(summaries, 1):
        decision = decide(summary, stage, futility_gap, boundary)
        if decision.stop:
            break
    return decision


# -- the simulation's fast test --------------------------------------------------------------


def _codes(modulus: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every 0/1 row of length ``modulus`` as an integer code, grouped by its number of ones:
    ``flat`` (the codes, group after group), ``start`` and ``size`` of each group, and
    ``packed`` (code -> its row packed into 16-bit fields, four phases per 64-bit word, so
    that summing packed rows sums every phase at once; exact up to 65,535 rows)."""
    if modulus > 12:
        raise StatsError(f"the fast test enumerates 2^P rows; P <= 12 (got {modulus})")
    groups = [
        [sum(1 << j for j in ones) for ones in itertools.combinations(range(modulus), k)]
        for k in range(modulus + 1)
    ]
    size = np.array([len(g) for g in groups])
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    flat = np.array([c for g in groups for c in g], dtype=np.int64)
    bit = (np.arange(1 << modulus)[:, None] >> np.arange(modulus)) & 1
    words = -(-modulus // 4)
    packed = np.zeros((words, 1 << modulus), dtype=np.uint64)
    for j in range(modulus):
        packed[j // 4] += bit[:, j].astype(np.uint64) << np.uint64(16 * (j % 4))
    return flat, start, size, packed


def _row_codes(m: np.ndarray) -> np.ndarray:
    return (m.astype(np.int64) << np.arange(m.shape[-1])).sum(axis=-1)


def _phase_means(sums: np.ndarray, modulus: int, n: int) -> np.ndarray:
    """Per-phase means from sums of packed rows (words x ...): unpack the fields."""
    fields = [(sums[j // 4] >> np.uint64(16 * (j % 4))) & np.uint64(0xFFFF) for j in range(modulus)]
    return np.stack(fields, axis=-1).astype(float) / n


def fast_gap_p(matrices: np.ndarray, rng: np.random.Generator, n_perm: int = N_PERM) -> np.ndarray:
    """The permutation p-value of the gap for a stack of complete 0/1 phase matrices
    (``runs x n x P``), as :func:`phasebench.stats.summarize` defines it: phase labels shuffled
    within each base item, ``(1 + #{null gap >= gap}) / (1 + n_perm)``.

    Drawn another way: a row with k ones shuffled uniformly is a uniform draw among the
    C(P, k) rows with k ones, so one random integer per row replaces a sort of P keys, and the
    per-phase means come from a histogram of row codes. Same null distribution, same statistic,
    another random stream: the p-values agree with ``summarize``'s up to Monte Carlo error
    (``tests/stats/test_sequential.py``)."""
    gap, null = _fast_null(matrices, rng, n_perm)
    return (1 + (null >= gap[:, None] - 1e-12).sum(axis=1)) / (1 + n_perm)


def fast_gap_upper(
    matrices: np.ndarray, rng: np.random.Generator, n_perm: int = N_PERM, alpha: float = ALPHA
) -> np.ndarray:
    """The upper end of the gap's interval for a stack of complete 0/1 phase matrices, as
    :func:`phasebench.stats.summarize` builds it (the gap plus the permutation test's critical
    value, the ``floor(alpha (1 + n_perm))``-th largest null gap; at most 1), from
    :func:`fast_gap_p`'s draws."""
    gap, null = _fast_null(matrices, rng, n_perm)
    k = math.floor(alpha * (1 + n_perm) + 1e-12)
    if k < 1:
        return np.ones(len(gap))
    critical = np.sort(null, axis=1)[:, n_perm - k]
    return np.minimum(1.0, gap + critical)


def _fast_null(
    matrices: np.ndarray, rng: np.random.Generator, n_perm: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each run's gap and its ``n_perm`` null gaps (runs x n_perm), drawn by row codes."""
    m = np.asarray(matrices)
    runs, n, modulus = m.shape
    flat, start, size, packed = _codes(modulus)
    ones = m.sum(axis=2).astype(np.int64)  # runs x n
    gap = np.ptp(m.mean(axis=1), axis=-1)
    u = rng.random((runs, n_perm, n), dtype=np.float32)
    u *= size[ones][:, None, :].astype(np.float32)
    pick = u.astype(np.int32)
    pick += start[ones][:, None, :].astype(np.int32)
    # one word at a time: indexing each word's table is several times faster than both at once
    sums = np.stack([packed[w, flat][pick].sum(axis=-1) for w in range(len(packed))])
    return gap, np.ptp(_phase_means(sums, modulus, n), axis=-1)
