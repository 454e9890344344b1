"""The checks of a design's level and modulus that every statistic makes before it computes (the
power simulation here and the statistics of :mod:`phasebench.stats`)."""

from __future__ import annotations

from phasebench.errors import StatsError


def check_modulus(modulus: int) -> int:
    if int(modulus) != modulus or modulus < 2:
        raise StatsError(f"modulus must be an integer >= 2 (got {modulus!r})")
    return int(modulus)


def check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise StatsError(f"alpha must be in (0, 1) (got {alpha})")
