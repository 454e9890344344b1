"""What the boards found, read off the scored rows for the site to lead with: per board the
entry with the largest significant gap and a control beside it (:func:`findings`), and a KV-cache
method's gap across one of its settings (:func:`settings`). Selection among rows only; every
number is a row's own, computed by :mod:`phasebench.stats` through the scoring."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from phasebench import metrics
from phasebench.leaderboard.presses import SETTING_AXES
from phasebench.leaderboard.standing import AT_FLOOR, EARLIER, FIXTURE, REFERENCE


def _finding_row(row: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("model", "variant", "page", "anchor", "kv_label", "gap", "gap_ci", "p_value",
            "dominant_period", "consistent_periods", metrics.RANKING.column, "acc",
            "preliminary", "n_base", "earlier_designs", "designs_disagree")  # fmt: skip
    return {k: row.get(k) for k in keys}


def findings(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What each board found, boards with a significant gap first (largest gap first), then
    the others in board order: the number of ranked entries (one per configuration, at its
    strongest design; :mod:`phasebench.leaderboard.standing`) and of those with a significant
    gap, the entry with the largest significant gap, and, beside it, a control (the ranked
    entry without a significant gap whose gap is smallest), each with the numbers the site
    shows; besides, how many rows are references, at floor, earlier designs and fixtures.
    Selection among ranked rows only; every number is the row's own."""
    out = []
    for board in sorted({r["board"] for r in rows}):
        members = [r for r in rows if r["board"] == board]
        ranked = [r for r in members if r.get("ranked")]
        significant = [r for r in ranked if r.get("significant")]
        flat = [r for r in ranked if not r.get("significant")]
        largest = max(significant, key=lambda r: r.get("gap") or 0.0, default=None)
        control = min(flat, key=lambda r: (r.get("gap") or 0.0, -(r.get("acc") or 0.0)),
                      default=None)  # fmt: skip
        out.append(
            {
                "board": board,
                "n_entries": len(members),
                "n_ranked": len(ranked),
                "n_significant": len(significant),
                "n_preliminary": sum(bool(r.get("preliminary")) for r in ranked),
                "n_configurations": len({r.get("configuration") for r in members}),
                **{
                    f"n_{key.replace(' ', '_')}": sum(r.get("standing") == key for r in members)
                    for key in (REFERENCE, AT_FLOOR, EARLIER, FIXTURE)
                },  # fmt: skip
                "largest": _finding_row(largest) if largest else None,
                "control": _finding_row(control) if control and significant else None,
            }
        )
    out.sort(key=lambda f: (f["largest"] is None, -((f["largest"] or {}).get("gap") or 0.0)))
    return out


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def settings(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Methods across settings: for each model, task and KV-cache method whose entries (one per
    configuration: no earlier design, no fixture)
    differ in one of the method's :data:`~phasebench.leaderboard.presses.SETTING_AXES` (chunk
    length, block size, compression ratio) with the other parameters fixed, one series: the
    parameter's values in order and, at each, every entry (on whichever board) with its gap,
    interval, p-value and marks. Selection among rows only; every number is the row's own."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        params = row.get("kv_parameters") or {}
        if row.get("fixture") or row.get("design_of") or row.get("gap") is None:
            continue
        for axis in SETTING_AXES:
            if not _finite_number(params.get(axis)):
                continue  # absent, or declared as text (four, NaN): shown as text, not lined up
            fixed = tuple(sorted((k, str(v)) for k, v in params.items() if k != axis))
            key = (row["model"], row["task"], row["kv_method"], axis, fixed)
            groups.setdefault(key, []).append(row)
    out = []
    for (model, task, method, axis, fixed), members in sorted(groups.items(), key=str):
        values = sorted({r["kv_parameters"][axis] for r in members})
        if len(values) < 2:
            continue
        keys = ("board", "variant", "page", "anchor", "length", "modulus", "n_base", "gap",
                "gap_ci", "p_value", "significant", "preliminary", "dominant_period")  # fmt: skip
        points = sorted(
            ({"value": r["kv_parameters"][axis], **{k: r.get(k) for k in keys}} for r in members),
            key=lambda p: (p["value"], p["board"], p["variant"] or ""),
        )
        out.append(
            {
                "model": model,
                "task": task,
                "method": method,
                "axis": axis,
                "fixed": dict(fixed),
                "values": values,
                "points": points,
            }
        )
    return out
