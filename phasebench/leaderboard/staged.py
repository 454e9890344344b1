"""Staged runs on the board (``phasebench eval --staged``).

A staged run sends a prefix of the split's base items (lm-eval's ``--limit``) and stops when
the group-sequential design of :mod:`phasebench.stats.sequential` says the gap is significant.
The board accepts such a run only where everything the design says follows from the samples:
the samples are exactly every rendering of the first base items of the regenerated split, their
number is one of the design's looks, ``--limit`` is that many prompts, and the design replayed
on the nested prefixes of the samples continues at every earlier look and stops, significant, at
this one. Nothing a submission says about its looks is read; the mark the board shows
(:func:`replay`'s answer) is recomputed. A run that stopped for futility named its own gap and
answers its own question, not the board's: it is refused with the way to complete it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phasebench.leaderboard.collect import Refused


def doc_limit(task: str, path: Path, results: Mapping[str, Any]) -> int | None:
    """lm-eval's ``--limit`` of the run as a whole number of documents, None when not given;
    a fraction (``--limit 0.5``) is refused."""
    limit = (results.get("config") or {}).get("limit")
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int | float) or limit != int(limit):
        raise Refused("limit", path, f"run with --limit {limit!r}; submit the full split")
    if limit < 1:
        raise Refused("limit", path, f"run with --limit {limit!r}; submit the full split")
    return int(limit)


def check_prefix(
    task: str,
    length: int,
    path: Path,
    spec: Any,
    expected: Mapping[str, Mapping[str, Any]],
    seen: set[str],
    limit: int,
) -> list[int]:
    """The base items of the split in order, after checking that ``seen`` (the samples' ids)
    is every rendering of the first k of them, k one of the design's looks, and ``limit``
    (lm-eval's) is that many prompts."""
    from phasebench.errors import StatsError
    from phasebench.stats.sequential import stage_sizes

    bases = sorted({int(row["base_id"]) for row in expected.values()})
    per_base = len(expected) // len(bases)
    covered = sorted({int(expected[i]["base_id"]) for i in seen})
    k = len(covered)
    try:
        looks = stage_sizes(spec.n_base, spec.modulus)
    except StatsError as exc:
        raise Refused(
            "limit", path, f"{task} length {length}: not a staged design ({exc})"
        ) from None
    if k not in looks[:-1]:
        raise Refused(
            "limit",
            path,
            f"{task} length {length}: {len(seen)} of {len(expected)} prompts, {k} of "
            f"{spec.n_base} base items: not a look of the staged design ({list(looks)}); "
            "submit the full split",
        )
    prefix = {i for i, row in expected.items() if int(row["base_id"]) in set(bases[:k])}
    if covered != bases[:k] or seen != prefix:
        raise Refused(
            "limit",
            path,
            f"{task} length {length}: the samples are not every rendering of the first {k} "
            "base items of the split, which is what --limit at a look sends",
        )
    if limit != k * per_base:
        raise Refused(
            "limit", path, f"{task}: --limit {limit} is not the {k * per_base} prompts of look "
            f"{looks.index(k) + 1}"
        )  # fmt: skip
    return bases


def replay(
    task: str,
    length: int,
    path: Path,
    rows: Sequence[Mapping[str, Any]],
    base_ids: Sequence[int],
    bases: Sequence[int],
    spec: Any,
) -> dict[str, Any]:
    """The design replayed on the samples (``rows``: scored rows as the board keeps them,
    ``base_ids`` their base items): the summary of each look's prefix, computed as the board
    computes every summary, decides; returns the mark (look, base items, verdict, reason).
    Refused unless the run stops, significant, at its last look."""
    from phasebench import metrics
    from phasebench.stats import summarize_samples
    from phasebench.stats.records import ScoredRecord
    from phasebench.stats.sequential import decide, stage_sizes

    looks = stage_sizes(spec.n_base, spec.modulus)
    k = len(set(base_ids))
    decision = None
    for stage, n in enumerate(looks[: looks.index(k) + 1], 1):
        keep = set(bases[:n])
        records = [
            ScoredRecord(int(r["length"]), int(r["modulus"]), str(r["unit"]), int(r["phase"]),
                         float(r["acc"]), r["margin"], int(r["pad"]), r["length_phase"])
            for r, b in zip(rows, base_ids, strict=True) if b in keep
        ]  # fmt: skip
        summary = summarize_samples(records, n_boot=metrics.N_BOOT, n_perm=metrics.N_PERM,
                                    seed=metrics.SEED, alpha=metrics.ALPHA)  # fmt: skip
        decision = decide(summary, stage)
        if decision.stop and n != k:
            raise Refused(
                "limit",
                path,
                f"{task} length {length}: the staged design stops at look {stage} ({n} base "
                f"items: {decision.reason}), not at the {k} submitted; submit that look",
            )
    if decision is None or decision.verdict != "significant":
        why = decision.reason if decision else "no look"
        raise Refused(
            "limit",
            path,
            f"{task} length {length}: the staged design does not stop at {k} base items "
            f"({why}); continue the run (phasebench eval --staged with the same --use_cache "
            "sends only the prompts not yet answered) or submit the full split",
        )
    return {
        "look": decision.stage,
        "looks": decision.n_stages,
        "n_base": k,
        "n_base_design": spec.n_base,
        "verdict": decision.verdict,
        "reason": decision.reason,
    }


def reading(summary: Mapping[str, Any], mark: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A board summary as the board shows it: for a staged run that stopped on a significant
    gap (``mark``, from :func:`replay`), a reading, not a preview. Its design is the whole
    split's ``n_base_design`` base items and the boundary holds the false-positive rate of that
    design (docs/stats.md), so its evidence strength is the design's: the detectable gap of
    ``n_base_design`` base items at the summary's phases and, from it, the preliminary mark.
    Every other summary is returned as it is (a flat entry needs the whole design)."""
    from phasebench import metrics
    from phasebench.stats import detectable_gap

    if not mark or mark.get("verdict") != "significant":
        return summary
    phases = len(summary.get("per_phase") or []) or int(summary.get("modulus") or 0)
    detectable = detectable_gap(int(mark["n_base_design"]), phases)
    return dict(
        summary,
        detectable_gap=detectable,
        preliminary=detectable > metrics.PRELIMINARY_GAP + 1e-9,
    )
