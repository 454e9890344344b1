"""``phasebench tasks-dir``: where the lm-eval task YAMLs are (for ``--include_path``)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:

    td = sub.add_parser(
        "tasks-dir",
        help="print the installed lm-eval tasks folder (for lm_eval --include_path)",
    )
    td.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.resources import resource_dir

    print(resource_dir("tasks"))
    return 0
