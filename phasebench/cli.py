"""The ``phasebench`` command: parses arguments, calls library functions, and turns a
:class:`~phasebench.errors.PhasebenchError` into one clear line on stderr (exit 2)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from phasebench.errors import PhasebenchError


def _generate(args: argparse.Namespace) -> int:
    from phasebench.build import generate, parse_shard
    from phasebench.specs import SplitSpec

    shard = parse_shard(args.shard) if args.shard else (0, 1)
    if args.haystack and args.family != "niah":
        raise PhasebenchError(f"'--haystack' is for the niah family only (got {args.family})")
    lengths = args.length or ([0] if args.family == "code" else [])
    specs = [
        SplitSpec(
            family=args.family,
            length=length,
            modulus=args.modulus,
            n_base=args.n_base if args.n_base is not None else _default_n_base(args.family),
            seed=args.seed,
            tokenizer=args.tokenizer,
            tokenizer_args=tuple(_pairs(args.tokenizer_arg)),
            haystack=args.haystack,
        )
        for length in dict.fromkeys(lengths)
    ]
    if not specs:
        raise PhasebenchError("give at least one --length (e.g. --length 4096)")
    folders = generate(
        specs,
        Path(args.out),
        num_proc=args.num_proc,
        shard=shard,
        overwrite=args.overwrite,
        progress=not args.quiet,
    )
    for folder in folders:
        done = (folder / "manifest.json").exists()
        print(f"{folder}  {'complete' if done else 'partial (other shards pending)'}")
    return 0


def _default_n_base(family: str) -> int:
    return 64 if family == "code" else 256


def _pairs(items: Sequence[str] | None) -> list[tuple[str, str]]:
    pairs = []
    for item in items or []:
        if "=" not in item:
            raise PhasebenchError(f"'--tokenizer-arg' must look like NAME=VALUE (got {item!r})")
        name, value = item.split("=", 1)
        pairs.append((name, value))
    return pairs


def _verify(args: argparse.Namespace) -> int:
    from phasebench.verify import verify

    reports = verify(
        args.paths, sample=args.sample, num_proc=args.num_proc, progress=not args.quiet
    )
    for report in reports:
        print("\n".join(report.lines()))
    return 0 if all(r.ok for r in reports) else 1


def _inspect(args: argparse.Namespace) -> int:
    from phasebench.build import config_folders
    from phasebench.show import inspect_config

    color = sys.stdout.isatty() and not args.no_color
    for folder in config_folders(args.path):
        print(inspect_config(folder, args.row, color=color))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="phasebench",
        description="Phase-balanced long-context splits that expose phase sensitivity.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    gen = sub.add_parser("generate", help="build phase-balanced splits")
    gen.add_argument("family", choices=["kv", "niah", "code"])
    gen.add_argument(
        "--tokenizer",
        default="deepseek-v4",
        help="built-in alias deepseek-v4, a tokenizer.json, a folder, or a Hub id",
    )
    gen.add_argument(
        "--tokenizer-arg",
        action="append",
        metavar="NAME=VALUE",
        help="tokenizer argument as lm-eval passes it (add_bos_token, revision, "
        "gguf_file, subfolder)",
    )
    gen.add_argument(
        "--length", type=int, action="append", help="prompt length in tokens (repeatable)"
    )
    gen.add_argument("--modulus", type=int, default=8)
    gen.add_argument(
        "--n-base", type=int, default=None, help="base items (default 256; code: 64 items)"
    )
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--haystack", default=None, help="niah: a text file to use as haystack")
    gen.add_argument("--out", required=True)
    gen.add_argument("--num-proc", type=int, default=1)
    gen.add_argument("--shard", default=None, metavar="I/N")
    gen.add_argument("--overwrite", action="store_true")
    gen.add_argument("--quiet", action="store_true", help="no progress bar")
    gen.set_defaults(func=_generate)

    ver = sub.add_parser("verify", help="re-encode a built split and check every claim")
    ver.add_argument("paths", nargs="+")
    ver.add_argument("--sample", type=int, default=None, help="re-encode K rows per config")
    ver.add_argument("--num-proc", type=int, default=1)
    ver.add_argument("--quiet", action="store_true")
    ver.set_defaults(func=_verify)

    ins = sub.add_parser("inspect", help="show a row with its needle, and the balance table")
    ins.add_argument("path")
    ins.add_argument("--row", type=int, default=0)
    ins.add_argument("--no-color", action="store_true")
    ins.set_defaults(func=_inspect)

    for register in _extra_commands():
        register(sub)
    return parser


#: Modules that define ``register(subparsers)`` for the commands they own (one line each).
COMMAND_MODULES: tuple[str, ...] = (
    "phasebench.report",
    "phasebench.hub",
    "phasebench.harness",
    "phasebench.leaderboard.commands",
    "phasebench.reference.commands",
)


def _extra_commands():
    import importlib

    return [importlib.import_module(name).register for name in COMMAND_MODULES]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PhasebenchError as exc:
        print(f"phasebench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("phasebench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
