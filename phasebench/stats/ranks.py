"""Rank intervals: the range of places an entry takes on its board over bootstrap resamples.

A rank from non-overlapping intervals says who is surely ahead; it does not say how far an
entry's place could move. Here every bootstrap replicate resamples the base items once for
all entries of a board (paired: runs of one split share their base items, so item difficulty
moves every entry alike), recomputes each entry's statistic, and ranks the entries in that
replicate (1 + the number of entries strictly above, so ties share a place). The interval is
the central ``1 - alpha`` range of those places, as LMArena and MTEB show it.

The statistic is the one boards rank by, the cross-fitted worst phase
(:data:`phasebench.metrics.RANKING`, as :func:`~phasebench.stats.crossfit.crossfit_worst`
bootstraps it: :data:`~phasebench.stats.crossfit.CROSSFIT_BOOT_SPLITS` fresh
half-splits per replicate, shared by every entry) or the average; the settings are the shared
ones of :mod:`phasebench.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from phasebench.design.settings import ALPHA, N_BOOT, SEED
from phasebench.errors import StatsError
from phasebench.metrics import RANKING
from phasebench.rng import derive_rng
from phasebench.stats._common import _BLOCK_ELEMENTS, _quiet, _ratio
from phasebench.stats.compare import _blocks, _crossfit
from phasebench.stats.crossfit import CROSSFIT_BOOT_SPLITS, _random_halves

#: What a board may be ranked by: the ranking statistic, or the average.
RANKED = (RANKING.key, "acc")


def rank_intervals(
    entries: Sequence[tuple[Sequence[Hashable], np.ndarray]],
    statistic: str = RANKING.key,
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> list[tuple[int, int] | None]:
    """The ``1 - alpha`` interval of each entry's place on its board (1 = first, higher is
    better for ``statistic``) over ``n_boot`` paired bootstrap replicates.

    ``entries`` are ``(units, matrix)``: an entry's paired units (base items) and its phase
    matrix (one row per unit, NaN where missing), as
    :func:`~phasebench.stats.paired.unit_matrix` returns them. Units of one name are one base
    item across entries; a replicate draws every unit of the union once, so entries of one
    split are resampled together. An entry with fewer than 2 units gets None (no interval)
    and takes no place. Deterministic for a given ``seed``."""
    if statistic not in RANKED:
        raise StatsError(f"a board is ranked by one of {list(RANKED)} (got {statistic!r})")
    if not entries:
        return []
    union = sorted({u for units, _ in entries for u in units}, key=str)
    where = {u: i for i, u in enumerate(union)}
    n = len(union)
    modulus = max(m.shape[1] for _, m in entries)
    filled = np.zeros((len(entries), n, modulus))
    present = np.zeros((len(entries), n, modulus))
    usable = []
    for e, (units, matrix) in enumerate(entries):
        rows = [where[u] for u in units]
        m = np.asarray(matrix, dtype=float)
        filled[e, rows, : m.shape[1]] = np.where(np.isnan(m), 0.0, m)
        present[e, rows, : m.shape[1]] = ~np.isnan(m)
        usable.append(len(units) >= 2)
    keep = [e for e, ok in enumerate(usable) if ok]
    if not keep or n_boot == 0:
        return [None] * len(entries)
    filled, present = filled[keep], present[keep]
    rng = derive_rng(seed, "stats", "ranks", statistic)
    places = []
    crossfit = statistic == RANKING.key
    per = CROSSFIT_BOOT_SPLITS if crossfit else 1
    for k in _blocks(n_boot, _BLOCK_ELEMENTS // (n * per * len(keep) * modulus or 1)):
        w = rng.multinomial(n, np.full(n, 1.0 / n), size=k).astype(float)
        if crossfit:
            h = _random_halves(rng, k * per, n).reshape(k, per, n)
            values = np.stack(
                [_crossfit(f, p, w, h) for f, p in zip(filled, present, strict=True)], axis=1
            )
        else:
            sums = np.einsum("kn,enp->kep", w, filled)
            counts = np.einsum("kn,enp->kep", w, present)
            with _quiet():
                values = np.nanmean(_ratio(sums, counts), axis=-1)
        values = np.where(np.isnan(values), -np.inf, values)
        # 1 + the number of entries strictly above, in each replicate
        places.append(1 + (values[:, None, :] > values[:, :, None]).sum(axis=2))
    ranks = np.concatenate(places)
    out: list[tuple[int, int] | None] = [None] * len(entries)
    for column, e in enumerate(keep):
        lo, hi = np.quantile(ranks[:, column], [alpha / 2, 1 - alpha / 2])
        out[e] = (int(math.floor(lo)), int(math.ceil(hi)))
    return out
