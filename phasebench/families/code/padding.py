"""Padding blocks of the ``code`` family: the four styles, and per tokenizer the character counts
whose block grows by exactly one token per step (measured, never assumed: ``========`` can be one
token, so a character is not a token)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phasebench.errors import AssemblyError
from phasebench.tokenization import PhaseTokenizer

#: Padding styles: (name, line prefix, repeated character, opening, closing).
STYLES = (
    ("docstring_eq", "", "=", '"""\n', '\n"""\n'),
    ("comment_dash", "# ", "-", "", "\n"),
    ("comment_hash", "", "#", "", "\n"),
    ("comment_star", "# ", "*", "", "\n"),
)
STYLE_NAMES = tuple(s[0] for s in STYLES)
#: Padding lengths per unit, one token apart.
SWEEP = 16
#: Longest padding block searched, in characters.
MAX_PAD_CHARS = 1 << 13
#: Padding lengths measured per tokenizer call.
PAD_WINDOW = 64


def pad_block(style: str, n_chars: int) -> str:
    """The padding block of ``style``: one line of ``n_chars`` repeated characters (as in the
    published probe; wrapping would add several tokens at once and break the one-token steps)."""
    _, prefix, char, opening, closing = STYLES[STYLE_NAMES.index(style)]
    return opening + prefix + char * n_chars + closing


@dataclass(frozen=True)
class PadTable:
    """Character counts whose block encodes to ``first``, ``first + 1``, ... tokens (measured),
    each longer than the previous one."""

    style: str
    first: int
    chars: tuple[int, ...]

    def block(self, tokens: int) -> str:
        i = tokens - self.first
        if not 0 <= i < len(self.chars):
            raise AssemblyError(
                f"no {self.style} padding of {tokens} tokens (table covers {self.first}.."
                f"{self.first + len(self.chars) - 1})"
            )
        return pad_block(self.style, self.chars[i])


_PAD_TABLES: dict[tuple[str, str], PadTable] = {}


def build_pad_table(tok: PhaseTokenizer, style: str, n_tokens: int) -> PadTable:
    """Measure block token counts for growing character counts and keep, from the shortest
    block on, the first longer block that has exactly one token more, ``n_tokens`` times.

    Counts are measured in windows of :data:`PAD_WINDOW` lengths; long runs of one character
    encode slowly, so tables are kept per tokenizer fingerprint and extended on demand (a pure
    cache: the table is a function of the tokenizer and the style)."""
    key = (tok.fingerprint, style)
    table = _PAD_TABLES.get(key)
    if table is None:
        table = PadTable(style, int(tok.count([pad_block(style, 1)], at_start=True)[0]), (1,))
    chars = list(table.chars)
    lo = chars[-1] + 1  # the shortest length not measured yet past the last kept one
    while len(chars) < n_tokens:
        want = table.first + len(chars)
        found = None
        while found is None and lo <= MAX_PAD_CHARS:
            lengths = np.arange(lo, lo + PAD_WINDOW)
            counts = tok.count([pad_block(style, int(n)) for n in lengths], at_start=True)
            hits = np.nonzero(counts == want)[0]
            if len(hits):
                found = int(lengths[hits[0]])
            else:
                lo += PAD_WINDOW
        if found is None:
            raise AssemblyError(
                f"tokenizer {tok.name!r}: no {style} padding of {want} tokens within "
                f"{MAX_PAD_CHARS} characters, so the padding cannot grow one token per step"
            )
        chars.append(found)
        lo = found + 1
    if len(chars) > len(table.chars):
        table = PadTable(style, table.first, tuple(chars))
        _PAD_TABLES[key] = table
    return PadTable(style, table.first, table.chars[:n_tokens])
