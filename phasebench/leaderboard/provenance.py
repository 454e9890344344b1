"""Provenance shown with an accepted entry: versions, date, and the command that reproduces it."""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phasebench.leaderboard.collect import RawSubmission
from phasebench.leaderboard.schema import VERSION_TEXT


def command(raw: RawSubmission, results: dict, tasks: Sequence[str]) -> str:
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
        "lm_eval_version": version(first.get("lm_eval_version")),
        "transformers_version": version(first.get("transformers_version")),
        "date": iso_date(first.get("date")),
        "command": "\n".join(commands),
        "results_files": sorted(p.name for p, _ in raw.results),
        "samples_files": sorted(p.name for p, _ in raw.samples.values()),
    }


def iso_date(value: Any) -> str:
    import datetime as dt

    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%d")
    return "unknown"


def recorded_time(raw: RawSubmission, found: Mapping[str, tuple[Path, dict]]) -> float | None:
    """lm-eval's ``date`` (seconds since the epoch) of the earliest results file that holds a
    task of the submission; None when none is a finite number. Submitted data: it orders
    entries when nothing better says who came first, and a submitter could backdate it."""
    dates = []
    for _, results in found.values():
        value = results.get("date")
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            dates.append(float(value))
    return min(dates) if dates else None
