"""Greedy answer-prefix evaluation of a reference model on phasebench ``kv`` rows, in-process.

This is the quick loop used while training and in tests; the benchmark's own path is lm-eval
(``phasebench demo``). Every prompt of a ``kv`` config has the same token count, so a batch
needs no padding and absolute positions are exactly the ones phasebench labelled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from phasebench.metrics import SEED
from phasebench.reference import DEMO_N_BASE, EVAL_LENGTH
from phasebench.reference.model import PhaseRefModel
from phasebench.specs import DEFAULT_MODULUS, DEFAULT_SEED
from phasebench.tokenization import PhaseTokenizer


@torch.no_grad()
def _greedy_answers(
    model: PhaseRefModel,
    tok: PhaseTokenizer,
    prompts: Sequence[str],
    max_new_tokens: int = 4,
    batch_size: int = 64,
) -> list[str]:
    """Greedy continuations, cut at the first newline (lm-eval's ``until: ["\\n"]``)."""
    out: list[str] = []
    for start in range(0, len(prompts), batch_size):
        encoded = [tok.encode(p) for p in prompts[start : start + batch_size]]
        if len({len(e) for e in encoded}) != 1:
            raise ValueError("prompts of one batch must have the same token count")
        ids = torch.tensor(encoded)
        new = []
        for _ in range(max_new_tokens):
            h = model.hidden(ids)[:, -1]
            nxt = model.logits_at(h).argmax(-1)
            new.append(nxt)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
        gen = torch.stack(new, 1).tolist()
        for row in gen:
            text = tok.hf.decode(row)
            out.append(text.split("\n")[0])
    return out


def _prefix_match(generation: str, answer: str) -> int:
    """1 when the stripped generation starts with the gold answer."""
    return int(generation.strip().startswith(answer.strip()))


def _phase_accuracy(rows: Sequence[dict], correct: Sequence[int], modulus: int) -> np.ndarray:
    """Accuracy per phase (fractions)."""
    phases = np.array([r["phase"] for r in rows])
    c = np.asarray(correct, dtype=float)
    return np.array([c[phases == p].mean() for p in range(modulus)])


def evaluate_folder(
    folder, length: int = EVAL_LENGTH, n_base: int = DEMO_N_BASE, seed: int = DEFAULT_SEED
) -> dict:
    """Phase profile of a saved model on a freshly generated ``kv`` config for its tokenizer."""
    from pathlib import Path

    from phasebench.families import kv
    from phasebench.specs import SplitSpec
    from phasebench.tokenization import load_tokenizer

    folder = Path(folder)
    model = PhaseRefModel.from_pretrained(folder).eval()
    tok = load_tokenizer(str(folder))
    spec = SplitSpec(family="kv", length=length, n_base=n_base, seed=seed, tokenizer=str(folder))
    rows = list(kv.prepare(spec, tok).render(range(n_base)))
    gens = _greedy_answers(model, tok, [r["prompt"] for r in rows])
    correct = [_prefix_match(g, r["answer"]) for g, r in zip(gens, rows, strict=True)]
    acc = _phase_accuracy(rows, correct, spec.modulus)
    return {
        "model": str(folder),
        "rows": rows,
        "correct": correct,
        "per_phase": [round(float(a), 4) for a in acc],
    }


def phase_summary(result: dict, seed: int = SEED):
    """``phasebench.stats.summarize`` of an :func:`evaluate_folder` result (its split's
    default modulus, :data:`~phasebench.specs.DEFAULT_MODULUS`, phases), ``seed`` the
    statistics' own."""
    from phasebench.stats import phase_matrix, summarize

    rows = result["rows"]
    matrix = phase_matrix(
        [r["base_id"] for r in rows], [r["phase"] for r in rows], result["correct"], DEFAULT_MODULUS
    )
    return summarize(matrix, seed=seed)
