"""``phasebench report``: per-phase statistics, tables, JSON and plots from lm-eval outputs.

Compute -> JSON -> render. :func:`build_report` reads per-sample logs and computes every number
through :func:`phasebench.stats.summarize_samples` (the function the lm-eval aggregates and
the leaderboard use); the terminal tables, the JSON file and the plots are all rendered from that
one report dict, and a report JSON given back is rendered without recomputing anything.

What is read: lm-eval writes ``<output_path>/<model_name_sanitized>/results_<date>.json`` and,
with ``--log_samples``, ``samples_<task>_<date>.jsonl`` next to it (``.jsonl.gz`` once packed for
the leaderboard). Each sample keeps the split row in ``doc`` (``phase``, ``base_id``,
``phase_modulus``, ``length``; for code ``config_length``, ``item_id``, ``pad_style``,
``pad_tokens``) and the per-sample metrics (``acc``; ``margin`` for code) as top-level keys. A
folder holding several model folders is several runs; several runs give a comparison table, and
two runs of one split their paired difference in gap and worst phase (:func:`difference_report`,
``phasebench report A B --diff``).
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phasebench import metrics
from phasebench._version import __version__
from phasebench.atomic import FileSet, atomic_files, atomic_write_text
from phasebench.cache_reads import arm_of, arms_comparison, cache_lines, repeat_comparison
from phasebench.errors import SamplesError, SpecError, StatsError, debugging, first_line
from phasebench.families import get_family
from phasebench.rows import config_length, row_problem
from phasebench.samples import (
    MAX_OFF_LABEL_SHARE,
    RESULTS_NAME,
    SAMPLES_NAME,
    SERVED_KEY,
    SERVED_STATES,
    ScoredRecord,
    fed_off_label,
    is_warm,
    iter_samples,
    newest_samples,
    read_results,
    run_name,
    scored_record,
    served_label,
    served_state,
)
from phasebench.specs import MAX_MODULUS
from phasebench.stats import summarize_samples

__all__ = [
    "REPORT_FORMAT",
    "Run",
    "build_report",
    "comparison_frame",
    "difference_report",
    "load_runs",
    "merge_reports",
    "render_tables",
    "runs_from_files",
    "write_json",
    "write_plots",
]

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
DOC_FIELDS = ("phase", "base_id", "phase_modulus", "length", "family")


@dataclass
class Run:
    """The per-sample logs of one model's lm-eval run: ``samples[task]`` = sample dicts."""

    name: str
    source: str
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


# ----------------------------------------------------------------------------- reading


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
        if path.is_file():
            files = [path] if SAMPLES_NAME.match(path.name) else _samples_next_to(path)
        else:
            files = sorted(f for f in path.rglob("samples_*") if SAMPLES_NAME.match(f.name))
        files = [f for f in files if SAMPLES_NAME.match(f.name)]
        if not files:
            raise SamplesError(
                f"no samples_<task>_<date>.jsonl under {path}; run lm_eval with --log_samples "
                "and --output_path, then pass that folder"
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
                [s.get("doc_id"), (s.get("doc") or {}).get("id"), s.get("doc_hash"),
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


def _read_run(folder: Path, files: list[Path]) -> Run:
    run = Run(name=_model_name(folder), source=str(folder))
    for task, f in newest_samples(files).items():
        run.samples[task] = list(iter_samples(f))
    return run


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


# ----------------------------------------------------------------------------- computing


def build_report(
    runs: Sequence[Run],
    *,
    n_boot: int = metrics.N_BOOT,
    n_perm: int = metrics.N_PERM,
    seed: int = metrics.SEED,
) -> dict[str, Any]:
    """Every number the report shows, as a JSON-ready dict.

    Layout: ``{"format", "phasebench_version", "settings", "runs": {run: {"source", "tasks":
    {task: {length: entry}}}}}`` where each entry is ``{"task", "length"}`` plus
    :func:`phasebench.stats.summarize_samples` of the task's samples at that length.
    """
    out: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "phasebench_version": __version__,
        "settings": {"n_boot": n_boot, "n_perm": n_perm, "seed": seed},
        "runs": {},
    }
    for run in runs:
        tasks: dict[str, dict[str, Any]] = {}
        for task, samples in run.samples.items():
            groups, served = _group(task, samples)
            warm_vs_cold = repeat_comparison(task, samples)
            for key, witness in served.items():
                if fed_off_label(witness["agree"], witness["disagree"], witness["unverified"]):
                    total = sum(witness[state] for state in SERVED_STATES)
                    first = witness["first"]
                    raise SamplesError(
                        f"not a measurement: {run.source}: {key[0]} length {key[1]}: more than "
                        f"{MAX_OFF_LABEL_SHARE:.0%} of the prompts were not fed as labelled (the "
                        f"server's prompt token count disagrees with the label for "
                        f"{witness['disagree']} of {total}; first: {first['id']} labelled "
                        f"{first['label']}, server {first['count']}): the server read other "
                        "sequences than phasebench labelled (another tokenizer, BOS or chat "
                        "template, or a truncated prompt)"
                    )
            for (label, length), records in sorted(groups.items()):
                try:
                    summary = summarize_samples(records, n_boot=n_boot, n_perm=n_perm, seed=seed)
                except SamplesError:
                    raise
                except StatsError as exc:  # names what is wrong with the data
                    raise SamplesError(f"{run.source}: {label} length {length}: {exc}") from None
                except (ValueError, TypeError, KeyError, IndexError, ArithmeticError) as exc:
                    if debugging():  # PHASEBENCH_DEBUG=1: a bug keeps its traceback
                        raise
                    raise SamplesError(
                        f"{run.source}: {label} length {length}: samples of an unexpected shape "
                        f"({type(exc).__name__}: {first_line(exc)})"
                    ) from None
                tasks.setdefault(label, {})[str(length)] = {
                    "task": label,
                    "length": length,
                    "served": served.get((label, length)),
                    **summary,
                }
                if length in warm_vs_cold:
                    tasks[label][str(length)]["prefix_cache"] = warm_vs_cold[length]
        if not tasks:
            raise SamplesError(
                f"{run.source}: no phasebench samples (docs without 'phase'/'base_id'); "
                "are these phasebench tasks?"
            )
        out["runs"][run.name] = {"source": run.source, "tasks": tasks}
    return out


def _group(
    task: str, samples: list[dict[str, Any]], identity: dict | None = None
) -> tuple[dict[tuple[str, int], list[ScoredRecord]], dict[tuple[str, int], dict[str, Any]]]:
    """Scored records per (task label, config length), and per group the server's witness:
    how many samples' server counts agree with their labels, disagree, or were not reported,
    and the first disagreement. A task run with several filters is several labels. Samples that
    are not phasebench docs are left out, and so are samples whose server count disagrees (the
    model read another sequence than the one the phases were computed for); a phasebench doc
    with a broken field is refused with the sample's number. ``identity``, when given, gets
    per group what identifies its split (:func:`_split_identity`)."""
    filters = sorted({str(s.get("filter", "none")) for s in samples})
    groups: dict[tuple[str, int], list[ScoredRecord]] = defaultdict(list)
    served: dict[tuple[str, int], dict[str, Any]] = {}
    docs: dict[tuple[str, int], list[tuple[Any, ...]]] = defaultdict(list)
    # where each prompt was first seen, by id and by what places it (unit, phase, length, ...):
    # a repeated or conflicting line would be averaged in as a sample of its own
    seen: dict[tuple, int] = {}
    for number, s in enumerate(samples, 1):
        doc = s.get("doc")
        if not isinstance(doc, dict) or "phase" not in doc or "base_id" not in doc:
            continue
        if is_warm(doc):  # a repeat run's second read: compared apart (cache_reads)
            continue
        where = f"{task} sample {number}"
        missing = [k for k in DOC_FIELDS if k not in doc]
        if missing:
            raise SamplesError(f"{where}: doc has no {', '.join(missing)}")
        # phase 1.5 or true is refused, never read as 1; a long text field that `leaderboard
        # pack` dropped (logged as null) is not one report reads, so only its own need a value
        checked = {k: v for k, v in doc.items() if v is not None or k in DOC_FIELDS}
        if problem := row_problem(checked):
            raise SamplesError(f"{where}: doc.{problem}")
        length = doc.get("config_length", doc.get("length"))
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise SamplesError(f"{where}: doc.config_length must be a token count (got {length!r})")
        if doc["phase_modulus"] > MAX_MODULUS:  # refused before a P-wide table is allocated
            raise SamplesError(
                f"{where}: doc.phase_modulus {doc['phase_modulus']} is above {MAX_MODULUS}, the "
                f"largest modulus a phasebench split has"
            )
        label = task if len(filters) == 1 else f"{task}/{s.get('filter', 'none')}"
        key = (label, config_length(doc))
        docs[key].append(_doc_identity(doc, s.get("doc_hash")))
        try:
            state = served_state(doc, s.get(SERVED_KEY))
        except (SamplesError, KeyError, TypeError, ValueError) as exc:
            raise SamplesError(f"{where}: {exc}") from None
        if state is not None:  # through an API server
            witness = served.setdefault(key, dict.fromkeys(SERVED_STATES, 0) | {"first": None})
            witness[state] += 1
        if state == "disagree":
            if witness["first"] is None:
                witness["first"] = {
                    "id": str(doc.get("id", number)),
                    "label": served_label(doc),
                    "count": int(s[SERVED_KEY][1]),
                }
            continue
        acc = _number(s.get("acc"), f"{where}: acc")
        try:
            family = get_family(str(doc["family"]))
        except SpecError as exc:
            raise SamplesError(f"{where}: doc {exc}") from None
        margin = _number(s.get("margin"), f"{where}: margin") if family.has_margin else None
        try:
            record = scored_record(doc, acc, margin)
        except (KeyError, TypeError, ValueError) as exc:
            raise SamplesError(f"{where}: doc field {exc} is missing or not a number") from None
        if not 0 <= record.phase < record.modulus:
            raise SamplesError(f"{where}: phase {record.phase} is not in 0..{record.modulus - 1}")
        cell = (record.unit, record.phase, doc.get("length"), record.length_phase, record.pad)
        ids = None if doc.get("id") is None else str(doc["id"])  # any JSON value, hashable
        for what, ident in (("id", ids), ("prompt", cell)):
            if ident is None:
                continue
            first = seen.setdefault((label, what, ident), number)
            if first != number:
                shown = f"doc.id {ascii(ident)[:80]}" if what == "id" else "its unit and phase"
                raise SamplesError(
                    f"{where}: {shown} repeats sample {first} of the same task (a prompt is "
                    f"logged once; a repeated or conflicting line would be averaged in)"
                )
        groups[key].append(record)
    if identity is not None:
        identity.update({key: _split_identity(rows) for key, rows in docs.items()})
    return groups, served


#: What identifies the split a group of samples came from, in the order a mismatch is named.
SPLIT_FIELDS = ("tokenizer_fingerprint", "family", "phase_modulus", "seed")


def _doc_identity(doc: Mapping[str, Any], doc_hash: Any) -> tuple[Any, ...]:
    """One logged doc's part of its split's identity: the split fields and the doc itself
    (lm-eval's ``doc_hash`` of it, else its id, anchor and phases)."""
    fields = tuple(str(doc.get(k)) for k in SPLIT_FIELDS)
    if isinstance(doc_hash, str):
        return (*fields, doc_hash)
    where = (doc.get("id"), doc.get("anchor_index"), doc.get("phase"), doc.get("length_phase"))
    return (*fields, json.dumps(where, sort_keys=True, default=str))


def _split_identity(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """The split of a group: each field of :data:`SPLIT_FIELDS` (every value seen, sorted),
    the number of docs and a digest of them all (equal docs, equal digest)."""
    import hashlib

    out: dict[str, Any] = {k: sorted({r[i] for r in rows}) for i, k in enumerate(SPLIT_FIELDS)}
    out["docs"] = len(rows)
    text = "\n".join(sorted(r[-1] for r in rows))
    out["docs_digest"] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return out


def difference_report(
    runs: Sequence[Run],
    *,
    n_boot: int = metrics.N_BOOT,
    n_perm: int = metrics.N_PERM,
    seed: int = metrics.SEED,
) -> dict[str, Any]:
    """Two runs of one split, before then after: per (task, length) both ran,
    :func:`phasebench.stats.compare_runs` (the difference after minus before in gap and in
    worst phase, paired bootstrap interval, permutation p), as the report's ``difference``.

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
            diff = compare_runs(groups_a[key], groups_b[key], n_boot=n_boot, n_perm=n_perm,
                                seed=seed)  # fmt: skip
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


def _witness_line(w: dict[str, Any]) -> str:
    """What the server's prompt token counts say about one group's labels."""
    total = w["agree"] + w["disagree"] + w["unverified"]
    if w["unverified"] == total:
        return f"labels unverified: the server reported no prompt token count ({total} samples)"
    parts = [f"{w['agree']}/{total} agree with the label"]
    if w["disagree"]:
        f = w["first"]
        parts.append(
            f"{w['disagree']} disagree and are left out (first: {f['id']} labelled "
            f"{f['label']}, server {f['count']})"
        )
    if w["unverified"]:
        parts.append(f"{w['unverified']} unverified")
    return "; ".join(parts)


def _number(value: Any, what: str) -> float:
    if isinstance(value, list | tuple):  # some lm-eval versions log [value]
        value = value[0] if value else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SamplesError(f"{what} is {value!r}, not a number; are these phasebench tasks?")
    try:
        number = float(value)
    except ValueError:
        raise SamplesError(f"{what} is {value!r}, not a number") from None
    if not math.isfinite(number):
        raise SamplesError(f"{what} is {value!r}; every sample needs a finite score")
    return number


# ----------------------------------------------------------------------------- rendering


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{100 * x:5.1f}"


def _ci(ci: Sequence[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "[  n/a]"
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _interval(stat: metrics.Statistic, ci: Sequence[float | None] | None) -> str:
    """An interval in its statistic's unit: points for accuracies, nats for a margin."""
    if stat.unit != "nats":
        return _ci(ci)
    if not ci or ci[0] is None or ci[1] is None:
        return "[  n/a]"
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _p(p: float | None, permutation: bool = True) -> str:
    # a permutation p-value reads "< 0.001" at the floor of the default 1000 permutations (a
    # true statement for any other count too); an analytic one (Cochran's) is written as it is
    return metrics.format_p(p, metrics.N_PERM if permutation else None) or "n/a"


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def format_value(stat: metrics.Statistic, value: Any) -> str:
    """One statistic's value as the terminal tables write it (accuracies and gaps in points,
    0..100)."""
    if stat.unit in ("%", "pp"):
        return _pct(value)
    if stat.unit == "p":
        return _p(value, stat.permutation)
    if stat.unit == "nats":
        return _signed(value)
    if stat.unit == "flag":
        return "n/a" if value is None else ("yes" if value else "no")
    if stat.unit == "number":
        return "n/a" if value is None else f"{value:.2f}"
    if stat.unit == "phase":  # None: a flat profile has no weak phase
        return metrics.FLAT if value is None else f"phase {value}"
    if isinstance(value, list):  # several periods, each consistent with the data
        return " or ".join(str(v) for v in value) if value else "none"
    if value is None and stat.shown_with is not None:
        return "-"
    return "none" if value is None else str(value)  # tokens


def _note(stat: metrics.Statistic, value: Any) -> str:
    if stat.unit == "flag":
        return "n/a" if value is None else ("" if value else "not ") + stat.label
    if stat.unit == "phase" and value is None:  # "weak phase: none (flat)", as the site says
        return f"{stat.label}: {metrics.FLAT}"
    shown = format_value(stat, value).strip()
    symbol = stat.symbol or stat.label
    if shown.startswith("<"):  # "p < 0.001", not "p = < 0.001"
        symbol = symbol.removesuffix(" =")
    return f"{symbol} {shown}"


def _shown(stat: metrics.Statistic, entry: Mapping[str, Any]) -> bool:
    """Whether an entry has this statistic (a family without a margin has no margin rows;
    Cochran's Q is only defined for 0/1 outcomes)."""
    if stat.needs_margin and "margin" not in entry:
        return False
    if stat.unit == "number" and stat.value(entry) is None:
        return False
    if stat.shown_with is not None and isinstance(stat.value(entry), list):
        return len(stat.value(entry)) > 1  # "period 4 (consistent with 4)" says nothing more
    return stat.per_phase or stat.read is not None or stat.key in entry


def _statistic_lines(entry: Mapping[str, Any]) -> list[str]:
    """One line per declared statistic of the entry, with its interval and the statistics
    declared to be shown with it."""
    declared = metrics.statistics()
    lines = []
    for stat in declared:
        if not stat.terminal or stat.shown_with is not None or not _shown(stat, entry):
            continue
        label = stat.label.ljust(12) if len(stat.label) < 12 else stat.label + " "
        line = f"  {label}{format_value(stat, stat.value(entry))}"
        if stat.interval is not None:
            line += f"  {_interval(stat, stat.interval_of(entry))}"
        notes = [
            _note(n, n.value(entry))
            for n in declared
            if n.shown_with == stat.key and n.terminal and _shown(n, entry)
        ]
        if notes:
            line += f"  ({'; '.join(notes)})"
        lines.append(line)
    return lines


def render_tables(report: dict[str, Any]) -> str:
    """Terminal tables: one block per run, task and length (numbers in points, 0..100), then a
    legend of the statistics shown. A config with the length axis shows each varied axis and,
    when both ran, the 2-D table of accuracy per (needle phase, length phase)."""
    blocks = []
    for run, body in report["runs"].items():
        for task, lengths in body["tasks"].items():
            for length, e in sorted(lengths.items(), key=lambda kv: int(kv[0])):
                units = "paired units" if "margin" in e else "base items"
                covered = len(e["phases"]) if e.get("phases") else e["modulus"]
                of = (
                    f"{covered} of {e['modulus']} phases"
                    if e.get("phases")
                    else (f"{e['modulus']} phases")
                )
                lines = [f"{task}  length {length}  ({run}; {e['n_base']} {units} x {of})"]
                if e.get("axis") == "length":
                    lines.append("  length phase (total prompt length mod P; the needle fixed)")
                elif e.get("axis") == "needle":
                    lines.append("  needle phase (anchor index mod P; each length phase paired)")
                lines += _axis_lines(e)
                if e.get("length_axis"):
                    lines.append("  length phase (total prompt length mod P; anchor fixed)")
                    lines += _axis_lines(e["length_axis"])
                    lines.append("  accuracy per needle phase (rows) x length phase (columns)")
                    lines.append(_indent(_phase_table_frame(e["phase_table"]).to_string()))
                if e.get("served"):
                    lines.append(f"  server      {_witness_line(e['served'])}")
                if e.get("prefix_cache"):
                    lines += cache_lines(e["prefix_cache"])
                blocks.append("\n".join(lines))
    if len(report["runs"]) > 1:
        blocks.append("comparison\n" + _indent(comparison_frame(report).to_string(index=False)))
    if report.get("difference"):
        blocks.append(_difference_block(report["difference"]))
    blocks.append(legend(report))
    return "\n\n".join(blocks) + "\n"


def _difference_block(diff: Mapping[str, Any]) -> str:
    """The two-run difference: per task and length, each compared statistic before, after,
    the difference (after minus before) with its paired bootstrap interval and permutation p."""
    from phasebench.stats.compare import COMPARED

    declared = {stat.key: stat for stat in metrics.statistics()}
    lines = [
        f"difference  {diff['after']} minus {diff['before']} (points; paired over the base "
        "items both ran: one bootstrap resample drives both runs, p from swapping the runs "
        "within base items)"
    ]
    for task, lengths in diff["tasks"].items():
        for length, e in sorted(lengths.items(), key=lambda kv: int(kv[0])):
            lines.append(f"  {task}  length {length}  ({e['n_base']} base items)")
            for key in COMPARED:
                d, label = e[key], declared[key].label
                p = metrics.format_p(d["p_value"], e.get("n_perm")) or "n/a"
                p = p if p.startswith("<") else f"= {p}"
                lines.append(
                    f"    {label:<12}{_pct(d['before'])} -> {_pct(d['after'])}  "
                    f"{_signed_points(d['difference'])}  {_ci(d['difference_ci'])}  p {p}"
                )
            if e.get("prefix_cache"):
                lines += ["  " + line for line in cache_lines(e["prefix_cache"])]
    return "\n".join(lines)


def _signed_points(x: float | None) -> str:
    return "    n/a" if x is None else f"{100 * x:+7.1f}"


def _axis_lines(e: Mapping[str, Any]) -> list[str]:
    """One axis's summary: a line per declared statistic, the phase subset it covers, the
    phase-lock rates of a margin family and the per-phase table."""
    import pandas as pd

    lines = _statistic_lines(e)
    if e.get("phases"):
        lines.append(f"  subset      residues {_ranges(e['phases'])} of 0..{e['modulus'] - 1}")
    # a phase subset shows only its own residues
    shown = [r for r in e["per_phase"] if r["n"] or not e.get("phases")]
    table = {
        "acc": [_pct(r["acc"]).strip() for r in shown],
        "ci": [_ci(r["ci"]) for r in shown],
        "n": [str(r["n"]) for r in shown],
    }
    if "per_phase_margin" in e:
        margins = {r["phase"]: r["margin"] for r in e["per_phase_margin"]}
        table["margin"] = [
            "n/a" if margins.get(r["phase"]) is None else f"{margins[r['phase']]:+.3f}"
            for r in shown
        ]
        sweeps = e["margin_sweeps"]
        rates = ", ".join(f"S={s}: {_pct(v).strip()}" for s, v in sweeps["phase_lock_rate"].items())
        lines.append(f"  phase-lock  {rates}  ({len(sweeps['patterns'])} patterns)")
    frame = pd.DataFrame(table, index=[f"p{r['phase']}" for r in shown]).T
    lines.append(_indent(frame.to_string()))
    return lines


def _phase_table_frame(table: Mapping[str, Any]):
    import pandas as pd

    return pd.DataFrame(
        [[_pct(v).strip() for v in row] for row in table["acc"]],
        index=[f"p{p}" for p in table["needle_phases"]],
        columns=[f"l{q}" for q in table["length_phases"]],
    )


def _ranges(values: Sequence[int]) -> str:
    """``0,16,32,125-127``: consecutive runs shortened."""
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ",".join(parts)


def legend(report: Mapping[str, Any] | None = None) -> str:
    """What each statistic of the tables means, from its declaration (only those some entry
    of ``report`` has, when given)."""
    import textwrap

    entries = [
        e
        for body in (report or {}).get("runs", {}).values()
        for lengths in body["tasks"].values()
        for e in lengths.values()
    ]
    lines = ["legend (points, 0-100; intervals 95%, paired bootstrap over base items)"]
    for stat in metrics.statistics():
        if not stat.terminal or not stat.help:
            continue
        if entries and not any(_shown(stat, e) for e in entries):
            continue
        lines += textwrap.wrap(
            f"{stat.label}: {stat.help}", 98, initial_indent="  ", subsequent_indent="    "
        )
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def comparison_frame(report: dict[str, Any]):
    """One row per (task, length, run): the statistics the site shows, in points."""
    import pandas as pd

    shown = [s for s in metrics.statistics() if s.site and not s.per_phase]
    rows = []
    for run, body in report["runs"].items():
        for task, lengths in body["tasks"].items():
            for length, e in lengths.items():
                row = {"task": task, "length": int(length), "run": run}
                for stat in shown:
                    value = stat.value(e)
                    if stat.shown_with is not None and isinstance(value, list) and len(value) < 2:
                        value = None  # one period or none: the period column says it all
                    row[stat.label] = format_value(stat, value).strip()
                    if stat.interval is not None:
                        row[f"{stat.label} CI"] = _interval(stat, stat.interval_of(e))
                rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.sort_values(["task", "length", "run"], kind="stable")


def write_json(report: dict[str, Any], path: str | Path, files: FileSet | None = None) -> Path:
    """Write the report atomically (temp file in the same folder, then rename), or as one file
    of the set ``files`` (:func:`phasebench.atomic.atomic_files`)."""
    text = json.dumps(report, indent=2, sort_keys=True, allow_nan=False) + "\n"
    if files is not None:
        return files.add_text(Path(path), text)
    return atomic_write_text(Path(path), text)


def write_plots(
    report: dict[str, Any], folder: str | Path, files: FileSet | None = None
) -> list[Path]:
    """Phase-profile plots (and code heat strips) as PNG and SVG, byte-identical per report:
    all of them or none (a full disk leaves no partial set), with ``files`` as part of that
    larger set."""
    from phasebench.plots import plot_report

    if files is not None:
        return plot_report(report, Path(folder), files)
    with atomic_files() as own:
        return plot_report(report, Path(folder), own)


def merge_reports(
    computed: Iterable[dict[str, Any]], loaded: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    """One report holding the runs of several (computed now or read back from JSON)."""
    merged: dict[str, Any] | None = None
    for rep in [*computed, *loaded]:
        if merged is None:
            merged = {**rep, "runs": dict(rep["runs"])}
            continue
        for name, body in rep["runs"].items():
            key, i = name, 1
            while key in merged["runs"]:
                i += 1
                key = f"{name} ({i})"
            merged["runs"][key] = body
    if merged is None:
        raise SamplesError("nothing to report; pass an lm-eval output folder")
    return merged
