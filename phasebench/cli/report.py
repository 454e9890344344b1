"""``phasebench report``: phase statistics, tables, JSON and plots from lm-eval outputs."""

from __future__ import annotations

import argparse

from phasebench import metrics
from phasebench.cli import _args


def add_parser(sub: argparse._SubParsersAction) -> None:

    rep = sub.add_parser(
        "report",
        help="phase statistics, tables and plots from lm-eval outputs",
        description="Read lm-eval output folders (run with --log_samples) or phasebench report "
        "JSON files; print average, worst phase, gap with intervals, p-value and period.",
    )
    rep.add_argument("paths", nargs="+", metavar="PATH", help="lm-eval --output_path folders")
    rep.add_argument(
        "--diff",
        action="store_true",
        help="two runs of one split, before then after: the difference in gap and in worst "
        "phase with a paired bootstrap interval and its p (refused unless both runs "
        "are of the same split: same spec and tokenizer)",
    )
    rep.add_argument(
        "--legend",
        choices=["short", "full"],
        default="short",
        help="the legend under the tables: the marks they print (short, the default) or every "
        "statistic defined as well (full)",
    )
    rep.add_argument("--json", dest="json_out", default=None, metavar="FILE", help="write JSON")
    rep.add_argument("--plots", default=None, metavar="DIR", help="write PNG and SVG plots")
    rep.add_argument(
        "--n-boot", type=_args.non_negative_int, default=metrics.N_BOOT, help="bootstrap resamples"
    )
    rep.add_argument(
        "--n-perm",
        type=_args.non_negative_int,
        default=metrics.N_PERM,
        help="permutations for the p-value",
    )
    _args.stats_seed(rep, "statistics seed")
    rep.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.atomic import atomic_files
    from phasebench.errors import SamplesError
    from phasebench.report import (
        build_report,
        difference_report,
        load_runs,
        merge_reports,
        render_tables,
        write_json,
        write_plots,
    )

    runs, reports = load_runs(args.paths)
    if args.diff and len(args.paths) == 2 and len(runs) == 2 and not reports:
        # before and after are named as the user named them: the folders given, not the model
        # (a fix is most often the same model run twice, named alike)
        for run, path in zip(runs, args.paths, strict=True):
            run.name = str(path)
    settings = {"n_boot": args.n_boot, "n_perm": args.n_perm, "seed": args.stats_seed}
    if args.diff and reports:
        raise SamplesError(
            "--diff needs the two runs' per-sample logs, not a saved report JSON; pass the two "
            "lm-eval output folders"
        )
    difference = (
        difference_report(runs, n_boot=args.n_boot, seed=args.stats_seed) if args.diff else None
    )
    computed = [build_report(runs, **settings)] if runs else []
    report = merge_reports(computed, reports)
    if difference is not None:
        report["difference"] = difference
    print(render_tables(report, full_legend=args.legend == "full"), end="")
    with atomic_files() as files:  # the JSON and every plot, or none of them (a full disk)
        if args.json_out:
            write_json(report, args.json_out, files)
        if args.plots:
            write_plots(report, args.plots, files)
    for path in files.targets:
        print(f"wrote {path}")
    return 0
