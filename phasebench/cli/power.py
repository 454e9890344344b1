"""``phasebench power``: base items needed to detect a phase gap."""

from __future__ import annotations

import argparse

from phasebench.cli import _args
from phasebench.metrics import ALPHA, POWER


def add_parser(sub: argparse._SubParsersAction) -> None:

    pw = sub.add_parser(
        "power",
        help="base items needed to detect a phase gap",
        description="Base items per split needed so the permutation gap test detects GAP at "
        "average accuracy ACC (simulation; conservative, see phasebench.design.power_n_base).",
    )
    pw.add_argument("--acc", type=float, required=True, help="average accuracy, e.g. 0.9")
    pw.add_argument("--gap", type=float, required=True, help="best - lowest phase, e.g. 0.06")
    _args.modulus(pw, "phase modulus")
    pw.add_argument("--alpha", type=float, default=ALPHA, help="significance level")
    pw.add_argument("--power", type=float, default=POWER, help="wanted power")
    pw.add_argument(
        "--split",
        metavar="DIR",
        help="a built split (a config folder or its parent): its manifests' prefill tokens, "
        "without and with a prefix cache, scaled to the recommended base items",
    )
    pw.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.stats import power_n_base

    n = power_n_base(args.acc, args.gap, args.modulus, args.alpha, args.power)
    prefill = prefill_lines(n, args.modulus, args.split)  # refuses a bad --split before printing
    print(
        f"{n} base items ({n * args.modulus} prompts at modulus {args.modulus}) detect a gap of "
        f"{100 * args.gap:.1f} points at average accuracy {100 * args.acc:.1f} with "
        f"{100 * args.power:.0f}% power (alpha {args.alpha}; simulated, conservative: one best "
        "and one lowest phase, items independent across phases)"
    )
    print("\n".join(prefill))
    return 0


def prefill_lines(n: int, modulus: int, split: str | None) -> list[str]:
    """What the recommended design costs a server to prefill: without ``--split``, prompts
    times their length; with it, each config's figures scaled from its manifest."""
    from phasebench.build import config_folders, read_manifest
    from phasebench.prefill import for_base_items

    if split is None:
        return [
            f"prefill: {n * modulus} prompts x their length in tokens without a prefix cache "
            "(--split DIR, a built split, also states what a prefix cache saves)"
        ]
    lines = [f"prefill at {n} base items (scaled from each config's manifest):"]
    for folder in config_folders(split):
        f = for_base_items(read_manifest(folder), n, modulus)
        line = (
            f"  {f['config']}: {f['prompts']:,} prompts, {f['prefill_tokens']:,} tokens without "
            f"a prefix cache"
        )
        for order, words in (("stored_order", "the stored"), ("lm_eval_order", "lm-eval's")):
            if (g := f[order]) is not None:
                line += (
                    f"; {g['prefill_tokens_prefix_cache']:,} with an ideal prefix cache in "
                    f"{words} order ({100 * g['prefix_cache_saving']:.1f}% saved)"
                )
        lines.append(line)
    return lines
