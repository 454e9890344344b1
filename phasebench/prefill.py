"""Prefill with and without a prefix cache: what a split costs a server.

The P renderings of a base item share every token up to the needle's pad zone, so a server
that keeps the previous prompt's KV cache (vLLM's ``--enable-prefix-caching``, SGLang's radix
cache) computes only the tokens after the shared prefix. The figures are exact token counts, in
the order the prompts are sent, counting for each prompt its tokens after the longest prefix it
shares with the prompt sent just before it (an ideal cache holding one prompt; a real cache
holding more can only save more). The build counts them for the manifest from the pieces a plan
joins (:func:`plan_figures`, the fast path); ``verify`` and the tests count them again from the
token ids of every whole sequence (:func:`exact_figures`) and compare.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from phasebench.lmeval_compat import send_order


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
        "prefix_cache_saving": saving(cached, total),
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


# -- the figures a manifest states ---------------------------------------------------------------
#
# A manifest states, for every config whose plan lays its prompts out in pieces, the prefill of
# its prompts in two send orders:
#
# - ``stored_order``: the rows as the split stores them (every base item's renderings together);
# - ``lm_eval_order``: as lm-eval's ``hf`` backend sends generation requests
#   (``phasebench.lmeval_compat.send_order``, where the model of lm-eval's order lives). A group
#   of requests is one prompt token count (``phasebench.lmeval.batching``: no row is padded on
#   the left), so on the length-phase axis an item's renderings fall into P groups, sent one
#   group after another. ``tests/test_lmeval_compat.py`` checks the order on
#   lm-eval's ``hf`` backend itself, and ``tests/lmeval/test_request_order.py`` the figures
#   of a whole split.
#
# The build counts from the fast path (piece token ids, no whole prompt encoded); ``phasebench
# verify`` re-derives the figures from the exact ids of every whole prompt.

#: The manifest key of the figures.
MANIFEST_KEY = "prefill"
#: The send orders a manifest states figures for.
ORDERS = ("stored_order", "lm_eval_order")


@dataclass(frozen=True)
class PromptPieces:
    """A config's prompts as its plan assembles them, so that prefill figures need no whole
    prompt encoded: ``texts`` is a table of piece texts, of which those in ``opening`` open a
    prompt (encoded as at the start of a text, every other one as inside a prompt, as the fast
    path counts them); ``row(i)`` gives the indices into ``texts`` of row ``i``'s pieces (rows in
    stored order), ``base_ids`` every row's base item; ``counts``, where the plan has them,
    the token counts of the first ``len(counts)`` texts (the plan's body pieces, counted once)."""

    texts: Sequence[str]
    opening: frozenset[int]
    row: Callable[[int], np.ndarray]
    base_ids: Sequence[int]
    counts: np.ndarray | None = None


def order_figures(
    lengths: Sequence[int], shared: Callable[[int, int], int], order: Sequence[int],
    base_ids: Sequence[int],
) -> dict[str, Any]:  # fmt: skip
    """Prefill with an ideal one-prompt cache for the rows sent in ``order``: ``shared(i, j)``
    is the number of leading tokens rows ``i`` and ``j`` have in common."""
    cached, previous = 0, None
    for i in order:
        cached += int(lengths[i]) - (0 if previous is None else shared(previous, i))
        previous = i
    return {
        "prefill_tokens_prefix_cache": cached,
        "prefix_cache_saving": saving(cached, sum(int(n) for n in lengths)),
        "items_together": adjacent_renderings([base_ids[i] for i in order]),
    }


def saving(cached: int, total: int) -> float:
    """The share of ``total`` prefill tokens a cache that leaves ``cached`` of them saves (four
    decimals, as the manifest states it)."""
    return round(1 - cached / total, 4) if total else 0.0


def figures(
    lengths: Sequence[int],
    shared: Callable[[int, int], int],
    before: Callable[[int, int], int] | None,
    base_ids: Sequence[int],
) -> dict[str, Any]:
    """The manifest's ``prefill`` entry: prompts, prefill tokens without a cache, and each send
    order's figures (``lm_eval_order`` is None where ``before`` is None: a split lm-eval scores
    by log-likelihood, whose requests it orders by other rules)."""
    n = len(lengths)
    out: dict[str, Any] = {
        "prompts": n,
        "prefill_tokens": int(sum(int(x) for x in lengths)),
        "stored_order": order_figures(lengths, shared, range(n), base_ids),
        "lm_eval_order": None,
    }
    if before is not None:
        out["lm_eval_order"] = order_figures(lengths, shared, send_order(lengths, before), base_ids)
    return out


class _FastIds:
    """Token ids of pieces (the fast path), counted once per piece text."""

    def __init__(self, tok: Any, pieces: PromptPieces) -> None:
        self.tok, self.pieces = tok, pieces
        texts, known = pieces.texts, 0 if pieces.counts is None else len(pieces.counts)
        inside = [i for i in range(known, len(texts)) if i not in pieces.opening]
        opening = sorted(pieces.opening)
        self.counts = np.zeros(len(texts), dtype=np.int64)
        self.counts[:known] = pieces.counts if known else 0
        if inside:
            self.counts[inside] = tok.count([texts[i] for i in inside])
        if opening:
            self.counts[opening] = tok.count([texts[i] for i in opening], at_start=True)
        self._ids: dict[int, list[int]] = {}
        self.row = functools.lru_cache(maxsize=64)(pieces.row)

    def ids(self, k: int) -> list[int]:
        if k not in self._ids:
            at_start = k in self.pieces.opening
            self._ids[k] = self.tok.piece_ids([self.pieces.texts[k]], at_start)[0]
        return self._ids[k]

    def length(self, i: int) -> int:
        return self.tok.n_special + int(self.counts[self.row(i)].sum())

    def _stream(self, row: np.ndarray, start: int) -> Iterator[int]:
        for k in row[start:]:
            yield from self.ids(int(k))
        yield from self.tok.suffix_ids

    def shared(self, i: int, j: int) -> int:
        """Leading tokens rows ``i`` and ``j`` share: every piece before the first one that
        differs is shared whole (pieces do not merge across their seams), then token by token."""
        a, b = self.row(i), self.row(j)
        k = _first_difference(a, b)
        n = self.tok.n_prefix + int(self.counts[a[:k]].sum())
        for x, y in zip(self._stream(a, k), self._stream(b, k)):  # noqa: B905 (ends differ)
            if x != y:
                break
            n += 1
        return n

    def before(self, i: int, j: int) -> int:
        """-1, 0 or 1 as row ``i``'s prompt text sorts before, with or after row ``j``'s."""
        a, b = self.row(i), self.row(j)
        k = _first_difference(a, b)
        texts = self.pieces.texts
        ia = (texts[int(p)] for p in a[k:] if texts[int(p)])
        ib = (texts[int(p)] for p in b[k:] if texts[int(p)])
        sa: str | None = ""
        sb: str | None = ""
        while True:
            sa = sa or next(ia, None)
            sb = sb or next(ib, None)
            if sa is None or sb is None:
                return (sa is not None) - (sb is not None)
            m = min(len(sa), len(sb))
            if sa[:m] != sb[:m]:
                return -1 if sa[:m] < sb[:m] else 1
            sa, sb = sa[m:], sb[m:]


def _first_difference(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else n


def plan_figures(tok: Any, pieces: PromptPieces, lm_eval_order: bool) -> dict[str, Any]:
    """The ``prefill`` entry of a config from its plan's pieces (the fast path: piece token
    ids, the seams the build checks); ``lm_eval_order``: whether lm-eval sends its prompts as
    generation requests (:func:`send_order` applies)."""
    fast = _FastIds(tok, pieces)
    lengths = [fast.length(i) for i in range(len(pieces.base_ids))]
    before = fast.before if lm_eval_order else None
    return figures(lengths, fast.shared, before, pieces.base_ids)


def exact_figures(
    ids: Sequence[Sequence[int]], texts: Sequence[str] | None, base_ids: Sequence[int]
) -> dict[str, Any]:
    """The same entry from the exact token ids of every whole prompt (stored order) and, for
    lm-eval's order, their texts (None: a split scored by log-likelihood)."""
    arrays = [np.asarray(x) for x in ids]
    lengths = [len(x) for x in arrays]

    def shared(i: int, j: int) -> int:
        return shared_prefix(arrays[i], arrays[j])

    def before(i: int, j: int) -> int:
        return (texts[i] > texts[j]) - (texts[i] < texts[j])  # type: ignore[index]

    return figures(lengths, shared, None if texts is None else before, base_ids)


def shape_problem(entry: Any) -> str | None:
    """What is wrong with the shape of a manifest's ``prefill`` entry, or None (a manifest
    without one, written before phasebench stated prefill figures, is fine)."""
    if entry is None:
        return None
    if not isinstance(entry, dict) or not all(
        _count(entry.get(k)) for k in ("prompts", "prefill_tokens")
    ):
        return "must be a mapping with counts of prompts and prefill_tokens"
    for order in ORDERS:
        figures = entry.get(order)
        if figures is None and order != "stored_order":
            continue
        if not isinstance(figures, dict) or not _count(figures.get("prefill_tokens_prefix_cache")):
            return f"{order} needs a count of prefill_tokens_prefix_cache"
        saving = figures.get("prefix_cache_saving")
        if not isinstance(saving, int | float) or isinstance(saving, bool) or not 0 <= saving <= 1:
            return f"{order} needs a prefix_cache_saving between 0 and 1"
        if not isinstance(figures.get("items_together"), bool):
            return f"{order} needs items_together (true or false)"
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def for_base_items(manifest: dict[str, Any], n_base: int, modulus: int) -> dict[str, Any]:
    """A config's prefill figures scaled from the base items it was built with to ``n_base``
    (what ``phasebench power`` recommends): every count times ``n_base / built``, rounded; the
    savings are the config's own. Refuses a config of another modulus or without figures."""
    from phasebench.errors import SplitError

    spec, entry = manifest["spec"], manifest.get(MANIFEST_KEY)
    name = manifest["config"]
    if int(spec.get("modulus", 0)) != modulus:
        raise SplitError(
            f"config {name!r} has modulus {spec.get('modulus')}, not {modulus}; pass its "
            f"--modulus or a split built at modulus {modulus}"
        )
    if entry is None:
        raise SplitError(
            f"config {name!r} states no {MANIFEST_KEY} figures (built before phasebench stated "
            f"them); regenerate it with `phasebench generate`"
        )
    built = int(spec["n_base"])

    def scale(count: int) -> int:
        return (int(count) * n_base + built // 2) // built

    out: dict[str, Any] = {
        "config": name,
        "built_n_base": built,
        "n_base": n_base,
        "prompts": scale(entry["prompts"]),
        "prefill_tokens": scale(entry["prefill_tokens"]),
    }
    for order in ORDERS:
        figures = entry.get(order)
        out[order] = None if figures is None else {
            "prefill_tokens_prefix_cache": scale(figures["prefill_tokens_prefix_cache"]),
            "prefix_cache_saving": figures["prefix_cache_saving"],
        }  # fmt: skip
    return out
