"""A short, whole label for a declared KV cache, and the method's parameters, read from the
``kv_cache`` text of a submission.

Submissions declare their KV cache as free text; kvpress runs write the press as the library
prints it (``kvpress 0.5.5 ChunkKVPress(press=KnormPress(compression_ratio=0.25),
chunk_length=4) on the context; ...``). Cutting that text at a fixed width hides exactly what
tells two entries apart (chunk length 4 or 8), so the tables show a label built from the call:
``ChunkKV(Knorm) · chunk 4 · ratio 0.25``, every parameter kept. Text with no such call (``none
(full attention)``, ``CSA window 8 stride 4``) is its own label up to the first ``;``.

Only text is read: nothing of a submission is evaluated or imported.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: Parameter names as a label writes them; others keep their own name.
SHORT_NAMES = {
    "compression_ratio": "ratio",
    "chunk_length": "chunk",
    "block_size": "block",
    "window_size": "window",
    "kernel_size": "kernel",
    "n_sink": "sink",
}
#: The parameters that set the method's period or its budget: the axes of the settings chart.
SETTING_AXES = ("chunk_length", "block_size", "compression_ratio")
#: The longest text read (a declared kv_cache is short; anything longer is cut first).
MAX_TEXT = 400

_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE]-?\d+)?")


def _parse_call(text: str, start: int) -> tuple[dict[str, Any], int] | None:
    """The call starting at ``text[start]`` (``Name(args)``), as ``{"name", "args"}`` with
    nested calls parsed, and the index after its closing bracket; None if it does not close."""
    match = _CALL.match(text, start)
    if not match:
        return None
    name, i = match.group(1), match.end()
    args: dict[str, Any] = {}
    positional = 0
    while i < len(text):
        while i < len(text) and text[i] in " ,":
            i += 1
        if i < len(text) and text[i] == ")":
            return {"name": name, "args": args}, i + 1
        key_match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", text[i:])
        if key_match:
            key, i = key_match.group(1), i + key_match.end()
        else:
            key, positional = f"arg{positional}", positional + 1
        nested = _parse_call(text, i)
        if nested is not None:
            args[key], i = nested
            continue
        end = i
        depth = 0
        while end < len(text) and (depth or text[end] not in ",)"):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        raw = text[i:end].strip()
        args[key] = _value(raw)
        i = end
    return None


#: The widest integer a setting is read as a number: beyond it (2**53) a browser, a JSON reader
#: and a float round it, so it stays the text declared.
_EXACT_INTEGER = 2**53


def _value(raw: str) -> Any:
    """A parameter's value: a number where the text is one that every reader keeps exactly (a
    finite float, an integer within :data:`_EXACT_INTEGER`), else the text as declared
    (``four``, ``NaN``, ``1e999``, a 250-digit integer): never a number rounded or infinite."""
    if _NUMBER.fullmatch(raw):
        if re.fullmatch(r"-?\d+", raw):
            number = int(raw)  # at most MAX_TEXT digits
            return number if abs(number) <= _EXACT_INTEGER else raw
        number = float(raw)
        if math.isfinite(number):
            return int(number) if number.is_integer() and "." not in raw else number
        return raw
    return raw.strip("'\"")


def _method(call: dict[str, Any]) -> str:
    """``ChunkKV(Knorm)``: the call's name without ``Press``, its inner press in brackets."""
    name = call["name"].removesuffix("Press") or call["name"]
    inner = [v for v in call["args"].values() if isinstance(v, dict)]
    return name + "".join(f"({_method(v)})" for v in inner)


def _parameters(call: dict[str, Any]) -> dict[str, Any]:
    """Every plain parameter of the call and of the presses inside it, inner ones first."""
    out: dict[str, Any] = {}
    for value in call["args"].values():
        if isinstance(value, dict):
            out.update(_parameters(value))
    out.update({k: v for k, v in call["args"].items() if not isinstance(v, dict)})
    return out


def _first_clause(text: str) -> str:
    """The text up to its first ``;`` outside brackets (``none (full attention; ...)`` keeps
    its bracket whole)."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ";" and depth <= 0:
            return text[:i].strip()
    return text.strip()


def describe_kv_cache(text: str | None) -> dict[str, Any]:
    """``{"label", "method", "parameters"}`` of a declared KV cache: the label a table shows
    (whole, never cut), the method (``ChunkKV(Knorm)``, or the label where no call is
    declared) and its parameters (``{"chunk_length": 4, "compression_ratio": 0.25}``)."""
    text = "" if text is None else str(text)[:MAX_TEXT]
    for match in _CALL.finditer(text):
        parsed = _parse_call(text, match.start())
        if parsed is None:
            continue
        call, _ = parsed
        params = _parameters(call)
        method = _method(call)
        shown = [f"{SHORT_NAMES.get(k, k)} {v}" for k, v in params.items()]
        return {"label": " · ".join([method, *shown]), "method": method, "parameters": params}
    label = _first_clause(text)
    return {"label": label, "method": label, "parameters": {}}
