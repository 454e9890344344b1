"""``phasebench leaderboard pack|validate|build|export-eval-results|mark-reproduced``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from phasebench.cli import _args


def add_parser(sub: argparse._SubParsersAction) -> None:

    lb = sub.add_parser("leaderboard", help="pack, validate and publish submissions")
    actions = lb.add_subparsers(dest="leaderboard_command", required=True, metavar="ACTION")

    pk = actions.add_parser("pack", help="shrink lm-eval output to what validation needs")
    pk.add_argument("source", help="lm-eval --output_path folder (results_*.json, samples_*.jsonl)")
    _args.out(pk, "submission folder ORG__MODEL/REVISION", required=True)
    pk.add_argument("--submission", default=None, help="submission.yaml to copy alongside")
    pk.add_argument(
        "--overwrite",
        action="store_true",
        help="replace files of the same names in --out (refused otherwise; other files stay)",
    )
    pk.set_defaults(run=_pack)

    va = actions.add_parser(
        "validate",
        help="check submissions; exit 1 if any is refused",
    )
    va.add_argument("path", help="a submissions folder or one submission folder")
    va.add_argument("--report", default=None, help="write the rejection report as JSON")
    _cache(va)
    _limits(va)
    va.add_argument(
        "--previous",
        default=None,
        help="leaderboard.json (or site folder) of the published board: its entries came first "
        "(must exist)",
    )
    _args.quiet(va, "no progress lines")
    va.set_defaults(run=_validate)

    bu = actions.add_parser(
        "build",
        help="validate, score and render the static site",
        description="Validate every submission (each in its own process, one per core; with "
        "--cache, only those changed since the last build), score them and render the site. "
        "A failure of the machine rather than of a submission (a tokenizer package missing, a "
        "library that does not import, a crashed or killed validating process, a full disk) "
        "stops the build with one line and exit code 3, and the published site stays as it "
        "was. When every new entry (one that neither the earlier site in --out nor --previous "
        "accepted) is refused, the last line says so and the exit code is 1; the site is built "
        "all the same.",
    )
    bu.add_argument("submissions", help="the submissions folder")
    _args.out(
        bu,
        "site folder: built beside and swapped in; an existing folder is replaced only if "
        "it is an earlier phasebench site or empty",
        required=True,
    )
    _cache(bu)
    _limits(bu)
    bu.add_argument(
        "--previous",
        default=None,
        help="leaderboard.json (or site folder) of the published board, whose entries came "
        "first, besides those of the earlier site in --out (must exist)",
    )
    bu.add_argument("--no-reported", action="store_true", help="leave out the published figures")
    _args.quiet(bu, "no progress lines")
    bu.set_defaults(run=_build)

    ex = actions.add_parser(
        "export-eval-results",
        help="write the .eval_results/*.yaml file each accepted entry's model repository would "
        "carry (Hub Eval Results)",
        description="For every accepted entry of a built board, the file the Hub reads from a "
        "model repository's .eval_results/ folder: per board, under a Hub task named after the "
        "board (family, length, modulus, axis: niah_512_m8), the cross-fitted worst phase as "
        "the value, the average and the gap in the notes (led by 'preliminary' where the "
        "board marks the entry so), a link back to the board. Test fixtures are not exported; "
        "a row that cannot be exported is named on stderr and the entry's other rows are "
        "written. The "
        "dataset named must be the benchmark `phasebench publish` built (its eval.yaml names "
        "the tasks).",
    )
    ex.add_argument("board", help="leaderboard.json, or the site folder that holds it")
    ex.add_argument("--dataset", required=True, metavar="ORG/NAME", help="benchmark dataset id")
    ex.add_argument(
        "--site-url", required=True, metavar="URL", help="address of the published site"
    )
    _args.out(
        ex,
        "output folder, one <org>__<model>/.eval_results/ per model (replaced only if "
        "this command made it or it is empty); an entry that cannot be written inside it is "
        "named on stderr and the exit code is 1",
        required=True,
    )
    ex.set_defaults(run=_export_eval_results)

    mr = actions.add_parser(
        "mark-reproduced",
        help="record that a maintainer re-ran a submission (writes reproduced.yaml)",
        description="After re-running a submission's model and getting its samples back, mark "
        "it reproduced: reproduced.yaml names who, when and how, and the SHA-256 of every "
        "results and samples file it vouches for (a later change voids the mark).",
    )
    mr.add_argument("folder", help="the submission folder ORG__MODEL/REVISION")
    mr.add_argument("--by", required=True, help="who re-ran it (shown on the site)")
    mr.add_argument("--note", default="", help="how it was re-run (shown on the site)")
    mr.add_argument("--replace", action="store_true", help="replace an earlier mark")
    mr.set_defaults(run=_mark_reproduced)


def _cache(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache",
        default=None,
        help="keep regenerated splits and validated results here: a later run with the same "
        "folder validates only the submissions whose files, the validator or the tokenizer "
        "packages changed (default: a scratch folder, nothing kept)",
    )
    parser.add_argument(
        "--jobs",
        type=_args.positive_int,
        default=None,
        metavar="N",
        help="submissions validated at once, each in its own process (default: one per core)",
    )


def _limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--memory-limit",
        type=_args.positive_float,
        default=4.0,
        metavar="GIB",
        help="memory each submission's validating process may use beyond the libraries it "
        "starts with (address space, GiB)",
    )
    parser.add_argument(
        "--time-limit",
        type=_args.positive_float,
        default=600.0,
        metavar="SECONDS",
        help="time each submission's validating process may take",
    )


def _limits_of(args: argparse.Namespace):
    from phasebench.leaderboard.isolate import Limits

    return Limits(memory=int(args.memory_limit * (1 << 30)), seconds=args.time_limit)


def _offline() -> None:
    # Validation loads tokenizers by name; it must never reach the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _progress(quiet: bool):
    return None if quiet else (lambda line: print(line, file=sys.stderr))


def _pack(args: argparse.Namespace) -> int:
    from phasebench.leaderboard.pack import pack

    for path in pack(args.source, args.out, args.submission, overwrite=args.overwrite):
        print(path)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from phasebench.atomic import atomic_write_text, check_writable_file
    from phasebench.leaderboard.reuse import check_cache
    from phasebench.leaderboard.validate import validate_all

    _offline()
    if args.report:
        check_writable_file(args.report, "--report")
    if args.cache:
        check_cache(args.cache, submissions=args.path)
    previous = _previous(args.previous) if args.previous else set()
    outcome = validate_all(
        Path(args.path),
        cache=args.cache,
        on_progress=_progress(args.quiet),
        limits=_limits_of(args),
        incumbents=previous,
        jobs=args.jobs,
    )
    print("\n".join(outcome.report_lines()))
    if args.report:
        atomic_write_text(args.report, json.dumps(outcome.report_json(), indent=2) + "\n")
    return 1 if outcome.refused else 0


def _build(args: argparse.Namespace) -> int:
    from phasebench.atomic import lock_folder, make_folder, remove_empty_folder
    from phasebench.errors import SubmissionsError
    from phasebench.leaderboard.render import check_site_out
    from phasebench.leaderboard.reuse import check_cache

    _offline()
    submissions, out = Path(args.submissions), Path(args.out)
    if not submissions.is_dir():
        raise SubmissionsError(f"{str(submissions)!r} is not a folder of submissions")
    if _no_submissions(submissions):
        # a site of no boards would look like a board on which nothing was found
        print(
            f"phasebench: no submissions under {str(submissions)!r} (expected "
            "ORG__MODEL/REVISION folders, as `phasebench leaderboard pack` writes them); "
            "no site built",
            file=sys.stderr,
        )
        return 1
    check_site_out(out, submissions)  # before any work: never after minutes of validation
    if args.cache:
        check_cache(args.cache, submissions=submissions, out=out)
    previous = _previous(args.previous) if args.previous else None
    made = not out.exists()
    make_folder(out)
    try:
        # one build at a time into --out (the lock `generate` takes): a second build would
        # otherwise report success too, one site silently replacing the other
        with lock_folder(out, what="--out"):
            check_site_out(out, submissions)  # again: a build may have just ended
            return _build_locked(args, submissions, out, previous)
    finally:
        if made:
            remove_empty_folder(out)  # a build that failed leaves no empty folder behind


def _no_submissions(root: Path) -> bool:
    """Whether ``root`` holds nothing a build would read: no submission folder and no entry
    that would be refused for its layout."""
    from phasebench.leaderboard.collect import submission_folders

    folders, problems = submission_folders(root)
    return not folders and not problems


def _previous(path: str) -> set[str]:
    """The entries of the board named by ``--previous``, which must exist: a mistyped path
    would otherwise count as an empty board, and the published entries' standing would
    silently depend on it."""
    from phasebench.errors import SubmissionsError
    from phasebench.leaderboard.identity import incumbents_from

    board = Path(path)
    if not (board / "leaderboard.json" if board.is_dir() else board).is_file():
        raise SubmissionsError(
            f"--previous {path!r} does not exist (give the published leaderboard.json or its "
            f"site folder, or leave --previous out)"
        )
    return incumbents_from(board)


def _build_locked(
    args: argparse.Namespace, submissions: Path, out: Path, previous: set[str] | None
) -> int:
    from phasebench.leaderboard.identity import incumbents_from
    from phasebench.leaderboard.render import SITE_MARKER, build_site
    from phasebench.leaderboard.score import load_reported, score
    from phasebench.leaderboard.validate import validate_all

    # the site being replaced says who was there first, whatever --previous adds
    previous = (previous or set()) | (
        incumbents_from(out) if (out / SITE_MARKER).is_file() else set()
    )
    outcome = validate_all(
        submissions,
        cache=args.cache,
        on_progress=_progress(args.quiet),
        limits=_limits_of(args),
        incumbents=previous,
        jobs=args.jobs,
    )
    reported = None if args.no_reported else load_reported()
    board = score(outcome, reported)
    build_site(board, out, submissions=submissions)
    print("\n".join(outcome.report_lines()))
    print(f"site: {out / 'index.html'}", flush=True)
    refused = [name for name, _ in outcome.refused if name not in previous]
    if refused and not any(sub.name not in previous for sub in outcome.accepted):
        # pack && build must not look successful when what was just packed did not get in
        which = (
            f"the only new entry, {refused[0]}, was"
            if len(refused) == 1
            else f"all {len(refused)} new entries were"
        )
        shown = len(outcome.accepted)
        rest = (
            f"the site shows the {shown} other entr{'y' if shown == 1 else 'ies'}"
            if shown
            else "the site shows no submitted entry"
        )
        print(f"phasebench: {which} refused (above); {rest}", file=sys.stderr)
        return 1
    return 0


def _export_eval_results(args: argparse.Namespace) -> int:
    from phasebench.atomic import check_replaceable
    from phasebench.errors import SubmissionsError
    from phasebench.leaderboard.eval_results import (
        MARKER,
        check_board,
        check_site_url,
        export_eval_results,
    )
    from phasebench.leaderboard.render import load_board

    check_site_url(args.site_url)
    check_replaceable(args.out, MARKER)
    path = Path(args.board)
    if path.is_dir():
        path = path / "leaderboard.json"
    if not path.is_file():
        raise SubmissionsError(f"{str(path)!r} is not a built board (leaderboard.json)")
    try:
        board = check_board(load_board(path), repr(str(path)))
    except (ValueError, RecursionError) as exc:
        raise SubmissionsError(f"{str(path)!r} is not valid JSON ({exc})") from None
    refused: dict[str, str] = {}
    skipped: dict[str, dict[str, str]] = {}
    written = export_eval_results(
        board,
        args.out,
        dataset_id=args.dataset,
        site_url=args.site_url,
        refused=refused,
        skipped=skipped,
    )
    for path in written:
        print(f"wrote {path}")
    print(
        f"{len(written)} eval-results file(s) under {args.out}: copy each ORG__MODEL folder's "
        ".eval_results/ into that model's Hub repository"
    )
    for page, boards in sorted(skipped.items()):
        for name, why in sorted(boards.items()):
            print(f"phasebench: entry {ascii(page)}: {ascii(name)} not exported: {why}",
                  file=sys.stderr)  # fmt: skip
    for page, why in sorted(refused.items()):
        print(f"phasebench: entry {ascii(page)} not exported: {why}", file=sys.stderr)
    return 1 if refused else 0


def _mark_reproduced(args: argparse.Namespace) -> int:
    from phasebench.leaderboard.reproduced import mark_reproduced

    print(mark_reproduced(args.folder, args.by, args.note, replace=args.replace))
    return 0
