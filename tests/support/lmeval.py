"""The one way the tests run lm-eval: its real CLI (``python -m lm_eval``) or phasebench's
wrapper (``python -m phasebench eval``), in a subprocess, offline, on one thread."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent


#: What a wheel of this project ships (the top-level resource folders ride inside the package).
SHIPPED = ("pyproject.toml", "README.md", "LICENSE", "phasebench", "tasks", "generators",
           "data_cards")  # fmt: skip


def copy_source(dest: Path) -> Path:
    """Copy what the project ships (:data:`SHIPPED`) from the checkout into ``dest``, a folder
    that pip can build or install, without caches; returns ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy(path, dest / name)
    return dest


def offline_env(cache: Path, *, source_on_path: bool = True) -> dict[str, str]:
    """The environment of a test subprocess: offline, one thread, its own split cache, and the
    checkout importable (unless ``source_on_path`` is False, for an installed package)."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
        PHASEBENCH_CACHE=str(cache),
    )
    if source_on_path:
        paths = [str(ROOT), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    else:
        env.pop("PYTHONPATH", None)
    return env


def lm_eval(
    work: Path,
    model_args: str,
    tasks: str,
    metadata: Mapping[str, Any],
    *,
    wrapper: bool = False,
    model: str = "hf",
    out: str = "out",
    batch_size: int = 8,
    extra: Sequence[str] = (),
    include_path: str | None = str(ROOT / "tasks"),
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: int = 1500,
    log_samples: bool = True,
) -> subprocess.CompletedProcess:
    """Run lm-eval on ``tasks`` in ``work`` and return the finished process (output captured).

    ``wrapper=False``: ``python -m lm_eval`` with ``--include_path`` (the checkout's tasks/ by
    default; None: no ``--include_path``, for tasks inside lm-eval's own ``lm_eval/tasks/``);
    ``wrapper=True``: ``python -m phasebench eval``, which adds the folder itself.
    Per-sample logs go to ``work/out`` (``log_samples=False``: neither ``--log_samples`` nor
    ``--output_path``); splits are cached in ``work/cache``."""
    command = [python or sys.executable, "-m"]
    command += ["phasebench", "eval"] if wrapper else ["lm_eval"]
    command += ["--model", model, "--model_args", model_args, "--tasks", tasks]
    if not wrapper and include_path is not None:
        command += ["--include_path", include_path]
    command += ["--metadata", json.dumps(dict(metadata)), "--device", "cpu"]
    command += ["--batch_size", str(batch_size)]
    if log_samples:
        command += ["--log_samples", "--output_path", out]
    # lm-eval's own seeds (phasebench eval's --seed is the split's, from the metadata here)
    command += ["--lm_eval_seed" if wrapper else "--seed", "0", *extra]
    return subprocess.run(
        command,
        cwd=work,
        env=dict(env) if env is not None else offline_env(work / "cache"),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def phasebench(work: Path, *args: str, env: Mapping[str, str] | None = None):
    """``python -m phasebench ARGS`` in ``work`` (offline), output captured."""
    return subprocess.run(
        [sys.executable, "-m", "phasebench", *args],
        cwd=work,
        env=dict(env) if env is not None else offline_env(work / "cache"),
        capture_output=True,
        text=True,
        timeout=600,
    )


def outputs(out: Path) -> tuple[dict, dict[str, list[dict]]]:
    """The results JSON and the logged samples per task that lm-eval wrote under ``out``."""
    (results_file,) = out.glob("*/results_*.json")
    results = json.loads(results_file.read_text())
    samples = {}
    for path in out.glob("*/samples_*.jsonl"):
        task = path.name[len("samples_") :].rsplit("_", 1)[0]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()]
    return results, samples
