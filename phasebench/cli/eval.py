"""``phasebench eval``: lm-eval's own CLI with the phasebench tasks, a truncation guard, and
phasebench's summary after lm-eval's table."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser(
        "eval",
        help="run lm-eval with the phasebench tasks (every lm-eval flag passes through)",
        description="Runs `lm_eval run ARGS --include_path $(phasebench tasks-dir)` after "
        "preparing the phasebench splits and checking that no prompt would be truncated. "
        "`phasebench eval --help` shows lm-eval's own options.",
        # every token, options included, belongs to lm-eval (`phasebench eval --help` shows
        # lm-eval's help): this parser recognises no options of its own
        prefix_chars="+",
        add_help=False,
    )
    ev.add_argument("lm_eval_args", nargs="*", metavar="ARGS", help="lm-eval's run arguments")
    ev.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.lmeval.harness import run_eval

    run_eval(args.lm_eval_args)
    return 0
