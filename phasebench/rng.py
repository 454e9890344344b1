"""Random streams derived from stable keys.

Every random choice in phasebench comes from ``derive_rng(seed, *key)``: a SHA-256 of the key
seeds a :class:`numpy.random.Generator`. Sharding, resuming, process count and the order in which
items are produced therefore cannot change the data. Nothing here touches global random state.
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(seed: int, *key: object) -> int:
    """A 128-bit integer that depends only on ``seed`` and the parts of ``key``."""
    text = "\x1f".join([str(int(seed)), *(str(part) for part in key)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:16], "big")


def derive_rng(seed: int, *key: object) -> np.random.Generator:
    """A fresh generator for the stream named by ``key`` (e.g. ``seed, "kv", 4096, "base", 17``)."""
    return np.random.Generator(np.random.PCG64(derive_seed(seed, *key)))
