"""Is the detectable gap's bound conservative for the test the board runs? Measured by simulation.

    python benchmarks/detectable_gap.py [--sims 2000] [--n-perm 1000]

:func:`phasebench.stats.detectable_gap` (what marks a run *preliminary*) simulates each phase's
accuracy as an independent binomial and the gap's null by the same draw at one accuracy. The
board tests the gap another way: phase labels permuted within each base item
(:func:`phasebench.stats.summarize`'s ``p_value``). This script takes, for designs of base items
x phases, the gap ``detectable_gap`` reports and measures the power of the board's own test at
that gap, level :data:`~phasebench.design.settings.ALPHA`, on the same least favourable profile at
50% accuracy (one phase at ``0.5 + gap/2``, one at ``0.5 - gap/2``, the others at 0.5), with and
without item heterogeneity. The bound is conservative where that power is at least
:data:`~phasebench.design.settings.POWER` (up to Monte Carlo error).

Heterogeneity is a Gaussian latent per base item, shared by its phases (probit, intra-item
correlation ``rho``): an outcome is 1 when ``sqrt(rho) z_item + sqrt(1 - rho) e < q_phase``,
with ``q_phase`` set so each phase's accuracy is exactly its profile value whatever ``rho``.
``rho = 0`` is the independent-binomial design itself, where both tests should agree; with
``rho > 0`` items differ in difficulty, which the within-item permutation test removes. Each
power is ``--sims`` simulated runs tested by :func:`phasebench.stats.sequential.fast_gap_p`
(the board's permutation test, drawn faster: same null, same statistic). Random streams come
from ``derive_rng(0, "detectable-gap", ...)``: the same output on every run.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy import stats as sps

from phasebench.design.settings import ALPHA, POWER
from phasebench.rng import derive_rng
from phasebench.stats import detectable_gap, power_curve
from phasebench.stats.sequential import fast_gap_p

#: Designs: base items x phases (the shipped niah board's 168 x 8, a small one, the smallest
#: design that is not preliminary, one between).
DESIGNS = ((48, 8), (96, 8), (168, 8), (256, 8))
#: Intra-item correlations of the latent: none (independent cells), moderate, strong.
RHOS = (0.0, 0.3, 0.6)
#: Simulated runs tested at once (bounds memory: runs x permutations x base items floats).
BLOCK = 20


def profile(gap: float, phases: int) -> np.ndarray:
    """The least favourable profile for a range test at 50% accuracy (power_curve's)."""
    p = np.full(phases, 0.5)
    p[0], p[1] = 0.5 + gap / 2, 0.5 - gap / 2
    return p


def simulate(n: int, probs: np.ndarray, rho: float, sims: int, rng: np.random.Generator):
    """``sims`` 0/1 phase matrices (n x P) with per-phase accuracies ``probs`` exactly."""
    z = rng.standard_normal((sims, n, 1))
    e = rng.standard_normal((sims, n, len(probs)))
    latent = np.sqrt(rho) * z + np.sqrt(1 - rho) * e
    return (latent < sps.norm.ppf(probs)).astype(np.float64)


def paired_power(n: int, phases: int, gap: float, rho: float, sims: int, n_perm: int) -> float:
    rng = derive_rng(0, "detectable-gap", n, phases, rho, gap)
    m = simulate(n, profile(gap, phases), rho, sims, rng)
    p = np.concatenate([fast_gap_p(m[i : i + BLOCK], rng, n_perm) for i in range(0, sims, BLOCK)])
    return float(np.mean(p <= ALPHA))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000, help="simulated runs per power")
    parser.add_argument("--n-perm", type=int, default=1000, help="permutations per test")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print(
        f"# power at the gap detectable_gap reports ({POWER:.0%} wanted, level {ALPHA}, 50% "
        f"accuracy); {args.sims} runs per power, {args.n_perm} permutations per test"
    )
    heads = " | ".join(f"paired test, rho {rho:g}" for rho in RHOS)
    print(f"| design | detectable gap | its own simulation | {heads} |")
    print("|---|---|---|" + "---|" * len(RHOS))
    for n, phases in DESIGNS:
        gap = detectable_gap(n, phases)
        own = power_curve(n, 0.5, gap, phases, ALPHA)
        paired = [paired_power(n, phases, gap, rho, args.sims, args.n_perm) for rho in RHOS]
        cells = " | ".join(f"{100 * p:.1f}%" for p in paired)
        print(f"| {n} x {phases} | {100 * gap:.0f} pp | {100 * own:.1f}% | {cells} |", flush=True)
    print(f"# {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
