"""The press audit: one model, one split, a list of presses x compression ratios, one real
``phasebench eval`` run and one leaderboard submission per (press, ratio).

Each run is a subprocess of ``phasebench eval --model phasebench-kvpress`` (the command a user
types), one thread, logged to ``WORK/<variant>/eval.log``; its wall and CPU seconds are measured
around the subprocess and written to ``WORK/<variant>/run.json`` once lm-eval has finished, so an
interrupted audit resumes where it stopped. The submissions are packed with
:func:`phasebench.leaderboard.pack.pack` into ``<org>__<model>/<revision>+<variant>/``.

The tokenizer. The leaderboard validates in the main environment, but kvpress pins
``transformers<5.3``, and transformers converts some GGUF tokenizers differently across versions
(SmolLM2's: 5.2 builds a CodeLlama-style tokenizer that adds BOS ``<|im_start|>``, 5.24 a plain
byte-level BPE without BOS; their fingerprints differ). :func:`export_tokenizer`, run in the
environment that validates, saves the tokenizer it loads with its fingerprint; the audit runs
with that folder as ``tokenizer=`` and refuses to start if the fingerprint differs in the kvpress
environment, so the split, its labels and the validator's regenerated split are the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phasebench.atomic import atomic_file, atomic_write_text, staged_folder
from phasebench.errors import PhasebenchError
from phasebench.metrics import RANKING

#: The audited presses, by short name: the press, its inner scorer and fixed fields. The
#: compression ratio is added per run (``press_args``).
AUDIT_PRESSES: dict[str, dict[str, Any]] = {
    "none": {"press": None},
    "streamingllm": {"press": "streamingllm"},
    "knorm": {"press": "knorm"},
    "snapkv": {"press": "snapkv"},
    "chunkkv8": {"press": "chunkkv", "inner": "knorm", "chunk_length": 8},
    "chunk8": {"press": "chunk", "inner": "knorm", "chunk_length": 8},
    "block8": {"press": "block", "inner": "knorm", "block_size": 8},
}
TOKENIZER_RECORD = "phasebench_tokenizer.json"
BACKEND = "phasebench-kvpress"


def press_args(name: str, ratio: float) -> dict[str, Any]:
    """``--model_args`` entries of one audited press at ``ratio`` (no ratio without a press)."""
    if name not in AUDIT_PRESSES:
        raise PhasebenchError(f"unknown audit press {name!r}; known: {', '.join(AUDIT_PRESSES)}")
    args = dict(AUDIT_PRESSES[name])
    if args["press"] is not None:
        args["compression_ratio"] = ratio
    return args


def variant(name: str, ratio: float) -> str:
    """Folder suffix of a submission: ``kvpress-snapkv-r0.25``, ``kvpress-none``."""
    return "kvpress-none" if AUDIT_PRESSES[name]["press"] is None else f"kvpress-{name}-r{ratio:g}"


def model_args_text(values: Mapping[str, Any]) -> str:
    """``k=v,k=v`` as lm-eval parses it (``press=none`` is parsed as None)."""
    return ",".join(f"{k}={'none' if v is None else v}" for k, v in values.items())


def kv_cache_text(description: str, kvpress_version: str) -> str:
    if description == "no press":
        return "none (full attention; phasebench-kvpress path without a press)"
    return (
        f"kvpress {kvpress_version} {description} on the context; question and answer uncompressed"
    )


# -- tokenizer ---------------------------------------------------------------------------------


def export_tokenizer(name: str, args: Mapping[str, str], out: Path) -> dict[str, Any]:
    """Save the tokenizer ``name`` loads to here (``python:PACKAGE`` allowed) into ``out`` with a
    record of its name, arguments and fingerprint; returns the record."""
    import transformers

    from phasebench.leaderboard.regenerate import validation_tokenizer

    tok = validation_tokenizer(name, dict(args))
    record = {
        "name": name,
        "args": dict(args),
        "fingerprint": tok.fingerprint,
        "transformers_version": transformers.__version__,
    }
    with staged_folder(out, marker=TOKENIZER_RECORD) as staging:
        tok.hf.save_pretrained(str(staging))  # transformers writes into the staging folder
        atomic_write_text(
            staging / TOKENIZER_RECORD, json.dumps(record, indent=2, sort_keys=True) + "\n"
        )
    return record


def read_tokenizer_record(folder: Path) -> dict[str, Any]:
    """The export record of ``folder``, after checking that the tokenizer saved there has the
    recorded fingerprint here too."""
    from phasebench.tokenization import load_tokenizer

    path = Path(folder) / TOKENIZER_RECORD
    if not path.exists():
        raise PhasebenchError(
            f"{str(folder)!r} has no {TOKENIZER_RECORD}; make it with "
            f"`python benchmarks/audit_presses.py export-tokenizer` in the validating environment"
        )
    record = json.loads(path.read_text())
    here = load_tokenizer(str(folder), {}).fingerprint
    if here != record["fingerprint"]:
        raise PhasebenchError(
            f"the tokenizer saved in {str(folder)!r} has fingerprint {here} here but "
            f"{record['fingerprint']} where it was exported; the split would not validate"
        )
    return record


def file_revision(path: Path) -> str:
    """40 hex digits of a local weights file's SHA-256 (a local model has no commit hash)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:40]


# -- runs ----------------------------------------------------------------------------------------


def eval_command(
    model_args: Mapping[str, Any],
    family: str,
    length: int,
    n_base: int,
    out: Path,
    modulus: int | None = None,
    batch_size: int = 1,
) -> list[str]:
    """The ``phasebench eval`` command of one run (as the submission's provenance shows it);
    ``batch_size`` prompts of one shape share their forward passes (same answers)."""
    spec: dict[str, Any] = {"max_seq_lengths": [length], "n_base": n_base}
    if modulus is not None:
        spec["phase_modulus"] = modulus
    metadata = json.dumps(spec)
    return [
        sys.executable, "-m", "phasebench", "eval", "--model", BACKEND,
        "--model_args", model_args_text(model_args), "--tasks", f"phasebench_{family}",
        "--device", "cpu", "--batch_size", str(batch_size), "--metadata", metadata,
        "--log_samples", "--output_path", str(out), "--lm_eval_seed", "0",
    ]  # fmt: skip


def run_one(command: Sequence[str], folder: Path, threads: int = 1) -> dict[str, Any]:
    """Run one evaluation (skipped when ``folder/run.json`` exists) and return its record."""
    done = folder / "run.json"
    if done.exists():
        return json.loads(done.read_text())
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        TOKENIZERS_PARALLELISM="false",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with atomic_file(folder / "eval.log") as log:  # the whole log, kept when the run fails
        proc = subprocess.run(list(command), env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise PhasebenchError(
            f"the run in {str(folder)!r} failed (exit {proc.returncode}); see its eval.log"
        )
    record = {
        "command": list(command),
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    }
    atomic_write_text(done, json.dumps(record, indent=2) + "\n")
    return record


def submission_meta(
    *,
    model: str,
    revision: str,
    variant_name: str,
    precision: str,
    kv_cache: str,
    tokenizer: Mapping[str, Any],
    contact: str,
    license_name: str,
    notes: str,
) -> dict[str, Any]:
    no_press = kv_cache == kv_cache_text("no press", "")
    return {
        "model": model,
        "revision": revision,
        **({"role": "reference"} if no_press else {}),  # what the presses are measured against
        "variant": variant_name,
        "precision": precision,
        "backend": BACKEND,
        "kv_cache": kv_cache,
        "chat_template": False,
        "license": license_name,
        "contact": contact,
        "tokenizer": {"name": tokenizer["name"], "args": dict(tokenizer.get("args") or {})},
        "notes": notes,
    }


def pack_submission(
    out: Path, meta: Mapping[str, Any], submissions: Path, *, exist_ok: bool = False
) -> Path:
    """Pack one run's lm-eval output under ``submissions`` as ``<org>__<model>/<rev>+<variant>``;
    with ``exist_ok`` an entry already packed there is kept as it is (a resumed driver)."""
    import yaml

    from phasebench.leaderboard.pack import pack

    folder = submissions / meta["model"].replace("/", "__")
    target = folder / f"{meta['revision']}+{meta['variant']}"
    if target.exists() and exist_ok:
        return target
    if target.exists():
        raise PhasebenchError(f"{str(target)!r} exists; remove it to pack this run again")
    yaml_path = atomic_write_text(
        out.parent / "submission.yaml", yaml.safe_dump(dict(meta), sort_keys=True)
    )
    with staged_folder(target) as staging:  # all of it or nothing
        pack(out, staging, yaml_path)
    return target


# -- the table -----------------------------------------------------------------------------------


def audit_table(work: Path, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per audited run (``records`` from ``WORK/audit.json``): the press, and average,
    worst phase, gap with its interval, p-value and period as ``phasebench report`` computes
    them from the run's lm-eval samples (one computation per number): ``WORK/<variant>/out``,
    or, where that scratch folder is gone, the packed submission the record names (the same
    samples, committed)."""
    from phasebench.report import build_report, load_runs

    rows = []
    for record in records:
        source = Path(work) / record["variant"] / "out"
        if not source.is_dir() and record.get("submission"):
            source = Path(record["submission"])
        if not source.is_dir():
            raise PhasebenchError(f"{record['variant']}: no lm-eval output at {source}")
        runs, _ = load_runs([source])
        report = build_report(runs)
        ((_, run),) = report["runs"].items()
        ((_, by_length),) = run["tasks"].items()
        ((_, entry),) = by_length.items()
        rows.append({**record, "summary": entry})
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The audit table of docs/kvpress.md (percent, one decimal; "x-fit" is the cross-fitted
    worst phase the leaderboard ranks by)."""
    import functools

    from phasebench.formatting import MARKDOWN, format_value

    pct = functools.partial(format_value, "%", style=MARKDOWN)
    lines = [
        "| press (settings) | average | lowest phase (which) | worst x-fit | gap [95% CI] | p "
        "| period | CPU s/prompt |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        s = row["summary"]
        lo, hi = s["gap_ci"]
        lines.append(
            f"| {row['press']} | {pct(s['acc'])} | "
            f"{pct(s['lowest_phase'])} ({s['lowest_phase_index']}) | "
            f"{pct(s[RANKING.key])} | "
            f"{pct(s['gap'])} [{pct(lo)}, {pct(hi)}] | {s['p_value']:.2g} | "
            f"{s['dominant_period'] or 'none'} | {row['cpu_s_per_prompt']:.2f} |"
        )
    return "\n".join(lines) + "\n"
