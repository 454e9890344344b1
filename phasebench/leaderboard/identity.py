"""One entry per model: duplicates and superseded revisions among accepted submissions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phasebench.leaderboard.collect import Problem


def drop_superseded_and_duplicates(
    accepted: Sequence[Any],
) -> tuple[list[Any], list[tuple[str, str]], list[tuple[str, list[Problem]]]]:
    """Split accepted submissions into those kept, ``(superseded, by)`` pairs and refusals of
    duplicates (the ``duplicate`` rule), in name order."""
    by_revision = {(s.meta["model"], s.meta["revision"]): s for s in accepted}
    dropped: set[str] = set()
    superseded: list[tuple[str, str]] = []
    for sub in accepted:
        old = by_revision.get((sub.meta["model"], sub.meta.get("supersedes")))
        if old is not None and old is not sub:
            dropped.add(old.name)
            superseded.append((old.name, sub.name))
    seen: dict[tuple, str] = {}
    kept, refused = [], []
    for sub in sorted(accepted, key=lambda s: s.name):
        if sub.name in dropped:
            continue
        if sub.duplicate_key in seen:
            problem = Problem(
                "duplicate",
                f"{sub.name}/submission.yaml",
                f"same model, revision, precision, chat template and task versions as "
                f"{seen[sub.duplicate_key]}",
            )
            refused.append((sub.name, [problem]))
            continue
        seen[sub.duplicate_key] = sub.name
        kept.append(sub)
    return kept, superseded, refused
