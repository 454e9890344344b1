"""How often ``phasebench report`` refuses a run whose gap rests on the samples it left out.

    python benchmarks/left_out_rule.py [--sims 100] [--n-perm 200]

A run through a server leaves out the samples whose server-reported prompt length disagrees
with the label (up to 5% of a config's samples). :func:`phasebench.report._compute.left_out_problem`
puts them back at their labelled phases counted wrong, then counted right, and refuses the run
where the gap's verdict (significant or not) differs between the two. This script measures, on
simulated runs of 192 base items at P = 4 with 37 of 768 samples (4.8%) left out, how often the
rule refuses: where the left-out samples are a random draw (the rule should rarely refuse,
whether the model is flat or has a real gap) and where they are concentrated in one phase as the
issue's example had them (all right answers of phase 0 of a flat model: the rule should refuse).
Random streams come from ``derive_rng(0, "left-out-rule", ...)``: the same output on every run.
"""

from __future__ import annotations

import argparse
import time

from phasebench.report._compute import left_out_problem
from phasebench.rng import derive_rng
from phasebench.stats import summarize_samples
from phasebench.stats.records import ScoredRecord

N_BASE, P, LEFT_OUT = 192, 4, 37
#: Per-phase accuracy of each model: flat, and one weak phase (a 15-point gap).
MODELS = {"flat 50%": [0.5] * P, "phase 0 at 35%": [0.35, 0.5, 0.5, 0.5]}


def _run(model: str, placement: str, sim: int) -> tuple[list[ScoredRecord], list[ScoredRecord]]:
    rng = derive_rng(0, "left-out-rule", model, placement, sim)
    profile = MODELS[model]
    cells = [(b, r, float(rng.random() < profile[r])) for b in range(N_BASE) for r in range(P)]
    if placement == "random":
        out = set(rng.choice(len(cells), LEFT_OUT, replace=False).tolist())
    else:  # the right answers of phase 0, as many as there are, up to LEFT_OUT
        right = [i for i, (_, r, acc) in enumerate(cells) if r == 0 and acc == 1.0]
        out = set(right[:LEFT_OUT])
    records = [ScoredRecord(1024, P, f"u{b}", r, acc, None, 0, None) for b, r, acc in cells]
    kept = [rec for i, rec in enumerate(records) if i not in out]
    return kept, [records[i] for i in sorted(out)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=100)
    parser.add_argument("--n-perm", type=int, default=200)
    args = parser.parse_args()
    start = time.monotonic()
    print(f"{N_BASE} base items, P = {P}, {LEFT_OUT} of {N_BASE * P} samples left out; "
          f"{args.sims} runs per row, {args.n_perm} permutations")  # fmt: skip
    print("| model | left out | gap significant without them | refused by the rule |")
    print("|---|---|---|---|")
    for model in MODELS:
        for placement in ("random", "right answers of phase 0"):
            significant = refused = 0
            for sim in range(args.sims):
                kept, out = _run(model, placement, sim)
                summary = summarize_samples(kept, n_boot=0, n_perm=args.n_perm, seed=0)
                significant += bool(summary["significant"])
                refused += (
                    left_out_problem(kept, out, summary, n_perm=args.n_perm, seed=0) is not None
                )
            print(f"| {model} | {placement} | {100 * significant / args.sims:.0f}% | "
                  f"{100 * refused / args.sims:.0f}% |")  # fmt: skip
    print(f"({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
