"""``phasebench reference sweep``: does the period of the phase effect follow the stride?

One mean-pooling model per stride ``S`` (window ``2 * S``; the strides are
:data:`phasebench.reference.SWEEP_STRIDES`) and the matched negative control (window 1,
stride 1), all on the shared recipe, run through lm-eval on one ``kv`` split whose phase
modulus every stride divides (24), so a stride-``S`` effect can show as dominant period ``S``.
Committed weights are loaded; a model without committed weights is trained into the output
folder first (same recipe, seed and thread count as the committed ones, so the same torch build
gives the same weights).

Writes ``DIR/report.json`` (``phasebench report --json`` format), ``DIR/sweep.{png,svg}`` (the
per-phase profiles stacked, one panel per model) and returns the report; :func:`sweep_table`
gives the table the command line prints.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from phasebench.atomic import check_replaceable, make_folder, staged_folder
from phasebench.demo import RUNS_MARKER, eval_threads, evaluate_models, generate_split, model_name
from phasebench.errors import PhasebenchError
from phasebench.reference import (
    CONTROL,
    SWEEP_LENGTH,
    SWEEP_MODULUS,
    SWEEP_N_BASE,
    SWEEP_STRIDES,
    VARIANTS,
    sweep_variant,
    weights_dir,
)
from phasebench.specs import DEFAULT_SEED

Events = Callable[[str], None]


def _sweep_models(strides: tuple[int, ...] = SWEEP_STRIDES) -> tuple[str, ...]:
    """The control first, then one model per stride, in stride order."""
    return (CONTROL, *(sweep_variant(s) for s in strides))


def _model_folders(
    out: Path, variants: tuple[str, ...], train_missing: bool, on_event: Events | None = None
) -> dict[str, Path]:
    """Each variant's model folder: the committed weights, or ``out/models/<variant>`` (trained
    there on the shared recipe when ``train_missing`` and not there yet)."""
    import torch

    from phasebench.reference.train import settings_for, train

    say = on_event or (lambda line: None)
    folders: dict[str, Path] = {}
    for variant in variants:
        if variant not in VARIANTS:
            raise PhasebenchError(f"no reference variant {variant!r} (stride without a model)")
        committed = weights_dir() / variant
        trained = Path(out) / "models" / variant
        if (committed / "model.safetensors").is_file():
            folders[variant] = committed
            continue
        if not (trained / "model.safetensors").is_file():
            if not train_missing:
                raise PhasebenchError(
                    f"{variant} has no committed weights and --no-train was given; drop "
                    f"--no-train to train it into {trained}"
                )
            settings = settings_for(variant)
            say(f"  training {variant}: {settings.steps} steps on the shared recipe (1 thread)")
            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # the committed weights were trained on 1 thread
            start = time.monotonic()
            try:
                train(
                    variant,
                    trained,
                    settings,
                    on_loss=lambda step, loss, _s, v=variant: (
                        say(f"    {v} step {step} loss {loss}") if step % 500 == 0 else None
                    ),
                )
            finally:
                torch.set_num_threads(threads)
            say(f"  trained {variant} ({time.monotonic() - start:.0f} s)")
        folders[variant] = trained
    return folders


def run_sweep(
    out: Path,
    n_base: int = SWEEP_N_BASE,
    length: int = SWEEP_LENGTH,
    strides: tuple[int, ...] = SWEEP_STRIDES,
    seed: int = DEFAULT_SEED,
    train_missing: bool = True,
    on_event: Events | None = None,
) -> dict[str, Any]:
    """The whole sweep; returns the paths it wrote and the report."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import torch

    from phasebench.plots import plot_stacked_profiles
    from phasebench.report import build_report, load_runs, write_json

    say = on_event or (lambda line: None)
    out = make_folder(Path(out))
    runs_dir = out / "lm_eval"
    check_replaceable(runs_dir, RUNS_MARKER)  # before any work: never replace a foreign folder
    variants = _sweep_models(strides)
    say(f"[1/4] models: {', '.join(variants)}")
    folders = _model_folders(out, variants, train_missing, on_event)
    say(f"[2/4] kv split: {n_base} base items x {SWEEP_MODULUS} phases at {length} tokens")
    splits = generate_split(out / "splits", length, n_base, seed=seed, modulus=SWEEP_MODULUS)
    say(f"[3/4] lm-eval on {len(variants)} models (hf backend, phasebench_kv)")
    torch.set_num_threads(eval_threads())
    with staged_folder(runs_dir, marker=RUNS_MARKER) as staging:
        evaluate_models(
            splits, staging, length, variants=variants, on_event=on_event, folders=folders
        )
    say("[4/4] phase statistics and the stacked figure")
    runs, _ = load_runs([runs_dir])
    report = build_report(runs)
    report_path = write_json(report, out / "report.json")
    panels = [(_label(v), _entry(report, v, length)) for v in variants]
    figure = plot_stacked_profiles(panels, out, "sweep", strides=[_stride(v) for v in variants])
    return {
        "report": str(report_path),
        "figure": [str(p) for p in figure],
        "report_data": report,
        "variants": variants,
        "length": length,
    }


def _stride(variant: str) -> int:
    return int(VARIANTS[variant].get("stride", 1))


def _label(variant: str) -> str:
    settings = VARIANTS[variant]
    role = "matched control" if variant == CONTROL else "mean pooling"
    return f"{variant}: W{settings['window']} S{settings['stride']} ({role})"


def _entry(report: dict[str, Any], variant: str, length: int) -> dict[str, Any]:
    return report["runs"][model_name(variant)]["tasks"]["phasebench_kv"][str(length)]


def sweep_table(report: dict[str, Any], variants: tuple[str, ...], length: int):
    """One row per model: stride, window, detected period, gap with its interval, p, average
    (points; a pandas DataFrame)."""
    import pandas as pd

    rows = []
    for variant in variants:
        e = _entry(report, variant, length)
        lo, hi = e["gap_ci"]
        rows.append(
            {
                "model": variant,
                "stride": _stride(variant),
                "window": VARIANTS[variant]["window"],
                "period": e["dominant_period"] or "-",
                "gap": round(100 * e["gap"], 1),
                "gap 95% CI": f"[{100 * lo:.1f}, {100 * hi:.1f}]",
                "p": f"{e['p_value']:.3g}",
                "average": round(100 * e["acc"], 1),
            }
        )
    return pd.DataFrame(rows)
