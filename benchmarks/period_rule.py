"""How often the period rule names the true period: a simulation with the true period known.

    python benchmarks/period_rule.py [--sims 100]
    python benchmarks/period_rule.py --summarize benchmarks/results/period_rule.txt

Each simulated run is a phase matrix of binary outcomes, one row per base item and one column
per phase, whose per-phase accuracies are a *real* profile with a known period: a committed
per-phase profile (the kvpress stride sweep's submissions under ``leaderboard/submissions``, the
demo's reference models in ``docs/figures/demo-report.json``), folded onto its period S
(``fold`` of phasebench.stats: phase mod S) and tiled over the P phases. True periods 2, 3, 4,
6, 8, 12 at P = 24 and 2, 4, 8 at P = 8, and a flat profile (no period) at each modulus. Item
difficulty varies through a Gaussian latent shared by the row (probit, correlation 0.5), the
per-phase accuracies staying exactly the profile's. Every run is summarized as phasebench
does: the paired bootstrap's covariance of the phase means (1000 resamples), the permutation
test of the gap (199 shuffles; the period is named only for a significant gap at 0.05), then
the period rule, old and new, on the same data.

A name is *right* (the true period), *too long* (a multiple of it), *too short* (a divisor of
it), *other* (neither: 3 for 4) or *none* (gap not significant, or no period fits). For the
new rule, *shown* says how often the true period is among the periods the report shows
(the named one and any other the data are consistent with) and *two* how often it shows more
than one. Random streams come from ``derive_rng(seed, "period-rule", ...)``: the same output on
every run. ``--summarize FILE`` reads a table this script printed and averages its rows per
modulus and number of base items (the shapes weighted equally), without simulating again.
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

from phasebench.report import build_report, load_runs
from phasebench.rng import derive_rng
from phasebench.stats import fold
from phasebench.stats.intervals import _bootstrap_phase_means
from phasebench.stats.periods import (
    _phase_mean_cov,
    _residual_p,
    _residual_projectors,
    _wald_logp,
    consistent_periods,
)
from phasebench.stats.permutation import gap_test

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "leaderboard/submissions/HuggingFaceTB__SmolLM2-135M-Instruct"
REVISION = "b179c9523d0e6a0f98a330c7562b682750a6f8c8"
DEMO = ROOT / "docs/figures/demo-report.json"
#: Real profiles: name -> (where it comes from, the period the shape is folded onto).
KVPRESS = {
    "ChunkKV c=2": "kvpress-chunkkv2-r0.25-niah512-m4",
    "ChunkPress c=4": "kvpress-chunk4-r0.1-niah512-m8",
    "ChunkKV c=4": "kvpress-chunkkv4-r0.25-niah512-m8",
    "ChunkPress c=6": "kvpress-chunk6-r0.1-niah512-m12",
    "ChunkKV c=6": "kvpress-chunkkv6-r0.25-niah512-m12",
    "ChunkPress c=8": "kvpress-chunk8-r0.1-niah512-m8",
    "ChunkKV c=8": "kvpress-chunkkv8-r0.25-niah512-m8",
    "ChunkPress c=12": "kvpress-chunk12-r0.1-niah512-m12",
    "ChunkKV c=12": "kvpress-chunkkv12-r0.25-niah512-m12",
}
DEMO_MODELS = {"gate-w8s2": "phasebench-ref-gate-w8s2", "mean-w8s4": "phasebench-ref-mean-w8s4"}
#: (true period, source profile) per modulus; a period-3 shape is the period-3 fold of a
#: period-6 and a period-12 profile (no committed real profile has period 3).
CASES = {
    24: [
        (2, "ChunkKV c=2"), (2, "gate-w8s2"),
        (3, "ChunkKV c=6"), (3, "ChunkPress c=12"),
        (4, "ChunkPress c=4"), (4, "ChunkKV c=4"), (4, "mean-w8s4"),
        (6, "ChunkPress c=6"), (6, "ChunkKV c=6"),
        (8, "ChunkPress c=8"), (8, "ChunkKV c=8"),
        (12, "ChunkPress c=12"), (12, "ChunkKV c=12"),
        (None, "flat 80%"),
    ],
    8: [
        (2, "ChunkKV c=2"), (2, "gate-w8s2"),
        (4, "ChunkPress c=4"), (4, "ChunkKV c=4"), (4, "mean-w8s4"),
        (8, "ChunkPress c=8"), (8, "ChunkKV c=8"),
        (None, "flat 80%"),
    ],
}  # fmt: skip
N_BASE = (32, 64, 128, 256)
ALPHA = 0.05
RHO = 0.5
N_BOOT = 1000
N_PERM = 199
OUTCOMES = ("right", "too long", "too short", "other", "none")


def real_profiles() -> dict[str, list[float]]:
    """Per-phase accuracies (fractions) of the committed runs named in KVPRESS and DEMO_MODELS."""
    out = {}
    folders = [SUBMISSIONS / f"{REVISION}+{variant}" for variant in KVPRESS.values()]
    runs, _ = load_runs(folders)
    report = build_report(runs, n_boot=0, n_perm=0)
    for (name, variant), body in zip(KVPRESS.items(), report["runs"].values(), strict=True):
        assert body["source"].endswith(variant), (body["source"], variant)
        (entry,) = [e for lengths in body["tasks"].values() for e in lengths.values()]
        out[name] = [p["acc"] for p in entry["per_phase"]]
    demo = json.loads(DEMO.read_text())
    for name, run in DEMO_MODELS.items():
        (entry,) = [e for ls in demo["runs"][run]["tasks"].values() for e in ls.values()]
        out[name] = [p["acc"] for p in entry["per_phase"]]
    return out


def shape(profiles: dict[str, list[float]], source: str, period: int | None, modulus: int):
    """The source profile folded onto ``period`` and tiled over ``modulus`` phases."""
    if period is None:
        return np.full(modulus, 0.8)
    folded = fold(profiles[source])[period] if len(profiles[source]) != period else None
    base = np.asarray(folded if folded is not None else profiles[source], dtype=float)
    return np.tile(base, modulus // period)


def simulate(rng: np.random.Generator, probs: np.ndarray, n: int) -> np.ndarray:
    item = rng.normal(0.0, math.sqrt(RHO), (n, 1))
    noise = rng.normal(0.0, math.sqrt(1 - RHO), (n, len(probs)))
    with np.errstate(divide="ignore"):
        return (item + noise < sps.norm.ppf(probs)).astype(float)


def classify(named: int | None, truth: int | None) -> str:
    if named is None:
        return "none"
    if truth is None:
        return "other"
    if named == truth:
        return "right"
    if named % truth == 0:
        return "too long"
    if truth % named == 0:
        return "too short"
    return "other"


def old_rule(x: np.ndarray, cov: np.ndarray, alpha: float = ALPHA) -> int | None:
    """The rule phasebench used before this benchmark measured it, kept here to compare:
    chi-squared tests (the covariance taken as known), and a divisor took over from
    the best-fitting period whenever the rest was not significant, even where the divisor's own
    fold was flat."""
    residuals = _residual_projectors(len(x))
    fits = {s: _residual_p(x, cov, res) for s, res in residuals.items()}
    fits[len(x)] = 1.0
    candidates = [s for s in sorted(fits) if fits[s] > alpha]
    if not candidates:
        return None
    flat = np.full((len(x), len(x)), 1.0 / len(x))
    explained = {s: _wald_logp(x, cov, np.eye(len(x)) - residuals[s] - flat) for s in candidates}
    best = min(candidates, key=lambda s: (explained[s], s))
    for d in candidates:
        if d < best and best % d == 0:
            if _wald_logp(x, cov, residuals[d] - residuals[best]) > math.log(alpha):
                return d
    return best


def one_run(m: np.ndarray, seed_key: tuple) -> dict:
    """The old and new rule's names for one simulated phase matrix."""
    n, modulus = m.shape
    present = ~np.isnan(m)
    acc_p = m.mean(axis=0)
    p = gap_test(m, acc_p, N_PERM, derive_rng(0, "period-rule", "perm", *seed_key)).p
    if not p <= ALPHA or np.ptp(acc_p) <= 1e-12:
        return {"old": None, "new": None, "shown": ()}
    boot = _bootstrap_phase_means(
        np.where(present, m, 0.0), present, N_BOOT, derive_rng(0, "period-rule", "boot", *seed_key)
    )
    cov = _phase_mean_cov(boot, m)
    old = old_rule(acc_p, cov)
    shown = consistent_periods(acc_p, cov, alpha=ALPHA, n_base=n)
    return {"old": old, "new": shown[0] if shown else None, "shown": tuple(shown)}


def summarize(path: Path) -> None:
    """Mean rates per (modulus, base items) over the periodic rows of a printed table, and over
    the rows where every run's gap was significant (none = 0 for both rules)."""
    rows = [
        [c.strip() for c in line.split("|")[1:-1]]
        for line in path.read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| P ")
    ]
    periodic = [r for r in rows if r[1] != "-"]

    def mean(sel: list, col: int, side: int | None) -> str:
        values = [int(r[col].split("->")[side]) if side is not None else int(r[col]) for r in sel]
        return f"{sum(values) / len(values):.0f}"

    header = ["P", "n", "rows", "right old->new", "too long old->new", "too short new", "none",
              "shown", "two"]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for modulus in ("24", "8"):
        for n in (str(n) for n in N_BASE):
            sel = [r for r in periodic if r[0] == modulus and r[3] == n]
            cells = [modulus, n, str(len(sel)), f"{mean(sel, 4, 0)} -> {mean(sel, 4, 1)}",
                     f"{mean(sel, 5, 0)} -> {mean(sel, 5, 1)}", mean(sel, 6, 1),
                     mean(sel, 8, 1), mean(sel, 9, None), mean(sel, 10, None)]  # fmt: skip
            print("| " + " | ".join(cells) + " |")
    decided = [r for r in periodic if r[8] == "0 -> 0"]
    shown = [int(r[9]) for r in decided]
    two = [int(r[10]) for r in decided]
    print(f"# {len(decided)} rows where every gap was significant: true period shown in "
          f"{min(shown)}-{max(shown)}% of runs (mean {sum(shown) / len(shown):.0f}%), two "
          f"periods shown in {min(two)}-{max(two)}% (mean {sum(two) / len(two):.0f}%)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=100, help="simulated runs per row")
    parser.add_argument("--summarize", type=Path, default=None, metavar="FILE")
    args = parser.parse_args()
    if args.summarize is not None:
        summarize(args.summarize)
        return 0
    start = time.perf_counter()
    profiles = real_profiles()
    print(f"# period rule, simulated: {args.sims} runs per row, probit item latent rho={RHO},")
    print(f"# {N_BOOT} bootstrap resamples, {N_PERM} permutations, alpha {ALPHA}")
    print("# rates in percent: old rule (chi-squared) -> new rule (Hotelling F);")
    print("# shown = true period among those shown, two = more than one shown (new rule)")
    header = ["P", "S", "shape", "n"] + [f"{o} old->new" for o in OUTCOMES] + ["shown", "two"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    totals: dict[str, dict[str, int]] = {}
    for modulus, cases in CASES.items():
        for truth, source in cases:
            probs = shape(profiles, source, truth, modulus)
            for n in N_BASE:
                counts = {r: dict.fromkeys(OUTCOMES, 0) for r in ("old", "new")}
                shown = two = 0
                for i in range(args.sims):
                    key = (modulus, truth or 0, source, n, i)
                    m = simulate(derive_rng(0, "period-rule", "data", *key), probs, n)
                    res = one_run(m, key)
                    for rule in ("old", "new"):
                        counts[rule][classify(res[rule], truth)] += 1
                    shown += truth is not None and truth in res["shown"]
                    two += len(res["shown"]) > 1
                for rule in ("old", "new"):
                    agg = totals.setdefault(f"{rule} {truth is None}", dict.fromkeys(OUTCOMES, 0))
                    for o in OUTCOMES:
                        agg[o] += counts[rule][o]
                pct = [
                    f"{100 * counts['old'][o] / args.sims:.0f} -> "
                    f"{100 * counts['new'][o] / args.sims:.0f}"
                    for o in OUTCOMES
                ]
                cells = [str(modulus), str(truth or "-"), source, str(n), *pct]
                cells += [f"{100 * shown / args.sims:.0f}", f"{100 * two / args.sims:.0f}"]
                print("| " + " | ".join(cells) + " |", flush=True)
    print()
    for key, agg in sorted(totals.items()):
        total = sum(agg.values())
        kind = "flat" if key.endswith("True") else "periodic"
        rates = ", ".join(f"{o} {100 * agg[o] / total:.1f}%" for o in OUTCOMES)
        print(f"# all {kind} rows, {key.split()[0]} rule: {rates}")
    print(f"# {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
