"""A user's probe prompt: the text, its markers, and what counts as right.

The prompt file holds the user's own prompt with one ``{{shift}}`` marker where neutral padding
may go (before the key passage), optionally ``{{balance}}`` after the key passage (the paired
design: the padding taken from there keeps the total length fixed, so only the phase moves), and
optionally ``{{question}}`` where the question starts (the cut the ``phasebench-kvpress`` backend
needs: it compresses the context before it and answers the question uncompressed). Markers are
replaced by padding (``{{shift}}``, ``{{balance}}``) or by nothing (``{{question}}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phasebench.errors import ProbeError

SHIFT = "{{shift}}"
BALANCE = "{{balance}}"
QUESTION = "{{question}}"
MARKERS = (SHIFT, BALANCE, QUESTION)
#: Largest prompt file read, in bytes (a probe prompt is one prompt, not a corpus).
MAX_PROMPT_BYTES = 4 << 20


@dataclass(frozen=True)
class ProbePrompt:
    """The prompt cut at its markers: ``before`` + padding + ``key`` (+ padding) + ``after``.

    ``key`` is the passage whose position moves (everything after ``{{shift}}`` up to
    ``{{balance}}``, or to the end); ``question_char`` is the offset of ``{{question}}`` in the
    prompt with no padding (-1 without one)."""

    before: str
    key: str
    after: str
    paired: bool
    question_char: int

    @property
    def plain(self) -> str:
        """The prompt with every marker removed (no padding)."""
        return self.before + self.key + self.after


def parse_prompt(text: str) -> ProbePrompt:
    """Cut ``text`` at its markers, refusing what a probe cannot shift exactly."""
    counts = {m: text.count(m) for m in MARKERS}
    if counts[SHIFT] == 0:
        raise ProbeError(
            f"the prompt has no {SHIFT} marker: put {SHIFT} on its own line before the passage "
            f"whose position should move (e.g. before the fact the question asks about)"
        )
    for marker, n in counts.items():
        if n > 1:
            raise ProbeError(f"the prompt has {n} {marker} markers; keep exactly one")
    shift_at = text.index(SHIFT)
    question_at = text.find(QUESTION)
    if 0 <= question_at < shift_at:
        raise ProbeError(f"{QUESTION} must come after {SHIFT} (the question follows the passage)")
    balance_at = text.find(BALANCE)
    if 0 <= balance_at < shift_at:
        raise ProbeError(
            f"{BALANCE} must come after {SHIFT} and after the key passage (the paired design "
            f"takes back there the tokens added at {SHIFT})"
        )
    if 0 <= question_at < balance_at:
        raise ProbeError(f"{BALANCE} must come before {QUESTION} (it belongs to the context)")
    before = text[:shift_at]
    rest = text[shift_at + len(SHIFT) :]
    if balance_at >= 0:
        key, _, after = rest.partition(BALANCE)
    else:
        key, after = rest, ""
    plain = before + (key + after).replace(QUESTION, "")
    question_char = -1
    if question_at >= 0:
        question_char = len(before) + (key + after).index(QUESTION)
        key, after = key.replace(QUESTION, ""), after.replace(QUESTION, "")
        if not plain[question_char:].strip():
            raise ProbeError(f"nothing follows {QUESTION}: it marks where the question starts")
    if not key.strip():
        raise ProbeError(
            f"nothing but whitespace follows {SHIFT}"
            + (f" before {BALANCE}" if balance_at >= 0 else "")
            + ": the passage after the marker is what moves"
        )
    return ProbePrompt(before, key, after, balance_at >= 0, question_char)


def read_prompt(path: str | Path) -> ProbePrompt:
    """Read and parse a prompt file (UTF-8, at most :data:`MAX_PROMPT_BYTES`; the file's final
    newline is dropped, so a prompt ending in ``Answer:`` ends there)."""
    path = Path(path)
    if not path.is_file():
        raise ProbeError(f"prompt file {str(path)!r} does not exist or is not a file")
    with open(path, "rb") as handle:
        data = handle.read(MAX_PROMPT_BYTES + 1)
    if len(data) > MAX_PROMPT_BYTES:
        raise ProbeError(f"prompt file {str(path)!r} is larger than {MAX_PROMPT_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProbeError(f"prompt file {str(path)!r} is not UTF-8 ({exc.reason})") from None
    # the newline that ends a text file is not part of the prompt (an editor adds it)
    return parse_prompt(text.removesuffix("\n").removesuffix("\r"))
