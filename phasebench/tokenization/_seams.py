"""The fast path's guarantees: seams proven not to merge (:func:`check_seams`), and filler
lines of an exact token count (:class:`FillerTable`), both measured on the tokenizer itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phasebench.errors import AssemblyError
from phasebench.tokenization._tokenizer import PhaseTokenizer


def check_seams(
    tok: PhaseTokenizer,
    sequences: Sequence[Sequence[str]],
    what: str,
    opening: Sequence[Sequence[str]] = (),
) -> None:
    """Prove that, for each sequence of pieces, encoding the joined text gives the concatenation
    of the pieces' encodings as the fast path counts them; raise :class:`AssemblyError` naming
    the first seam that merges.

    ``sequences`` follow each other inside a prompt (every piece as :meth:`PhaseTokenizer.count`
    encodes it); the first piece of each ``opening`` sequence opens a prompt (``at_start``).
    """
    _check_additive(tok, [list(s) for s in sequences if s], what, at_start=False)
    _check_additive(tok, [list(s) for s in opening if s], what, at_start=True)


def _check_additive(
    tok: PhaseTokenizer, sequences: list[list[str]], what: str, at_start: bool
) -> None:
    if not sequences:
        return
    whole = tok.piece_ids(["".join(seq) for seq in sequences], at_start)
    firsts = tok.piece_ids([seq[0] for seq in sequences], at_start)
    rest = iter(tok.piece_ids([p for seq in sequences for p in seq[1:]]))
    for seq, ids, first in zip(sequences, whole, firsts, strict=True):
        expected = list(first)
        for _ in seq[1:]:
            expected.extend(next(rest))
        if ids == expected:
            continue
        for j in range(1, len(seq)):
            left, right = "".join(seq[:j]), "".join(seq[j:])
            a, ab = tok.piece_ids([left, left + right], at_start)
            (b,) = tok.piece_ids([right])
            if a + b != ab:
                raise AssemblyError(
                    f"tokenizer {tok.name!r} merges tokens across a {what} seam "
                    f"({left[-20:]!r} | {right[:20]!r}); positions would not be exact"
                )
        raise AssemblyError(f"tokenizer {tok.name!r}: {what} pieces do not encode additively")


@dataclass(frozen=True)
class FillerTable:
    """Filler lines of an exact token count: ``line(k)`` encodes to exactly ``k`` tokens.

    A filler line is ``unit`` repeated with ``sep`` and closed by ``end``; the unit is the first
    of ``candidates`` whose count grows by exactly one token per repetition on this tokenizer
    (measured for every length in the table, not assumed).
    """

    unit: str
    sep: str
    end: str
    offset: int  # tokens of a line with n units = n + offset
    max_tokens: int

    @property
    def min_tokens(self) -> int:
        return 1 + self.offset

    def line(self, k: int) -> str:
        n = k - self.offset
        if n < 1 or k > self.max_tokens:
            raise AssemblyError(
                f"no filler of {k} tokens (table covers {self.min_tokens}..{self.max_tokens})"
            )
        return self.sep.join([self.unit] * n) + self.end


def build_filler_table(
    tok: PhaseTokenizer,
    max_tokens: int,
    candidates: Sequence[str] = (".", "pad", "x", "the", "-", "a"),
    sep: str = " ",
    end: str = "\n",
) -> FillerTable:
    for unit in candidates:
        lines = [sep.join([unit] * n) + end for n in range(1, max_tokens + 1)]
        counts = tok.count(lines)
        offset = int(counts[0]) - 1
        if offset >= 0 and np.array_equal(counts, np.arange(1, max_tokens + 1) + offset):
            return FillerTable(unit, sep, end, offset, max_tokens + offset)
    raise AssemblyError(
        f"tokenizer {tok.name!r}: none of the filler units {list(candidates)} grows by exactly "
        f"one token per repetition"
    )
