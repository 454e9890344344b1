"""Shrink lm-eval output to what validation needs.

``samples_*.jsonl`` of long-context tasks are mostly the prompt text, logged twice (in ``doc``
and in ``arguments``). Validation regenerates the prompts anyway, so ``pack`` drops
``arguments`` and every ``doc`` string longer than ``PACK_MIN_CHARS`` (recording which in
``packed_fields``) and keeps ids, row fields, hashes, responses and metrics. The results JSON is
copied unmodified. Output is gzip with a fixed header, so packing twice gives identical bytes.

An Inspect AI log (``.eval``) of a phasebench task is packed into the same two files: its
samples as the records lm-eval logs for the same docs (:mod:`phasebench.inspect_log`), and a
results file in lm-eval's shape written from the log (the model and its provider, the task's
knobs, the sample count, Inspect's values of the phase statistics under lm-eval's metric names,
and ``framework``: ``inspect_ai`` with its version). Validation then treats it as any other run:
it regenerates the split, checks every doc and hash, re-scores every response and recomputes
every reported number, Inspect's among them.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any, BinaryIO

from phasebench.atomic import atomic_files, check_writable_dir
from phasebench.errors import OutputError, SamplesError
from phasebench.inspect_log import is_inspect_log
from phasebench.leaderboard.collect import (
    RESULTS_NAME,
    SAMPLES_NAME,
    SUBMISSION_FILE,
    Refused,
    iter_samples,
)
from phasebench.samples import ReadLimits, newest_samples, read_results, run_name

#: Sample ``doc`` strings longer than this are dropped by ``pack`` and restored from the
#: regenerated split during validation (the prompt text, mostly).
PACK_MIN_CHARS = 256
DROPPED_KEYS = ("arguments", "resps")
#: ``pack`` reads the packer's own lm-eval output, prompts and all: far larger than a submission
#: may be (a 128K-token run logs about a megabyte per sample), still bounded.
PACK_LIMITS = ReadLimits(max_bytes=64 << 30, max_line_bytes=256 << 20, max_seconds=3600.0)


def _pack_record(record: dict) -> dict:
    """One sample without its long text; ``resps`` is dropped when ``filtered_resps`` holds the
    same responses (lm-eval logs both). A record whose ``doc`` is not a JSON object is not
    lm-eval's: :class:`SamplesError`."""
    if not isinstance(record.get("doc"), dict):
        raise SamplesError(
            f"'doc' must be a JSON object (got {type(record.get('doc')).__name__}); "
            f"pack lm-eval's own --log_samples output"
        )
    out = {k: v for k, v in record.items() if k not in DROPPED_KEYS}
    doc = dict(record["doc"])
    packed = [k for k, v in doc.items() if isinstance(v, str) and len(v) > PACK_MIN_CHARS]
    for name in packed:
        doc[name] = None
    out["doc"] = doc
    if packed:
        out["packed_fields"] = packed
    return out


def _write_gzip(raw: BinaryIO, lines: list[str]) -> None:
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        with io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as text:
            for line in lines:
                text.write(line + "\n")


def run_files(folder: Path) -> list[Path]:
    """The results and samples files of the run ``phasebench report`` reads in ``folder``: each
    task's newest samples (:func:`phasebench.samples.newest_samples`) and the results file of the
    same lm-eval invocation (the same date). A staged run or a rerun into the same
    ``--output_path`` leaves earlier files beside them; those stay behind. Refused in one line
    (:class:`SamplesError`) when a newest samples file has no results file of its date, or when an
    earlier results file also scores a task whose newest samples came later (its other tasks'
    samples would be packed with a later run's: rerun them together)."""
    files = sorted(folder.iterdir())
    newest = newest_samples(
        p for p in files if SAMPLES_NAME.match(p.name) and not p.name.endswith(".gz")
    )
    if not newest:  # no samples: the results alone (validation says what is missing)
        results = [p for p in files if RESULTS_NAME.match(p.name)]
        return results[-1:]
    dates = {task: SAMPLES_NAME.match(p.name)["date"] for task, p in newest.items()}
    chosen: list[Path] = []
    for date in sorted(set(dates.values())):
        results = folder / f"results_{date}.json"
        if not results.is_file():
            task = next(t for t, d in dates.items() if d == date)
            raise SamplesError(
                f"{newest[task]} has no results_{date}.json beside it (lm-eval writes both at "
                f"the end of a run); pack a finished run"
            )
        try:
            scored = set(read_results(results)["results"])
        except SamplesError:
            scored = set()  # validation refuses an unreadable results file with its rule
        later = sorted(t for t in scored & set(dates) if dates[t] > date)
        if later:
            raise SamplesError(
                f"{results.name} is one run with {', '.join(later)}, whose newest samples come "
                f"from a later run in {str(folder)!r}; rerun those tasks together into a fresh "
                f"--output_path and pack that"
            )
        chosen += [results, *(newest[t] for t, d in dates.items() if d == date)]
    return sorted(chosen)


def _check_out(out: Path, targets: list[Path], overwrite: bool) -> None:
    check_writable_dir(out)
    taken = [target.name for target in targets if target.exists() or target.is_symlink()]
    if taken and not overwrite:
        raise OutputError(
            f"--out {str(out)!r} already holds {', '.join(taken[:3])}"
            f"{f' and {len(taken) - 3} more' if len(taken) > 3 else ''}; choose another --out "
            f"or pass --overwrite to replace them"
        )


def _results_of_inspect(run: Any) -> dict[str, Any]:
    """The results file of an Inspect run, in lm-eval's shape (see the module docstring). Its
    backend (``model_source``, ``config.model``, what ``submission.yaml``'s ``backend`` must
    name) is Inspect's provider: ``hf`` loads the model with transformers as lm-eval's ``hf``
    does."""
    import datetime as dt

    from phasebench.inspect_log import FRAMEWORK, REPORTED, lm_eval_metric
    from phasebench.leaderboard.schema import known_tasks
    from phasebench.lmeval.tasks import MAX_GEN_TOKS
    from phasebench.lmeval_compat import hash_string

    task = run.task
    versions = known_tasks()
    if task not in versions:
        raise SamplesError(f"{task} is not a task of this phasebench ({sorted(versions)})")
    provider = run.model.partition("/")[0]
    reported: dict[str, Any] = {"alias": task}
    for name, key, part in REPORTED:
        metric = lm_eval_metric(key, part)
        value = run.metrics.get(name)
        if metric is not None and value is not None and value == value:  # NaN: not reported
            reported[f"{metric},none"] = value
    args = run.task_args
    knobs = {
        "max_seq_lengths": sorted({int(s["doc"].get("config_length", s["doc"]["length"]))
                                   for s in run.samples}),
        "phase_modulus": args.get("modulus"),
        "n_base": args.get("n_base"),
        "seed": args.get("seed"),
    }  # fmt: skip
    created = dt.datetime.fromisoformat(run.created)
    n = len(run.samples)
    return {
        "results": {task: reported},
        "versions": {task: versions[task]},
        "n-samples": {task: {"original": n, "effective": n}},
        "configs": {
            task: {
                "task": task,
                "doc_to_text": "prompt",
                "generation_kwargs": {"until": ["\n"], "max_gen_toks": MAX_GEN_TOKS},
                "metadata": {k: v for k, v in knobs.items() if v is not None},
            }
        },
        "config": {"model": provider, "model_args": {"pretrained": run.model.partition("/")[2],
                                                     **run.model_args}},
        "model_source": provider,
        "model_name": run.model,
        "date": created.timestamp(),
        "task_hashes": {task: hash_string("".join(
            s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in run.samples))},
        "framework": FRAMEWORK,
        "framework_version": run.inspect_version,
    }  # fmt: skip


def _pack_inspect(
    log: Path, out: Path, submission: Path | str | None, *, overwrite: bool
) -> list[Path]:
    """Pack an Inspect log: the results and samples files of the run it holds."""
    import datetime as dt

    from phasebench.inspect_log import read_inspect_log

    run = read_inspect_log(log)
    results = _results_of_inspect(run)
    date = dt.datetime.fromtimestamp(results["date"], dt.UTC).strftime("%Y-%m-%dT%H-%M-%S.%f")
    targets = [out / f"results_{date}.json", out / f"samples_{run.task}_{date}.jsonl.gz"]
    if submission is not None:
        targets.append(out / SUBMISSION_FILE)
    _check_out(out, targets, overwrite)
    lines = [json.dumps(_pack_record(r), ensure_ascii=False, separators=(",", ":"))
             for r in run.samples]  # fmt: skip
    with atomic_files() as files:
        text = json.dumps(results, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
        files.open(targets[0]).write(text.encode("utf-8"))
        _write_gzip(files.open(targets[1]), lines)
        if submission is not None:
            files.add_copy(Path(submission), targets[2])
    return files.targets


def _check_one_model(files: list[Path]) -> None:
    """The results files of a pack name one model (the model argument lm-eval names a run after,
    :func:`phasebench.samples.run_name`): runs of two models in one ``--output_path`` would be
    published under the one submission.yaml names. Refused in one line (:class:`SamplesError`)."""
    models: dict[str, str] = {}
    for path in files:
        if not RESULTS_NAME.match(path.name):
            continue
        try:
            config = read_results(path).get("config") or {}
        except SamplesError:
            continue  # validation refuses an unreadable results file with its rule
        name = run_name(config.get("model_args") if isinstance(config, dict) else None)
        if name is not None:
            models.setdefault(name, path.name)
    if len(models) > 1:
        named = ", ".join(f"{ascii(name)[1:-1][:80]} ({file})" for name, file in models.items())
        raise SamplesError(
            f"the run's results name {len(models)} models: {named}; pack one model's run "
            f"(run each model into its own --output_path)"
        )


def pack(
    source: Path | str,
    out: Path | str,
    submission: Path | str | None = None,
    *,
    overwrite: bool = False,
) -> list[Path]:
    """Pack the lm-eval output under ``source`` (a folder with results_*.json and samples_*.jsonl,
    possibly one level down in lm-eval's model sub-folder) into the folder ``out``: the run
    ``phasebench report`` reads there (:func:`run_files`), earlier runs and looks left out.

    Every file appears at once when all of them are written, none of them otherwise (a full
    disk leaves no partial file). A file of the same name already in ``out`` is refused before
    any work unless ``overwrite`` (other files there, such as another run's, are kept)."""
    source, out = Path(source), Path(out)
    if submission is not None and (Path(submission).is_symlink() or not Path(submission).is_file()):
        raise SamplesError(
            f"--submission {str(submission)!r} is a link or not a file; pass the submission.yaml "
            f"file itself (pack copies no link's target, as it packs no linked samples)"
        )
    if is_inspect_log(source):
        return _pack_inspect(source, out, submission, overwrite=overwrite)
    if not source.is_dir():
        raise SamplesError(f"{str(source)!r} is not a folder of lm-eval output")
    candidates = [source, *sorted(p for p in source.iterdir() if p.is_dir())]
    folder = next(
        (c for c in candidates if any(RESULTS_NAME.match(p.name) for p in c.iterdir())), None
    )
    if folder is None:
        raise SamplesError(
            f"no results_*.json under {str(source)!r}; run lm-eval with --output_path and "
            f"--log_samples"
        )
    files = run_files(folder)
    _check_one_model(files)
    plan: list[tuple[Path, Path, bool]] = []  # (source file, packed file, gzip its samples?)
    for path in files:
        if RESULTS_NAME.match(path.name):
            plan.append((path, out / path.name, False))
        else:
            plan.append((path, out / (path.name + ".gz"), True))
    if submission is not None:
        plan.append((Path(submission), out / SUBMISSION_FILE, False))
    _check_out(out, [target for _, target, _ in plan], overwrite)
    with atomic_files() as files:  # --out itself is removed again if it was made and this fails
        for path, target, gzipped in plan:
            if not gzipped:
                files.add_copy(path, target)
                continue
            lines = []
            try:
                for number, record in enumerate(iter_samples(path, PACK_LIMITS), 1):
                    try:
                        packed = _pack_record(record)
                    except SamplesError as exc:
                        raise SamplesError(f"{path}: sample {number}: {exc}") from None
                    lines.append(json.dumps(packed, ensure_ascii=False, separators=(",", ":")))
            except Refused as exc:
                raise SamplesError(exc.problem.line()) from None
            _write_gzip(files.open(target), lines)
    return files.targets
