"""``phasebench power``: base items needed to detect a phase gap."""

from __future__ import annotations

import argparse

from phasebench.cli import _args
from phasebench.metrics import ALPHA


def add_parser(sub: argparse._SubParsersAction) -> None:

    pw = sub.add_parser(
        "power",
        help="base items needed to detect a phase gap",
        description="Base items per split needed so the permutation gap test detects GAP at "
        "average accuracy ACC (simulation; conservative, see phasebench.stats.power_n_base).",
    )
    pw.add_argument("--acc", type=float, required=True, help="average accuracy, e.g. 0.9")
    pw.add_argument("--gap", type=float, required=True, help="best - worst phase, e.g. 0.06")
    _args.modulus(pw, "phase modulus")
    pw.add_argument("--alpha", type=float, default=ALPHA, help="significance level")
    pw.add_argument("--power", type=float, default=0.8, help="wanted power")
    pw.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.stats import power_n_base

    n = power_n_base(args.acc, args.gap, args.modulus, args.alpha, args.power)
    print(
        f"{n} base items ({n * args.modulus} prompts at modulus {args.modulus}) detect a gap of "
        f"{100 * args.gap:.1f} points at average accuracy {100 * args.acc:.1f} with "
        f"{100 * args.power:.0f}% power (alpha {args.alpha}; simulated, conservative: one best "
        "and one worst phase, items independent across phases)"
    )
    return 0
