"""A few samples per phase, as a details page shows them: the prompt around the needle, the
target, the response and whether it scored, cut to fixed sizes.

Collected by validation from the regenerated prompt (the logs may pack it away) and the
logged response, so the page shows what the model read and wrote; every text is shown as
text (the templates escape it) and bounded: :data:`PER_PHASE` samples per phase and board,
each field at most :data:`MAX_CHARS` characters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Samples kept per phase of a board (the first ones logged at that phase).
PER_PHASE = 2
#: Characters kept of each field (the prompt's window, the target, the response).
MAX_CHARS = 360
#: Characters of prompt shown before the anchor (the rest after it).
BEFORE_ANCHOR = 160
#: The most characters marked as the needle (from its key to the end of its line).
NEEDLE_CHARS = 120


def _cut(text: Any, limit: int = MAX_CHARS) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _response(rec: Mapping[str, Any], doc: Mapping[str, Any]) -> str:
    """What the model answered: its generation, or for a log-likelihood task the choice it
    scored highest."""
    resps = rec.get("filtered_resps") or []
    choices = doc.get("choices") or []
    if choices and resps and all(isinstance(r, list | tuple) and r for r in resps):
        scores = [float(r[0]) for r in resps]
        return str(choices[scores.index(max(scores))])
    return str(resps[0]) if resps else ""


def excerpt(rec: Mapping[str, Any], doc: Mapping[str, Any], acc: float) -> dict[str, Any]:
    """One sample as a details page shows it. The prompt window is centred on the needle's
    key (``key_char``) where the family has one, else it is the prompt's end (the code
    family's anchor is the answer, after the whole prompt)."""
    prompt = str(doc.get("prompt") or "")
    key = doc.get("key_char")
    if isinstance(key, int) and 0 <= key <= len(prompt):
        start, end = max(0, key - BEFORE_ANCHOR), min(len(prompt), key + MAX_CHARS - BEFORE_ANCHOR)
        line_end = prompt.find("\n", key)
        needle_end = min(end, key + NEEDLE_CHARS, line_end if line_end >= 0 else end)
        parts = (prompt[start:key], prompt[key:needle_end], prompt[needle_end:end])
        before, after = start > 0, end < len(prompt)
    else:
        parts = (prompt[-MAX_CHARS:], "", "")
        before, after = len(prompt) > MAX_CHARS, False
    return {
        "phase": int(doc.get("phase", 0)),
        "id": _cut(doc.get("id"), 80),
        # the window as (before the needle, the needle's line from its key, after it)
        "prompt": [("…" if before else "") + parts[0], parts[1], parts[2] + ("…" if after else "")],
        "target": _cut(rec.get("target")),
        "response": _cut(_response(rec, doc)),
        "correct": bool(acc),
    }


class Collector:
    """The first :data:`PER_PHASE` samples of each phase of one board, in logged order."""

    def __init__(self) -> None:
        self.kept: list[dict[str, Any]] = []
        self._count: dict[int, int] = {}

    def add(self, rec: Mapping[str, Any], doc: Mapping[str, Any], acc: float) -> None:
        phase = int(doc.get("phase", 0))
        if self._count.get(phase, 0) < PER_PHASE:
            self._count[phase] = self._count.get(phase, 0) + 1
            self.kept.append(excerpt(rec, doc, acc))

    def result(self) -> list[dict[str, Any]]:
        return sorted(self.kept, key=lambda e: e["phase"])
