"""``phasebench inspect``: one row with its needle highlighted, and the config's balance table."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from phasebench.build import iter_rows, read_manifest
from phasebench.errors import SplitError
from phasebench.rows import row_problem

BOLD, RESET = "\033[1;7m", "\033[0m"
#: Characters a split's text must not send to a terminal as they are: C0 controls but newline
#: and tab (ESC starts a terminal command), C1 controls, and the invisible characters that
#: reorder or hide text (bidi overrides and isolates, zero-width characters, the BOM).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)


def visible(text: str) -> str:
    """``text`` with every unsafe character written as its escape (``\\x1b``, ``\\u202e``),
    so a doctored split can neither drive the terminal nor hide what it holds."""
    return _UNSAFE.sub(lambda m: ascii(m.group())[1:-1], text)


def _balance_table(manifest: dict) -> pd.DataFrame:
    """Per-phase count, anchor mean and std, as the manifest records them."""
    bal = manifest["balance"]
    return pd.DataFrame(
        {
            "phase": bal.get("phases") or range(len(bal["count_per_phase"])),
            "count": bal["count_per_phase"],
            "anchor_mean": bal["anchor_mean_per_phase"],
            "anchor_std": bal["anchor_std_per_phase"],
        }
    ).set_index("phase")


def _highlight(row: dict, context: int = 240, color: bool = True) -> str:
    """The prompt around the needle (and its end), the needle marked."""
    prompt = row["prompt"]
    start = row.get("key_char", -1)
    if start is None or start < 0:  # code: the completion point is the end of the prompt
        answer = visible(str(row["answer"]))
        return f"...{visible(prompt[-context * 2 :])}" + (
            f"{BOLD}<{answer}>{RESET}" if color else f"<<{answer}>>"
        )
    ends = [prompt.find(c, start + len(row["needle_key"])) for c in ("\n", ". ")]
    ends = [e + (c == ". ") for e, c in zip(ends, ("\n", ". "), strict=True) if e >= 0]
    end = min(ends) if ends else len(prompt)  # the needle line (kv) or sentence (niah)
    on, off = (BOLD, RESET) if color else ("<<", ">>")
    parts = [
        "..." if start > context else "",
        visible(prompt[max(0, start - context) : start]),
        on + visible(prompt[start:end]) + off,
        visible(prompt[end : end + context]),
        "\n[...]\n",
        visible(prompt[row["question_char"] :]) if row.get("question_char", -1) >= 0 else "",
    ]
    return "".join(parts)


def inspect_config(folder: Path | str, row_index: int = 0, color: bool = True) -> str:
    """Row ``row_index`` of a config (its files checked against the manifest's content hash on
    the way) with its needle marked, and the balance table; a :class:`SplitError` for a row out
    of range or a damaged config."""
    manifest = read_manifest(folder)
    n = manifest["rows"]
    if not 0 <= row_index < n:
        raise SplitError(
            f"row {row_index} is out of range: config {manifest['config']} has {n} rows "
            f"(give --row 0..{n - 1})"
        )
    row = next((r for i, r in enumerate(iter_rows(folder, check=True)) if i == row_index), None)
    if row is None:
        raise SplitError(f"{str(folder)!r} holds fewer rows than its manifest's {n}")
    if problem := row_problem(row):
        raise SplitError(
            f"{str(folder)!r} row {row_index} ({ascii(row.get('id'))[:80]}): {problem}; "
            f"regenerate the config"
        )
    try:
        return _describe(manifest, row, color)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise SplitError(
            f"{str(folder)!r}: the manifest or row lacks a field ({type(exc).__name__}: {exc}); "
            f"regenerate the config"
        ) from None


def _describe(manifest: dict, row: dict, color: bool) -> str:
    bal = manifest["balance"]
    head = [
        visible(
            f"config {manifest['config']}  ({manifest['rows']} rows, tokenizer "
            f"{manifest['tokenizer']['name']}, {manifest['tokenizer']['fingerprint'][:23]}...)"
        ),
        f"row {visible(row['id'])}: length {row['length']}, anchor {row['anchor_index']} "
        f"(phase {row['phase']} mod {row['phase_modulus']}), question at {row['question_index']}, "
        f"answer {row['answer']!r}",
        "",
        _highlight(row, color=color),
        "",
        f"balance (anchor mean {bal['anchor_mean']}, std {bal['anchor_std']}; largest per-phase "
        f"deviation: mean {bal['max_mean_deviation']}, std {bal['max_std_deviation']} tokens)",
        _balance_table(manifest).to_string(),
    ]
    return "\n".join(head)
