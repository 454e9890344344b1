"""Reading an Inspect AI log (``.eval``) of a phasebench task as the per-sample records an
lm-eval run logs, so that ``phasebench report`` and ``phasebench leaderboard pack`` read both
frameworks' runs with one reader downstream.

An Inspect sample of a phasebench task carries its split row in ``metadata`` (every field but
the prompt, which is the sample's input), its response in ``output.completion``, and the score
of :func:`phasebench.inspectai._tasks.phase_answer` (``acc``, and the witness
``served_verified``: the prompt token count phasebench labelled and the one the model's provider
reported). Each is turned into the record lm-eval writes for the same doc (``doc``,
``doc_hash``, ``prompt_hash``, ``target_hash``, ``filtered_resps``, ``acc``), so everything that
reads lm-eval's samples (:func:`phasebench.samples.scored_record`, the leaderboard's
re-scoring) reads it unchanged.

A log comes from outside (a leaderboard submission), so it is read with bounds before Inspect's
own reader (:func:`inspect_ai.log.read_eval_log`, which parses the zip's JSON into its pydantic
models and imports or runs nothing named in the log) sees it: a regular file, a size cap, a cap
on the zip's members, on their declared unpacked size and on the packing ratio.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phasebench.errors import DependencyError, LogError
from phasebench.lmeval_compat import doc_hash, hash_string
from phasebench.samples import SERVED_KEY

__all__ = [
    "FRAMEWORK",
    "REPORTED",
    "InspectLimits",
    "InspectRun",
    "is_inspect_log",
    "lm_eval_metric",
    "read_inspect_log",
]

#: The framework an Inspect run names in what phasebench writes (results files, boards).
FRAMEWORK = "inspect_ai"
#: The suffix of Inspect's log format (a zip of JSON files).
SUFFIX = ".eval"
#: The row field the prompt follows in the row schema (:data:`phasebench.rows.ROW_FIELDS`):
#: where a doc rebuilt from a sample's metadata gets its prompt back, so its lm-eval
#: ``doc_hash`` is the one of the row.
PROMPT_AFTER = "needle_key"
#: The statistics a phasebench task reports in Inspect (the compact set's, the gap's interval
#: and the named period), as (Inspect metric name, statistic key, part): ``value``, or the
#: ``low`` or ``high`` end of the statistic's interval. The tasks declare their metrics from it
#: (:mod:`phasebench.inspectai`) and ``phasebench leaderboard pack`` files their values under
#: lm-eval's names (:func:`lm_eval_metric`), where validation recomputes each.
REPORTED = (
    ("acc", "acc", "value"),
    ("worst_phase_crossfit", "worst_phase_crossfit", "value"),
    ("lowest_phase", "lowest_phase", "value"),
    ("gap", "gap", "value"),
    ("gap_ci_low", "gap", "low"),
    ("gap_ci_high", "gap", "high"),
    ("p_value", "p_value", "value"),
    ("dominant_period", "dominant_period", "value"),
)


def lm_eval_metric(key: str, part: str) -> str | None:
    """The lm-eval metric name of ``part`` of the statistic ``key`` (None: lm-eval has none)."""
    from phasebench import metrics

    name = metrics.get(key).metric
    if name is None or part == "value":
        return name
    return f"{name}_ci_{part}"


@dataclass(frozen=True)
class InspectLimits:
    """Caps checked before a log is parsed: its bytes, the zip's members, their declared
    unpacked bytes and the largest packing ratio of one member (a zip bomb's tell)."""

    max_bytes: int = 1 << 30
    max_members: int = 1 << 20
    max_unpacked: int = 16 << 30
    max_ratio: int = 1000


@dataclass
class InspectRun:
    """One Inspect task run of a phasebench task: the lm-eval task name it corresponds to,
    the model and its arguments, the task arguments, and lm-eval-shaped sample records."""

    task: str
    model: str
    model_args: dict[str, Any]
    task_args: dict[str, Any]
    created: str
    inspect_version: str
    samples: list[dict[str, Any]] = field(default_factory=list)
    #: The values of the task's metrics as Inspect logged them, by Inspect metric name.
    metrics: dict[str, float] = field(default_factory=dict)


def is_inspect_log(path: Path | str) -> bool:
    """Whether ``path`` names an Inspect log by its suffix (what the readers dispatch on)."""
    return Path(path).name.endswith(SUFFIX)


def _check_zip(path: Path, limits: InspectLimits) -> None:
    if path.is_symlink() or not path.is_file():
        raise LogError("path", path, "not a regular file (symlinks are refused)")
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise LogError("size", path, f"{size} bytes; an Inspect log may have {limits.max_bytes}")
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise LogError("json", path, f"not an Inspect .eval log (a zip file): {exc}") from None
    if len(members) > limits.max_members:
        raise LogError("size", path, f"more than {limits.max_members} files inside")
    unpacked = sum(m.file_size for m in members)
    if unpacked > limits.max_unpacked:
        raise LogError("size", path, f"unpacks to {unpacked} bytes (limit {limits.max_unpacked})")
    for member in members:
        if member.file_size > limits.max_ratio * max(member.compress_size, 1024):
            raise LogError(
                "size", path, f"{member.filename[:80]!r} packs over {limits.max_ratio}:1"
            )


def _doc(metadata: dict[str, Any], prompt: str) -> dict[str, Any]:
    """The split row a sample was made from: its metadata with the prompt put back in place."""
    doc: dict[str, Any] = {}
    for key, value in metadata.items():
        doc[key] = value
        if key == PROMPT_AFTER:
            doc["prompt"] = prompt
    doc.setdefault("prompt", prompt)
    return doc


def _record(number: int, sample: Any, path: Path) -> dict[str, Any]:
    """The lm-eval record of one Inspect sample (see the module's docstring)."""
    metadata = sample.metadata
    if not isinstance(metadata, dict) or "phase" not in metadata:
        raise LogError("json", path, f"sample {number}: no phasebench row in its metadata")
    prompt = sample.input if isinstance(sample.input, str) else None
    if prompt is None:
        raise LogError("json", path, f"sample {number}: its input is not one prompt text")
    scores = sample.scores or {}
    if len(scores) != 1:
        raise LogError("json", path, f"sample {number}: {len(scores)} scores where 1 is expected")
    score = next(iter(scores.values()))
    doc = _doc(metadata, prompt)
    completion = sample.output.completion if sample.output is not None else ""
    record: dict[str, Any] = {
        "doc_id": number - 1,
        "doc": doc,
        "target": str(doc.get("answer")),
        "filtered_resps": [completion],
        "filter": "none",
        "doc_hash": doc_hash(doc),
        "prompt_hash": hash_string(prompt),
        "target_hash": hash_string(str(doc.get("answer"))),
    }
    extra = score.metadata or {}
    for key in ("acc", SERVED_KEY):
        if key in extra:
            record[key] = extra[key]
    return record


def read_inspect_log(path: Path | str, limits: InspectLimits = InspectLimits()) -> InspectRun:
    """The Inspect run in the ``.eval`` log at ``path`` (bounded; see the module docstring).

    Refused in one line (:class:`~phasebench.errors.LogError`) where the log is not a
    finished run of a phasebench task."""
    path = Path(path)
    _check_zip(path, limits)
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise DependencyError(
            f"{path} is an Inspect AI log; reading it needs inspect-ai: "
            'pip install -c constraints.txt "phasebench[inspect]"'
        ) from None
    try:
        log = read_eval_log(str(path), format="eval")
    except Exception as exc:  # pydantic, zip and JSON errors of a hostile file alike
        detail = " ".join(str(exc).split())[:160]
        raise LogError("json", path, f"not a readable Inspect log ({detail})") from None
    if log.status != "success":
        raise LogError("json", path, f"the run's status is {log.status!r}; pass a finished run")
    name = str(log.eval.task).rpartition("/")[2]
    task = f"phasebench_{name}"
    if not str(log.eval.task).startswith("phasebench/"):
        raise LogError("json", path, f"task {str(log.eval.task)[:60]!r} is not phasebench's")
    samples = sorted(log.samples or [], key=lambda s: (s.epoch, str(s.id)))
    if any(s.epoch != 1 for s in samples):
        raise LogError("json", path, "several epochs: run phasebench tasks with --epochs 1")
    run = InspectRun(
        task=task,
        model=str(log.eval.model),
        model_args=dict(log.eval.model_args or {}),
        task_args=dict(log.eval.task_args or {}),
        created=str(log.eval.created),
        inspect_version=str(log.eval.packages.get("inspect_ai", "")),
    )
    run.samples = [_record(i, s, path) for i, s in enumerate(samples, 1)]
    for scores in (log.results.scores if log.results else [])[:1]:
        run.metrics = {
            name: float(m.value)
            for name, m in scores.metrics.items()
            if isinstance(m.value, float | int)
        }
    return run
