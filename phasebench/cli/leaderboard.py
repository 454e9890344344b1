"""``phasebench leaderboard pack|validate|build``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    from phasebench.cli import HelpFormatter

    lb = sub.add_parser(
        "leaderboard", help="pack, validate and publish submissions", formatter_class=HelpFormatter
    )
    actions = lb.add_subparsers(dest="leaderboard_command", required=True, metavar="ACTION")

    pk = actions.add_parser(
        "pack", help="shrink lm-eval output to what validation needs", formatter_class=HelpFormatter
    )
    pk.add_argument("source", help="lm-eval --output_path folder (results_*.json, samples_*.jsonl)")
    pk.add_argument("--out", required=True, help="submission folder ORG__MODEL/REVISION")
    pk.add_argument("--submission", default=None, help="submission.yaml to copy alongside")
    pk.set_defaults(run=_pack)

    va = actions.add_parser(
        "validate",
        help="check submissions; exit 1 if any is refused",
        formatter_class=HelpFormatter,
    )
    va.add_argument("path", help="a submissions folder or one submission folder")
    va.add_argument("--report", default=None, help="write the rejection report as JSON")
    va.add_argument("--cache", default=None, help="keep regenerated splits here")
    va.add_argument("--quiet", action="store_true", help="no progress lines")
    va.set_defaults(run=_validate)

    bu = actions.add_parser(
        "build", help="validate, score and render the static site", formatter_class=HelpFormatter
    )
    bu.add_argument("submissions", help="the submissions folder")
    bu.add_argument(
        "--out",
        required=True,
        help="site folder: built beside and swapped in; an existing folder is replaced only if "
        "it is an earlier phasebench site or empty",
    )
    bu.add_argument("--cache", default=None, help="keep regenerated splits here")
    bu.add_argument("--no-reported", action="store_true", help="leave out the published figures")
    bu.add_argument("--quiet", action="store_true", help="no progress lines")
    bu.set_defaults(run=_build)


def _offline() -> None:
    # Validation loads tokenizers by name; it must never reach the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _progress(quiet: bool):
    return None if quiet else (lambda name: print(f"validating {name}", file=sys.stderr))


def _pack(args: argparse.Namespace) -> int:
    from phasebench.leaderboard.pack import pack

    for path in pack(args.source, args.out, args.submission):
        print(path)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from phasebench.atomic import atomic_write_text
    from phasebench.leaderboard.validate import validate_all

    _offline()
    outcome = validate_all(Path(args.path), cache=args.cache, on_progress=_progress(args.quiet))
    print("\n".join(outcome.report_lines()))
    if args.report:
        atomic_write_text(args.report, json.dumps(outcome.report_json(), indent=2) + "\n")
    return 1 if outcome.refused else 0


def _build(args: argparse.Namespace) -> int:
    from phasebench.leaderboard.render import build_site
    from phasebench.leaderboard.score import load_reported, score
    from phasebench.leaderboard.validate import validate_all

    _offline()
    outcome = validate_all(
        Path(args.submissions), cache=args.cache, on_progress=_progress(args.quiet)
    )
    reported = None if args.no_reported else load_reported()
    board = score(outcome, reported)
    build_site(board, Path(args.out))
    print("\n".join(outcome.report_lines()))
    print(f"site: {Path(args.out) / 'index.html'}")
    return 0
