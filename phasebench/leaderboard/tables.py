"""The leaderboard's exported files: ``leaderboard.json`` (the scored board as it is),
``leaderboard.csv`` and ``leaderboard.parquet`` (one line per row, a column per exported
statistic, read off the declarations in :mod:`phasebench.metrics`) and ``per_phase.parquet``,
each written atomically. CSV cells that a spreadsheet would run as a formula are written with a
leading ``'``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from phasebench import metrics
from phasebench.atomic import atomic_file, atomic_write_text, make_folder

#: Columns of the flat tables before and after the statistics (:func:`_flat_columns`).
ROW_COLUMNS = [
    "board", "task", "task_version", "length", "modulus", "axis", "n_phases", "n_base", "model",
    "revision", "variant", "precision", "backend", "kv_cache", "serving", "serving_witness",
    "chat_template", "standing", "design_of", "rank_worst", "rank_worst_lo", "rank_worst_hi",
    "rank_average", "rank_average_lo", "rank_average_hi",
]  # fmt: skip
#: The rank intervals, each split into ``<rank>_lo`` / ``<rank>_hi`` in the flat tables.
RANK_INTERVALS = {"rank_worst": "rank_worst_interval", "rank_average": "rank_average_interval"}
TAIL_COLUMNS = ["lm_eval_version", "transformers_version", "phasebench_version", "date",
                "reported", "evidence", "fixture"]  # fmt: skip


def _flat_columns() -> list[str]:
    """The flat tables' columns: the row's identity, every exported statistic (an interval as
    ``<key>_lo`` / ``<key>_hi``; per-phase values come last as ``phase_<r>``), provenance."""
    columns = list(ROW_COLUMNS)
    for stat in metrics.statistics():
        if stat.exported and not stat.per_phase:
            columns.append(stat.column)
            if stat.interval is not None:
                columns += [f"{stat.column}_lo", f"{stat.column}_hi"]
    return columns + TAIL_COLUMNS


#: A cell starting with one of these is a formula to a spreadsheet.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _spreadsheet_safe(value: Any) -> Any:
    """``value`` for a CSV cell: text a spreadsheet would run as a formula gets a leading
    ``'`` (numbers stay numbers); a list (the consistent periods) is its items joined by
    ``;`` (``12;6``; empty for none)."""
    if isinstance(value, list | tuple | np.ndarray):
        return ";".join(str(v) for v in value)
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def flat_table(board: Mapping[str, Any]) -> pd.DataFrame:
    """One line per leaderboard row, intervals (a statistic's and a rank's) split into
    _lo/_hi, phases as phase_<r> columns; whole numbers (a rank, a count) stay integers."""
    columns = _flat_columns()
    records = []
    for row in board["rows"]:
        flat = {k: row.get(k) for k in columns}
        for rank, key in RANK_INTERVALS.items():
            flat[f"{rank}_lo"], flat[f"{rank}_hi"] = row.get(key) or (None, None)
        for stat in metrics.statistics():
            if not stat.exported:
                continue
            if stat.per_phase:
                for r, value in enumerate(row.get(stat.column) or []):
                    flat[f"phase_{r}"] = value
            elif stat.interval is not None:
                lo, hi = row.get(stat.column_interval) or (None, None)
                flat[f"{stat.column}_lo"], flat[f"{stat.column}_hi"] = lo, hi
        records.append(flat)
    frame = pd.DataFrame.from_records(records)
    phase_cols = sorted(
        (c for c in frame.columns if re.fullmatch(r"phase_\d+", c)), key=lambda c: int(c[6:])
    )
    return _whole_numbers_typed(frame.reindex(columns=columns + phase_cols), records)


def _whole_numbers_typed(frame: pd.DataFrame, records: list[dict[str, Any]]) -> pd.DataFrame:
    """``frame`` with each column the rows hold as integers only (a rank, a period, a phase
    index, a count) typed as pandas' nullable ``Int64``: pandas would make a column of integers
    with an empty cell a float one, and the CSV would write a rank as ``1.0``. An accuracy is
    a float in the rows even when it is whole, so no statistic is rounded."""
    for column in frame.columns:
        values = [r[column] for r in records if r.get(column) is not None]
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            frame[column] = frame[column].astype("Int64")
    return frame


def _per_phase_table(board: Mapping[str, Any]) -> pd.DataFrame:
    records = []
    for page, detail in board["models"].items():
        for entry in detail["boards"]:
            for p in entry["summary"]["per_phase"]:
                lo, hi = p["ci"]
                records.append(
                    {
                        "model": detail["model"],
                        "revision": detail["revision"],
                        "variant": detail["variant"],
                        "task": entry["task"],
                        "length": entry["length"],
                        "phase": p["phase"],
                        "acc": p["acc"],
                        "ci_lo": lo,
                        "ci_hi": hi,
                        "n": p["n"],
                        "page": page,
                    }
                )
    columns = [
        "model",
        "revision",
        "variant",
        "task",
        "length",
        "phase",
        "acc",
        "ci_lo",
        "ci_hi",
        "n",
        "page",
    ]
    return pd.DataFrame.from_records(records, columns=columns)


def write_tables(board: Mapping[str, Any], out: Path) -> list[Path]:
    """leaderboard.json / .csv / .parquet and per_phase.parquet (each written atomically)."""
    make_folder(out)
    paths = [out / "leaderboard.json", out / "leaderboard.csv"]
    # compact: json's C encoder (indent= falls back to the pure-Python one, 20 s at 1,000 entries)
    text = json.dumps(board, sort_keys=True, allow_nan=False, separators=(",", ":"))
    atomic_write_text(paths[0], text + "\n")
    flat = flat_table(board)
    safe = flat.astype(object).map(_spreadsheet_safe)
    atomic_write_text(paths[1], safe.to_csv(index=False, lineterminator="\n"))
    for name, frame in (
        ("leaderboard.parquet", flat),
        ("per_phase.parquet", _per_phase_table(board)),
    ):
        path = out / name
        with atomic_file(path) as handle:
            frame.to_parquet(handle, index=False)
        paths.append(path)
    return paths
