"""Training sequences in the ``kv`` family's own textual format.

Each sequence is a real ``kv`` prompt rendered by phasebench's paired engine (header, records,
fillers, the needle at one of the 8 phases, the question), followed by its answer and then by
more questions about other records of the same prompt, each with its answer. Seeds differ from
evaluation seeds (a training chunk's seed is ``TRAIN_SEED_BASE + chunk``), so no evaluation prompt
is ever seen. Only answer tokens carry a loss: records are random and not predictable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from phasebench import templates
from phasebench.families import kv
from phasebench.rng import derive_rng
from phasebench.specs import SplitSpec
from phasebench.tokenization import PhaseTokenizer

#: Training chunk ``c`` uses split seed ``TRAIN_SEED_BASE + c``; evaluation uses small seeds.
TRAIN_SEED_BASE = 1_000_000
RECORD = re.compile(r"^([a-z]{3}\d{3}): (\d{5})$", re.MULTILINE)


@dataclass(frozen=True)
class Batch:
    input_ids: torch.Tensor  # (B, T)
    labels: torch.Tensor  # (B, T), -100 where no loss


def _answer_text(value: str) -> str:
    """What follows ``... is`` in a prompt: the value as the model should generate it."""
    return f" {value}\n"


def _answer_line(key: str) -> str:
    """The answer line of the kv question template (its last line) for ``key``: the extra
    questions of a training sequence use only this line, which carries the same cue (``... of
    KEY is``) at a third of the cost of the whole question."""
    return templates.render("kv/question.j2", key=key).split("\n")[-1]


def sequences(
    tok: PhaseTokenizer,
    length: int,
    chunk: int,
    n_base: int = 64,
    extra_questions: int = 20,
) -> list[tuple[list[int], list[int]]]:
    """(ids, labels) of every row of training chunk ``chunk``: all 8 phases of each base item."""
    spec = SplitSpec(
        family="kv",
        length=length,
        n_base=n_base,
        seed=TRAIN_SEED_BASE + chunk,
        tokenizer=tok.name,
    )
    plan = kv.prepare(spec, tok)
    out = []
    for row in plan.render(range(n_base)):
        rng = derive_rng(spec.seed, "reference-train", row["id"])
        records = RECORD.findall(row["prompt"])
        picks = rng.choice(len(records), size=min(extra_questions, len(records)), replace=False)
        pieces = [(row["prompt"], False), (_answer_text(row["answer"]), True)]
        for i in picks:
            key, value = records[int(i)]
            pieces += [(_answer_line(key), False)]
            pieces += [(_answer_text(value), True)]
        encoded = tok.piece_ids([p for p, _ in pieces])  # exact: the tokenizer has no merges
        ids: list[int] = []
        labels: list[int] = []
        for piece_ids, (_, target) in zip(encoded, pieces, strict=True):
            ids += piece_ids
            labels += piece_ids if target else [-100] * len(piece_ids)
        out.append((ids, labels))
    return out


def batches(
    tok: PhaseTokenizer, length: int, batch_size: int, seed: int, n_base: int = 64
) -> Iterator[Batch]:
    """An endless, deterministic stream of shuffled batches, one training chunk at a time."""
    pad = tok.hf.pad_token_id
    chunk = 0
    while True:
        rows = sequences(tok, length, chunk, n_base)
        order = derive_rng(seed, "reference-order", chunk).permutation(len(rows))
        for start in range(0, len(order) - batch_size + 1, batch_size):
            group = [rows[int(i)] for i in order[start : start + batch_size]]
            T = max(len(ids) for ids, _ in group)
            ids = np.full((batch_size, T), pad, dtype=np.int64)
            labels = np.full((batch_size, T), -100, dtype=np.int64)
            for b, (i, lab) in enumerate(group):
                ids[b, : len(i)] = i
                labels[b, : len(lab)] = lab
            yield Batch(torch.from_numpy(ids), torch.from_numpy(labels))
        chunk += 1
