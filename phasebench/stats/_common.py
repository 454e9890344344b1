"""Checks and helpers every job of :mod:`phasebench.stats` shares (private)."""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from phasebench.errors import StatsError

#: Elements of one (chunk x items x phases) block in the permutation loop; bounds peak memory.
_BLOCK_ELEMENTS = 2_000_000


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
