"""Find submission folders and read their files defensively.

A submission is ``SUBMISSIONS/<org>__<model>/<revision>/`` holding ``submission.yaml``, the
unmodified lm-eval ``results_*.json`` and ``samples_<task>_*.jsonl`` (or ``.jsonl.gz``, as written
by ``phasebench leaderboard pack``). Everything here treats the files as hostile: sizes are
capped before parsing, symlinks and odd names are refused, JSON ``NaN``/``Infinity`` are caught,
and every failure becomes a :class:`Problem` naming the rule and the file, never an exception
that would stop the other submissions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from phasebench import samples

SUBMISSION_FILE = "submission.yaml"
MAX_YAML_BYTES = 64 * 1024
MAX_RESULTS_BYTES = 32 * 1024 * 1024
MAX_FILES = 64
#: Caps on every samples file, checked while it is streamed (decompressed bytes, one line).
SAMPLE_LIMITS = samples.ReadLimits(max_bytes=1024 * 1024 * 1024, max_line_bytes=64 * 1024 * 1024)

#: ``<org>__<model>`` folder names: Hub-safe characters only, no dots at the start (no ``..``).
MODEL_DIR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}__[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
REVISION_DIR = re.compile(r"^[0-9a-f]{40}$")
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
RESULTS_NAME = samples.RESULTS_NAME
SAMPLES_NAME = samples.SAMPLES_NAME


@dataclass(frozen=True)
class Problem:
    """One broken rule: which rule, in which file, and what to do about it."""

    rule: str
    file: str
    message: str

    def line(self) -> str:
        return f"[{self.rule}] {self.file}: {self.message}"


class Refused(Exception):
    """Raised inside collection/validation to stop one submission with one :class:`Problem`."""

    def __init__(self, rule: str, file: str | Path, message: str) -> None:
        super().__init__(message)
        self.problem = Problem(rule, str(file), message)


@dataclass
class RawSubmission:
    """The parsed files of one submission folder (not yet validated)."""

    folder: Path
    name: str  # "<org>__<model>/<revision>", safe to print
    meta: dict[str, Any]
    results: list[tuple[Path, dict[str, Any]]]
    samples: dict[str, tuple[Path, list[dict[str, Any]]]] = field(default_factory=dict)


def _read_capped(path: Path, limit: int, rule: str) -> bytes:
    if path.is_symlink() or not path.is_file():
        raise Refused("path", path, "not a regular file (symlinks are refused)")
    size = path.stat().st_size
    if size > limit:
        raise Refused(rule, path, f"file is {size} bytes; the limit is {limit}")
    return path.read_bytes()


def read_yaml(path: Path) -> dict[str, Any]:
    """``submission.yaml`` parsed with the safe loader, size-capped, a mapping or refused."""
    raw = _read_capped(path, MAX_YAML_BYTES, "size")
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise Refused("yaml", path, f"not valid UTF-8 YAML ({first})") from None
    if not isinstance(data, dict):
        raise Refused("yaml", path, "must be a mapping of fields (see submission.schema.json)")
    return data


def read_results(path: Path) -> dict[str, Any]:
    """An lm-eval ``results_*.json`` (:func:`phasebench.samples.read_results`), or refused."""
    try:
        return samples.read_results(path, MAX_RESULTS_BYTES)
    except samples.LogError as exc:
        raise Refused(exc.rule, path, exc.detail) from None


def iter_samples(path: Path, limits: samples.ReadLimits | None = None) -> Iterator[dict[str, Any]]:
    """Records of a ``samples_*.jsonl[.gz]`` (:func:`phasebench.samples.iter_samples`), read
    with ``limits`` (default :data:`SAMPLE_LIMITS`); a broken rule stops this submission only."""
    try:
        yield from samples.iter_samples(path, limits or SAMPLE_LIMITS)
    except samples.LogError as exc:
        raise Refused(exc.rule, path, exc.detail) from None


def submission_folders(root: Path) -> tuple[list[Path], list[Problem]]:
    """Every ``<org>__<model>/<revision>`` folder under ``root`` (sorted), plus the entries that
    do not fit the layout, each as a :class:`Problem` (so the report lists them too)."""
    root = Path(root)
    if (root / SUBMISSION_FILE).exists():  # a single submission folder
        return [root], []
    found, problems = [], []
    for model_dir in sorted(root.iterdir()) if root.is_dir() else []:
        if model_dir.name.startswith(".") or model_dir.name == "README.md":
            continue
        shown = ascii(model_dir.name)[1:-1]
        if model_dir.is_symlink() or not model_dir.is_dir() or not MODEL_DIR.match(model_dir.name):
            problems.append(
                Problem(
                    "path", shown, "expected a folder named ORG__MODEL (letters, digits, . _ -)"
                )
            )
            continue
        for rev_dir in sorted(model_dir.iterdir()):
            shown = f"{model_dir.name}/{ascii(rev_dir.name)[1:-1]}"
            if rev_dir.is_symlink() or not rev_dir.is_dir() or not REVISION_DIR.match(rev_dir.name):
                problems.append(
                    Problem("path", shown, "expected a folder named by the 40-hex commit hash")
                )
                continue
            found.append(rev_dir)
    return found, problems


def read_submission(folder: Path) -> RawSubmission:
    """Parse one folder's files; raises :class:`Refused` on the first unreadable one."""
    folder = Path(folder)
    name = f"{folder.parent.name}/{folder.name}"
    entries = sorted(folder.iterdir())
    if len(entries) > MAX_FILES:
        raise Refused("size", name, f"{len(entries)} files; at most {MAX_FILES} are read")
    for entry in entries:
        if entry.is_symlink() or not entry.is_file() or not FILE_NAME.match(entry.name):
            raise Refused(
                "path", f"{name}/{ascii(entry.name)[1:-1]}", "only plain files with safe names"
            )
    meta_path = folder / SUBMISSION_FILE
    if not meta_path.exists():
        raise Refused("schema", name, f"no {SUBMISSION_FILE}")
    meta = read_yaml(meta_path)
    results = [(p, read_results(p)) for p in entries if RESULTS_NAME.match(p.name)]
    if not results:
        raise Refused("files", name, "no lm-eval results_*.json")
    raw = RawSubmission(folder=folder, name=name, meta=meta, results=results)
    for path in entries:
        match = SAMPLES_NAME.match(path.name)
        if not match:
            continue
        task = match["task"]
        if task in raw.samples:
            raise Refused("files", path, f"a second samples file for task {task!r}")
        raw.samples[task] = (path, list(iter_samples(path)))
    return raw
