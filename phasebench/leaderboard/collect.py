"""Find submission folders and read their files defensively.

A submission is ``SUBMISSIONS/<org>__<model>/<revision>/`` holding ``submission.yaml``, the
unmodified lm-eval ``results_*.json`` and ``samples_<task>_*.jsonl`` (or ``.jsonl.gz``, as written
by ``phasebench leaderboard pack``). Everything here treats the files as hostile: sizes are
capped before parsing, symlinks and odd names are refused, JSON ``NaN``/``Infinity`` are caught,
and every failure becomes a :class:`Problem` naming the rule and the file, never an exception
that would stop the other submissions.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SUBMISSION_FILE = "submission.yaml"
MAX_YAML_BYTES = 64 * 1024
MAX_RESULTS_BYTES = 32 * 1024 * 1024
MAX_SAMPLES_BYTES = 1024 * 1024 * 1024  # decompressed
MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_FILES = 64

#: ``<org>__<model>`` folder names: Hub-safe characters only, no dots at the start (no ``..``).
MODEL_DIR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}__[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
REVISION_DIR = re.compile(r"^[0-9a-f]{40}$")
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
RESULTS_NAME = re.compile(r"^results_[A-Za-z0-9._-]+\.json$")
SAMPLES_NAME = re.compile(r"^samples_(?P<task>[A-Za-z0-9_]+?)_(?P<date>[0-9T.:-]+)\.jsonl(\.gz)?$")


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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not allowed")


def _nonfinite_marker(name: str) -> float:
    return float("nan")


def loads_strict(text: str) -> Any:
    """JSON without NaN/Infinity (Python's json accepts them by default)."""
    return json.loads(text, parse_constant=_reject_constant)


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


def _finite_tree(value: Any, where: str, allow_nan_keys: re.Pattern | None = None) -> None:
    """Refuse NaN/inf anywhere except under keys matching ``allow_nan_keys``."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            if allow_nan_keys is None or not allow_nan_keys.search(key):
                raise ValueError(f"non-finite number at {key}")
        elif isinstance(item, dict):
            stack.extend((f"{key}.{k}", v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{key}[{i}]", v) for i, v in enumerate(item))


_STDERR_KEY = re.compile(r"_stderr,[^.]*$")


def read_results(path: Path) -> dict[str, Any]:
    """An lm-eval ``results_*.json``. Non-finite numbers are refused, except stderr fields,
    which lm-eval itself may write as NaN when it cannot estimate them."""
    raw = _read_capped(path, MAX_RESULTS_BYTES, "size")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_nonfinite_marker)
        _finite_tree(data, "results", _STDERR_KEY)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Refused("json", path, f"not valid lm-eval results JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise Refused("json", path, "no 'results' mapping: is this an lm-eval results file?")
    return data


def iter_samples(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a ``samples_*.jsonl`` or ``.jsonl.gz``, with size, line and NaN caps."""
    if path.is_symlink() or not path.is_file():
        raise Refused("path", path, "not a regular file (symlinks are refused)")
    opener = gzip.open if path.name.endswith(".gz") else open
    total = 0
    try:
        with opener(path, "rb") as fh:
            for number, line in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), 1):
                total += len(line)
                if len(line) > MAX_LINE_BYTES:
                    raise Refused("size", path, f"line {number} is longer than {MAX_LINE_BYTES}")
                if total > MAX_SAMPLES_BYTES:
                    raise Refused("size", path, f"more than {MAX_SAMPLES_BYTES} bytes of samples")
                if not line.strip():
                    continue
                try:
                    record = loads_strict(line.decode("utf-8"))
                except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                    raise Refused("json", path, f"line {number}: not valid JSON ({exc})") from None
                if not isinstance(record, dict):
                    raise Refused("json", path, f"line {number}: a sample must be a JSON object")
                yield record
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise Refused("json", path, f"cannot read ({exc})") from None


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
