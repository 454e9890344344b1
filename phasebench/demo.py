"""``phasebench demo``: the whole pipeline on the committed reference models.

1. generate a ``kv`` split for the reference tokenizer (phasebench's own generator);
2. evaluate every reference model on it through lm-eval (``hf`` backend, the ``phasebench_kv``
   task, per-sample logs), exactly as a user evaluates any model;
3. build the report (``report.json`` in ``phasebench report --json`` format) and its plots;
4. build a local leaderboard site from the results;
5. print where to look.

The reference architecture is registered with transformers' Auto classes first (an explicit
call, not an import side effect), so lm-eval loads the folders with ``pretrained=FOLDER``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from phasebench.errors import PhasebenchError

#: Models the demo evaluates, in display order.
DEMO_VARIANTS = ("full", "gate-w8s4", "mean-w8s4", "gate-w8s2", "mean-w8s2")


def _require(module: str, what: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise PhasebenchError(f"'phasebench demo' needs {what} ({module}); it is not installed")


def generate_split(out: Path, length: int, n_base: int, seed: int = 0) -> Path:
    """The demo's ``kv`` config for the reference tokenizer (the same for every variant)."""
    from phasebench.build import generate
    from phasebench.reference import weights_dir
    from phasebench.specs import SplitSpec

    spec = SplitSpec(
        family="kv",
        length=length,
        n_base=n_base,
        seed=seed,
        tokenizer=str(weights_dir() / DEMO_VARIANTS[0]),
    )
    generate([spec], out, num_proc=1, shard=(0, 1), overwrite=True, progress=False)
    return out


def evaluate_models(
    splits: Path, out: Path, length: int, variants=DEMO_VARIANTS, progress: bool = True
) -> Path:
    """Run lm-eval's ``hf`` backend on each reference model; per-sample logs under ``out``."""
    import json

    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    from phasebench.harness import tasks_dir
    from phasebench.reference import weights_dir
    from phasebench.reference.model import register

    register()
    manager = TaskManager(include_path=tasks_dir())
    for variant in variants:
        folder = weights_dir() / variant
        if progress:
            print(f"evaluating {variant} through lm-eval ...", flush=True)
        results = simple_evaluate(
            model="hf",
            model_args={
                "pretrained": str(folder),
                "backend": "causal",
                "dtype": "float32",
                "device": "cpu",
            },
            tasks=["phasebench_kv"],
            task_manager=manager,
            batch_size=32,
            log_samples=True,
            metadata={"dataset_path": str(splits), "max_seq_lengths": [length]},
            random_seed=0,
            numpy_random_seed=0,
            torch_random_seed=0,
            fewshot_random_seed=0,
        )
        tracker = EvaluationTracker(output_path=str(out / variant))
        results["config"]["model_name"] = f"phasebench-ref-{variant}"
        tracker.general_config_tracker.model_name = f"phasebench-ref-{variant}"
        tracker.general_config_tracker.model_name_sanitized = f"phasebench-ref-{variant}"
        tracker.save_results_aggregated(results=results, samples=results["samples"])
        for task in results["configs"]:
            tracker.save_results_samples(task=task, samples=results["samples"][task])
        del json
    return out


def run_demo(out: Path, n_base: int = 64, length: int = 192, progress: bool = True) -> dict:
    """The whole pipeline; returns the paths it wrote."""
    _require("torch", "the 'reference' extra")
    _require("lm_eval", "the 'lmeval' extra")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import torch

    from phasebench.report import build_report, load_runs, write_json, write_plots

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    splits = generate_split(out / "splits", length, n_base)
    runs_dir = out / "lm_eval"
    shutil.rmtree(runs_dir, ignore_errors=True)
    evaluate_models(splits, runs_dir, length, progress=progress)
    runs, _ = load_runs([runs_dir])
    report = build_report(runs)
    report_path = write_json(report, out / "report.json")
    plots = write_plots(report, out / "plots")
    paths = {"splits": str(splits), "lm_eval": str(runs_dir), "report": str(report_path)}
    paths["plots"] = [str(p) for p in plots]
    site = _build_site(out, report_path)
    if site is not None:
        paths["site"] = str(site)
    if progress:
        print(f"report:  {report_path}")
        print(f"plots:   {out / 'plots'}")
        if site is not None:
            print(f"site:    {site}")
    return paths


def _build_site(out: Path, report_path: Path) -> Path | None:
    """The leaderboard helper's site builder, when it exists in this checkout."""
    import importlib.util

    if importlib.util.find_spec("phasebench.leaderboard.build") is None:
        return None
    from phasebench.leaderboard.build import build_site  # type: ignore[import-not-found]

    return build_site(reports=[report_path], out=out / "site")
