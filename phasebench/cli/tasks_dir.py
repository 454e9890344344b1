"""``phasebench tasks-dir``: where the lm-eval task YAMLs are (for ``--include_path``), or with
``--inspect`` the model arguments Inspect's ``hf`` provider takes to send phasebench's prompts
as they are (for ``inspect eval --model-config``)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:

    td = sub.add_parser(
        "tasks-dir",
        help="print the installed lm-eval tasks folder (for lm_eval --include_path)",
    )
    td.add_argument(
        "--inspect",
        action="store_true",
        help="print the model-arguments file for inspect eval --model-config instead (Inspect's "
        "hf provider then sends each prompt as it is, greedily; docs/inspect.md)",
    )
    td.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.inspect:
        from phasebench.inspectai import MODEL_CONFIG

        print(MODEL_CONFIG)
        return 0
    from phasebench.resources import resource_dir

    print(resource_dir("tasks"))
    return 0
