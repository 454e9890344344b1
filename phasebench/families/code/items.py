"""Items of the ``code`` family: drawn from the item templates under ``generators/code/<template>/``
(``defs.j2``, ``use.j2``), identifiers and constants drawn per item, each redrawn until its right
answer and its distractor are single tokens in the context of its prompt."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import yaml

from phasebench import templates
from phasebench.errors import AssemblyError
from phasebench.rng import derive_rng
from phasebench.tokenization import PhaseTokenizer

if TYPE_CHECKING:  # annotations only: a family reads nothing of specs when it runs
    from phasebench.specs import SplitSpec

#: Item templates under ``generators/code/``; item ``i`` uses ``TEMPLATES[i % 4]``.
TEMPLATES = ("cast", "bits", "block", "heads")
#: Streams tried per item before its item template is declared unusable for the tokenizer.
MAX_ATTEMPTS = 64
#: From this attempt on, an item draws single-digit answers only (``FP8`` vs ``FP4``, 8 heads vs
#: 2): tokenizers that split numbers into digits (Llama, SmolLM2) cannot score ``32`` as one token.
NARROW_AFTER = 8


@functools.lru_cache(maxsize=1)
def names() -> dict[str, tuple[str, ...]]:
    """Identifier parts (``generators/code/names.yaml``)."""
    path = templates.generators_dir() / "code" / "names.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {str(k): tuple(str(w) for w in v) for k, v in data.items()}


def _pick(rng: np.random.Generator, options: Sequence, k: int | None = None):
    if k is None:
        return options[int(rng.integers(len(options)))]
    return [options[int(i)] for i in rng.choice(len(options), size=k, replace=False)]


def _draw_cast(rng: np.random.Generator, narrow: bool) -> dict:
    n = names()
    pairs = [(8, 4), (4, 8)] if narrow else [(8, 32), (8, 16), (16, 32)]
    right, distractor = _pick(rng, pairs)
    dtypes = {
        4: ("float4_e2m1fn",),
        8: ("float8_e4m3fn", "float8_e5m2"),
        16: ("float16", "bfloat16"),
        32: ("float32",),
    }
    a, out, acc = _pick(rng, n["tensor"], 3)
    return {
        "right": right,
        "distractor": distractor,
        "dtype_right": _pick(rng, dtypes[right]),
        "dtype_distractor": _pick(rng, dtypes[distractor]),
        "out_dtype": _pick(rng, ["out_dtype", "store_dtype", "dst_dtype", "q_dtype"]),
        "acc_dtype": _pick(rng, ["accum_dtype", "acc_dtype", "compute_dtype"]),
        "kernel": f"{_pick(rng, n['verb'])}_{_pick(rng, n['op'])}",
        "a": a,
        "out": out,
        "acc": f"{acc}_frag",
        "m": _pick(rng, [1024, 2048, 4096, 8192]),
        "k": _pick(rng, [512, 1024, 2048, 7168]),
        "bm": _pick(rng, [32, 64, 128]),
        "bn": _pick(rng, [64, 128, 256]),
        "threads": _pick(rng, [128, 256]),
    }


def _draw_bits(rng: np.random.Generator, narrow: bool) -> dict:
    n = names()
    right, distractor = _pick(rng, [2, 4, 8] if narrow else [4, 8, 16, 32], 2)
    prefix, other = _pick(rng, ["WEIGHT", "ACT", "KV", "GRAD", "SCALE", "INDEX", "CODE"], 2)
    x, q = _pick(rng, n["word"], 2)
    return {
        "right": right,
        "distractor": distractor,
        "prefix": prefix,
        "other": other,
        "other_use": _pick(rng, ["debug dumps", "legacy checkpoints", "reference path"]),
        "fn": f"quantize_{_pick(rng, n['word'])}",
        "x": x,
        "q": q,
        "scale": _pick(rng, ["scale", "step", "delta", "unit"]),
    }


BLOCK_NAMES = (
    ("BLOCK_M", "BLOCK_N"),
    ("BLOCK_ROWS", "BLOCK_COLS"),
    ("TILE_M", "TILE_N"),
    ("BLOCK_SIZE_M", "BLOCK_SIZE_N"),
    ("BM", "BN"),
    ("BLOCK_Q", "BLOCK_KV"),
)


def _draw_block(rng: np.random.Generator, narrow: bool) -> dict:
    """Asks a tile size (16..256), or, narrowed, the warp count against the stage count."""
    n = names()
    bm_val, bn_val = _pick(rng, [16, 32, 64, 128, 256], 2)
    warps = _pick(rng, [2, 4, 8])  # a power of two; the stage count is any other small number
    stages = _pick(rng, [n for n in (2, 3, 4, 5) if n != warps])
    pair = _pick(rng, BLOCK_NAMES)
    bm, bn = pair if rng.random() < 0.5 else pair[::-1]
    return {
        "right": warps if narrow else bm_val,
        "distractor": stages if narrow else bn_val,
        "asks": "warps" if narrow else "bm",
        "bm": bm,
        "bn": bn,
        "bm_val": bm_val,
        "bn_val": bn_val,
        "warps": warps,
        "stages": stages,
        "gpu": _pick(rng, n["gpu"]),
        "fn": f"{_pick(rng, n['verb'])}_{_pick(rng, n['op'])}_config",
    }


KV_CLASSES = ("KVCache", "PagedKVCache", "StaticCache")
Q_CLASSES = ("QueryBuffer", "ScoreBuffer")


def _draw_heads(rng: np.random.Generator, narrow: bool) -> dict:
    n = names()
    heads = 8 if narrow else _pick(rng, [16, 32, 64])
    kv_heads = _pick(rng, [1, 2, 4] if narrow else [1, 2, 4, 8])
    head_dim = _pick(rng, [64, 128])
    asks_kv = rng.random() < 0.5
    return {
        "right": kv_heads if asks_kv else heads,
        "distractor": heads if asks_kv else kv_heads,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "hidden": heads * head_dim,
        "model": _pick(rng, n["model"]) + _pick(rng, ["", "2", "Lite", "Mini", "X"]),
        "fn": f"make_{_pick(rng, ['cache', 'buffer', 'state', 'slots'])}",
        "what": "key/value cache" if asks_kv else "query buffer",
        "cls": _pick(rng, KV_CLASSES if asks_kv else Q_CLASSES),
        "kwarg": "num_kv_heads" if asks_kv else "num_heads",
    }


_DRAW = {"cast": _draw_cast, "bits": _draw_bits, "block": _draw_block, "heads": _draw_heads}


@dataclass(frozen=True)
class Item:
    index: int
    template: str
    defs: str  # definitions the answer depends on
    use: str  # the code that ends exactly at the completion point
    right: str
    distractor: str
    attempts: int  # streams drawn (1 = no replacement)

    @property
    def item_id(self) -> str:
        return f"{self.template}-{self.index:04d}"


def render_item(template: str, values: dict) -> tuple[str, str]:
    return (
        templates.render(f"code/{template}/defs.j2", **values),
        templates.render(f"code/{template}/use.j2", **values),
    )


def single_token_continuation(tok: PhaseTokenizer, context: str, continuation: str) -> bool:
    """Whether ``context + continuation`` encodes as ``context``'s tokens plus exactly one."""
    base, whole = tok.piece_ids([context, context + continuation])
    return len(whole) == len(base) + 1 and whole[: len(base)] == base


def draw_items(spec: SplitSpec, tok: PhaseTokenizer) -> tuple[list[Item], Counter]:
    """``spec.n_base`` distinct items whose answers are single tokens in context; failing or
    repeated draws are replaced by the item's next stream. Items do not depend on the length."""
    items: list[Item] = []
    seen: set[str] = set()
    reasons: Counter = Counter()
    for i in range(spec.n_base):
        template = TEMPLATES[i % len(TEMPLATES)]
        for attempt in range(MAX_ATTEMPTS):
            narrow = attempt >= NARROW_AFTER
            values = _DRAW[template](derive_rng(spec.seed, "code", "item", i, attempt), narrow)
            defs, use = render_item(template, values)
            right, distractor = str(values["right"]), str(values["distractor"])
            if defs + use in seen:
                reasons["duplicate"] += 1
                continue
            if not (
                single_token_continuation(tok, use, right)
                and single_token_continuation(tok, use, distractor)
            ):
                reasons[f"multi_token_answer:{template}"] += 1
                continue
            seen.add(defs + use)
            items.append(Item(i, template, defs, use, right, distractor, attempt + 1))
            break
        else:
            raise AssemblyError(
                f"tokenizer {tok.name!r}: no '{template}' code item with single-token answers in "
                f"{MAX_ATTEMPTS} draws"
            )
    return items, reasons
