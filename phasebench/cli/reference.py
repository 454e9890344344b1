"""``phasebench reference train|evaluate``: the small reference models."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from phasebench.cli import _args


def add_parser(sub: argparse._SubParsersAction) -> None:
    from phasebench.reference import (
        DEMO_N_BASE,
        EVAL_LENGTH,
        SWEEP_LENGTH,
        SWEEP_N_BASE,
        SWEEP_STRIDES,
        VARIANTS,
    )

    ref = sub.add_parser(
        "reference",
        help="train or check the small reference models",
    )
    actions = ref.add_subparsers(dest="reference_command", required=True, metavar="ACTION")
    tr = actions.add_parser(
        "train",
        help="train reference models from scratch (CPU, fixed seed)",
    )
    tr.add_argument(
        "variant",
        nargs="+",
        choices=[*VARIANTS, "all"],
        help="which models ('all': every committed one)",
    )
    tr.add_argument(
        "--steps",
        type=_args.positive_int,
        default=None,
        help="optimizer steps (default: those of the committed weights)",
    )
    _args.train_seed(tr, "training seed")  # None: the training settings' own
    _args.threads(tr, "torch threads (1 reproduces)")
    _args.out(tr, "folder for <variant>/ (default: shipped weights)")
    _args.quiet(tr, "no loss lines")
    tr.set_defaults(run=_train)

    ev = actions.add_parser(
        "evaluate",
        help="quick in-process phase profile of one model folder",
    )
    ev.add_argument("model", help="a reference model folder")
    _args.length(ev, "kv prompt length", default=EVAL_LENGTH)
    _args.n_base(ev, "base items (x 8 phases)", default=DEMO_N_BASE)
    _args.threads(ev, "torch threads")
    ev.set_defaults(run=_evaluate)

    sw = actions.add_parser(
        "sweep",
        help="period against stride: one model per stride (W = 2S) and the control, via lm-eval",
    )
    _args.out(sw, "output folder", default="phasebench-sweep")
    sw.add_argument(
        "--strides",
        type=_args.positive_int,
        nargs="+",
        choices=SWEEP_STRIDES,
        default=list(SWEEP_STRIDES),
        metavar="S",
        help=f"strides to run (of {', '.join(map(str, SWEEP_STRIDES))})",
    )
    _args.length(sw, "kv prompt length", default=SWEEP_LENGTH)
    _args.n_base(sw, "base items (x 24 phases)", default=SWEEP_N_BASE)
    _args.seed(sw, "the split's seed (the kv split every model of the sweep is evaluated on)")
    sw.add_argument(
        "--no-train",
        action="store_true",
        help="refuse to train: stop at a stride without committed or already-trained weights",
    )
    sw.set_defaults(run=_sweep)


def _train(args: argparse.Namespace) -> int:
    import dataclasses

    import torch

    from phasebench.atomic import check_replaceable
    from phasebench.reference import SHIPPED, weights_dir
    from phasebench.reference.train import MARKER, settings_for, train

    torch.set_num_threads(args.threads)
    variants = list(SHIPPED) if "all" in args.variant else args.variant

    def log(variant: str):
        def show(step: int, loss: float, seconds: float) -> None:
            print(f"{variant} step {step} loss {loss} {seconds}s", flush=True)

        return None if args.quiet else show

    outs = {v: Path(args.out) / v if args.out else weights_dir() / v for v in variants}
    for out in outs.values():  # refuse a folder train would not replace before any training
        check_replaceable(out, MARKER)
    for variant in variants:
        settings = settings_for(variant, args.train_seed)
        if args.steps is not None:
            settings = dataclasses.replace(settings, steps=args.steps)
        train(variant, outs[variant], settings, on_loss=log(variant))
        print(outs[variant])
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    import torch

    from phasebench.metrics import RANKING
    from phasebench.reference.evaluate import evaluate_folder, phase_summary

    torch.set_num_threads(args.threads)
    result = evaluate_folder(Path(args.model), length=args.length, n_base=args.n_base)
    summary = phase_summary(result).to_dict()
    keep = (
        "acc",
        RANKING.key,
        "lowest_phase",
        "best_phase",
        "gap",
        "p_value",
        "dominant_period",
    )
    shown = {"model": result["model"], "per_phase": result["per_phase"]}
    print(json.dumps(shown | {k: summary[k] for k in keep}, indent=1))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from phasebench.sweep import run_sweep, sweep_table

    result = run_sweep(
        Path(args.out),
        n_base=args.n_base,
        length=args.length,
        strides=tuple(sorted(set(args.strides))),
        seed=args.seed,
        train_missing=not args.no_train,
        on_event=lambda line: print(line, flush=True),
    )
    table = sweep_table(result["report_data"], result["variants"], result["length"])
    print()
    print(f"period against stride (kv, {args.length} tokens, modulus 24, percent):")
    print(table.to_string(index=False))
    print()
    print(f"report:  {result['report']}")
    print(f"figure:  {result['figure'][0]}")
    return 0
