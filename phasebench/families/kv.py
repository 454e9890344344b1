"""The ``kv`` family: ``key: value`` records, then a question for one key.

Keys are three letters and three digits (``qmx042``), unique within a prompt; values have five
digits. With the DeepSeek-V4 tokenizer a record is about 8 tokens, so a 131,072-token prompt holds
about 16,000 records; the count always follows from the length and the tokenizer.

Body records come from one pool per config (keys unique in the pool), encoded once, so positions
are sums of record counts; the needle's key is drawn outside the pool, so its first occurrence in
the prompt is the needle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from phasebench import templates
from phasebench.families import needle as engine
from phasebench.rng import derive_rng

if TYPE_CHECKING:  # annotations only: a family reads nothing of specs when it runs
    from phasebench.specs import SplitSpec

KEY_SPACE = 26**3 * 1000
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


def key_text(code: int) -> str:
    letters, digits = divmod(int(code), 1000)
    a, rest = divmod(letters, 26 * 26)
    b, c = divmod(rest, 26)
    return f"{_LETTERS[a]}{_LETTERS[b]}{_LETTERS[c]}{digits:03d}"


def record(key: str, value: str) -> str:
    return f"{key}: {value}\n"


def pool_size(length: int) -> int:
    """Enough records for any tokenizer that spends at least two tokens on a record."""
    return length // 2 + 1024


def content(spec: SplitSpec) -> engine.NeedleContent:
    rng = derive_rng(spec.seed, "kv", spec.length, "pool")
    size = pool_size(spec.length)
    codes = rng.choice(KEY_SPACE, size=size, replace=False)
    values = rng.integers(10_000, 100_000, size=size)
    pool = [record(key_text(c), str(v)) for c, v in zip(codes, values, strict=True)]
    taken = set(int(c) for c in codes)

    def draw_needle(r: np.random.Generator) -> engine.Needle:
        while True:  # the pool covers under 1% of the key space
            code = int(r.integers(0, KEY_SPACE))
            if code not in taken:
                break
        return needle(key_text(code), str(int(r.integers(10_000, 100_000))))

    def draw_body(r: np.random.Generator, n: int) -> np.ndarray:
        return r.choice(size, size=min(n, size), replace=False)

    return engine.NeedleContent(
        header=templates.render("kv/header.j2"),
        pool=pool,
        draw_needle=draw_needle,
        draw_body=draw_body,
    )


def needle(key: str, value: str) -> engine.Needle:
    """The needle record for ``key`` and its ``value``, and the question asking for it."""
    return engine.Needle(
        lead="",
        keyed=record(key, value),
        key=key,
        answer=value,
        question=templates.render("kv/question.j2", key=key),
    )


def describe(plan: engine.NeedlePlan) -> dict:
    records = [len(it.body) + 1 for it in plan.items]
    return {
        "records_per_prompt_mean": round(float(np.mean(records)), 2),
        "records_per_prompt_min": int(np.min(records)),
        "records_per_prompt_max": int(np.max(records)),
    }


FAMILY = engine.needle_family(
    "kv",
    content=lambda spec, tok: content(spec),
    needle=needle,
    describe=describe,
    hub_tag="key-value-retrieval",
)
#: Plan a config (:func:`phasebench.families.needle.prepare` on kv's content).
prepare = FAMILY.prepare
