"""Places on a board from paired comparisons, and the rank interval the same comparisons give.

Entries of a board are runs of one split: they share base items, so item difficulty moves them
alike and their difference is measured far more precisely than either value alone. Every
bootstrap replicate therefore resamples the base items once for all entries (the union of their
units, each entry's statistic computed on its own units under the shared weights; cross-fitted
with :data:`~phasebench.stats.crossfit.CROSSFIT_BOOT_SPLITS` half-splits per replicate, shared
by every entry), and every pair of entries is compared on those replicates:

- **the paired test**: for each pair, the difference of their statistics over its bootstrap
  standard error; a pair is told apart when that ratio exceeds ``c``, the ``1 - alpha``
  quantile over replicates of the largest centred ratio over all pairs (a max-T test: the
  chance that any pair of a board is told apart by noise alone is about ``alpha``, whatever
  the number of entries). The better of such a pair is the one with the higher estimate;
- **the rank interval** of an entry: ``[1 + #entries told apart above it, N - #entries told
  apart below it]``, the places the pairwise decisions leave it;
- **the place**: ``1 + max(#entries told apart above e)`` over the entries ``e`` whose estimate
  is at least its own. Places follow the estimates (an entry never takes a better place than
  one with a higher estimate) and entries the test cannot separate share a place.

Every place lies in its own interval by construction: an entry ``e`` at or above ``k`` has no
entry told apart above it that is also told apart below ``k`` (it would sit above ``e`` and
below ``k``), and neither ``e`` nor ``k`` is in either set, so ``1 + above(e) <= N - below(k)``.

The statistic is the one boards rank by, the cross-fitted worst phase
(:data:`phasebench.metrics.RANKING`), or the average; the settings are the shared ones of
:mod:`phasebench.metrics`. Which entries a board ranks (not references, fixtures or earlier
designs of one configuration) is the caller's choice: pass only those.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from phasebench.design.settings import ALPHA, N_BOOT, SEED
from phasebench.errors import StatsError
from phasebench.metrics import RANKING
from phasebench.rng import derive_rng
from phasebench.stats._common import _BLOCK_ELEMENTS, _quiet, _ratio
from phasebench.stats.compare import _blocks, _crossfit
from phasebench.stats.crossfit import CROSSFIT_BOOT_SPLITS, _random_halves, crossfit_worst

#: What a board may be ranked by: the ranking statistic, or the average.
RANKED = (RANKING.key, "acc")

#: The rule, as the site and the exports state it.
RANK_RULE = (
    "1 + the number of entries significantly better on the shared base items (a paired "
    "bootstrap test of every pair, max-T over all pairs of the board, so the chance that any "
    "pair is told apart by noise alone is about 5%), taken as the largest such count among "
    "the entries at or above it, so places follow the ranking statistic and entries the test "
    "cannot separate share a place"
)
RANK_INTERVAL_RULE = (
    "the places the same paired tests leave an entry: from 1 + the number of entries "
    "significantly better to the number of entries less those significantly worse; the place "
    "always lies inside it"
)


@dataclass(frozen=True)
class Place:
    """An entry's place on its board, its rank interval, and the pairwise counts behind them."""

    place: int
    interval: tuple[int, int]
    #: Entries significantly better / worse on the shared base items.
    better: int
    worse: int


def paired_ranks(
    entries: Sequence[tuple[Sequence[Hashable], np.ndarray]],
    statistic: str = RANKING.key,
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> list[Place | None]:
    """Each entry's :class:`Place` among ``entries`` (1 = first; higher ``statistic`` is
    better), from paired bootstrap comparisons over ``n_boot`` replicates.

    ``entries`` are ``(units, matrix)``: an entry's paired units (base items) and its phase
    matrix (one row per unit, NaN where missing), as
    :func:`~phasebench.stats.paired.unit_matrix` returns them. Units of one name are one base
    item across entries; a replicate draws every unit of the union once, so entries of one
    split are resampled together. An entry with fewer than 2 units or no value of the
    statistic gets None and takes no place (nor counts in the others'). Deterministic for a
    given ``seed``."""
    if statistic not in RANKED:
        raise StatsError(f"a board is ranked by one of {list(RANKED)} (got {statistic!r})")
    if n_boot < 1:
        raise StatsError(f"ranks need bootstrap replicates (got n_boot={n_boot})")
    if not entries:
        return []
    union = sorted({u for units, _ in entries for u in units}, key=str)
    where = {u: i for i, u in enumerate(union)}
    n = len(union)
    modulus = max(np.shape(m)[1] for _, m in entries)
    filled = np.zeros((len(entries), n, modulus))
    present = np.zeros((len(entries), n, modulus))
    estimate = np.full(len(entries), math.nan)
    for e, (units, matrix) in enumerate(entries):
        rows = [where[u] for u in units]
        m = np.asarray(matrix, dtype=float)
        filled[e, rows, : m.shape[1]] = np.where(np.isnan(m), 0.0, m)
        present[e, rows, : m.shape[1]] = ~np.isnan(m)
        if len(units) >= 2:
            estimate[e] = _estimate(m, statistic, seed)
    keep = [e for e in range(len(entries)) if not math.isnan(estimate[e])]
    out: list[Place | None] = [None] * len(entries)
    if not keep:
        return out
    values = _bootstrap(filled[keep], present[keep], statistic, n_boot, seed)
    better = _told_apart(estimate[keep], values, alpha)  # better[i, j]: j above i
    above, below = better.sum(axis=1), better.sum(axis=0)
    v = estimate[keep]
    total = len(keep)
    for i, e in enumerate(keep):
        place = 1 + int(above[v >= v[i]].max())
        out[e] = Place(place, (1 + int(above[i]), total - int(below[i])), int(above[i]),
                       int(below[i]))  # fmt: skip
    return out


def _estimate(matrix: np.ndarray, statistic: str, seed: int) -> float:
    """The entry's value of ``statistic``, as its summary reports it."""
    present = ~np.isnan(matrix)
    filled = np.where(present, matrix, 0.0)
    if statistic == RANKING.key:
        return crossfit_worst(filled, present, n_boot=0, seed=seed)[0]
    with _quiet():
        return float(np.nanmean(_ratio(filled.sum(axis=0), present.sum(axis=0))))


def _bootstrap(
    filled: np.ndarray, present: np.ndarray, statistic: str, n_boot: int, seed: int
) -> np.ndarray:
    """``n_boot x entries`` replicates of each entry's statistic, one resample of the union's
    units (and, cross-fitted, one set of half-splits) per replicate shared by every entry."""
    entries, n, modulus = filled.shape
    rng = derive_rng(seed, "stats", "ranks", statistic)
    crossfit = statistic == RANKING.key
    per = CROSSFIT_BOOT_SPLITS if crossfit else 1
    out = []
    for k in _blocks(n_boot, _BLOCK_ELEMENTS // (n * per * entries * modulus or 1)):
        w = rng.multinomial(n, np.full(n, 1.0 / n), size=k).astype(float)
        if crossfit:
            h = _random_halves(rng, k * per, n).reshape(k, per, n)
            out.append(
                np.stack([_crossfit(f, p, w, h) for f, p in zip(filled, present, strict=True)],
                         axis=1)
            )  # fmt: skip
        else:
            sums = np.einsum("kn,enp->kep", w, filled)
            counts = np.einsum("kn,enp->kep", w, present)
            with _quiet():
                out.append(np.nanmean(_ratio(sums, counts), axis=-1))
    return np.concatenate(out)


def _told_apart(estimate: np.ndarray, values: np.ndarray, alpha: float) -> np.ndarray:
    """``better[i, j]``: entry j is significantly better than entry i, by the max-T paired
    bootstrap test over every pair (see the module's docstring). A pair whose difference does
    not vary over the replicates (the same values on every resample) is told apart exactly when
    its difference is not 0."""
    d = estimate[None, :] - estimate[:, None]  # d[i, j] = j - i
    boot = values[:, None, :] - values[:, :, None]
    with _quiet():
        se = np.nanstd(boot, axis=0, ddof=1)
        varies = np.isfinite(se) & (se > 1e-12)
        ratio = np.where(varies, np.abs(boot - d) / np.where(varies, se, 1.0), np.nan)
        largest = np.nanmax(ratio.reshape(len(values), -1), axis=1)
    largest = largest[~np.isnan(largest)]
    c = float(np.quantile(largest, 1 - alpha, method="higher")) if len(largest) else math.inf
    constant = np.isfinite(se) & ~varies
    with _quiet():
        apart = (varies & (np.abs(d) > c * np.where(varies, se, 1.0))) | (
            constant & (np.abs(d) > 1e-12)
        )
    return apart & (d > 0)
