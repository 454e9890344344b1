"""The salted arm of the prefix-cache axis (``prefix_cache: "salted"``): every prompt opens with
a salt of its own, so a serving stack's prefix cache never finds two prompts that share more
than the tokens before the salt (BOS, a chat template's constant prefix), and no answer can
come from the cache.

A salt is text (a digest of the row's id and tokenizer fingerprint, then filler) whose token
count is a multiple of the phase modulus P. It is measured on the final whole sequence, never
on the salt alone: the salted prompt is encoded whole, and the salt is accepted only where the
prompt's own ids follow it unchanged, so every token of the prompt moved by exactly the salt's
length ``s``. With ``s`` a multiple of P, every needle phase and every length phase stays what
the split says (offset invariance with a shift that is a whole number of periods: not even the
phases' names move). :func:`salt_problems` re-checks all of it for ``phasebench verify
--prefix-cache salted`` through the offsets mapping, a second path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from phasebench.errors import SplitError
from phasebench.rows import config_length
from phasebench.tokenization import PhaseTokenizer

__all__ = ["MAX_FILL", "salt_problems", "salt_row", "salt_text"]

#: One filler unit appended to the digest until the salt's token count is a multiple of P
#: (one token in the tokenizers phasebench is tested with; the search does not rely on it).
FILL = " ."
#: The most filler units tried before a row is refused (a bounded search, never a loop).
MAX_FILL = 64


def salt_text(row: Mapping[str, Any], fill: int) -> str:
    """The salt of ``row`` with ``fill`` filler units: a digest unique to the row, so two
    prompts part at the salt's first tokens, and a line break that closes it."""
    key = f"{row.get('tokenizer_fingerprint', '')}|{row['id']}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"salt {digest}{FILL * fill}\n"


def _salt_tokens(tok: PhaseTokenizer, prompt: str, ids: list[int], salt: str) -> int | None:
    """The salt's token count in the whole encoding of ``salt + prompt``, or None where the
    prompt's own ids do not follow it unchanged (the salt merged with the prompt's start)."""
    whole = tok.encode(salt + prompt)
    n = tok.n_prefix
    s = len(whole) - len(ids)
    if s <= 0 or whole[:n] != ids[:n] or whole[n + s :] != ids[n:]:
        return None
    return s


def salt_row(row: Mapping[str, Any], tok: PhaseTokenizer) -> dict[str, Any]:
    """``row`` with its salt before the prompt: length, anchor and question indices moved by
    the salt's ``s`` tokens (a multiple of P), character offsets by its length; ``config_length``
    keeps the config's length so the row pairs with the unsalted split's; ``salt_tokens`` says
    ``s``. Refused (:class:`SplitError`) where no salt of at most :data:`MAX_FILL` filler units
    fits."""
    modulus = int(row["phase_modulus"])
    prompt = str(row["prompt"])
    ids = tok.encode(prompt)
    # first the fill whose salt, encoded on its own, is a multiple of P (cheap: the salt is
    # short); the whole encoding decides, and only where it disagrees is every fill tried
    alone = [len(tok.encode(salt_text(row, f))) - tok.n_special for f in range(2 * modulus)]
    guesses = [f for f, n in enumerate(alone) if n > 0 and n % modulus == 0][:1]
    for fill in dict.fromkeys([*guesses, *range(MAX_FILL + 1)]):
        salt = salt_text(row, fill)
        s = _salt_tokens(tok, prompt, ids, salt)
        if s is not None and s % modulus == 0:
            return _moved(row, salt, s)
    raise SplitError(
        f"row {row['id']}: no salt of up to {MAX_FILL} filler units is a multiple of "
        f"{modulus} tokens that leaves the prompt's own tokens unchanged; run without "
        f'"prefix_cache": "salted"'
    )


def _moved(row: Mapping[str, Any], salt: str, s: int) -> dict[str, Any]:
    out = dict(row)
    out["config_length"] = config_length(row)
    out["prompt"] = salt + str(row["prompt"])
    for key in ("length", "anchor_index", "question_index"):
        if key in row:
            out[key] = int(row[key]) + s
    for key in ("key_char", "question_char"):
        if key in row and int(row[key]) >= 0:
            out[key] = int(row[key]) + len(salt)
    out["prefix_cache"] = "salted"
    out["salt_tokens"] = s
    return out


def salt_problems(rows: Iterable[Mapping[str, Any]], tok: PhaseTokenizer) -> list[str]:
    """What is wrong with the salted arm of ``rows`` (an empty list: every row salts, and
    every claim holds on the salted sequence, re-encoded whole with its offsets mapping):
    the salt is a positive multiple of P tokens, the length is the salted sequence's, the
    anchor token holds the needle's first character (or, where the anchor is the answer, sits
    right after the prompt), the anchor index mod P is the row's phase, the length mod P the
    row's, and no two salted sequences share a prefix that reaches past the salt's start."""
    problems: list[str] = []
    spans: list[tuple[tuple[int, ...], str]] = []
    for row in rows:
        name = str(row.get("id"))
        try:
            salted = salt_row(row, tok)
        except SplitError as exc:
            problems.append(str(exc))
            continue
        modulus = int(row["phase_modulus"])
        ids, offsets = tok.encode_with_offsets(salted["prompt"])
        s = int(salted["salt_tokens"])
        if s <= 0 or s % modulus:
            problems.append(f"{name}: salt of {s} tokens is not a positive multiple of {modulus}")
        if len(ids) != salted["length"] or len(ids) - s != int(row["length"]):
            problems.append(f"{name}: salted sequence is {len(ids)} tokens, labelled as "
                            f"{salted['length']} ({row['length']} + {s})")  # fmt: skip
            continue
        anchor = int(salted["anchor_index"])
        if "key_char" in row and int(row["key_char"]) >= 0:
            start, end = offsets[anchor] if 0 <= anchor < len(ids) else (-1, -1)
            if not start <= int(salted["key_char"]) < end:
                problems.append(f"{name}: salted token {anchor} does not hold the anchor")
        elif anchor != len(ids):
            problems.append(f"{name}: the answer's first token is {len(ids)}, not {anchor}")
        if anchor % modulus != int(row["phase"]):
            problems.append(f"{name}: salted anchor {anchor} is phase {anchor % modulus}, "
                            f"labelled {row['phase']}")  # fmt: skip
        if len(ids) % modulus != int(row["length"]) % modulus:
            problems.append(f"{name}: the salt moved the length phase")
        spans.append((tuple(ids[: tok.n_prefix + s]), name))
    spans.sort()
    for (a, name_a), (b, name_b) in zip(spans, spans[1:], strict=False):
        if b[: len(a)] == a:  # one salted prefix is the start of the other: they share it all
            problems.append(f"{name_a} and {name_b} share their whole salt")
    return problems
