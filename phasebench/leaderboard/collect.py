"""Find submission folders and read their files defensively.

A submission is ``SUBMISSIONS/<org>__<model>/<revision>/`` holding ``submission.yaml``, the
unmodified lm-eval ``results_*.json`` and ``samples_<task>_*.jsonl`` (or ``.jsonl.gz``, as written
by ``phasebench leaderboard pack``), and, once a maintainer re-ran it, ``reproduced.yaml``.
Nothing else belongs there. Everything here treats the files as hostile: sizes are capped before
parsing, symlinks, odd names and other files are refused, YAML is read as plain data only
(:mod:`phasebench.leaderboard.plain_yaml`: no aliases, no tags), a samples file may not hold
more lines than the results file says it has samples (checked while it is streamed, blank lines
included), JSON ``NaN``/``Infinity`` are caught, and every failure becomes a :class:`Problem`
naming the rule and the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phasebench import samples
from phasebench.leaderboard.plain_yaml import PlainYamlError, load_plain

SUBMISSION_FILE = "submission.yaml"
#: Written by ``phasebench leaderboard mark-reproduced`` after a maintainer re-ran the model.
REPRODUCED_FILE = "reproduced.yaml"
README_FILE = "README.md"
MAX_YAML_BYTES = 64 * 1024
MAX_RESULTS_BYTES = 4 * 1024 * 1024
#: Any file of a submission, as it lies on disk.
MAX_FILE_BYTES = 1024 * 1024 * 1024
MAX_FILES = 64
#: Samples one task may claim (lm-eval's ``n-samples``); far above any spec the budget allows
#: at the documented lengths (256 items x 8 phases x 8 lengths is 16,384).
MAX_SAMPLES = 1 << 18
#: Caps on every samples file, checked while it is streamed (decompressed bytes, one line,
#: seconds); the line count is the task's sample count, set per file.
SAMPLE_LIMITS = samples.ReadLimits(
    max_bytes=256 * 1024 * 1024, max_line_bytes=16 * 1024 * 1024, max_seconds=120.0
)
KNOWN_FILES = (
    f"{SUBMISSION_FILE}, {REPRODUCED_FILE}, {README_FILE}, results_<date>.json and "
    f"samples_<task>_<date>.jsonl[.gz]"
)

#: ``<org>__<model>`` folder names: Hub-safe characters only, no dots at the start (no ``..``).
MODEL_DIR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}__[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
#: ``<revision>`` or ``<revision>+<variant>``: several configurations of the same weights
#: (KV-cache presses, for instance), each with its ``variant`` field.
REVISION_DIR = re.compile(r"^[0-9a-f]{40}(\+[a-z0-9][a-z0-9._-]{0,63})?$")
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
    #: A maintainer's mark (``by``, ``date``, ``note``) when ``reproduced.yaml`` vouches for
    #: exactly these files, else None.
    reproduced: dict[str, str] | None = None


def _read_capped(path: Path, limit: int, rule: str) -> bytes:
    if path.is_symlink() or not path.is_file():
        raise Refused("path", path, "not a regular file (symlinks are refused)")
    size = path.stat().st_size
    if size > limit:
        raise Refused(rule, path, f"file is {size} bytes; the limit is {limit}")
    return path.read_bytes()


def read_yaml(path: Path) -> dict[str, Any]:
    """``submission.yaml`` (or ``reproduced.yaml``) as plain data, size-capped, a mapping or
    refused (:func:`~phasebench.leaderboard.plain_yaml.load_plain`)."""
    raw = _read_capped(path, MAX_YAML_BYTES, "size")
    try:
        data = load_plain(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise Refused("yaml", path, "not valid UTF-8") from None
    except PlainYamlError as exc:
        raise Refused("yaml", path, f"not plain YAML data: {ascii(str(exc))[1:-1]}") from None
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
        packed = "bytes" in exc.detail  # a raw log too large: packing shrinks it
        hint = "; shrink lm-eval's logs with `phasebench leaderboard pack`" if packed else ""
        raise Refused(exc.rule, path, exc.detail + hint) from None


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
                    Problem("path", shown, "expected a folder named REVISION or REVISION+VARIANT")
                )
                continue
            found.append(rev_dir)
    return found, problems


def read_submission(folder: Path, limits: samples.ReadLimits | None = None) -> RawSubmission:
    """Parse one folder's files; raises :class:`Refused` on the first unreadable one.

    Each samples file is read with ``limits`` (default :data:`SAMPLE_LIMITS`) and at most as
    many lines as lm-eval's ``n-samples`` gives its task in the results."""
    folder = Path(folder)
    limits = limits or SAMPLE_LIMITS
    name = f"{folder.parent.name}/{folder.name}"
    entries = sorted(folder.iterdir())
    if len(entries) > MAX_FILES:
        raise Refused("size", name, f"{len(entries)} files; at most {MAX_FILES} are read")
    for entry in entries:
        if entry.is_symlink() or not entry.is_file() or not FILE_NAME.match(entry.name):
            raise Refused(
                "path", f"{name}/{ascii(entry.name)[1:-1]}", "only plain files with safe names"
            )
    for entry in entries:
        known = entry.name in (SUBMISSION_FILE, REPRODUCED_FILE, README_FILE)
        if not (known or RESULTS_NAME.match(entry.name) or SAMPLES_NAME.match(entry.name)):
            raise Refused("files", entry, f"unexpected file; a submission holds only {KNOWN_FILES}")
        if entry.stat().st_size > MAX_FILE_BYTES:
            raise Refused("size", entry, f"file is over {MAX_FILE_BYTES} bytes")
    meta_path = folder / SUBMISSION_FILE
    if not meta_path.exists():
        raise Refused("schema", name, f"no {SUBMISSION_FILE}")
    data_files = [p for p in entries if RESULTS_NAME.match(p.name) or SAMPLES_NAME.match(p.name)]
    reproduced = _read_reproduced(folder / REPRODUCED_FILE, data_files)
    meta = read_yaml(meta_path)
    results = [(p, read_results(p)) for p in entries if RESULTS_NAME.match(p.name)]
    if not results:
        raise Refused("files", name, "no lm-eval results_*.json")
    raw = RawSubmission(folder=folder, name=name, meta=meta, results=results, reproduced=reproduced)
    for path in entries:
        match = SAMPLES_NAME.match(path.name)
        if not match:
            continue
        task = match["task"]
        if task in raw.samples:
            raise Refused("files", path, f"a second samples file for task {task!r}")
        expected = _sample_count(task, results, path)
        records = list(iter_samples(path, dataclasses.replace(limits, max_lines=expected)))
        raw.samples[task] = (path, records)
    return raw


def _sample_count(task: str, results: list[tuple[Path, dict[str, Any]]], samples_path: Path) -> int:
    """How many samples the results say ``task`` has (lm-eval's ``n-samples.<task>.effective``):
    the most lines its samples file may hold."""
    for path, data in results:
        if task not in (data.get("results") or {}):
            continue
        counts = (data.get("n-samples") or {}).get(task)
        effective = counts.get("effective") if isinstance(counts, dict) else None
        if isinstance(effective, bool) or not isinstance(effective, int) or effective < 0:
            raise Refused(
                "count", path, f"n-samples.{task}.effective must be a count (got {effective!r})"
            )
        if effective > MAX_SAMPLES:
            raise Refused(
                "count",
                path,
                f"{task}: {effective} samples claimed; at most {MAX_SAMPLES} are read",
            )
        return effective
    raise Refused("files", samples_path, "samples of a task missing from results")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: Characters no displayed text may hold: C0 and C1 controls, and the invisible ones that
#: reorder or hide text on a page or a terminal (bidi overrides and isolates, zero-width
#: characters, line and paragraph separators, the byte-order mark). Kept in step with the
#: text patterns of ``submission.schema.json``.
INVISIBLE = "\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
#: The most characters a maintainer's mark may hold: its ``note``, and its ``reproduced_by``.
MAX_NOTE = 1000
MAX_BY = 100
_MARK_TEXT = re.compile(f"^[^<>{INVISIBLE}]{{1,{MAX_NOTE}}}$")
_MARK_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
MARK_KEYS = {"reproduced_by", "date", "note", "files", "phasebench_version"}


def mark_text_ok(text: object, limit: int) -> bool:
    """Plain text for a mark: 1..``limit`` characters, no ``<``, ``>``, control or invisible
    characters (:data:`INVISIBLE`)."""
    return isinstance(text, str) and len(text) <= limit and bool(_MARK_TEXT.match(text))


def _read_reproduced(path: Path, data_files: list[Path]) -> dict[str, str] | None:
    """The maintainer's mark in ``reproduced.yaml`` (None without one), refused (rule
    ``reproduced``) if it is malformed or does not vouch for exactly these results and samples
    files, byte for byte (a changed file voids the mark)."""
    if not path.exists():
        return None
    mark = read_yaml(path)
    unknown = sorted(set(mark) - MARK_KEYS)
    if unknown:
        raise Refused("reproduced", path, f"unknown field(s) {', '.join(map(ascii, unknown))}")
    by, date, note = mark.get("reproduced_by"), mark.get("date"), mark.get("note", "")
    if not mark_text_ok(by, MAX_BY):
        raise Refused("reproduced", path, "reproduced_by must name who re-ran it (plain text)")
    if not isinstance(date, str) or not _MARK_DATE.match(date):
        raise Refused("reproduced", path, "date must be YYYY-MM-DD")
    if note != "" and not mark_text_ok(note, MAX_NOTE):
        raise Refused("reproduced", path, "note must be plain text")
    files = mark.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(v, str) and _SHA256.match(v) for v in files.values()
    ):
        raise Refused("reproduced", path, "files must map each file name to its SHA-256")
    present = {p.name: p for p in data_files}
    if set(files) != set(present):
        raise Refused(
            "reproduced",
            path,
            "the mark does not list exactly the results and samples files of the folder; "
            "re-run it and mark it again, or delete reproduced.yaml",
        )
    for name, digest in sorted(files.items()):
        if file_sha256(present[name]) != digest:
            raise Refused(
                "reproduced",
                path,
                f"{name} changed since it was marked reproduced; re-run it and mark it again, "
                f"or delete reproduced.yaml",
            )
    return {"by": by, "date": date, "note": note}
