"""Prefill with and without a prefix cache: what a split costs a server.

The P renderings of a base item share every token up to the needle's pad zone, so a server
that keeps the previous prompt's KV cache (vLLM's ``--enable-prefix-caching``, SGLang's radix
cache) computes only the tokens after the shared prefix. The figures here are exact: they come
from the token ids of each whole sequence, in the order the prompts are sent, counting for each
prompt its tokens after the longest prefix it shares with the prompt sent just before it (an
ideal cache holding one prompt; a real cache holding more can only save more).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Number of leading tokens ``a`` and ``b`` have in common."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if len(diff) else n


def prefill_tokens(sequences: Iterable[Sequence[int]]) -> dict[str, Any]:
    """Prefill of ``sequences`` (token ids, in the order they are sent): ``prefill_tokens``
    without a cache, ``prefill_tokens_prefix_cache`` with an ideal cache of the previous
    prompt, and ``prefix_cache_saving``, the share the cache saves."""
    total = cached = n = 0
    previous: Sequence[int] = ()
    for ids in sequences:
        n += 1
        total += len(ids)
        cached += len(ids) - shared_prefix(previous, ids)
        previous = ids
    return {
        "prompts": n,
        "prefill_tokens": total,
        "prefill_tokens_prefix_cache": cached,
        "prefix_cache_saving": round(1 - cached / total, 4) if total else 0.0,
    }


def adjacent_renderings(base_ids: Sequence[int]) -> bool:
    """Whether every base item's prompts are sent one after another (``base_ids`` in send
    order): the condition for the renderings of an item to share their prefix in the cache."""
    seen: set[int] = set()
    last = None
    for b in base_ids:
        if b != last:
            if b in seen:
                return False
            seen.add(b)
            last = b
    return True
