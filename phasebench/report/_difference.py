"""The two-run difference (``phasebench report A B --diff``): two runs of one split, checked
to be of one split, compared in gap and worst phase by :func:`phasebench.stats.compare_runs`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phasebench import metrics
from phasebench.cache_reads import arm_of, arms_comparison
from phasebench.errors import SamplesError, StatsError
from phasebench.report._compute import SPLIT_FIELDS, _group
from phasebench.report._read import Run
from phasebench.samples import ScoredRecord


def difference_report(
    runs: Sequence[Run],
    *,
    n_boot: int = metrics.N_BOOT,
    seed: int = metrics.SEED,
) -> dict[str, Any]:
    """Two runs of one split, before then after: per (task, length) both ran,
    :func:`phasebench.stats.compare_runs` (the difference after minus before in gap and in
    worst phase, paired bootstrap interval and the p-value it inverts to), as the report's
    ``difference``.

    Refused (:class:`SamplesError`, one line) unless there are exactly two runs sharing at
    least one (task, length), each shared one of the same split: the same tokenizer
    fingerprint, family, modulus and seed, and the same docs (lm-eval's doc hashes)."""
    from phasebench.stats import compare_runs

    if len(runs) != 2:
        names = ", ".join(r.name for r in runs) or "none"
        raise SamplesError(
            f"--diff compares exactly two runs, before then after (got {len(runs)}: {names}); "
            "pass two lm-eval output folders with per-sample logs"
        )
    before, after = runs
    grouped = []
    for run in runs:
        groups: dict[tuple[str, int], list[ScoredRecord]] = {}
        identity: dict[tuple[str, int], dict[str, Any]] = {}
        for task, samples in run.samples.items():
            found, _ = _group(task, samples, identity)
            groups.update(found)
        grouped.append((groups, identity))
    (groups_a, ids_a), (groups_b, ids_b) = grouped
    shared = sorted(set(groups_a) & set(groups_b))
    if not shared:
        raise SamplesError(
            f"{before.name} and {after.name} share no task at one length "
            f"({_keys(groups_a)} against {_keys(groups_b)}); --diff compares two runs of one split"
        )
    tasks: dict[str, dict[str, Any]] = {}
    for key in shared:
        task = key[0].split("/")[0]
        # a plain and a salted run of one split: the docs differ by the salt alone
        arms = (arm_of(before.samples[task]), arm_of(after.samples[task]))
        salted = sorted(arms, key=str) == sorted((None, "salted"), key=str)
        if problem := _split_mismatch(ids_a[key], ids_b[key], same_docs=not salted):
            raise SamplesError(
                f"{before.name} and {after.name} are not runs of one split: {key[0]} length "
                f"{key[1]}: {problem}; --diff compares two runs of the same split (same spec "
                "and tokenizer)"
            )
        try:
            diff = compare_runs(groups_a[key], groups_b[key], n_boot=n_boot, seed=seed)
        except StatsError as exc:
            raise SamplesError(f"{key[0]} length {key[1]}: {exc}") from None
        split = {k: _one(ids_a[key][k]) for k in ("tokenizer_fingerprint", "seed", "docs_digest")}
        tasks.setdefault(key[0], {})[str(key[1])] = {
            "task": key[0],
            "length": key[1],
            "split": split,
            **diff,
        }
        if salted:  # the salted arm's reads against the plain run's, prompt by prompt
            plain, other = (before, after) if arms[0] is None else (after, before)
            found = arms_comparison(task, plain.samples[task], other.samples[task])
            if key[1] in found:
                tasks[key[0]][str(key[1])]["prefix_cache"] = found[key[1]]
    return {"before": before.name, "after": after.name, "tasks": tasks}


def _one(values: Any) -> Any:
    """A list of one value as the value."""
    return values[0] if isinstance(values, list) and len(values) == 1 else values


def _keys(groups: Mapping[tuple[str, int], Any]) -> str:
    return ", ".join(f"{task} length {length}" for task, length in sorted(groups)) or "none"


def _split_mismatch(
    a: Mapping[str, Any], b: Mapping[str, Any], same_docs: bool = True
) -> str | None:
    """What differs between two groups' splits (the first field), or None; without
    ``same_docs`` the docs themselves may differ (a salted arm against a plain run)."""
    for name in SPLIT_FIELDS:
        if a[name] != b[name]:
            shown = [", ".join(_short(v) for v in side[name]) for side in (a, b)]
            return f"{name.replace('_', ' ')} {shown[0]} against {shown[1]}"
    if a["docs"] != b["docs"]:
        return f"{a['docs']} samples against {b['docs']}"
    if same_docs and a["docs_digest"] != b["docs_digest"]:
        return "the logged docs differ (lm-eval doc hashes)"
    return None


def _short(value: str) -> str:
    """A fingerprint shortened as the docs write it (``sha256:e35fd2c9...0403a847``)."""
    if value.startswith("sha256:") and len(value) > 30:
        return f"{value[:15]}...{value[-8:]}"
    return value
