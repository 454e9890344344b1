"""The row every family writes, and what identifies its config and its paired unit.

One place for the facts that generators, the lm-eval tasks, ``phasebench report`` and the
leaderboard all read from a row (or from the ``doc`` lm-eval logs for it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

__all__ = [
    "LENGTH_PHASE_FIELDS",
    "ROW_FIELDS",
    "config_length",
    "row_problem",
    "row_schema",
]

#: Column types of the row schema every family writes (families may add columns).
ROW_FIELDS: list[tuple[str, pa.DataType]] = [
    ("id", pa.string()),
    ("family", pa.string()),
    ("length", pa.int64()),
    ("phase_modulus", pa.int64()),
    ("phase", pa.int64()),
    ("base_id", pa.int64()),
    ("anchor_index", pa.int64()),
    ("question_index", pa.int64()),
    ("needle_key", pa.string()),
    ("prompt", pa.string()),
    ("answer", pa.string()),
    ("choices", pa.list_(pa.string())),
    ("depth", pa.float64()),
    ("tokenizer", pa.string()),
    ("tokenizer_fingerprint", pa.string()),
    ("seed", pa.int64()),
    ("key_char", pa.int64()),
    ("question_char", pa.int64()),
]


#: Columns a config with the length-phase axis adds: the config's length (its prompts run
#: from it to ``config_length + modulus - 1`` tokens) and the row's total length mod P.
LENGTH_PHASE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("config_length", pa.int64()),
    ("length_phase", pa.int64()),
]


def row_schema(extra: Sequence[tuple[str, pa.DataType]] = ()) -> pa.Schema:
    """The parquet schema of a family's rows: :data:`ROW_FIELDS` plus its own columns."""
    return pa.schema(ROW_FIELDS + list(extra))


def row_problem(
    row: Mapping[str, Any], extra: Sequence[tuple[str, pa.DataType]] = ()
) -> str | None:
    """What is wrong with the types of a row read from a split (a null, a string where a count
    belongs, a bool posing as a number), or None. Checked before any field is computed with,
    so a doctored row is named, never fed to arithmetic."""
    for name, kind in ROW_FIELDS + list(extra):
        if name not in row:
            continue  # a missing column is the reader's finding
        value = row[name]
        if value is None:
            return f"{name} is null"
        if pa.types.is_integer(kind):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif pa.types.is_floating(kind):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif pa.types.is_string(kind):
            ok = isinstance(value, str)
        elif pa.types.is_list(kind):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        else:
            ok = True
        if not ok:
            return f"{name} is {type(value).__name__}, not {kind}"
    return None


def config_length(row: Mapping[str, Any]) -> int:
    """The length of the config a row belongs to: ``length`` for kv and niah, where every
    prompt of a config has the same token count, ``config_length`` for code, whose prompts grow
    with the padding sweep."""
    return int(row.get("config_length", row["length"]))
