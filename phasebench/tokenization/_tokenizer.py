"""A loaded tokenizer and the facts phasebench needs about how it encodes: the exact path
(the whole text, positions from its offsets), the fast path (pieces counted as they encode
inside a prompt, after :func:`piece_context`'s left context), its fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from phasebench.errors import AssemblyError
from phasebench.tokenization._names import portable_name
from phasebench.tokenizer_behaviour import Behaviour

#: The left context of :func:`piece_context`.
NEWLINE_CONTEXT = "\n"
#: Pieces that start as phasebench's pieces start (a letter, a word), for :func:`piece_context`.
_CONTEXT_PROBES = ("tkd241: 67067\n", "Below is a list", "Question: what", "x = 1", "velmorax")


@dataclass(frozen=True)
class PhaseTokenizer:
    """A loaded tokenizer plus the facts phasebench needs about how it encodes.

    ``prefix_ids``/``suffix_ids`` are the special tokens the default encoding adds around any
    text (a BOS, for instance); every position phasebench records counts them. ``context`` is
    the left context pieces are counted after (``""``: on their own; see the module docstring),
    ``context_ids`` its tokens, and ``behaviour`` the record of what this tokenizer encodes.
    """

    name: str
    hf: Any
    backend: Any
    prefix_ids: tuple[int, ...]
    suffix_ids: tuple[int, ...]
    fingerprint: str
    context: str = ""
    context_ids: tuple[int, ...] = ()
    behaviour: Behaviour | None = None

    @property
    def n_prefix(self) -> int:
        return len(self.prefix_ids)

    @property
    def n_special(self) -> int:
        return len(self.prefix_ids) + len(self.suffix_ids)

    # -- exact path --------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """The token ids lm-eval's ``hf`` backend feeds the model for ``text``."""
        return list(self.hf.encode(text))

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = self.hf(text, return_offsets_mapping=True)
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]

    def token_index_at(self, text: str, char_positions: Sequence[int]) -> tuple[int, list[int]]:
        """Exact path: total length of ``text`` and the index of the first token whose character
        span holds each char (-1 where none does: a position outside the text, or a character
        only special or empty tokens cover).

        The whole text is encoded as :meth:`encode_with_offsets` encodes it; the spans are read
        where the encoding keeps them (``char_to_token``) rather than copied out as a Python
        tuple per token."""
        enc = self.hf(text)
        n = len(enc["input_ids"])
        result = []
        for c in char_positions:
            hit = enc.char_to_token(c) if 0 <= c < len(text) else None
            result.append(-1 if hit is None else int(hit))
        return n, result

    # -- fast path ---------------------------------------------------------------------------
    def piece_ids(self, pieces: Sequence[str], at_start: bool = False) -> list[list[int]]:
        """Ids of each piece as it encodes inside a prompt, without special tokens; with
        ``at_start``, as it encodes opening a prompt (the piece on its own)."""
        if not pieces:
            return []
        if at_start or not self.context:
            encodings = self.backend.encode_batch(list(pieces), add_special_tokens=False)
            return [e.ids for e in encodings]
        return [ids for ids, _ in self._after_context(pieces, offsets=False)]

    def piece_offsets(self, piece: str, at_start: bool = False) -> list[tuple[int, int]]:
        """Character span, within ``piece``, of each of its tokens (as :meth:`piece_ids`)."""
        if at_start or not self.context:
            return list(self.backend.encode(piece, add_special_tokens=False).offsets)
        ((_, offsets),) = self._after_context([piece], offsets=True)
        return offsets

    def count(self, pieces: Sequence[str], at_start: bool = False) -> np.ndarray:
        """Token count of each piece as it encodes inside a prompt (or, with ``at_start``,
        opening one), without special tokens."""
        return np.array([len(ids) for ids in self.piece_ids(pieces, at_start)], dtype=np.int64)

    def _after_context(self, pieces: Sequence[str], offsets: bool) -> list[tuple[list[int], Any]]:
        head, n, shift = list(self.context_ids), len(self.context_ids), len(self.context)
        texts = [self.context + p for p in pieces]
        out = []
        for piece, e in zip(
            pieces, self.backend.encode_batch(texts, add_special_tokens=False), strict=True
        ):
            ids = e.ids
            if ids[:n] != head:
                raise AssemblyError(
                    f"tokenizer {self.name!r} merges the piece {piece[:20]!r} with the "
                    f"{self.context!r} before it, so it cannot be counted in context"
                )
            spans = [(a - shift, b - shift) for a, b in e.offsets[n:]] if offsets else None
            out.append((ids[n:], spans))
        return out

    @property
    def encoding_key(self) -> str:
        """A short hash of what decides how this install encodes prompts with this tokenizer:
        the fingerprint and the probe ids of its behaviour record (for cache keys)."""
        probe = list(self.behaviour.probe_ids) if self.behaviour else []
        text = json.dumps({"fingerprint": self.fingerprint, "probe_ids": probe})
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    @property
    def portable_name(self) -> str:
        """The name rows, manifests and cards carry (:func:`portable_name`)."""
        return portable_name(self.name)

    def describe(self) -> dict[str, Any]:
        """The manifest's ``tokenizer`` entry (compared by :func:`encoding_difference`)."""
        return {
            "name": self.portable_name,
            "fingerprint": self.fingerprint,
            "prefix_ids": list(self.prefix_ids),
            "suffix_ids": list(self.suffix_ids),
            "class": type(self.hf).__name__,
            "piece_context": self.context,
            "behaviour": self.behaviour.to_dict() if self.behaviour else None,
        }


def tokenizer_fingerprint(
    backend: Any, prefix_ids: Iterable[int], suffix_ids: Iterable[int]
) -> str:
    """SHA-256 of the tokenizer's full serialized definition and its special-token behaviour."""
    h = hashlib.sha256()
    h.update(backend.to_str().encode("utf-8"))
    h.update(json.dumps({"prefix_ids": list(prefix_ids), "suffix_ids": list(suffix_ids)}).encode())
    return "sha256:" + h.hexdigest()


def piece_context(backend: Any) -> str:
    """The left context pieces are counted after: ``""`` (on their own) when the probe pieces
    encode the same on their own as after a newline, :data:`NEWLINE_CONTEXT` when they do not
    (a prefix space at the start of a text) and the newline never merges with them."""
    head = backend.encode(NEWLINE_CONTEXT, add_special_tokens=False).ids
    alone = backend.encode_batch(list(_CONTEXT_PROBES), add_special_tokens=False)
    after = backend.encode_batch(
        [NEWLINE_CONTEXT + p for p in _CONTEXT_PROBES], add_special_tokens=False
    )
    differs = False
    for a, b in zip(alone, after, strict=True):
        if b.ids[: len(head)] != head:
            return ""  # the newline merges with what follows: no context helps, seams decide
        differs = differs or b.ids[len(head) :] != a.ids
    return NEWLINE_CONTEXT if differs else ""
