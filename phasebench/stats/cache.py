"""The prefix-cache axis in numbers: two reads of the same prompts, paired prompt by prompt.

A ``repeat`` run reads every prompt cold, then warm (from the serving stack's prefix cache);
a ``salted`` run and a plain run of one split read the same prompts with and without a chance
of a cache hit. Either way each prompt has two binary outcomes, and a correct stack gives the
same answer both times. The test is McNemar's, exact: among the discordant prompts (right on
one read, wrong on the other) the two directions are equally likely under "the cache changes
nothing", so the smaller count is binomial(b + c, 1/2), two-sided. Concordant prompts carry no
information about a difference and do not enter the test (they do enter the agreement).

The same comparison is made per needle phase and per length phase, so a cache fault tied to a
phase (a stale window read only when the cached prefix ends mid-window) shows where it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["ReadPair", "paired_agreement"]


class ReadPair(NamedTuple):
    """One prompt read twice: its needle phase, its length phase (None where the config has no
    length axis) and the two outcomes (``first``: the cold read or the plain run; ``second``:
    the warm read or the salted run)."""

    phase: int
    length_phase: int | None
    first: float
    second: float


def _exact_mcnemar(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value of ``b`` against ``c`` discordant pairs (1.0 for none)."""
    if b + c == 0:
        return 1.0
    from scipy import stats as sps

    return float(sps.binomtest(min(b, c), b + c, 0.5).pvalue)


def _counts(pairs: Sequence[ReadPair]) -> dict[str, Any]:
    n = len(pairs)
    first_only = sum(1 for p in pairs if p.first > 0.5 >= p.second)
    second_only = sum(1 for p in pairs if p.second > 0.5 >= p.first)
    agree = n - first_only - second_only
    return {
        "n": n,
        "agree": agree,
        "agreement": agree / n if n else None,
        "first_acc": sum(p.first > 0.5 for p in pairs) / n if n else None,
        "second_acc": sum(p.second > 0.5 for p in pairs) / n if n else None,
        "first_only": first_only,
        "second_only": second_only,
        "p": _exact_mcnemar(first_only, second_only),
    }


def paired_agreement(pairs: Sequence[ReadPair], modulus: int) -> dict[str, Any]:
    """Agreement of two reads of the same prompts, overall, per needle phase and (where the
    pairs carry one) per length phase: ``n``, ``agree``, ``agreement`` (share), each read's
    accuracy (``first_acc``, ``second_acc``), the discordant counts both ways (``first_only``:
    right on the first read only; ``second_only``) and the exact McNemar ``p``. Outcomes are
    binary (a margin family's ``acc`` is ``margin > 0``)."""
    out = _counts(pairs)
    out["per_phase"] = [_counts([p for p in pairs if p.phase == r]) for r in range(modulus)]
    if any(p.length_phase is not None for p in pairs):
        out["per_length_phase"] = [
            _counts([p for p in pairs if p.length_phase == r]) for r in range(modulus)
        ]
    return out
