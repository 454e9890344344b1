"""The sample summary: every number phasebench reports for one set of scored samples.

:func:`summarize_samples` is the one entry point from samples to numbers: the lm-eval
aggregates, ``phasebench report`` and the leaderboard all call it, so the three cannot disagree.
A :class:`~phasebench.stats.records.ScoredRecord` is what one sample contributes
(``phasebench.samples`` builds it from a logged doc and its metrics).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from phasebench.design.settings import ALPHA, N_BOOT, N_PERM, SEED
from phasebench.errors import StatsError
from phasebench.metrics import PhaseData, statistics
from phasebench.stats._common import _jsonable
from phasebench.stats.periods import divisors, phase_lock_rate
from phasebench.stats.records import ScoredRecord
from phasebench.stats.summary import phase_matrix, summarize


def summarize_samples(
    records: Iterable[ScoredRecord | Sequence[Any]],
    *,
    n_boot: int = N_BOOT,
    n_perm: int = N_PERM,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """Every number phasebench reports for scored records of one modulus, as a JSON-ready dict.

    The records' paired units are the rows of the phase matrix; records with a margin also get
    their margins, sweeps and phase-lock rates (see :func:`_summarize_units` for the keys).

    Records with a length phase (the length axis ran) are summarized on each axis that varies
    within a base item, each paired within what the other holds fixed: the needle phase over
    units (base item, length phase), the length phase over units (base item, needle phase).
    The needle axis stays at the top level with ``length_axis`` beside it and ``phase_table``,
    the mean accuracy per (needle phase, length phase), when both ran; when only the length
    axis ran, the top level is the length axis (``axis``: ``"length"``)."""
    records = [ScoredRecord.of(r) for r in records]
    if not records:
        raise StatsError("no samples to summarize")
    moduli = {r.modulus for r in records}
    if len(moduli) != 1:
        raise StatsError(
            f"samples mix phase moduli {sorted(moduli)}; summarize one split at a time"
        )
    has_margin = [r.margin is not None for r in records]
    if any(has_margin) and not all(has_margin):
        raise StatsError("some samples have a margin and others none; mixed families?")
    modulus = moduli.pop()
    with_length = [r.length_phase is not None for r in records]
    if any(with_length) and not all(with_length):
        raise StatsError("some samples have a length phase and others none; mixed configs?")

    def axis(units: list, phases: list) -> dict[str, Any]:
        return _summarize_units(
            units,
            phases,
            [r.acc for r in records],
            modulus,
            margins=[r.margin for r in records] if all(has_margin) else None,
            pads=[r.pad for r in records],
            n_boot=n_boot,
            n_perm=n_perm,
            seed=seed,
            alpha=alpha,
        )

    if not any(with_length):
        return axis([r.unit for r in records], [r.phase for r in records])
    lengths = axis(*_length_axis(records))
    if not _needle_varies(records):
        return {**lengths, "axis": "length"}
    out = axis(*_needle_axis(records))
    out["axis"] = "needle"
    out["length_axis"] = lengths
    out["phase_table"] = _phase_table(records)
    return out


def _needle_varies(records: list[ScoredRecord]) -> bool:
    return len({(r.unit, r.length_phase, r.phase) for r in records}) > len(
        {(r.unit, r.length_phase) for r in records}
    )


def _needle_axis(records: list[ScoredRecord]) -> tuple[list[Any], list[int]]:
    """Units and phases of the needle axis: each (unit, length phase) paired over the needle
    phases (the unit alone where the length axis did not run)."""
    if records[0].length_phase is None:
        return [r.unit for r in records], [r.phase for r in records]
    return [f"{r.unit}/l{r.length_phase}" for r in records], [r.phase for r in records]


def _length_axis(records: list[ScoredRecord]) -> tuple[list[Any], list[int]]:
    """Units and phases of the length axis: each (unit, needle phase) over the length phases."""
    return [f"{r.unit}/n{r.phase}" for r in records], [r.length_phase for r in records]


def top_axis(records: list[ScoredRecord]) -> tuple[list[Any], list[int]]:
    """The units and phases of the axis :func:`summarize_samples` puts at the top level: the
    needle phase, or the length phase where only the length axis varied."""
    if records[0].length_phase is not None and not _needle_varies(records):
        return _length_axis(records)
    return _needle_axis(records)


def unit_matrix(
    units: Sequence[Hashable], phases: Sequence[int], values: Sequence[float], modulus: int
) -> tuple[list[Any], np.ndarray]:
    """The sorted units and their phase matrix, a unit seen more than once at a phase entering
    there as the mean of its visits (as :func:`summarize_samples` does)."""
    import pandas as pd

    frame = pd.DataFrame(
        {"unit": list(units), "phase": np.asarray(phases, dtype=np.int64),
         "value": np.asarray(values, dtype=float)}
    )  # fmt: skip
    cells = frame.groupby(["unit", "phase"], sort=False)["value"].mean().reset_index()
    matrix = phase_matrix(cells["unit"], cells["phase"], cells["value"], modulus)
    return sorted(set(cells["unit"])), matrix


def _phase_table(records: list[ScoredRecord]) -> dict[str, Any]:
    """Mean accuracy and count per (needle phase, length phase) cell, in residue order."""
    cells: dict[tuple[int, int], list[float]] = {}
    for r in records:
        cells.setdefault((r.phase, r.length_phase), []).append(r.acc)
    needle = sorted({k[0] for k in cells})
    length = sorted({k[1] for k in cells})
    acc = [[_mean(cells.get((p, q))) for q in length] for p in needle]
    n = [[len(cells.get((p, q), [])) for q in length] for p in needle]
    return {"needle_phases": needle, "length_phases": length, "acc": acc, "n": n}


def _mean(values: list[float] | None) -> float | None:
    return sum(values) / len(values) if values else None


def _summarize_units(
    units: Sequence[Hashable],
    phases: Sequence[int],
    acc: Sequence[float],
    modulus: int,
    *,
    margins: Sequence[float] | None = None,
    pads: Sequence[int] | None = None,
    n_boot: int = N_BOOT,
    n_perm: int = N_PERM,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """Every number of one axis: the samples as (unit, phase, acc[, margin, pad]) columns. A unit
    seen more than once at a phase (a code sweep visits each phase 16/P times) enters there as
    the mean of its visits; rows of the phase matrix follow the sorted units, so the bootstrap
    and permutation streams do not depend on the order samples come in. The result is
    :meth:`PhaseSummary.to_dict` of the accuracy (binary when every cell is 0 or 1) plus, with
    ``margins``: ``margin`` (phase-balanced mean), ``margin_ci``, ``margin_lowest_phase``,
    ``margin_gap_p_value``, ``per_phase_margin`` and ``margin_sweeps`` (one row per unit, in
    padding order from ``pads``) with their phase-lock rates at every divisor of the modulus,
    also counting only patterns that flip sign; and every declared statistic with its own
    compute function."""
    import pandas as pd

    if not (len(units) == len(phases) == len(acc)):
        raise StatsError(
            f"units, phases and acc must have the same length (got {len(units)}, "
            f"{len(phases)}, {len(acc)})"
        )
    if not len(units):
        raise StatsError("no samples to summarize")
    frame = pd.DataFrame(
        {
            "unit": list(units),
            "phase": np.asarray(phases, dtype=np.int64),
            "acc": np.asarray(acc, dtype=float),
            "margin": np.asarray(margins, dtype=float) if margins is not None else np.nan,
            "pad": np.asarray(pads, dtype=np.int64) if pads is not None else 0,
        }
    )
    cells = frame.groupby(["unit", "phase"], sort=False)[["acc", "margin"]].mean().reset_index()
    matrix = phase_matrix(cells["unit"], cells["phase"], cells["acc"], modulus)
    binary = bool(np.isin(cells["acc"], (0.0, 1.0)).all())
    summary = summarize(matrix, binary=binary, n_boot=n_boot, n_perm=n_perm, seed=seed,
                        alpha=alpha)  # fmt: skip
    out = summary.to_dict()
    out["n_samples"] = int(len(frame))
    margin_matrix = None
    if margins is not None:
        margin_matrix = phase_matrix(cells["unit"], cells["phase"], cells["margin"], modulus)
        out.update(_margin_summary(frame, margin_matrix, modulus, n_boot, n_perm, seed, alpha))
    data = PhaseData(matrix, margin_matrix, binary, n_boot, n_perm, seed, alpha)
    for stat in statistics():
        if stat.compute is None or (stat.needs_margin and margin_matrix is None):
            continue
        value = stat.compute(data)
        if stat.interval is not None:
            value, out[stat.interval] = value[0], _jsonable(value[1])
        out[stat.key] = _jsonable(value)
    return out


def _margin_summary(
    frame: Any,
    margin_matrix: np.ndarray,
    modulus: int,
    n_boot: int,
    n_perm: int,
    seed: int,
    alpha: float,
) -> dict[str, Any]:
    """The margin's statistics (families with a margin): mean, interval, lowest phase, gap
    p-value, per phase, and the sweeps with their phase-lock rates."""
    out: dict[str, Any] = {}
    m = summarize(margin_matrix, binary=False, n_boot=n_boot, n_perm=n_perm, seed=seed,
                  alpha=alpha).to_dict()  # fmt: skip
    out["margin"] = m["acc"]
    out["margin_ci"] = m["acc_ci"]
    out["margin_lowest_phase"] = m["lowest_phase"]
    out["margin_gap_p_value"] = m["p_value"]
    out["per_phase_margin"] = [
        {"phase": r["phase"], "margin": r["acc"], "ci": r["ci"], "n": r["n"]}
        for r in m["per_phase"]
    ]
    out["margin_sweeps"] = _margin_sweeps(frame, modulus)
    return out


def _margin_sweeps(frame: Any, modulus: int) -> dict[str, Any]:
    """One row of margins per unit in padding order (cut to the shortest sweep), and the share
    of sign patterns that repeat with each period S dividing the modulus."""
    labels, firsts, rows = [], [], []
    for unit, group in sorted(frame.groupby("unit", sort=False), key=lambda kv: kv[0]):
        ordered = group.sort_values("pad", kind="stable")
        labels.append(str(unit))
        firsts.append(int(ordered["pad"].iloc[0]))
        rows.append(ordered["margin"].to_numpy(dtype=float))
    width = min(len(r) for r in rows)
    margins = np.array([r[:width] for r in rows])
    strides = divisors(modulus)[1:]
    return _jsonable(
        {
            "patterns": labels,
            "pad_first": firsts,
            "margins": margins,
            "phase_lock_rate": {s: phase_lock_rate(margins, s) for s in strides},
            "phase_lock_rate_flipping": {
                s: phase_lock_rate(margins, s, require_flip=True) for s in strides
            },
        }
    )
