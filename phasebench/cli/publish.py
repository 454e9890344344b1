"""``phasebench publish``: a Hugging Face dataset repository folder with its card (and push)."""

from __future__ import annotations

import argparse

from phasebench.cli import _args


def add_parser(sub: argparse._SubParsersAction) -> None:

    pub = sub.add_parser(
        "publish",
        help="build a Hugging Face dataset repository folder with its data card (and push it)",
    )
    pub.add_argument(
        "generated", nargs="+", metavar="GENERATED_DIR", help="folders from phasebench generate"
    )
    _args.out(pub, "repository folder", required=True, metavar="REPO_DIR")
    pub.add_argument("--overwrite", action="store_true", help="replace an existing REPO_DIR")
    pub.add_argument("--repo-id", default=None, metavar="ORG/NAME", help="Hub dataset id")
    pub.add_argument(
        "--pretty-name",
        default=None,
        help="the card's title, one line of letters, digits, spaces and -_.,:;()'&+!?/@ "
        "(default: phasebench's own)",
    )
    pub.add_argument(
        "--license",
        default=None,
        help="the card's license, a Hub licence id such as mit or cc-by-4.0, or other "
        "(default: apache-2.0)",
    )
    pub.add_argument(
        "--default-config", default=None, metavar="CONFIG", help="config loaded by default"
    )
    pub.add_argument("--push", action="store_true", help="upload REPO_DIR as one commit")
    pub.add_argument("--revision", default=None, help="branch to commit to (created if missing)")
    pub.add_argument("--create-pr", action="store_true", help="open a pull request instead")
    pub.add_argument("--private", action="store_true", help="create the repository private")
    pub.add_argument(
        "--endpoint", default=None, help="Hub endpoint (default: HF_ENDPOINT or the public Hub)"
    )
    pub.add_argument(
        "--timeout",
        type=_args.positive_float,
        default=None,
        metavar="SECONDS",
        help="seconds to wait for the Hub to connect and for each answer (default: 60)",
    )
    pub.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.errors import HubError
    from phasebench.hub import build_repo, push_repo, read_index
    from phasebench.hub.naming import CARD

    if args.push and not args.repo_id:
        raise HubError("--push needs --repo-id ORG/NAME")
    if (args.revision or args.create_pr) and not args.push:
        raise HubError("--revision and --create-pr only apply with --push")
    card = {"pretty_name": args.pretty_name, "license": args.license}
    out = build_repo(
        args.generated,
        args.out,
        repo_id=args.repo_id,
        default_config=args.default_config,
        overwrite=args.overwrite,
        **{k: v for k, v in card.items() if v is not None},
    )
    index = read_index(out)
    for c in index["configs"]:
        mark = "  (default)" if c["name"] == index["default_config"] else ""
        print(f"{out}/{c['name']}  {c['rows']} rows, {len(c['files'])} file(s){mark}")
    print(f"{out}/{CARD}")
    if args.push:
        info = push_repo(
            out,
            args.repo_id,
            revision=args.revision,
            create_pr=args.create_pr,
            private=True if args.private else None,
            endpoint=args.endpoint,
            **({"timeout": args.timeout} if args.timeout is not None else {}),
        )
        print(f"pushed: {info.pr_url or info.commit_url}")
    return 0
