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

McNemar sees a cache that makes warm reads worse, not one that *changes* answers both ways
(right to wrong on some prompts, wrong to right on others: b and c alike, p near 1), which a
server's own nondeterminism also gives. A ``baseline`` run reads every prompt a third time,
cold by construction (behind a salt of its own), and :func:`cold_baseline` separates the two:
per prompt, whether the warm read disagrees with the cold one, and whether the two cold reads
disagree with each other. Where the cache changes nothing the warm read is one more read like
the salted one, the two indicators are exchangeable, and among the prompts where exactly one is
set each is set with probability 1/2; an excess of "warm disagrees, the colds agree" is the
cache's doing (exact binomial test, one-sided). A deterministic server's two cold reads agree
on every prompt, so on it any warm disagreement counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["ReadPair", "ThreeReads", "cold_baseline", "paired_agreement"]


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


class ThreeReads(NamedTuple):
    """One prompt read three times in a ``baseline`` run: its needle phase, its length phase
    (None without a length axis), and the outcomes of the cold read, the warm read right after
    it, and the salted read (a second cold read: no cache can answer it)."""

    phase: int
    length_phase: int | None
    cold: float
    warm: float
    salted: float


def cold_baseline(reads: Sequence[ThreeReads]) -> dict[str, Any]:
    """The two cold reads against each other and the warm read against them: ``n``;
    ``cold_agree`` and ``cold_agreement`` (cold and salted read alike: the server's own
    determinism), ``warm_agree`` and ``warm_agreement`` (warm and cold alike), ``salted_acc``;
    ``warm_only``, prompts where the warm read disagrees with the cold one and the two cold reads
    agree, and ``cold_only``, the reverse; and ``p``, the one-sided exact binomial test of
    ``warm_only`` among the prompts where exactly one of the two disagrees (1.0 for none)."""
    n = len(reads)
    cold, warm, salted = (
        [getattr(r, name) > 0.5 for r in reads] for name in ("cold", "warm", "salted")
    )
    warm_off = [w != c for c, w in zip(cold, warm, strict=True)]
    cold_off = [s != c for c, s in zip(cold, salted, strict=True)]
    warm_only = sum(w and not c for w, c in zip(warm_off, cold_off, strict=True))
    cold_only = sum(c and not w for w, c in zip(warm_off, cold_off, strict=True))
    p = 1.0
    if warm_only + cold_only:
        from scipy import stats as sps

        p = float(
            sps.binomtest(warm_only, warm_only + cold_only, 0.5, alternative="greater").pvalue
        )
    return {
        "n": n,
        "cold_agree": n - sum(cold_off),
        "cold_agreement": (n - sum(cold_off)) / n if n else None,
        "warm_agree": n - sum(warm_off),
        "warm_agreement": (n - sum(warm_off)) / n if n else None,
        "salted_acc": sum(salted) / n if n else None,
        "warm_only": warm_only,
        "cold_only": cold_only,
        "p": p,
    }
