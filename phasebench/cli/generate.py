"""``phasebench generate``: build phase-balanced splits."""

from __future__ import annotations

import argparse
import sys

from phasebench.cli import _args


def add_parser(sub: argparse._SubParsersAction) -> None:

    gen = sub.add_parser(
        "generate",
        help="build phase-balanced splits",
        description="Build phase-balanced splits (one folder per length) for a tokenizer.",
    )
    from phasebench.families import names

    gen.add_argument("family", choices=names(), help="split family")
    gen.add_argument(
        "--tokenizer",
        default="deepseek-v4",
        help="built-in alias (deepseek-v4, phasebench-ref), a tokenizer.json, a folder, or a "
        "Hub model id",
    )
    gen.add_argument(
        "--tokenizer-arg",
        type=_args.name_value,
        action="append",
        metavar="NAME=VALUE",
        help="model argument that changes tokenization, as lm-eval's hf backend applies it "
        "(add_bos_token, revision, gguf_file, subfolder); repeatable",
    )
    _args.length(
        gen,
        "prompt length in tokens, repeatable (code: unrelated code before the item; "
        "default 0 for code, required otherwise)",
        repeatable=True,
    )
    _args.modulus(gen, "phase modulus P (phase = anchor index mod P)")
    n_base = _args.n_base(
        gen, "base items, each rendered at every phase (default: the family's own, %(own)s)"
    )
    n_base.own = _args.Shown(_own_n_base)
    gen.add_argument(
        "--length-phases",
        nargs="?",
        const="only",
        choices=["only", "crossed"],
        default=None,
        help="kv, niah: also vary the total length mod P (filler after the needle, anchor "
        "fixed): each base item at lengths L..L+P-1 with its needle at one phase, or "
        "'crossed': every needle phase at every length phase (P x P prompts per item)",
    )
    gen.add_argument(
        "--phases",
        default=None,
        metavar="LIST",
        help="kv, niah: render only these residues mod P on each varied axis, as residues and "
        "start:stop[:step] ranges, e.g. 0:128:16,125:128 (still paired and matched)",
    )
    _args.seed(gen, "the split's seed (of every random stream it is drawn from)")
    gen.add_argument("--haystack", default=None, help="niah: a UTF-8 text file to use as haystack")
    _args.out(gen, "output folder (one sub-folder per config)", required=True)
    _args.num_proc(gen, "worker processes (same bytes)")
    gen.add_argument(
        "--shard",
        type=_args.shard,
        default=None,
        metavar="I/N",
        help="write only chunks I, I+N, ... (runs with every I complete the config)",
    )
    gen.add_argument(
        "--overwrite",
        action="store_true",
        help="replace configs already in --out (the new one is built beside and swapped in)",
    )
    _args.quiet(gen, "no progress bar")
    gen.set_defaults(run=run)


def _own_n_base() -> str:
    """Each family's own ``n_base``, as its declaration says: ``256 for kv and niah; code: 64
    items, each swept over 4 padding styles x 16 lengths``."""
    from phasebench.families import get_family, names

    declared = [get_family(name) for name in names()]
    by_count: dict[int, list[str]] = {}
    for family in declared:
        if not family.item_rendering:
            by_count.setdefault(family.default_n_base, []).append(family.name)
    parts = [f"{count} for {_listed(which)}" for count, which in by_count.items()]
    parts += [
        f"{f.name}: {f.default_n_base} items, each {f.item_rendering}"
        for f in declared
        if f.item_rendering
    ]
    return "; ".join(parts)


def _listed(words: list[str]) -> str:
    return " and ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} and {words[-1]}"


def run(args: argparse.Namespace) -> int:
    from phasebench.build import generate
    from phasebench.errors import SpecError
    from phasebench.families import get_family, names
    from phasebench.specs import SplitSpec

    family = get_family(args.family)
    if args.haystack and not family.takes_haystack:
        takers = ", ".join(f for f in names() if get_family(f).takes_haystack)
        raise SpecError(f"'--haystack' is for the {takers} family only (got {args.family})")
    lengths = args.length or list(family.default_lengths)
    if not lengths:
        raise SpecError("give at least one --length (e.g. --length 4096)")
    n_base = args.n_base if args.n_base is not None else family.default_n_base
    specs = [
        SplitSpec(
            family=args.family,
            length=length,
            modulus=args.modulus,
            n_base=n_base,
            seed=args.seed,
            tokenizer=args.tokenizer,
            tokenizer_args=tuple(args.tokenizer_arg or ()),
            haystack=args.haystack,
            length_phases=args.length_phases,
            phases=args.phases or (),
        )
        for length in dict.fromkeys(lengths)
    ]
    folders = generate(
        specs,
        args.out,
        num_proc=args.num_proc,
        shard=args.shard or (0, 1),
        overwrite=args.overwrite,
        progress=not args.quiet,
    )
    for folder in folders:
        done = (folder / "manifest.json").exists()
        print(f"{folder}  {'complete' if done else 'partial (other shards pending)'}")
    sys.stdout.flush()
    return 0
