"""``phasebench verify``: re-encode a built split and check every claim."""

from __future__ import annotations

import argparse

from phasebench.cli import _args


def add_parser(sub: argparse._SubParsersAction) -> None:

    ver = sub.add_parser(
        "verify",
        help="re-encode a built split and check every claim (exit 1 if any fails)",
        description="Re-encode every prompt whole with the split's tokenizer and check lengths, "
        "anchors, phases, pairing, balance and content hashes.",
    )
    ver.add_argument("paths", nargs="+", metavar="PATH", help="config folders or their parents")
    ver.add_argument(
        "--sample",
        type=_args.positive_int,
        default=None,
        help="re-encode only K rows per config (default: all)",
    )
    ver.add_argument(
        "--prefix-cache",
        choices=["salted"],
        default=None,
        help='also check the salted arm ("prefix_cache": "salted" of the lm-eval tasks): every '
        "row salted as the task salts it, every phase label re-checked on the salted sequence",
    )
    _args.num_proc(ver, "worker processes")
    _args.quiet(ver, "no progress bar")
    ver.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.verification import verify

    reports = verify(
        args.paths,
        sample=args.sample,
        num_proc=args.num_proc,
        progress=not args.quiet,
        salted=args.prefix_cache == "salted",
    )
    for report in reports:
        print("\n".join(report.lines()))
    return 0 if all(r.ok for r in reports) else 1
