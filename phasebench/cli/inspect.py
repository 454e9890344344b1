"""``phasebench inspect``: one row with its needle highlighted, and the balance table."""

from __future__ import annotations

import argparse
import sys

from phasebench.cli import _args


def add_parser(sub: argparse._SubParsersAction) -> None:

    ins = sub.add_parser(
        "inspect",
        help="show a row with its needle, and the balance table",
    )
    ins.add_argument("path", help="a config folder, or a folder of configs")
    ins.add_argument("--row", type=_args.non_negative_int, default=0, help="row number to show")
    ins.add_argument("--no-color", action="store_true", help="mark the needle with << >>")
    ins.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.build import config_folders
    from phasebench.inspection import inspect_config

    color = sys.stdout.isatty() and not args.no_color
    for folder in config_folders(args.path):
        print(inspect_config(folder, args.row, color=color))
    return 0
