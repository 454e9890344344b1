"""The ``code`` family's pool of unrelated code: distinct snippets of Python rendered from the
shapes under ``generators/code/filler/``, put between an item's definitions and its use."""

from __future__ import annotations

import numpy as np

from phasebench import templates
from phasebench.families.code.items import _pick, names

FILLER_SHAPES = ("function", "klass", "table", "loop", "parse", "guard")


def filler_pool(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` distinct snippets of unrelated Python (``generators/code/filler/``)."""
    n = names()
    seen: dict[str, None] = {}
    for _ in range(64):  # bounded; each round yields mostly new snippets
        if len(seen) >= size:
            break
        for _ in range(size - len(seen)):
            w = _pick(rng, n["word"], 4)
            noun = _pick(rng, n["noun"])
            values = {
                "fn": f"{_pick(rng, n['verb'])}_{w[0]}_{noun}",
                "cls": w[0].title().replace("_", "") + noun.title(),
                "const": f"{w[1]}_{noun}".upper(),
                "noun": noun,
                "w1": w[0],
                "w2": w[1],
                "w3": w[2],
                "w4": w[3],
                "n1": int(rng.integers(2, 1000)),
                "n2": int(rng.integers(2, 1000)),
                "n3": int(rng.integers(2, 1000)),
            }
            shape = _pick(rng, FILLER_SHAPES)
            seen.setdefault(templates.render(f"code/filler/{shape}.j2", **values), None)
    return list(seen)[:size]


def filler_pool_size(length: int) -> int:
    """Snippets enough for any tokenizer that spends at least 16 tokens on one."""
    return length // 16 + 64 if length else 0
