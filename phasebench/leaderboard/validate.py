"""Validate submissions: nothing is taken on faith.

Rules (each refusal names one of them and the file):

``schema``      submission.yaml matches ``submission.schema.json`` (also refuses HTML, control
                characters and path tricks in its text fields) and names its own folder
``path``        folder and file names fit the layout; no symlinks
``size``/``json``/``yaml``  files are within size limits and parse; no NaN/inf
``files``       a results file and one samples file per task are present
``task``        every task is a phasebench task of this version
``limit``       no ``--limit``: lm-eval's effective sample count equals the original one
``count``       every phase of every length is present, each base item at every phase, no extras
``tokenizer``   the named tokenizer loads here and has the fingerprint the samples carry
                and, where the run recorded it, encodes the probe text as the run's did
``hash``        doc, prompt and target hashes equal those of the prompts this phasebench
                generates for that spec and tokenizer (so unverifiable data is refused)
``metric``      per-sample metrics recomputed from the responses, and the aggregate metrics
                recomputed from the samples, equal the reported ones
``max_length``  the model's maximum length covers the longest prompt plus the generation budget
``duplicate``   one entry per (model, revision, precision, chat template, task versions)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from phasebench.errors import PhasebenchError, SubmissionsError
from phasebench.leaderboard.checks import check_task, task_configs
from phasebench.leaderboard.collect import (
    Problem,
    RawSubmission,
    Refused,
    read_submission,
    submission_folders,
)
from phasebench.leaderboard.identity import drop_superseded_and_duplicates
from phasebench.leaderboard.provenance import provenance
from phasebench.leaderboard.regenerate import Regenerator
from phasebench.leaderboard.schema import check_schema, known_tasks


@dataclass
class Submission:
    """A validated submission: its metadata and one row per scored sample."""

    name: str
    meta: dict[str, Any]
    provenance: dict[str, Any]
    #: One row per scored sample: task, family, length, modulus, n_base, and the scored record
    #: (unit, phase, acc, margin, pad) the statistics are computed from.
    samples: pd.DataFrame
    task_versions: dict[str, str]

    @property
    def duplicate_key(self) -> tuple:
        return (
            self.meta["model"].lower(),
            self.meta["revision"],
            self.meta["precision"],
            bool(self.meta["chat_template"]),
            tuple(sorted(self.task_versions.items())),
        )


@dataclass
class Outcome:
    """Every submission under a folder, split into accepted and refused (with reasons)."""

    accepted: list[Submission] = field(default_factory=list)
    refused: list[tuple[str, list[Problem]]] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)

    def report_lines(self) -> list[str]:
        lines = [f"accepted: {len(self.accepted)}  refused: {len(self.refused)}"]
        for sub in self.accepted:
            lines.append(f"  ok       {sub.name}")
        for name, by in self.superseded:
            lines.append(f"  superseded {name} (by {by})")
        for name, problems in self.refused:
            lines.append(f"  REFUSED  {name}")
            lines.extend(f"           {p.line()}" for p in problems)
        return lines

    def report_json(self) -> dict[str, Any]:
        return {
            "accepted": [s.name for s in self.accepted],
            "superseded": [{"submission": n, "by": b} for n, b in self.superseded],
            "refused": [
                {
                    "submission": name,
                    "problems": [
                        {"rule": p.rule, "file": p.file, "message": p.message} for p in problems
                    ],
                }
                for name, problems in self.refused
            ],
        }


def validate_submission(
    raw: RawSubmission, tasks: Mapping[str, str], regen: Regenerator
) -> Submission:
    """Apply every rule to one parsed submission; raises :class:`Refused` at the first failure."""
    check_schema(raw)
    found = task_configs(raw, tasks)
    extra = sorted(set(raw.samples) - set(found))
    if extra:
        raise Refused("files", raw.samples[extra[0]][0], "samples of a task missing from results")
    try:
        tok = regen.tokenizer(
            raw.meta["tokenizer"]["name"], raw.meta["tokenizer"].get("args") or {}
        )
    except PhasebenchError as exc:
        raise Refused("tokenizer", raw.folder / "submission.yaml", f"cannot load: {exc}") from None
    frames, longest = [], 0
    for task, (path, results) in sorted(found.items()):
        frame, need = check_task(raw, task, path, results, regen, tok)
        frames.append(frame)
        longest = max(longest, need)
    max_length = raw.meta.get("max_length")
    for _, results in raw.results:
        if isinstance(results.get("max_length"), int) and not isinstance(
            results["max_length"], bool
        ):
            max_length = results["max_length"]
    if max_length is None:
        raise Refused("max_length", raw.name, "give max_length in submission.yaml")
    if max_length < longest:
        raise Refused(
            "max_length",
            raw.name,
            f"the model takes {max_length} tokens but the longest prompt plus generation "
            f"needs {longest} (lm-eval would cut the prompt from the left)",
        )
    origin = provenance(raw, found)
    origin["max_length"] = max_length
    versions = {task: tasks[task] for task in found}
    return Submission(raw.name, dict(raw.meta), origin, pd.concat(frames), versions)


def validate_all(
    root: Path | str,
    *,
    tasks: Mapping[str, str] | None = None,
    cache: Path | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> Outcome:
    """Validate every submission under ``root``; one bad submission never stops the others."""
    root = Path(root)
    if not root.is_dir():
        raise SubmissionsError(f"{str(root)!r} is not a folder of submissions")
    tasks = dict(tasks) if tasks is not None else known_tasks()
    outcome = Outcome()
    folders, problems = submission_folders(root)
    outcome.refused.extend((p.file, [p]) for p in problems)
    regen = Regenerator(cache)
    try:
        for folder in folders:
            name = f"{folder.parent.name}/{folder.name}"
            if on_progress:
                on_progress(name)
            try:
                outcome.accepted.append(validate_submission(read_submission(folder), tasks, regen))
            except Refused as exc:
                outcome.refused.append((name, [_relative(exc.problem, root)]))
            except (KeyError, TypeError, ValueError, IndexError, AttributeError, OSError) as exc:
                # content of a shape no rule anticipated: refuse this one, keep going
                problem = Problem(
                    "format", name, f"unexpected content ({type(exc).__name__}: {exc})"
                )
                outcome.refused.append((name, [problem]))
    finally:
        regen.close()
    outcome.accepted, outcome.superseded, duplicates = drop_superseded_and_duplicates(
        outcome.accepted
    )
    outcome.refused = sorted(outcome.refused + duplicates, key=lambda item: item[0])
    return outcome


def _relative(problem: Problem, root: Path) -> Problem:
    """Name files relative to the submissions folder (reports are published)."""
    try:
        shown = str(Path(problem.file).relative_to(root))
    except ValueError:
        shown = problem.file
    return Problem(problem.rule, shown, problem.message)
