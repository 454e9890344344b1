"""``phasebench reference train|evaluate`` and ``phasebench demo`` (parsers only)."""

from __future__ import annotations

import argparse
from pathlib import Path


def _train(args: argparse.Namespace) -> int:
    import dataclasses

    import torch

    from phasebench.reference import weights_dir
    from phasebench.reference.train import VARIANTS, settings_for, train

    torch.set_num_threads(args.threads)
    variants = list(VARIANTS) if args.variant == ["all"] else args.variant
    for variant in variants:
        settings = settings_for(variant, seed=args.seed)
        if args.steps is not None:
            settings = dataclasses.replace(settings, steps=args.steps)
        out = Path(args.out) / variant if args.out else weights_dir() / variant
        train(variant, out, settings, progress=not args.quiet)
        print(out)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    import json

    import torch

    from phasebench.reference.evaluate import evaluate_folder, phase_summary

    torch.set_num_threads(args.threads)
    result = evaluate_folder(Path(args.model), length=args.length, n_base=args.n_base)
    summary = phase_summary(result).to_dict()
    keep = ("acc", "worst_phase", "best_phase", "gap", "p_value", "dominant_period")
    print(
        json.dumps(
            {"model": result["model"], "per_phase": result["per_phase"]}
            | {k: summary[k] for k in keep},
            indent=1,
        )
    )
    return 0


def _demo(args: argparse.Namespace) -> int:
    from phasebench.demo import run_demo

    run_demo(Path(args.out), n_base=args.n_base, length=args.length, progress=not args.quiet)
    return 0


def register(subparsers) -> None:
    from phasebench.reference import DEMO_N_BASE, EVAL_LENGTH
    from phasebench.reference.train import VARIANTS

    ref = subparsers.add_parser("reference", help="train or check the small reference models")
    sub = ref.add_subparsers(dest="reference_command", required=True, metavar="ACTION")
    tr = sub.add_parser("train", help="train reference models from scratch (CPU, fixed seed)")
    tr.add_argument("variant", nargs="+", choices=[*VARIANTS, "all"])
    tr.add_argument(
        "--steps",
        type=int,
        default=None,
        help="optimizer steps (default: those of the committed weights)",
    )
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--threads", type=int, default=1)
    tr.add_argument("--out", default=None, help="folder for <variant>/ (default: shipped weights)")
    tr.add_argument("--quiet", action="store_true")
    tr.set_defaults(func=_train)

    ev = sub.add_parser("evaluate", help="quick in-process phase profile of one model folder")
    ev.add_argument("model")
    ev.add_argument("--length", type=int, default=EVAL_LENGTH)
    ev.add_argument("--n-base", type=int, default=DEMO_N_BASE)
    ev.add_argument("--threads", type=int, default=1)
    ev.set_defaults(func=_evaluate)

    demo = subparsers.add_parser(
        "demo", help="the whole pipeline on the reference models: splits, lm-eval, report, site"
    )
    demo.add_argument("--out", default="phasebench-demo")
    demo.add_argument("--n-base", type=int, default=DEMO_N_BASE)
    demo.add_argument("--length", type=int, default=EVAL_LENGTH)
    demo.add_argument("--quiet", action="store_true")
    demo.set_defaults(func=_demo)
