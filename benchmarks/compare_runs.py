"""Calibration of the two-run comparison (``phasebench report A B --diff``) by simulation.

    python benchmarks/compare_runs.py [--sims 100] [--after null|half|flat ...]

Two runs of one split, *before* and *after*, are simulated as binary outcomes per (base item,
phase). *Before* has the per-phase accuracies of the demo's stride-4 model ``mean-w8s4``
(``docs/figures/demo-report.json``: 92.2 86.3 86.7 91.4 91.8 85.2 80.9 92.2, gap 11.3 points).
*After* is one of:

- ``null``: the same profile (a second model with the same weak spot): every rejection is a
  false positive;
- ``half``: the profile pulled halfway to its mean (gap 5.7 points, lowest phase 3.7 higher);
- ``flat``: no phase effect at the same average (gap 0, lowest phase 7.5 higher), what a
  fix that removes the weak spot would give.

Both runs share each base item's difficulty (a Gaussian latent, probit, correlation 0.5 within
a run), and each has its own noise: the paired design the comparison assumes. Each row is
``--sims`` simulated pairs compared by :func:`phasebench.stats.compare_runs` at the settings
below; it prints the share of pairs with p <= 0.05 for the gap and for the worst phase (the
p-value the bootstrap interval inverts to: p <= 0.05 exactly when the interval excludes 0), and
how often the 95% interval holds the true difference (the true profiles' gap, and their lowest
phase). Random streams come from ``derive_rng(0, "compare-runs", ...)``: the same output on
every run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

from phasebench.rng import derive_rng
from phasebench.stats import compare_runs
from phasebench.stats.records import ScoredRecord

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "docs/figures/demo-report.json"
RUN = "phasebench-ref-mean-w8s4"
N_BASE = (64, 128, 256)
RHO = 0.5
ALPHA = 0.05
N_BOOT = 500


def before_profile() -> np.ndarray:
    report = json.loads(DEMO.read_text())
    (entry,) = [e for ls in report["runs"][RUN]["tasks"].values() for e in ls.values()]
    return np.array([p["acc"] for p in entry["per_phase"]])


def afters(before: np.ndarray) -> dict[str, np.ndarray]:
    mean = before.mean()
    return {"null": before, "half": mean + (before - mean) / 2, "flat": np.full_like(before, mean)}


def simulate(rng: np.random.Generator, before: np.ndarray, after: np.ndarray, n: int):
    """Records of both runs: a shared item latent, independent noise per run and phase."""
    item = rng.normal(0.0, math.sqrt(RHO), (n, 1))
    runs = []
    for probs in (before, after):
        noise = rng.normal(0.0, math.sqrt(1 - RHO), (n, len(probs)))
        outcome = (item + noise < sps.norm.ppf(probs)).astype(float)
        runs.append(
            [
                ScoredRecord(256, len(probs), f"256/{i}", p, outcome[i, p], None, 0)
                for i in range(n)
                for p in range(len(probs))
            ]
        )
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=100, help="simulated pairs per row")
    parser.add_argument(
        "--after", choices=("null", "half", "flat"), action="append", help="only these (repeat)"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    before = before_profile()
    print(
        f"# two-run comparison, simulated: {args.sims} pairs per row, probit item latent "
        f"rho={RHO}, {N_BOOT} bootstrap resamples (interval and p), alpha {ALPHA}"
    )
    print(f"# before: {RUN} per-phase accuracies " + " ".join(f"{100 * x:.1f}" for x in before))
    header = ["after", "true gap diff", "true worst diff", "n", "gap: p<=0.05",
              "gap: CI holds truth", "worst: p<=0.05", "worst: CI holds truth",
              "mean gap diff", "mean worst diff"]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, after in afters(before).items():
        if args.after and name not in args.after:
            continue
        true_gap = np.ptp(after) - np.ptp(before)
        true_worst = after.min() - before.min()
        for n in N_BASE:
            hits = {"gap": 0, "worst": 0}
            cover = {"gap": 0, "worst": 0}
            sums = {"gap": 0.0, "worst": 0.0}
            for i in range(args.sims):
                a, b = simulate(derive_rng(0, "compare-runs", name, n, i), before, after, n)
                d = compare_runs(a, b, n_boot=N_BOOT, seed=i)
                compared = (("gap", "gap", true_gap), ("worst", "worst_phase_crossfit", true_worst))
                for key, stat, truth in compared:
                    hits[key] += d[stat]["p_value"] <= ALPHA
                    lo, hi = d[stat]["difference_ci"]
                    cover[key] += lo <= truth <= hi
                    sums[key] += d[stat]["difference"]
            cells = [name, f"{100 * true_gap:+.1f}", f"{100 * true_worst:+.1f}", str(n)]
            for key in ("gap", "worst"):
                cells += [f"{100 * hits[key] / args.sims:.0f}%",
                          f"{100 * cover[key] / args.sims:.0f}%"]  # fmt: skip
            cells += [f"{100 * sums[k] / args.sims:+.1f}" for k in ("gap", "worst")]
            print("| " + " | ".join(cells) + " |", flush=True)
    print(f"# {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
