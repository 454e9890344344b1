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
from phasebench.reference import DEMO_N_BASE, EVAL_LENGTH

#: Models the demo evaluates, in display order.
DEMO_VARIANTS = ("full", "gate-w8s4", "mean-w8s4", "gate-w8s2", "mean-w8s2")


def _require(module: str, what: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise PhasebenchError(f"'phasebench demo' needs {what} ({module}); it is not installed")


def generate_split(out: Path, length: int, n_base: int, seed: int = 0) -> Path:
    """The demo's ``kv`` config for the reference tokenizer (the same for every variant)."""
    from phasebench.build import generate
    from phasebench.specs import SplitSpec

    spec = SplitSpec(
        family="kv",
        length=length,
        n_base=n_base,
        seed=seed,
        tokenizer="phasebench-ref",
    )
    generate([spec], out, num_proc=1, shard=(0, 1), overwrite=True, progress=False)
    return out


def evaluate_models(
    splits: Path, out: Path, length: int, variants=DEMO_VARIANTS, progress: bool = True
) -> Path:
    """Run lm-eval's ``hf`` backend on each reference model; per-sample logs under ``out``."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    from phasebench.harness import tasks_dir
    from phasebench.reference import weights_dir
    from phasebench.reference.model import register

    register()
    for variant in variants:
        folder = weights_dir() / variant
        if progress:
            print(f"evaluating {variant} through lm-eval ...", flush=True)
        model_args = {
            "pretrained": str(folder),
            "backend": "causal",
            "dtype": "float32",
            "device": "cpu",
        }
        # lm-eval hands model args and metadata to the task's dataset loader only through the
        # TaskManager (as its CLI does), so build one per model
        metadata = model_args | {"dataset_path": str(splits), "max_seq_lengths": [length]}
        results = simple_evaluate(
            model="hf",
            model_args=model_args,
            tasks=["phasebench_kv"],
            task_manager=TaskManager(include_path=tasks_dir(), metadata=metadata),
            batch_size=32,
            log_samples=True,
            random_seed=0,
            numpy_random_seed=0,
            torch_random_seed=0,
            fewshot_random_seed=0,
        )
        tracker = EvaluationTracker(output_path=str(out / variant))
        results["config"]["model_name"] = f"phasebench-ref-{variant}"
        tracker.general_config_tracker.model_name = f"phasebench-ref-{variant}"
        tracker.general_config_tracker.model_name_sanitized = f"phasebench-ref-{variant}"
        samples = results.pop("samples")  # as lm-eval's CLI does before saving
        tracker.save_results_aggregated(results=results, samples=samples)
        for task in results["configs"]:
            tracker.save_results_samples(task_name=task, samples=samples[task])
    return out


def run_demo(
    out: Path,
    n_base: int = DEMO_N_BASE,
    length: int = EVAL_LENGTH,
    progress: bool = True,
    variants: tuple[str, ...] = DEMO_VARIANTS,
) -> dict:
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
    evaluate_models(splits, runs_dir, length, variants=variants, progress=progress)
    runs, _ = load_runs([runs_dir])
    report = build_report(runs)
    report_path = write_json(report, out / "report.json")
    plots = write_plots(report, out / "plots")
    paths = {"splits": str(splits), "lm_eval": str(runs_dir), "report": str(report_path)}
    paths["plots"] = [str(p) for p in plots]
    site = _build_site(out, runs_dir, variants)
    paths["site"] = str(site)
    if progress:
        print(f"splits:  {splits}")
        print(f"lm-eval: {runs_dir}")
        print(f"report:  {report_path}")
        print(f"plots:   {out / 'plots'}")
        print(f"site:    {site}  (open it in a browser)")
    return paths


#: What each variant does to distant context, for the leaderboard's ``kv_cache`` column.
KV_CACHE = {
    "full": "none, full attention (reference negative control)",
    "gate-w8s4": "CSA-like: window 8 stride 4, learned gate with per-slot bias, local window 4",
    "mean-w8s4": "chunked: window 8 stride 4, mean pooling, local window 4",
    "gate-w8s2": "CSA-like: window 8 stride 2, learned gate with per-slot bias, local window 4",
    "mean-w8s2": "chunked: window 8 stride 2, mean pooling, local window 4",
}


def _revision(folder: Path) -> str:
    """The weights' identity: first 40 hex digits of the SHA-256 of model.safetensors."""
    import hashlib

    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()[:40]


def _build_site(out: Path, runs_dir: Path, variants=DEMO_VARIANTS) -> Path:
    """Pack each run as a leaderboard submission, validate and score them, render the site."""
    import yaml

    from phasebench.leaderboard.pack import pack
    from phasebench.leaderboard.render import build_site
    from phasebench.leaderboard.score import load_reported, score
    from phasebench.leaderboard.validate import validate_all
    from phasebench.reference import weights_dir

    submissions = out / "submissions"
    shutil.rmtree(submissions, ignore_errors=True)
    for variant in variants:
        revision = _revision(weights_dir() / variant)
        meta = {
            "model": f"phasebench/ref-{variant}",
            "revision": revision,
            "precision": "float32",
            "backend": "hf",
            "kv_cache": KV_CACHE[variant],
            "chat_template": False,
            "license": "Apache-2.0",
            "contact": "phasebench demo (reference models)",
            "max_length": 2048,
            "tokenizer": {"name": "phasebench-ref"},
            "notes": "phasebench reference model trained from scratch on CPU (phasebench demo)",
        }
        folder = submissions / f"phasebench__ref-{variant}" / revision
        folder.mkdir(parents=True)
        (out / f".{variant}.submission.yaml").write_text(yaml.safe_dump(meta, sort_keys=True))
        pack(runs_dir / variant, folder, out / f".{variant}.submission.yaml")
        (out / f".{variant}.submission.yaml").unlink()
    outcome = validate_all(submissions, cache=str(out / "validate-cache"))
    refused = [line for line in outcome.report_lines() if "refused" in line.lower()]
    if outcome.refused:
        raise PhasebenchError(f"the demo's own submissions were refused: {'; '.join(refused)}")
    board = score(outcome, load_reported())
    site = out / "site"
    build_site(board, site)
    return site / "index.html"
