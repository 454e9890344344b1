"""Paired phase shifts and matched position statistics (pure, numbers only).

Paired design: base item ``b`` has a natural anchor position ``y[b]``. Its needle is first moved
``extra[b]`` tokens later so that the anchor sits at ``x[b] = y[b] + extra[b]`` with a chosen
residue ``t[b] = x[b] mod P``; rendering ``delta = 0..P-1`` then moves it ``delta`` more tokens,
trading filler before the needle for filler after it, so the total length and the question index
never move. Phase group ``r`` takes from each item the rendering with ``(x[b] + delta) mod P == r``.

Matched statistics: with residues balanced over items, every phase group has the same anchor mean
exactly; the standard deviations agree when each residue class has the same mean position, which
:func:`assign_residues` arranges (a snake draft over items sorted by depth, then a bounded local
search with a derived random stream).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Largest allowed gap, in tokens, between a phase group's anchor mean or std and the config's.
TOLERANCE = 0.5
#: ``extra`` may add up to ``EXTRA_MULTIPLES - 1`` whole periods to reach balance.
EXTRA_MULTIPLES = 4


def stratified_depths(n: int, rng: np.random.Generator) -> np.ndarray:
    """One depth in each of ``n`` equal strata of [0, 1), strata assigned to items at random."""
    return (rng.permutation(n) + rng.random(n)) / n


def anchors_by_phase(x: np.ndarray, modulus: int) -> np.ndarray:
    """``A[r, b]``: anchor of item ``b`` in phase group ``r`` (the first position >= x with
    residue r)."""
    r = np.arange(modulus)[:, None]
    return x[None, :] + (r - x[None, :]) % modulus


def phase_stats(
    anchors: np.ndarray, phases: np.ndarray, modulus: int, residues: Sequence[int] | None = None
) -> dict:
    """Counts, anchor mean and std per phase, the config's, and the largest deviations, over
    ``residues`` (default every phase; a phase subset lists only its own, under
    ``phases``)."""
    anchors = np.asarray(anchors, dtype=np.float64)
    phases = np.asarray(phases)
    counts, means, stds = [], [], []
    for r in residues if residues is not None else range(modulus):
        a = anchors[phases == r]
        counts.append(int(a.size))
        means.append(float(a.mean()) if a.size else float("nan"))
        stds.append(float(a.std()) if a.size else float("nan"))
    mean, std = float(anchors.mean()), float(anchors.std())
    subset = {} if residues is None else {"phases": [int(r) for r in residues]}
    return {
        **subset,
        "count_per_phase": counts,
        "anchor_mean_per_phase": [round(m, 4) for m in means],
        "anchor_std_per_phase": [round(s, 4) for s in stds],
        "anchor_mean": round(mean, 4),
        "anchor_std": round(std, 4),
        "max_mean_deviation": round(float(np.max(np.abs(np.array(means) - mean))), 4),
        "max_std_deviation": round(float(np.max(np.abs(np.array(stds) - std))), 4),
    }


def axis_balance(spec: Any, anchors: np.ndarray, phases: np.ndarray, lengths: np.ndarray) -> dict:
    """The matched statistics a config records, per varied axis: the needle phase's at the top
    level (the length phase's when only the length axis runs), and under ``length_phase`` the
    anchors grouped by total length mod P (identical groups: the anchor does not move)."""
    residues = list(spec.phases) if spec.phases else None
    if spec.length_phases == "only":
        out = phase_stats(anchors, lengths, spec.modulus, residues)
    else:
        out = phase_stats(anchors, phases, spec.modulus, residues)
    if spec.length_phases:
        out["length_phase"] = phase_stats(anchors, lengths, spec.modulus, residues)
    return out


def _deviation(y: np.ndarray, t: np.ndarray, k: np.ndarray, modulus: int) -> float:
    x = y + (t - y) % modulus + modulus * k
    a = anchors_by_phase(x, modulus)
    mean, std = a.mean(), a.std()
    return float(max(np.abs(a.mean(axis=1) - mean).max(), np.abs(a.std(axis=1) - std).max()))


@dataclass(frozen=True)
class Assignment:
    extra: np.ndarray  # tokens added before the needle, in [0, P * EXTRA_MULTIPLES)
    residue: np.ndarray  # x mod P for each item
    deviation: float  # largest per-phase mean/std gap to the config's, in tokens


def assign_residues(
    y: np.ndarray, modulus: int, rng: np.random.Generator, max_steps: int | None = None
) -> Assignment:
    """Choose each item's residue and extra shift so phase groups have matched statistics.

    ``len(y)`` must be a multiple of ``modulus`` (every residue equally often, which makes the
    group means equal). The search is bounded and deterministic given ``rng``.
    """
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    if n % modulus:
        raise ValueError("number of items must be a multiple of the modulus")
    order = np.argsort(y, kind="stable")
    t = np.empty(n, dtype=np.int64)
    for block in range(n // modulus):
        residues = np.arange(modulus) if block % 2 == 0 else np.arange(modulus)[::-1]
        t[order[block * modulus : (block + 1) * modulus]] = residues
    k = np.zeros(n, dtype=np.int64)
    best = _deviation(y, t, k, modulus)
    steps = max_steps if max_steps is not None else 20 * n + 2000
    for _ in range(steps):
        if best < 0.02:
            break
        t2, k2 = t.copy(), k.copy()
        if rng.random() < 0.5:
            i, j = rng.integers(0, n, 2)
            t2[i], t2[j] = t2[j], t2[i]
        else:
            k2[rng.integers(0, n)] = rng.integers(0, EXTRA_MULTIPLES)
        dev = _deviation(y, t2, k2, modulus)
        if dev < best:
            best, t, k = dev, t2, k2
    extra = (t - y) % modulus + modulus * k
    return Assignment(extra=extra, residue=t, deviation=best)
