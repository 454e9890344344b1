"""Calibrate and cost the group-sequential gap test (``phasebench eval --staged``) by simulation.

SIMULATED data only: 0/1 outcomes for base items x 8 phases, no model runs. A fixed design
sends 256 base items x 8 phases = 2,048 prompts, then tests the gap (permutation p <= 0.05).
A staged run looks after 32, 64, 128 and 256 base items (each look a prefix of the next, as
lm-eval's ``--limit`` makes it) and stops at the first look whose p-value is at most the
boundary's level (:data:`phasebench.stats.sequential.BOUNDARY`).

1. Calibration: the constant level (Pocock's shape) and, for comparison, an O'Brien-Fleming
   shape are set on one stream of null runs to the largest level whose false-positive rate
   is at most 5% in every null scenario, then the rate is measured again on fresh null runs.
2. Cost: at true gaps of 0, 6, 15, 20, 35 and 40 points (the study's reported gaps), how
   often each design finds the gap and how many prompts the staged one sends.

Null scenarios: every phase at one accuracy, items independent (rho 0) or sharing a latent
difficulty (rho 0.5: a Gaussian copula, so each phase keeps its accuracy). The alternative
profiles keep the period-4 shape of a V4-Flash-Base-like profile (best 69.9, worst 29.7) and
scale its gap around its average; items are independent there (the paired test only gains from
shared item difficulty, so these powers are conservative), plus one row with rho 0.5.

The p-values come from :func:`phasebench.stats.sequential.fast_gap_p`, the project's permutation
test drawn a cheaper way (same null, same statistic, 1,000 permutations); a cross-check at the
end recomputes some looks with :func:`phasebench.stats.summarize` itself.

    python benchmarks/sequential.py [--null-runs 2000] [--runs 1000] [--futility 0.3]

Deterministic: every stream comes from ``derive_rng(seed, ...)``. About 5 minutes on one core.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats as sps

from phasebench.rng import derive_rng
from phasebench.stats import summarize
from phasebench.stats.sequential import (
    BOUNDARY,
    STAGE_FRACTIONS,
    fast_gap_p,
    fast_gap_upper,
    stage_sizes,
)

MODULUS = 8
N_FIXED = 256
LOOKS = stage_sizes(N_FIXED, MODULUS)
ALPHA = 0.05
#: The calibration keeps the false-positive rate at most ALPHA - MARGIN on its own runs: one
#: standard error of a 2,000-run estimate, so that choosing the level at the edge of one noisy
#: estimate does not put the rate on fresh runs above ALPHA.
MARGIN = 0.005
#: Elements (runs x permutations x items) per block of the fast test: bounds memory.
BLOCK = 1_000_000

#: A V4-Flash-Base-like profile: period 4 (CSA's stride), best 69.9, worst 29.7 (the study's
#: gap of 40.2 points); phases r and r + 4 differ by about a point.
FLASH = np.array([69.9, 57.4, 29.7, 45.8, 68.7, 56.1, 31.2, 46.9]) / 100
#: A V4.1-Flash-0910-like profile: stride 2, even residues 94.7-95.3, odd 89.2-90.3 (gap 6.1).
STRIDE2 = np.array([95.3, 89.2, 94.7, 90.3, 95.0, 89.8, 94.9, 90.1]) / 100

NULLS = (("flat 50.7%, rho 0", FLASH.mean(), 0.0), ("flat 50%, rho 0.5", 0.5, 0.5),
         ("flat 90%, rho 0.5", 0.9, 0.5))  # fmt: skip


def scaled(gap: float) -> np.ndarray:
    """The Flash-like shape with its range set to ``gap`` around the same average."""
    shape = (FLASH - FLASH.mean()) / np.ptp(FLASH)
    return FLASH.mean() + gap * shape


def alternatives() -> list[tuple[str, np.ndarray, float]]:
    rows = [(f"{g:g} (period 4)", scaled(g / 100), 0.0) for g in (0, 6, 15, 20, 35)]
    rows.append(("40.2 (V4-Flash-Base-like)", FLASH, 0.0))
    rows.append(("40.2 (V4-Flash-Base-like), rho 0.5", FLASH, 0.5))
    rows.append(("6.1 (V4.1-Flash-like, stride 2)", STRIDE2, 0.0))
    return rows


def simulate(profile: np.ndarray, rho: float, runs: int, *key: object) -> np.ndarray:
    """``runs`` phase matrices (N_FIXED x MODULUS, 0/1) whose phase j is right with
    probability ``profile[j]``; rho is the correlation of the latent shared by an item's row."""
    rng = derive_rng(0, "sequential", "data", *key)
    shared = rng.standard_normal((runs, N_FIXED, 1))
    own = rng.standard_normal((runs, N_FIXED, MODULUS))
    latent = np.sqrt(rho) * shared + np.sqrt(1 - rho) * own
    return latent < sps.norm.ppf(np.broadcast_to(profile, (MODULUS,)))


def looks(matrices: np.ndarray, fn, *key: object) -> np.ndarray:
    """``fn`` (fast p or fast upper bound) at every look: runs x looks."""
    runs = len(matrices)
    out = np.empty((runs, len(LOOKS)))
    for k, n in enumerate(LOOKS):
        rng = derive_rng(0, "sequential", "test", fn.__name__, n, *key)
        chunk = max(1, BLOCK // (1000 * n))
        for i in range(0, runs, chunk):
            out[i : i + chunk, k] = fn(matrices[i : i + chunk, :n], rng)
    return out


def obf_levels(c: float) -> np.ndarray:
    """O'Brien-Fleming shape: nominal z = c / sqrt(t) at information fraction t."""
    return 2 * sps.norm.sf(c / np.sqrt(np.array(STAGE_FRACTIONS)))


def first_stop(p: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Index of the first look whose p is at most its level; len(LOOKS) when none."""
    hit = p <= levels
    return np.where(hit.any(axis=1), hit.argmax(axis=1), len(LOOKS))


def fpr(p: np.ndarray, levels: np.ndarray) -> float:
    return float(np.mean(first_stop(p, levels) < len(LOOKS)))


def calibrate(nulls: list[np.ndarray]) -> tuple[float, float, float]:
    """Largest Pocock level on the p-values' grid (multiples of 1/1001, rounded to 4 places)
    whose false-positive rate is at most ALPHA - MARGIN in every null scenario, the same at
    ALPHA itself (the edge), and the smallest O'Brien-Fleming constant at ALPHA - MARGIN."""
    grid = np.arange(1, 60) / 1001

    def pocock(cap: float) -> float:
        ok = [c for c in grid if all(fpr(p, np.full(len(LOOKS), c)) <= cap for p in nulls)]
        return round(float(max(ok)), 4)

    cs = np.arange(1.60, 3.00, 0.005)
    obf = min(c for c in cs if all(fpr(p, obf_levels(c)) <= ALPHA - MARGIN for p in nulls))
    return pocock(ALPHA - MARGIN), pocock(ALPHA), float(obf)


def wilson(k: int, n: int) -> str:
    z = 1.959964
    p = k / n
    d = 1 + z * z / n
    c, h = (p + z * z / (2 * n)) / d, z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return f"[{100 * max(0, c - h):.1f}, {100 * min(1, c + h):.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--null-runs", type=int, default=2000, help="null runs per scenario")
    ap.add_argument("--runs", type=int, default=1000, help="runs per alternative profile")
    ap.add_argument("--futility", type=float, default=0.30, help="futility gap (fraction)")
    args = ap.parse_args()
    clock = time.monotonic()
    fixed_prompts = N_FIXED * MODULUS
    print(f"Looks after {', '.join(map(str, LOOKS))} base items x {MODULUS} phases "
          f"({', '.join(str(n * MODULUS) for n in LOOKS)} prompts); fixed design "
          f"{fixed_prompts} prompts at p <= {ALPHA}; 1,000 permutations per test.\n")  # fmt: skip

    # 1. calibration on one stream, the rate measured on another
    cal = [looks(simulate(np.full(MODULUS, a), r, args.null_runs, "cal", s), fast_gap_p, "cal", s)
           for s, a, r in NULLS]  # fmt: skip
    pocock, edge, obf = calibrate(cal)
    union = ALPHA / len(LOOKS)
    chosen = max(pocock, union)
    print(f"Calibrated on {len(NULLS)} x {args.null_runs} null runs: the largest constant level "
          f"with a false-positive rate at most {100 * (ALPHA - MARGIN):g}% on them is "
          f"{pocock:.4f} ({100 * ALPHA:g}% at the edge: {edge:.4f}); the union bound guarantees "
          f"{100 * ALPHA:g}% at {union:.4f} per look whatever the data; the design takes the "
          f"larger of the first and the last: {chosen:.4f}. O'Brien-Fleming constant {obf:.3f} "
          f"(levels {', '.join(f'{x:.5f}' for x in obf_levels(obf))}).")  # fmt: skip
    levels = np.array(BOUNDARY)
    agree = "as calibrated" if set(BOUNDARY) == {chosen} else "NOT as calibrated"
    print(f"Shipped boundary (phasebench.stats.sequential.BOUNDARY): {list(BOUNDARY)}, {agree}\n")

    print("False-positive rate on fresh null runs (any look significant), 95% Wilson interval:\n")
    print(f"| null scenario | runs | shipped boundary | constant {edge:.4f} (the edge) | "
          "O'Brien-Fleming | fixed design (p <= 0.05) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    null_upper = None
    for s, a, r in NULLS:
        m = simulate(np.full(MODULUS, a), r, args.null_runs, "val", s)
        p = looks(m, fast_gap_p, "val", s)
        if null_upper is None:
            null_upper = looks(m, fast_gap_upper, "val", s)
        k_seq = int(np.sum(first_stop(p, levels) < len(LOOKS)))
        k_obf = int(np.sum(first_stop(p, obf_levels(obf)) < len(LOOKS)))
        k_edge = int(np.sum(first_stop(p, np.full(len(LOOKS), edge)) < len(LOOKS)))
        k_fix = int(np.sum(p[:, -1] <= ALPHA))
        n = len(p)
        print(f"| {s} | {n} | {100 * k_seq / n:.1f}% {wilson(k_seq, n)} | "
              f"{100 * k_edge / n:.1f}% {wilson(k_edge, n)} | "
              f"{100 * k_obf / n:.1f}% {wilson(k_obf, n)} | "
              f"{100 * k_fix / n:.1f}% {wilson(k_fix, n)} |")  # fmt: skip
    med = np.median(null_upper, axis=0)
    print(f"\nUpper end of the gap's 95% interval under the null ({NULLS[0][0]}), median at each "
          f"look: {', '.join(f'{100 * x:.1f}' for x in med)} points: a futility gap must exceed "
          f"these to stop a run early.\n")  # fmt: skip

    # 2. cost at the study's gaps
    fut = args.futility
    print(f"Prompts and findings by true gap ({args.runs} runs each; futility gap "
          f"{100 * fut:g} points; 'by 1/4' = significant within {LOOKS[1] * MODULUS} prompts, "
          f"a quarter of the fixed design):\n")  # fmt: skip
    print("| true gap (points) | fixed: significant | staged: significant | staged: by 1/4 | "
          "staged: mean prompts | O'Brien-Fleming: by 1/4 | with futility: significant | "
          "with futility: futile | with futility: mean prompts |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    end = len(LOOKS)
    for label, profile, rho in alternatives():
        m = simulate(profile, rho, args.runs, "alt", label)
        p = looks(m, fast_gap_p, "alt", label)
        upper = looks(m, fast_gap_upper, "alt", label)
        stop = first_stop(p, levels)
        plain = np.array(LOOKS)[np.minimum(stop, end - 1)] * MODULUS
        low = upper < fut
        futile_at = np.where(low.any(axis=1), low.argmax(axis=1), end)
        sig = (stop < end) & (stop <= futile_at)  # a look checks significance first
        futile = ~sig & (futile_at < end)
        ends = np.where(sig, stop, np.where(futile, futile_at, end - 1))
        prompts = np.array(LOOKS)[ends] * MODULUS
        obf_quarter = np.mean(first_stop(p, obf_levels(obf)) <= 1)
        print(f"| {label} | {100 * np.mean(p[:, -1] <= ALPHA):.1f}% | "
              f"{100 * np.mean(stop < end):.1f}% | {100 * np.mean(stop <= 1):.1f}% | "
              f"{plain.mean():.0f} ({100 * plain.mean() / fixed_prompts:.0f}%) | "
              f"{100 * obf_quarter:.1f}% | {100 * np.mean(sig):.1f}% | "
              f"{100 * np.mean(futile):.1f}% | {prompts.mean():.0f} "
              f"({100 * prompts.mean() / fixed_prompts:.0f}%) |")  # fmt: skip

    # 3. the fast test against the project's own
    agree, worst = 0, 0.0
    m = simulate(FLASH, 0.0, 6, "check")
    checks = 0
    for k, n in enumerate(LOOKS):
        fast = fast_gap_p(m[:, :n], derive_rng(0, "sequential", "check", n))
        for i in range(len(m)):
            own = summarize(m[i, :n].astype(float), n_boot=0).p_value
            agree += (own <= BOUNDARY[k]) == (fast[i] <= BOUNDARY[k])
            worst = max(worst, abs(own - fast[i]))
            checks += 1
    print(f"\nCross-check on {checks} looks of V4-Flash-Base-like runs: the fast test and "
          f"phasebench.stats.summarize agree on the decision in {agree} of {checks} (largest "
          f"p-value difference {worst:.4f}, Monte Carlo noise of 1,000 permutations).")  # fmt: skip
    print(f"\n{time.monotonic() - clock:.0f} s")


if __name__ == "__main__":
    main()
