"""Simulate the cold baseline of a ``"prefix_cache": "baseline"`` run
(:func:`phasebench.stats.cold_baseline`, the shipped function): how often it flags a server
whose cache is correct but whose reads are non-deterministic on a share of the prompts (the
false-positive rate), and how often it flags a cache that flips answers both ways or makes warm
reads worse (its power), beside McNemar's warm-against-cold test on the same reads.

    python benchmarks/cold_baseline_sim.py            # the table in docs/stats.md

Each prompt is answered right cold with probability 0.6 by a deterministic server. On a
non-deterministic share every read (cold, warm, salted) is right with probability 1/2, drawn
independently; a flipping cache answers the warm read of a share of the prompts the other way
than the cold read; an erring cache answers it wrong. 2,000 runs per cell, seeds from stable keys.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RUNS = 2000
ACC = 0.6


def simulate(n: int, fault: str, share: float, noisy: float, rng: np.random.Generator):
    from phasebench.stats import ReadPair, ThreeReads, cold_baseline, paired_agreement

    cold = rng.random(n) < ACC
    warm, salted = cold.copy(), cold.copy()
    noise = rng.random(n) < noisy
    draws = rng.random((3, n)) < 0.5
    cold = np.where(noise, draws[0], cold)
    warm = np.where(noise, draws[1], warm)
    salted = np.where(noise, draws[2], salted)
    hit = rng.random(n) < share
    if fault == "flips":
        warm = np.where(hit, ~cold, warm)
    elif fault == "errs":
        warm = np.where(hit, False, warm)
    reads = [ThreeReads(0, None, float(c), float(w), float(s))
             for c, w, s in zip(cold, warm, salted, strict=True)]  # fmt: skip
    pairs = [ReadPair(0, None, t.cold, t.warm) for t in reads]
    return cold_baseline(reads)["p"], paired_agreement(pairs, 1)["p"]


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from phasebench.rng import derive_rng

    cells = [
        ("correct, non-deterministic", "none", 0.0, 0.2),
        ("correct, non-deterministic", "none", 0.0, 0.5),
        ("flips both ways", "flips", 0.1, 0.0),
        ("flips both ways", "flips", 0.2, 0.0),
        ("flips both ways", "flips", 0.2, 0.2),
        ("warm reads err", "errs", 0.2, 0.0),
    ]
    print(f"cold baseline against McNemar: share of {RUNS} runs with p below 0.05 / 0.01; "
          f"cold accuracy {ACC}")  # fmt: skip
    print("| server | faulty share | non-deterministic share | prompts | baseline p<0.05 | "
          "baseline p<0.01 | McNemar p<0.05 | McNemar p<0.01 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, fault, share, noisy in cells:
        for n in (32, 64, 128):
            rng = derive_rng(0, "cold-baseline-sim", fault, share, noisy, n)
            found = np.array([simulate(n, fault, share, noisy, rng) for _ in range(RUNS)])
            base, mcnemar = found[:, 0], found[:, 1]
            print(f"| {name} | {share:g} | {noisy:g} | {n} | {np.mean(base < 0.05):.3f} | "
                  f"{np.mean(base < 0.01):.3f} | {np.mean(mcnemar < 0.05):.3f} | "
                  f"{np.mean(mcnemar < 0.01):.3f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
