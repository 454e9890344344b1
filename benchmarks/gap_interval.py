"""Does the gap's interval cover the true gap and agree with its test, and do places from paired
comparisons keep to their rank intervals? Measured by simulation, with the truth known.

    python benchmarks/gap_interval.py [--sims 100] [--boards 40]

**The gap.** Each simulated run is a 0/1 phase matrix (base items x 8 phases) whose per-phase
accuracies are a known profile: flat at 80% (no phase effect) and at 50%, a square stride-4
profile (85, 85, 65, 65, ...), one weak phase in eight (90% and one at 50%), the least
favourable profile ``benchmarks/detectable_gap.py`` tests (50% +- 10 points), and two real ones
``benchmarks/period_rule.py`` reads (the demo's stride-4 ``mean-w8s4`` and kvpress ChunkPress
c=8 at its period 8). Item difficulty is period_rule's probit latent shared by a row
(correlation 0.5), the per-phase accuracies staying exactly the profile's. Each run's gap is
tested as :func:`phasebench.stats.summarize` tests it
(:func:`~phasebench.stats.permutation.gap_test`, 1,000 within-item shuffles) and gets the
interval those shuffles give (gap +- the test's critical value, cut at 0 and 1). Measured:
how often the interval holds the true gap (best minus lowest of the profile), how often it
is above 0 exactly when the gap is significant (100% by construction; the simulation checks
it), the rejection rate (false positives on flat profiles, power elsewhere) and the mean
width; beside it the interval shown before, the simultaneous band (gap +- twice the 95%
quantile of the largest deviation of a bootstrapped phase contrast, 1,000 resamples, cut at 0),
with its coverage and its agreement with the same test.

**The ranks.** Each simulated board has six entries on one split of 168 base items (shared
item latent): flat 90%, flat 65%, the square stride-4 profile (lowest 65%, tied with the flat
65%), ``mean-w8s4``, ChunkPress c=8 and one weak phase in eight (at 60%, just below the two
65% entries), ``mean-w8s4`` and the weak phase run on the first 32 items only (small, noisy
runs). Places and rank intervals by the cross-fitted worst
phase come from :func:`phasebench.stats.ranks.paired_ranks` (1,000 resamples). Measured: the
share of entries whose place lies in its interval, the share of entries whose interval holds
the true rank (1 + the entries whose profile's lowest phase is higher), and the share of
boards where a truly better entry is placed below a truly worse one; beside them the rule
shown before (rank = 1 + the entries whose own 95% interval lies wholly above, the interval
the central 95% of bootstrap places). Random streams come from ``derive_rng(0,
"gap-interval", ...)``: the same output on every run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detectable_gap import profile as least_favourable  # noqa: E402
from period_rule import real_profiles, shape, simulate  # noqa: E402

from phasebench.design.settings import ALPHA, N_BOOT, N_PERM, SEED  # noqa: E402
from phasebench.metrics import RANKING  # noqa: E402
from phasebench.rng import derive_rng  # noqa: E402
from phasebench.stats import crossfit_worst  # noqa: E402
from phasebench.stats.intervals import _bootstrap_phase_means, _quantile  # noqa: E402
from phasebench.stats.permutation import gap_test  # noqa: E402
from phasebench.stats.ranks import _bootstrap, paired_ranks  # noqa: E402

MODULUS = 8
#: A small run and the shipped boards' design.
N_BASE = (32, 168)
SQUARE = [0.85, 0.85, 0.65, 0.65] * 2
WEAK_ONE = [0.9] * 7 + [0.5]
BOARD_ITEMS, SMALL_ITEMS = 168, 32


def profiles() -> dict[str, np.ndarray]:
    real = real_profiles()
    return {
        "flat 80%": np.full(MODULUS, 0.8),
        "flat 50%": np.full(MODULUS, 0.5),
        "square stride 4": np.array(SQUARE),
        "one weak phase in 8": np.array(WEAK_ONE),
        "50% +- 10 (least favourable)": least_favourable(0.2, MODULUS),
        "mean-w8s4 (demo)": shape(real, "mean-w8s4", 4, MODULUS),
        "ChunkPress c=8 (kvpress)": shape(real, "ChunkPress c=8", 8, MODULUS),
    }


def old_band(m: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """The gap's interval shown before: gap +- 2 c on the phase contrasts, cut at 0 and 1."""
    acc_p = m.mean(axis=0)
    boot = _bootstrap_phase_means(m, np.ones_like(m, dtype=bool), N_BOOT, rng)
    contrast = boot - boot.mean(axis=1, keepdims=True)
    c = _quantile(np.abs(contrast - (acc_p - acc_p.mean())).max(axis=1), 1 - ALPHA)
    gap = float(np.ptp(acc_p))
    return max(0.0, gap - 2 * c), min(1.0, gap + 2 * c)


def gap_rows(sims: int) -> None:
    print(f"## the gap: {sims} runs per row, {N_PERM} shuffles, {N_BOOT} resamples (old band)")
    header = ["profile", "true gap", "n", "covers", "agrees", "significant", "mean width",
              "old band covers", "old band agrees", "old band width"]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    worst_agree = 1.0
    for name, probs in profiles().items():
        truth = float(np.ptp(probs))
        for n in N_BASE:
            cover = agree = sig = old_cover = old_agree = 0
            width = old_width = 0.0
            for i in range(sims):
                key = ("gap-interval", name, n, i)
                m = simulate(derive_rng(0, *key, "data"), probs, n)
                test = gap_test(m, m.mean(axis=0), N_PERM, derive_rng(0, *key, "perm"))
                lo, hi = test.interval[0], min(1.0, test.interval[1])
                cover += lo - 1e-12 <= truth <= hi + 1e-12
                agree += test.significant == (lo > 0) == (test.p <= ALPHA)
                sig += test.significant
                width += hi - lo
                olo, ohi = old_band(m, derive_rng(0, *key, "boot"))
                old_cover += olo - 1e-12 <= truth <= ohi + 1e-12
                old_agree += test.significant == (olo > 0)
                old_width += ohi - olo
            worst_agree = min(worst_agree, agree / sims)
            cells = [name, f"{100 * truth:.1f}", str(n), _pct(cover, sims), _pct(agree, sims),
                     _pct(sig, sims), f"{100 * width / sims:.1f}", _pct(old_cover, sims),
                     _pct(old_agree, sims), f"{100 * old_width / sims:.1f}"]  # fmt: skip
            print("| " + " | ".join(cells) + " |", flush=True)
    print(f"# interval and test agree in {100 * worst_agree:.0f}% of runs at worst")


def board_profiles() -> list[tuple[str, np.ndarray, int]]:
    real = real_profiles()
    return [
        ("flat 90%", np.full(MODULUS, 0.9), BOARD_ITEMS),
        ("mean-w8s4", shape(real, "mean-w8s4", 4, MODULUS), SMALL_ITEMS),
        ("flat 65%", np.full(MODULUS, 0.65), BOARD_ITEMS),
        ("square stride 4", np.array(SQUARE), BOARD_ITEMS),
        ("ChunkPress c=8", shape(real, "ChunkPress c=8", 8, MODULUS), BOARD_ITEMS),
        ("one weak phase in 8 at 60%", np.array([0.9] * 7 + [0.6]), SMALL_ITEMS),
    ]


def old_places(entries) -> list[tuple[int, tuple[int, int]]]:
    """The rule shown before: rank = 1 + the entries whose own 95% interval (the summary's
    paired bootstrap of the cross-fitted worst phase) lies wholly above this one's; interval =
    the central 95% of the places (1 + the entries above) over the board's shared resamples."""
    cis = [crossfit_worst(m, np.ones_like(m, dtype=bool), n_boot=N_BOOT)[1] for _, m in entries]
    ranks = [1 + sum(1 for o in cis if o[0] > ci[1]) for ci in cis]
    filled = np.zeros((len(entries), BOARD_ITEMS, MODULUS))
    present = np.zeros_like(filled)
    for e, (_, m) in enumerate(entries):
        filled[e, : len(m)], present[e, : len(m)] = m, 1.0
    values = _bootstrap(filled, present, RANKING.key, N_BOOT, SEED)
    places = 1 + (values[:, None, :] > values[:, :, None]).sum(axis=2)
    lo = np.floor(np.quantile(places, ALPHA / 2, axis=0)).astype(int)
    hi = np.ceil(np.quantile(places, 1 - ALPHA / 2, axis=0)).astype(int)
    return [(r, (int(a), int(b))) for r, a, b in zip(ranks, lo, hi, strict=True)]


def rank_rows(boards: int) -> None:
    spec = board_profiles()
    truth = np.array([p.min() for _, p, _ in spec])
    true_rank = [1 + int(np.sum(truth > t + 1e-9)) for t in truth]
    print()
    print(f"## the ranks: {boards} boards of {len(spec)} entries on one split of {BOARD_ITEMS} "
          f"base items ({SMALL_ITEMS} for two), cross-fitted worst phase, {N_BOOT} "
          "resamples")  # fmt: skip
    print("# entries: " + "; ".join(
        f"{name} (lowest {100 * t:.1f}%, {n} items, true rank {r})"
        for (name, _, n), t, r in zip(spec, truth, true_rank, strict=True)))  # fmt: skip
    counts = {rule: {"inside": 0, "true": 0, "misordered": 0} for rule in ("paired", "old")}
    for b in range(boards):
        key = ("gap-interval", "board", b)
        rng = derive_rng(0, *key, "data")
        z = rng.normal(0.0, np.sqrt(0.5), (BOARD_ITEMS, 1))
        entries = []
        for _, probs, n in spec:
            noise = rng.normal(0.0, np.sqrt(0.5), (BOARD_ITEMS, MODULUS))
            m = (z + noise < sps.norm.ppf(probs)).astype(float)[:n]
            entries.append(([f"b{j:03d}" for j in range(n)], m))
        paired = [(p.place, p.interval) for p in paired_ranks(entries, n_boot=N_BOOT, seed=b)]
        for rule, result in (("paired", paired), ("old", old_places(entries))):
            c = counts[rule]
            for (place, (lo, hi)), r in zip(result, true_rank, strict=True):
                c["inside"] += lo <= place <= hi
                c["true"] += lo <= r <= hi
            c["misordered"] += any(
                truth[i] > truth[j] + 1e-9 and result[i][0] > result[j][0]
                for i in range(len(spec))
                for j in range(len(spec))
            )
    total = boards * len(spec)
    print(
        "| rule | place in its interval | interval holds the true rank | boards with a truly "
        "better entry placed below a worse one |"
    )
    print("|---|---|---|---|")
    for rule, label in (("paired", "paired comparisons (new)"),
                        ("old", "non-overlapping intervals, central range (before)")):  # fmt: skip
        c = counts[rule]
        print(f"| {label} | {_pct(c['inside'], total)} | {_pct(c['true'], total)} | "
              f"{_pct(c['misordered'], boards)} |")  # fmt: skip


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.0f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=100, help="simulated runs per gap row")
    parser.add_argument("--boards", type=int, default=40, help="simulated boards")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    gap_rows(args.sims)
    rank_rows(args.boards)
    print(f"# {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
