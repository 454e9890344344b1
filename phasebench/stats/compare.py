"""Two runs of one split: the difference in gap and in worst phase, paired over base items.

The question after a fix (phase-randomised training, a new stride, a new serving build) is "is
the weak spot smaller now?". Both runs saw the same prompts, so every base item is a pair of
rows, one per run, and item difficulty cancels in the difference:

- the interval and the p-value come from one paired bootstrap (one resample of base items
  drives both runs): the interval is the ``k``-th smallest to the ``k``-th largest of the
  resampled differences, ``k = floor(alpha / 2 (1 + n_boot))``, and the p-value is the one
  that interval inverts to, ``2 min(1 + #{<= 0}, 1 + #{>= 0}) / (1 + n_boot)`` (at most 1;
  identical runs give a difference of 0 and p = 1). ``p <= alpha`` exactly when the interval
  excludes 0, so a row cannot show a difference "significant" by one method and not by
  the other. (A permutation test of swapped run labels tests another hypothesis, that the
  two runs are exchangeable, and disagreed with the bootstrap interval on real boards.)

"Worst phase" is the cross-fitted worst phase, the number the leaderboard ranks by
(:func:`~phasebench.stats.crossfit.crossfit_worst`), with its half-splits drawn once and shared
by both runs and every resample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from phasebench.design.settings import ALPHA, N_BOOT, SEED
from phasebench.errors import StatsError
from phasebench.metrics import RANKING
from phasebench.rng import derive_rng
from phasebench.stats._common import _BLOCK_ELEMENTS, _jsonable, _quiet, _ratio
from phasebench.stats.crossfit import CROSSFIT_BOOT_SPLITS, CROSSFIT_SPLITS, _random_halves
from phasebench.stats.paired import top_axis, unit_matrix
from phasebench.stats.records import ScoredRecord

#: The worst phase compared: the statistic boards rank by (:data:`phasebench.metrics.RANKING`).
_WORST = RANKING.key
#: The statistics compared, in the order shown (their summary keys; labels and units are
#: their declarations in :mod:`phasebench.metrics`).
COMPARED = ("gap", _WORST)


def compare_runs(
    before: Iterable[ScoredRecord | Sequence[Any]],
    after: Iterable[ScoredRecord | Sequence[Any]],
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """The difference ``after - before`` in gap and in (cross-fitted) worst phase of two runs
    of one split (one task at one length), over the base items both runs have.

    Returns, JSON-ready: ``n_base`` (shared paired units), ``modulus``, the settings, and per
    compared statistic (:data:`COMPARED`: the gap and the worst phase) ``before``, ``after``,
    ``difference``, ``difference_ci`` (paired bootstrap interval at ``1 - alpha``),
    ``p_value`` (the two-sided p-value that interval inverts to) and ``significant``
    (``p_value <= alpha``, exactly when the interval excludes 0). The caller
    checks that the runs are of one split (same spec and tokenizer)."""
    a = [ScoredRecord.of(r) for r in before]
    b = [ScoredRecord.of(r) for r in after]
    if not a or not b:
        raise StatsError("both runs need samples to compare")
    moduli = {r.modulus for r in a + b}
    if len(moduli) != 1:
        raise StatsError(f"the runs mix phase moduli {sorted(moduli)}; compare one split")
    modulus = moduli.pop()
    units_a, ma = unit_matrix(*top_axis(a), [r.acc for r in a], modulus)
    units_b, mb = unit_matrix(*top_axis(b), [r.acc for r in b], modulus)
    shared = sorted(set(units_a) & set(units_b))
    if len(shared) < 2:
        raise StatsError(
            f"the runs share {len(shared)} base item(s); a paired comparison needs at least 2"
        )
    rows_a = {u: i for i, u in enumerate(units_a)}
    rows_b = {u: i for i, u in enumerate(units_b)}
    ma = ma[[rows_a[u] for u in shared]]
    mb = mb[[rows_b[u] for u in shared]]
    n = len(shared)

    data = [(np.where(np.isnan(m), 0.0, m), (~np.isnan(m)).astype(float)) for m in (ma, mb)]
    halves = _random_halves(derive_rng(seed, "stats", "crossfit"), CROSSFIT_SPLITS, n)
    ones = np.ones(n)
    observed = {
        "gap": [float(_gap(f, p, ones)) for f, p in data],
        _WORST: [float(_crossfit(f, p, ones, halves)) for f, p in data],
    }

    # Paired bootstrap: one multinomial weight vector per replicate drives both runs (and
    # CROSSFIT_BOOT_SPLITS fresh half-splits per replicate, shared by both, as crossfit_worst).
    boot_rng = derive_rng(seed, "stats", "compare", "bootstrap")
    boot = {key: [] for key in COMPARED}
    for k in _blocks(n_boot, _BLOCK_ELEMENTS // (n * CROSSFIT_BOOT_SPLITS)):
        w = boot_rng.multinomial(n, np.full(n, 1.0 / n), size=k).astype(float)
        h = _random_halves(boot_rng, k * CROSSFIT_BOOT_SPLITS, n).reshape(k, -1, n)
        (fa, pa), (fb, pb) = data
        boot["gap"].append(_gap(fb, pb, w) - _gap(fa, pa, w))
        boot[_WORST].append(_crossfit(fb, pb, w, h) - _crossfit(fa, pa, w, h))

    boot = {key: np.concatenate(v) if v else np.empty(0) for key, v in boot.items()}

    out: dict[str, Any] = {
        "n_base": n,
        "modulus": modulus,
        "n_boot": n_boot,
        "seed": seed,
        "alpha": alpha,
    }
    for key in COMPARED:
        value_a, value_b = observed[key]
        diff = value_b - value_a
        ci, p_value, significant = bootstrap_test(boot[key], alpha)
        out[key] = {
            "before": value_a,
            "after": value_b,
            "difference": diff,
            "difference_ci": ci,
            "p_value": p_value,
            "significant": significant,
        }
    return _jsonable(out)


def bootstrap_test(
    values: np.ndarray, alpha: float = ALPHA
) -> tuple[tuple[float, float], float, bool]:
    """The interval of a difference from its bootstrap replicates ``values`` (NaN dropped),
    the two-sided p-value of "the difference is 0" that the interval inverts to, and whether
    the difference is significant (``p <= alpha``, decided on the counts).

    With ``B`` replicates and ``k = floor(alpha / 2 (1 + B))``: the interval runs from the
    ``k``-th smallest to the ``k``-th largest replicate; ``p = 2 min(1 + #{<= 0},
    1 + #{>= 0}) / (1 + B)``, at most 1. ``p <= alpha`` exactly when fewer than ``k``
    replicates lie on the far side of 0, which is exactly when the interval excludes 0.
    ``k < 1`` (too few replicates for ``alpha``) gives no interval (NaN) and a p above
    ``alpha``."""
    values = np.sort(values[~np.isnan(values)])
    b = len(values)
    if not b:
        return (math.nan, math.nan), math.nan, False
    far = min(int(np.sum(values <= 0)), int(np.sum(values >= 0)))
    p = min(1.0, 2 * (1 + far) / (1 + b))
    k = math.floor(alpha / 2 * (1 + b) + 1e-12)
    if k < 1:
        return (math.nan, math.nan), p, False
    return (float(values[k - 1]), float(values[b - k])), p, far <= k - 1


def _blocks(total: int, size: int) -> list[int]:
    """``total`` cut into blocks of at most ``size`` (at least 1): bounds peak memory."""
    size = max(1, size)
    return [min(size, total - start) for start in range(0, total, size)]


def _gap(filled: np.ndarray, presentf: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Best minus lowest phase mean under item ``weights`` (``(..., n)``; ``filled`` and
    ``presentf`` ``(..., n, P)``), one value per leading index."""
    means = _ratio(weights[..., None, :] @ filled, weights[..., None, :] @ presentf)[..., 0, :]
    with _quiet():
        return np.nanmax(means, axis=-1) - np.nanmin(means, axis=-1)


def _crossfit(
    filled: np.ndarray, presentf: np.ndarray, weights: np.ndarray, halves: np.ndarray
) -> np.ndarray:
    """The cross-fitted worst phase (:func:`~phasebench.stats.crossfit.crossfit_worst`'s
    computation) under item ``weights`` and half-splits ``halves`` (``(..., h, n)``): the worst
    phase picked on one half, measured on the other, both ways, averaged over the splits."""
    values = []
    for half in (halves, ~halves):
        w_pick = weights[..., None, :] * half
        w_measure = weights[..., None, :] * ~half
        pick = _ratio(w_pick @ filled, w_pick @ presentf)
        measure = _ratio(w_measure @ filled, w_measure @ presentf)
        with _quiet():
            usable = ~np.isnan(pick).all(axis=-1)
            choice = np.nanargmin(np.where(usable[..., None], pick, 0.0), axis=-1)
        value = np.take_along_axis(measure, choice[..., None], axis=-1)[..., 0]
        values.append(np.where(usable, value, np.nan))
    with _quiet():
        return np.nanmean(np.nanmean(np.stack(values), axis=0), axis=-1)
