"""What proves a ``code`` config: the seams between its blocks (checked additive on real pieces),
one whole prompt re-encoded on the exact path, and the checks ``verify`` makes of every row and of
the config from its rows' metadata."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from phasebench.errors import AssemblyError
from phasebench.families.code.padding import SWEEP
from phasebench.families.code.plan import CodePlan
from phasebench.tokenization import PhaseTokenizer

if TYPE_CHECKING:  # annotations only: a family reads nothing of specs when it runs
    from phasebench.specs import SplitSpec


def seam_samples(p: CodePlan) -> list[list[str]]:
    """Real piece sequences covering every kind of seam inside a prompt, for
    :func:`check_seams`: each item's definitions, unrelated code and use (also with either answer
    appended), and the pool in chunks (the padding block opens a prompt:
    :func:`opening_samples`)."""
    seqs: list[list[str]] = []
    for item in p.items:
        filler = [p.pool[j] for j in p.item_filler[item.index]]
        edge = filler[:2] + filler[-2:] if len(filler) > 4 else filler
        for end in (item.use, item.use + item.right, item.use + item.distractor):
            seqs.append([item.defs, *edge, end])
    for start in range(0, min(len(p.pool), 64 * 64), 64):
        seqs.append(p.pool[start : start + 64])
    return [[piece for piece in seq if piece] for seq in seqs]


def opening_samples(p: CodePlan) -> list[list[str]]:
    """Every padding length of every style, opening a prompt before each item template's
    definitions, for :func:`check_seams`."""
    seqs: list[list[str]] = []
    firsts = {}
    for item in p.items:
        firsts.setdefault(item.template, item)
    for table in p.pads.values():
        for t in range(table.first, table.first + len(table.chars)):
            for item in firsts.values():
                seqs.append([table.block(t), item.defs])
    return seqs


def exact_check(p: CodePlan, row: dict) -> None:
    """Re-encode one whole prompt (and prompt + each choice) and compare every claim."""
    problems = verify_row(p.tok, row)
    if problems:
        raise AssemblyError(f"exact re-encoding of {row['id']} disagrees: {problems[0]}")


def verify_row(tok: PhaseTokenizer, row: dict) -> list[str]:
    """Exact-path checks of one code row: the prompt's token count is its length and anchor,
    and each choice appended to the prompt adds exactly one token (as lm-eval scores it)."""
    problems = []
    prompt = row["prompt"]
    if prompt != prompt.rstrip():
        problems.append("prompt ends with whitespace (lm-eval would move it into the choices)")
    ids = tok.encode(prompt)
    if len(ids) != row["length"] or row["anchor_index"] != row["length"]:
        problems.append(
            f"prompt encodes to {len(ids)} tokens, row claims length {row['length']} and "
            f"anchor {row['anchor_index']}"
        )
    if row["answer"] != row["choices"][0]:
        problems.append("answer is not the first choice")
    for choice in row["choices"]:
        whole = tok.encode(prompt + choice)
        if len(whole) != len(ids) + 1 or whole[: len(ids)] != ids:
            problems.append(f"choice {choice!r} is not a single token after the prompt")
    return problems


def verify_config(spec: SplitSpec, meta: dict) -> list[str]:
    """Config-level claims: every (item, style) unit holds 16 rows whose padding and prompt
    lengths grow by exactly one token per step (lengths are re-encoded by :func:`verify_row`),
    every phase appears equally often in each unit, and the layout fields are consistent."""
    problems = []
    P = spec.modulus
    if set(meta["config_length"]) != {spec.length}:
        problems.append(f"config_length differs from the spec's length {spec.length}")
    if set(meta["question_index"]) != {-1} or set(meta["needle_key"]) != {""}:
        problems.append("code rows must have question_index -1 and an empty needle_key")
    if any(a != n for a, n in zip(meta["anchor_index"], meta["length"], strict=True)):
        problems.append("anchor_index != length (the answer's first token follows the prompt)")
    units: dict[tuple[int, str], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(meta["base_id"], meta["pad_style"], strict=True)):
        units[key].append(i)
    items = {b for b, _ in units}
    if len(items) != spec.n_base:
        problems.append(f"{len(items)} code items, spec asks for {spec.n_base}")
    for (b, style), idx in sorted(units.items()):
        idx = sorted(idx, key=lambda i: meta["pad_tokens"][i])
        pads = np.array([meta["pad_tokens"][i] for i in idx])
        lengths = np.array([meta["length"][i] for i in idx])
        where = f"item {b} style {style}"
        if len(idx) != SWEEP:
            problems.append(f"{where}: {len(idx)} rows, expected {SWEEP}")
        if np.any(np.diff(pads) != 1) or np.any(np.diff(lengths) != 1):
            problems.append(f"{where}: padding does not grow by exactly one token per step")
        if len(set(lengths - pads)) != 1:
            problems.append(f"{where}: something other than the padding changes the length")
        if (
            len({meta["answer"][i] for i in idx}) != 1
            or len({meta["item_id"][i] for i in idx}) != 1
        ):
            problems.append(f"{where}: answer or item_id differs between its rows")
        counts = np.bincount(lengths % P, minlength=P)
        if len(idx) == SWEEP and np.any(counts != SWEEP // P):
            problems.append(f"{where}: phases not covered equally ({counts.tolist()})")
    return problems
