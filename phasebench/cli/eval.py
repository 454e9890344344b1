"""``phasebench eval``: lm-eval's own CLI with the phasebench tasks, a truncation guard, and
phasebench's summary after lm-eval's table."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser(
        "eval",
        help="run lm-eval with the phasebench tasks (every lm-eval flag passes through)",
        description="Runs `lm_eval run ARGS --include_path $(phasebench tasks-dir)` after "
        "preparing the phasebench splits and checking that no prompt would be truncated, then "
        "prints phasebench's summary (as `phasebench report` does) when --log_samples and "
        "--output_path were given. `phasebench eval --help` shows lm-eval's own options.",
        # every token, options included, belongs to lm-eval (`phasebench eval --help` shows
        # lm-eval's help): this parser recognises no options of its own
        prefix_chars="+",
        add_help=False,
    )
    ev.add_argument("lm_eval_args", nargs="*", metavar="ARGS", help="lm-eval's run arguments")
    ev.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import shlex

    from phasebench.kvpress import register_model_type
    from phasebench.lmeval.harness import run_eval

    register_model_type()  # --model phasebench-kvpress (imported only when a run names it)
    output = run_eval(args.lm_eval_args)
    if not output.samples_files:
        print(
            "\nphasebench: per-phase summary (worst phase, gap, p-value, period): run with "
            "--log_samples --output_path OUT, then `phasebench report OUT`"
        )
        return 0
    from phasebench.report import build_report, render_tables, runs_from_files

    report = build_report(runs_from_files(output.samples_files))
    print("\nphasebench summary of this run (points, 0-100; intervals 95%):\n")
    print(render_tables(report), end="")
    where = shlex.quote(str(output.output_path))
    print(f"\nSame numbers, plots and JSON: phasebench report {where} --plots DIR --json FILE")
    return 0
