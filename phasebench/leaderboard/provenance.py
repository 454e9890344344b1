"""Provenance shown with an accepted entry: versions, date, and the command that reproduces it."""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phasebench.leaderboard.collect import RawSubmission, Refused
from phasebench.leaderboard.schema import VERSION_TEXT

#: A value another machine can use as it is: a Hub id (``org/name``) or a plain name or number.
_PORTABLE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._+=:-]*$")
#: Model arguments that name the model or its tokenizer: always taken from submission.yaml.
_IDENTITY_ARGS = ("pretrained", "model", "revision", "tokenizer")
#: The logged model arguments a published command passes on, beside the model, revision and
#: tokenizer submission.yaml declares: lm-eval ``hf`` arguments that change what the model
#: computes or reads, and the ``phasebench-kvpress`` backend's press and its settings. Nothing
#: else a run logged reaches the command: not ``trust_remote_code``, ``peft`` or ``delta`` (code
#: or weights the submitter chose), not a key lm-eval would split into two (``x,pretrained``).
RUN_ARGS = frozenset(
    {
        "dtype", "max_length", "gguf_file", "add_bos_token", "prefix_token_id", "truncation",
        "softmax_dtype", "backend", "attn_implementation", "enable_thinking", "think_end_token",
        "press", "inner", "compression_ratio", "chunk_length", "block_size", "window_size",
        "kernel_size", "n_sink", "n_last", "window", "stride",
    }
)  # fmt: skip


def _portable_model_args(raw: RawSubmission, logged: Any) -> str:
    """``--model_args`` another machine can run: the model and revision from submission.yaml,
    the tokenizer arguments it declares, then the run's other logged arguments named in
    :data:`RUN_ARGS` (``dtype``, ``max_length``, ...) whose values are portable: a plain name,
    number or Hub id, which holds no ``,`` (lm-eval splits the string there, quoted or not,
    in ``simple_parse_args_string``) and no quote or bracket (its command line's parser reads
    those). Local paths (``pretrained=/home/...``,
    ``.../site-packages/...``) never reach the page. The revision is passed only when the run
    loaded the model by its Hub id (:func:`_loaded_from_hub`): for a local folder or a GGUF file
    it is a hash of the weights, which the Hub would refuse as a commit."""
    if isinstance(logged, str):  # older lm-eval versions log the argument string
        logged = dict(part.split("=", 1) for part in logged.split(",") if "=" in part)
    if not isinstance(logged, dict):
        logged = {}
    args: dict[str, str] = {"pretrained": str(raw.meta["model"])}
    if _loaded_from_hub(raw, logged):
        args["revision"] = str(raw.meta["revision"])
    tokenizer = raw.meta.get("tokenizer") or {}
    name = str(tokenizer.get("name") or "")
    if logged.get("tokenizer") and "/" in name and _PORTABLE.match(name):
        args["tokenizer"] = name  # the run named a tokenizer: its Hub id, never a folder
    for key, value in sorted((tokenizer.get("args") or {}).items()):
        if key not in args and _PORTABLE.match(str(value)):
            args[str(key)] = str(value)
    for key, value in logged.items():
        text = str(value)
        if (
            key in RUN_ARGS
            and key not in args
            and isinstance(value, str | int | float)
            and _PORTABLE.match(text)
            and len(text) <= 100
        ):
            args[str(key)] = text
    return ",".join(f"{k}={v}" for k, v in args.items())


def _loaded_from_hub(raw: RawSubmission, logged: Any) -> bool:
    """Whether the run loaded the model by its Hub id at a Hub revision: its logged
    ``pretrained`` is the submission's model id and no GGUF file was named."""
    if not isinstance(logged, dict):
        return True
    tokenizer_args = (raw.meta.get("tokenizer") or {}).get("args") or {}
    if "gguf_file" in logged or "gguf_file" in tokenizer_args:
        return False
    return str(logged.get("pretrained", raw.meta["model"])) == str(raw.meta["model"])


#: The line the command carries where the weights did not come from the Hub by id.
LOCAL_NOTE = (
    "# weights loaded from a local folder or file: no Hub revision is passed (the submission's "
    "revision is a hash of the weights); point pretrained= at your copy if {model} is not on "
    "the Hub"
)


def command(raw: RawSubmission, results: dict, tasks: Sequence[str]) -> str:
    """The ``phasebench eval`` line that reproduces one results file, with portable model
    arguments only (:func:`_portable_model_args`) and the phasebench knobs of its
    ``--metadata``."""
    config = results.get("config") or {}
    metadata = ((results.get("configs") or {}).get(tasks[0]) or {}).get("metadata") or {}
    if results.get("framework") == "inspect_ai":
        return _inspect_command(raw, metadata, tasks)
    knobs = {
        k: metadata[k]
        for k in ("max_seq_lengths", "phase_modulus", "n_base", "seed", "prefix_cache")
        if k in metadata
    }
    if knobs.get("prefix_cache") not in ("repeat", "salted"):  # the arm a repeat entry ran
        knobs.pop("prefix_cache", None)
    model_args = _portable_model_args(raw, config.get("model_args"))
    command = [
        "phasebench", "eval", "--model", str(raw.meta["backend"]), "--model_args", model_args,
        "--tasks", ",".join(tasks), "--log_samples", "--output_path", "out",
    ]  # fmt: skip
    if knobs:
        command += ["--metadata", json.dumps(knobs, sort_keys=True, separators=(",", ":"))]
    if raw.meta["chat_template"]:
        command.append("--apply_chat_template")
    logged = config.get("model_args")
    if isinstance(logged, str):
        logged = dict(part.split("=", 1) for part in logged.split(",") if "=" in part)
    if _loaded_from_hub(raw, logged):
        return shlex.join(command)
    return LOCAL_NOTE.format(model=raw.meta["model"]) + "\n" + shlex.join(command)


#: ``inspect eval -T`` names of the knobs a packed Inspect run records (lm-eval's names).
_INSPECT_ARGS = {"max_seq_lengths": "length", "phase_modulus": "modulus", "n_base": "n_base",
                 "seed": "seed"}  # fmt: skip


def _inspect_command(raw: RawSubmission, metadata: Mapping[str, Any], tasks: Sequence[str]) -> str:
    """The ``inspect eval`` line that reproduces a packed Inspect run (one task per log)."""
    command = ["inspect", "eval", "phasebench/" + tasks[0].removeprefix("phasebench_"), "--model",
               f"{raw.meta['backend']}/{raw.meta['model']}", "--model-config",
               "$(phasebench tasks-dir --inspect)"]  # fmt: skip
    for key, name in _INSPECT_ARGS.items():
        value = metadata.get(key)
        if isinstance(value, list):
            value = ",".join(map(str, value))
        if value is not None and _PORTABLE.match(str(value)):
            command += ["-T", f"{name}={value}"]
    tokenizer = (raw.meta.get("tokenizer") or {}).get("name")
    if tokenizer and _PORTABLE.match(str(tokenizer)):
        command += ["-T", f"tokenizer={tokenizer}"]
    return " ".join(shlex.quote(c) if not c.startswith("$(") else f'"{c}"' for c in command)


def provenance(raw: RawSubmission, found: Mapping[str, tuple[Path, dict]]) -> dict[str, Any]:
    _, first = next(iter(found.values()))

    def version(value: Any) -> str:
        text = str(value) if value is not None else "unknown"
        return text if VERSION_TEXT.match(text) else "unreadable"

    commands = []
    for path, results in raw.results:
        tasks = sorted(t for t, (p, _) in found.items() if p == path)
        if tasks:
            commands.append(command(raw, results, tasks))
    return {
        "framework": framework(first),
        "lm_eval_version": version(first.get("lm_eval_version")),
        "transformers_version": version(first.get("transformers_version")),
        "date": _iso_date(first.get("date")),
        "command": "\n".join(commands),
        "results_files": sorted(p.name for p, _ in raw.results),
        "samples_files": sorted(p.name for p, _ in raw.samples.values()),
    }


#: How the board names the framework that ran an entry, by what its results file records
#: (``framework``, which ``phasebench leaderboard pack`` writes for an Inspect AI log; lm-eval's
#: own results files name none).
FRAMEWORK_NAMES = {"inspect_ai": "Inspect AI", None: "lm-eval"}


def framework(results: Mapping[str, Any]) -> str:
    """``lm-eval 0.4.13`` or ``Inspect AI 0.3.285``: the framework that ran the results file
    and its version (an unknown framework is refused by the schema rule)."""
    name = results.get("framework")
    if name not in FRAMEWORK_NAMES:
        raise Refused(
            "json", "results", f"framework {ascii(name)[:40]} is not one phasebench reads"
        )
    raw = results.get("framework_version") if name else results.get("lm_eval_version")
    text = str(raw) if raw is not None else "unknown"
    return f"{FRAMEWORK_NAMES[name]} {text if VERSION_TEXT.match(text) else 'unreadable'}"


def _iso_date(value: Any) -> str:
    import datetime as dt

    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        try:
            return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%d")
        except (OverflowError, OSError, ValueError):  # a date no calendar holds
            return "unknown"
    return "unknown"


def recorded_time(raw: RawSubmission, found: Mapping[str, tuple[Path, dict]]) -> float | None:
    """lm-eval's ``date`` (seconds since the epoch) of the earliest results file that holds a
    task of the submission; None when none is a finite number. Submitted data: it orders
    entries when nothing better says who came first, and a submitter could backdate it."""
    dates = []
    for path, results in found.values():
        value = results.get("date")
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            if _iso_date(value) == "unknown":  # a number no calendar holds (1e20): refused here
                raise Refused(
                    "json",
                    path,
                    f"date {value!r} is not a time (seconds since 1970, as lm-eval writes it)",
                )
            dates.append(float(value))
    return min(dates) if dates else None
