"""Reading runs: lm-eval's per-sample logs found under folders or named file by file, and
phasebench report JSONs read back (bounded, upgraded from earlier formats, refused in one line
unless they render)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phasebench import metrics
from phasebench.errors import SamplesError
from phasebench.inspect_log import is_inspect_log, read_inspect_log
from phasebench.report._render import comparison_frame, render_tables
from phasebench.samples import (
    RESULTS_NAME,
    SAMPLES_NAME,
    iter_samples,
    newest_samples,
    read_results,
    run_name,
)

REPORT_FORMAT = "phasebench-report/3"
#: Earlier formats read back, upgraded on reading, each with the summary keys renamed since
#: (format 1 filed a margin family's sweeps under another key,
#: :data:`phasebench.metrics.RENAMED_SINCE_FORMAT_1`; formats 1 and 2 filed the lowest phase as
#: ``worst_phase``, :data:`phasebench.metrics.RENAMED_SINCE_FORMAT_2`).
OLD_FORMATS = {
    "phasebench-report/1": {**metrics.RENAMED_SINCE_FORMAT_1, **metrics.RENAMED_SINCE_FORMAT_2},
    "phasebench-report/2": metrics.RENAMED_SINCE_FORMAT_2,
}
#: Fields a logged doc must carry to be a phasebench sample.


@dataclass
class Run:
    """The per-sample logs of one model's lm-eval run: ``samples[task]`` = sample dicts."""

    name: str
    source: str
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: lm-eval's ``config`` of the run's newest results file (batch size, model arguments),
    #: empty where there is none
    config: dict[str, Any] = field(default_factory=dict)


def load_runs(paths: Sequence[str | Path]) -> tuple[list[Run], list[dict[str, Any]]]:
    """Find lm-eval runs (folders or sample files) and phasebench report JSONs under ``paths``.

    Returns ``(runs, reports)``. In a folder, the newest ``samples_<task>_<date>.jsonl`` of each
    task wins (lm-eval appends a new date per invocation into the same model folder).
    """
    runs: list[Run] = []
    reports: list[dict[str, Any]] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise SamplesError(f"{path} does not exist; pass an lm-eval --output_path folder")
        if path.is_file() and path.suffix == ".json" and not RESULTS_NAME.match(path.name):
            reports.append(_read_report_json(path))
            continue
        inspect_logs = [path] if is_inspect_log(path) else []
        if path.is_file():
            files = [path] if SAMPLES_NAME.match(path.name) else _samples_next_to(path)
        else:
            files = sorted(f for f in path.rglob("samples_*") if SAMPLES_NAME.match(f.name))
            inspect_logs = sorted(f for f in path.rglob("*.eval") if is_inspect_log(f))
        files = [f for f in files if SAMPLES_NAME.match(f.name)]
        runs += [_inspect_run(log) for log in inspect_logs]
        if not files and inspect_logs:
            continue
        if not files:
            raise SamplesError(
                f"no samples_<task>_<date>.jsonl or Inspect .eval log under {path}; run lm_eval "
                "with --log_samples and --output_path (or inspect eval), then pass that folder"
            )
        by_folder: dict[Path, list[Path]] = defaultdict(list)
        for f in files:
            by_folder[f.parent].append(f)
        for folder in sorted(by_folder):
            runs.append(_read_run(folder, by_folder[folder]))
    runs = _read_once(runs)
    _unique_names(runs)
    return runs, reports


class SameRunWarning(UserWarning):
    """A folder holds a packed copy of another folder's run (its submission): read once."""


def _read_once(runs: list[Run]) -> list[Run]:
    """``runs`` less the packed copies (``phasebench leaderboard pack``) of an earlier one: the
    same samples, task by task (ids, doc hashes, responses, scores), as a run and its submission
    are under the folder ``phasebench demo`` writes; each left out with a warning naming both
    folders, so a model is not listed twice as if it had run twice. Two unpacked runs with the
    same samples (a deterministic model run twice) stay two runs."""
    import warnings

    seen: dict[Any, Run] = {}
    kept = []
    for run in runs:
        key = tuple(
            (task, tuple(sorted(json.dumps(
                [s.get("doc_id"), _doc_id(s), s.get("doc_hash"),
                 s.get("filtered_resps"), s.get("acc"), s.get("margin")],
                sort_keys=True, default=str,
            ) for s in samples)))
            for task, samples in sorted(run.samples.items())
        )  # fmt: skip
        packed = any("packed_fields" in s for samples in run.samples.values() for s in samples)
        if key in seen and packed:
            warnings.warn(
                f"{run.source} holds a packed copy of the samples in {seen[key].source}; read once",
                SameRunWarning,
                stacklevel=3,
            )
            continue
        seen.setdefault(key, run)
        kept.append(run)
    return kept


def _inspect_run(path: Path) -> Run:
    """An Inspect AI log of a phasebench task as a run (:mod:`phasebench.inspect_log` gives
    its samples in lm-eval's shape), named after its model as Inspect names it."""
    log = read_inspect_log(path)
    name = run_name({"pretrained": log.model.partition("/")[2] or log.model}) or log.model
    return Run(name=name, source=str(path), samples={log.task: log.samples})


def runs_from_files(files: Sequence[str | Path]) -> list[Run]:
    """The runs made of exactly these ``samples_<task>_<date>.jsonl`` files, one per folder
    (``phasebench eval`` summarises the files its lm-eval run wrote, not older ones beside)."""
    by_folder: dict[Path, list[Path]] = defaultdict(list)
    for raw in files:
        path = Path(raw)
        if not SAMPLES_NAME.match(path.name):
            raise SamplesError(f"{path} is not an lm-eval samples_<task>_<date>.jsonl file")
        by_folder[path.parent].append(path)
    runs = [_read_run(folder, by_folder[folder]) for folder in sorted(by_folder)]
    _unique_names(runs)
    return runs


def _samples_next_to(results_file: Path) -> list[Path]:
    date = RESULTS_NAME.match(results_file.name)
    if not date:
        return []
    return sorted(
        f for f in results_file.parent.glob(f"samples_*_{date['date']}.jsonl*")
        if SAMPLES_NAME.match(f.name)
    )  # fmt: skip


def _doc_id(sample: dict[str, Any]) -> Any:
    """The logged doc's id; None where the doc is not an object (refused when it is scored)."""
    doc = sample.get("doc")
    return doc.get("id") if isinstance(doc, dict) else None


def _read_run(folder: Path, files: list[Path]) -> Run:
    run = Run(name=_model_name(folder), source=str(folder), config=_config(folder))
    for task, f in newest_samples(files).items():
        run.samples[task] = list(iter_samples(f))
    return run


def _config(folder: Path) -> dict[str, Any]:
    results = sorted(p for p in folder.glob("results_*.json") if RESULTS_NAME.match(p.name))
    try:
        config = read_results(results[-1]).get("config") if results else None
    except SamplesError:
        config = None
    return config if isinstance(config, dict) else {}


def _model_name(folder: Path) -> str:
    results = sorted(p for p in folder.glob("results_*.json") if RESULTS_NAME.match(p.name))
    if results:
        try:
            data = read_results(results[-1])
        except SamplesError:
            data = {}
        logged = data.get("model_name")
        config = data.get("config") if isinstance(data.get("config"), dict) else {}
        args = config.get("model_args")
        if not isinstance(args, str | dict):
            args = None
        name = run_name(args, logged if isinstance(logged, str) else None)
        if name:
            return name
    return folder.name


def _unique_names(runs: list[Run]) -> None:
    seen: dict[str, int] = {}
    for run in runs:
        if run.name in seen:
            seen[run.name] += 1
            run.name = f"{run.name} ({seen[run.name]})"
        else:
            seen[run.name] = 1


#: Largest phasebench report JSON read back.
MAX_REPORT_BYTES = 64 * 1024 * 1024


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a report holds")


def _read_report_json(path: Path) -> dict[str, Any]:
    """A report written by :func:`write_json`, read with a size bound, no NaN or infinity and
    no nesting deeper than the parser allows; a :class:`SamplesError` line otherwise."""
    if path.stat().st_size > MAX_REPORT_BYTES:
        raise SamplesError(f"{path} is larger than {MAX_REPORT_BYTES} bytes; not a report")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SamplesError(f"{path} is not JSON ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(data, dict) or data.get("format") not in (REPORT_FORMAT, *OLD_FORMATS):
        raise SamplesError(
            f"{path} is neither an lm-eval results_<date>.json nor a phasebench report "
            f"(format {REPORT_FORMAT}); pass the lm-eval output folder instead"
        )
    return _renders(_upgrade(data), path)


def _renders(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """A report read back, once it is known to render: its tables and its comparison frame are
    built from it here, so a report JSON of another shape (a field of another type, a statistic
    missing) is one :class:`SamplesError` line rather than an error half-way through the output.
    ``PHASEBENCH_DEBUG=1`` keeps the traceback."""
    try:
        runs = data.get("runs")
        if not isinstance(runs, dict) or not all(isinstance(b, dict) for b in runs.values()):
            raise TypeError("'runs' must map each run's name to its tasks")
        render_tables(data)
        comparison_frame(data)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        if os.environ.get("PHASEBENCH_DEBUG"):
            raise
        detail = " ".join(str(exc).split())[:120]
        raise SamplesError(
            f"{path} is not a phasebench report of the shape `phasebench report --json` writes "
            f"({type(exc).__name__}: {detail}); write it again"
        ) from None
    return data


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A report of an earlier format in the current one (the summary keys renamed since its
    format, :data:`OLD_FORMATS`, in every entry and its length axis); a current one as it is."""
    if data.get("format") == REPORT_FORMAT:
        return data
    renamed = OLD_FORMATS[data.get("format")]
    runs = data.get("runs")
    for body in runs.values() if isinstance(runs, dict) else ():
        tasks = body.get("tasks") if isinstance(body, dict) else None
        for by_length in tasks.values() if isinstance(tasks, dict) else ():
            for entry in by_length.values() if isinstance(by_length, dict) else ():
                axis = entry.get("length_axis") if isinstance(entry, dict) else None
                for summary in (entry, axis) if isinstance(axis, dict) else (entry,):
                    for old, new in renamed.items():
                        if isinstance(summary, dict) and old in summary:
                            summary[new] = summary.pop(old)
    return {**data, "format": REPORT_FORMAT}
