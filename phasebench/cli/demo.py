"""``phasebench demo``: the whole pipeline on the reference models."""

from __future__ import annotations

import argparse

from phasebench.cli import _args


def add_parser(sub: argparse._SubParsersAction) -> None:
    from phasebench.reference import DEMO_N_BASE, EVAL_LENGTH

    demo = sub.add_parser(
        "demo",
        help="the whole pipeline on the reference models: splits, lm-eval, report, site",
    )
    _args.out(demo, "output folder", default="phasebench-demo")
    _args.n_base(demo, "base items (x 8 phases)", default=DEMO_N_BASE)
    _args.length(demo, "kv prompt length", default=EVAL_LENGTH)
    _args.seed(demo, "seed of the evaluation split (the models never saw any evaluation seed)")
    _args.quiet(demo, "print only the results")
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from phasebench.demo import next_commands, results_legend, results_table, run_demo

    def say(line: str) -> None:
        print(line, flush=True)

    paths = run_demo(
        Path(args.out),
        n_base=args.n_base,
        length=args.length,
        seed=args.seed,
        on_event=None if args.quiet else say,
    )
    print()
    print(
        f"phase sensitivity of the reference models "
        f"(kv, {args.length} tokens, seed {args.seed}, percent):"
    )
    print(results_table(paths["report_data"]).to_string(index=False))
    print(results_legend())
    print()
    print(f"report:  {paths['report']}  (phasebench report {paths['lm_eval']})")
    print(f"plots:   {Path(args.out) / 'plots'}")
    print(f"site:    {paths['site']}  (open it in a browser)")
    print("\nnext:")
    for what, command in next_commands(str(args.out)):
        print(f"  # {what}\n  {command}")
    return 0
