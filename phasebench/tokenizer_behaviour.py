"""What the loaded tokenizer does to text, recorded so that a split is only used where the
current install encodes its prompts the same way.

A split's labels are token positions under one tokenizer *as transformers loads it*, which is
what lm-eval's ``hf`` backend feeds the model. The same files can load differently: a tokenizer
class that rebuilds its pipeline from the vocabulary (transformers 5 rebuilds a
``GPT2Tokenizer`` with GPT-2's pre-tokenizer and drops the ``tokenizer.json``'s own rules), a
BOS added or not, another transformers or tokenizers release.

The fingerprint (:func:`phasebench.tokenization.tokenizer_fingerprint`) hashes the loaded
backend's serialized definition and its special tokens. The **behaviour record** says what that
tokenizer does: the ids it gives for :data:`PROBE_TEXT` with the special tokens its default
encoding adds, its class, the transformers and tokenizers versions, and whether the
``tokenizer.json`` on disk encodes the probe the same way. Every manifest carries both, and
:func:`encoding_difference` is the one comparison that every consumer of a split (verify,
the lm-eval cache and ``dataset_path``, ``hub.load_split``, the leaderboard) uses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Fixed text whose encoding stands for the tokenizer's behaviour: spaces (single, double,
#: leading, trailing), tabs, newline runs, digit runs, punctuation, code, several scripts and
#: emoji, and the shapes phasebench's pieces take (records, filler, padding runs, prose).
#: Changing it changes every behaviour record: :data:`PROBE_SHA256` names the text a record
#: was measured on.
PROBE_TEXT = (
    "Below is a list of records, one per line.\n"
    "tkd241: 67067\nqmx042: 12345\n"
    ". . . .\n"
    "  Two  spaces,\ttab; a trailing space \n\n\n"
    "Numbers: 7 42 1234567 3.14159 -0.5 1e-3 2024-11-30 0x1F\n"
    "Punctuation: \"double\" 'single' (a) [b] {c} <d> a/b\\c @#$%^&*_+=|~`!? ...\n"
    'def f(x):\n    return x ** 2  # ======== ---- **** ####\n"""\n====\n"""\n'
    "Unicode: caf\u00e9 na\u00efve Stra\u00dfe \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac "
    "\u0440\u0443\u0441\u0441\u043a\u0438\u0439 \u65e5\u672c\u8a9e \u4e2d\u6587 "
    "\ud55c\uad6d\uc5b4 \U0001f642\U0001f44d\U0001f3fd \u2014 \u2026 \u00bd\n"
    " The special magic number for velmorax is 1234567. * * * "
)
PROBE_SHA256 = "sha256:" + hashlib.sha256(PROBE_TEXT.encode("utf-8")).hexdigest()


class TokenizerLoadWarning(UserWarning):
    """The tokenizer as loaded encodes text differently from its tokenizer.json on disk."""


@dataclass(frozen=True)
class FileCheck:
    """How the ``tokenizer.json`` on disk (read raw by ``tokenizers``) encodes the probe,
    compared with the loaded tokenizer: ``state`` is ``agrees``, ``differs`` or ``absent``."""

    state: str
    text_tokens_agree: bool | None = None
    special_tokens_agree: bool | None = None
    first_difference: int | None = None  # index into the probe's ids (with special tokens)

    def to_dict(self, loaded_class: str) -> dict[str, Any]:
        return {
            "state": self.state,
            "text_tokens_agree": self.text_tokens_agree,
            "special_tokens_agree": self.special_tokens_agree,
            "first_difference": self.first_difference,
            "lm_eval_feeds": f"the loaded tokenizer ({loaded_class})",
        }


@dataclass(frozen=True)
class Behaviour:
    """The behaviour record of one loaded tokenizer (see the module docstring)."""

    probe_ids: tuple[int, ...]
    tokenizer_class: str
    transformers_version: str
    tokenizers_version: str
    file: FileCheck

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe_sha256": PROBE_SHA256,
            "probe_ids": list(self.probe_ids),
            "class": self.tokenizer_class,
            "transformers": self.transformers_version,
            "tokenizers": self.tokenizers_version,
            "tokenizer_json": self.file.to_dict(self.tokenizer_class),
        }


def measure(hf: Any, file: Path | None) -> Behaviour:
    """The behaviour record of ``hf`` (a transformers tokenizer with a fast backend), compared
    with ``file``, the ``tokenizer.json`` it was loaded from (``None`` when there is none, as
    for a GGUF file or a SentencePiece ``.model``)."""
    import tokenizers
    import transformers

    loaded = [int(i) for i in hf.encode(PROBE_TEXT)]
    loaded_text = hf.backend_tokenizer.encode(PROBE_TEXT, add_special_tokens=False).ids
    check = FileCheck("absent")
    if file is not None and file.is_file():
        raw = tokenizers.Tokenizer.from_file(str(file))
        raw_full = raw.encode(PROBE_TEXT).ids
        raw_text = raw.encode(PROBE_TEXT, add_special_tokens=False).ids
        text_ok, full_ok = raw_text == loaded_text, raw_full == loaded
        check = FileCheck(
            "agrees" if full_ok else "differs",
            text_tokens_agree=text_ok,
            special_tokens_agree=_specials(raw_full, raw_text) == _specials(loaded, loaded_text),
            first_difference=None if full_ok else _first_difference(raw_full, loaded),
        )
    return Behaviour(
        probe_ids=tuple(loaded),
        tokenizer_class=type(hf).__name__,
        transformers_version=transformers.__version__,
        tokenizers_version=tokenizers.__version__,
        file=check,
    )


def load_warning(name: str, behaviour: Behaviour, bos_requested: bool) -> str | None:
    """The warning to give when the loaded tokenizer and its ``tokenizer.json`` disagree, or
    ``None``. Special tokens that differ only because the caller asked for them
    (``add_bos_token``) are no surprise and get no warning."""
    check = behaviour.file
    if check.state != "differs" or (check.text_tokens_agree and bos_requested):
        return None
    what = "text" if not check.text_tokens_agree else "special tokens around the text"
    return (
        f"tokenizer {name!r}: transformers {behaviour.transformers_version} loads it as "
        f"{behaviour.tokenizer_class}, which encodes {what} differently from its tokenizer.json "
        f"(probe token {check.first_difference}); phasebench labels follow the loaded tokenizer, "
        f"which is what lm-eval's hf backend feeds the model"
    )


def encoding_difference(recorded: Mapping[str, Any], tok: Any) -> str | None:
    """Why ``tok`` (a :class:`~phasebench.tokenization.PhaseTokenizer`) would not encode a
    split's prompts as the tokenizer that ``recorded`` describes did, or ``None`` if it would.

    ``recorded`` is a manifest's ``tokenizer`` entry (``fingerprint`` plus, since behaviour
    records exist, ``behaviour``). The fingerprint must match, and so must the ids of the probe
    text: the class or versions may differ as long as the encoding does not. A record without
    ``behaviour`` (a split made before behaviour records) can only be compared by fingerprint.
    ``recorded`` may come from an untrusted file: anything malformed is a difference.
    """
    if not isinstance(recorded, Mapping):
        return "the split records no tokenizer"
    fingerprint = recorded.get("fingerprint")
    if fingerprint != tok.fingerprint:
        return f"its fingerprint is {_text(fingerprint, 19)}..., here {tok.fingerprint[:19]}..."
    behaviour = recorded.get("behaviour")
    if behaviour is None:
        return None
    if not isinstance(behaviour, Mapping):
        return "its behaviour record is unreadable"
    if behaviour.get("probe_sha256") != PROBE_SHA256:
        return "its behaviour was measured on another probe text (another phasebench version)"
    ids = behaviour.get("probe_ids")
    if not isinstance(ids, Sequence) or not all(type(i) is int for i in ids):
        return "its behaviour record has no readable probe ids"
    mine = tok.behaviour
    if list(ids) == list(mine.probe_ids):
        return None
    at = _first_difference(list(ids), list(mine.probe_ids))

    def install(cls: Any, tf: Any, tk: Any) -> str:
        return f"{_text(cls, 60)} under transformers {_text(tf, 20)}, tokenizers {_text(tk, 20)}"

    then = install(*(behaviour.get(k) for k in ("class", "transformers", "tokenizers")))
    now = install(mine.tokenizer_class, mine.transformers_version, mine.tokenizers_version)
    return (
        f"it encoded the probe text differently from token {at} on (built with {then}; "
        f"loaded here as {now})"
    )


def provenance_difference(entries: Any, tok: Any) -> str | None:
    """:func:`encoding_difference` for the provenance an lm-eval run records per config (its
    results' ``metadata.phasebench``: ``tokenizer_fingerprint`` and ``tokenizer_behaviour``),
    or ``None`` when there is none (runs made before provenance was recorded) or it agrees."""
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if not isinstance(entry, Mapping):
            return "its provenance record is unreadable"
        recorded = {
            "fingerprint": entry.get("tokenizer_fingerprint"),
            "behaviour": entry.get("tokenizer_behaviour"),
        }
        difference = encoding_difference(recorded, tok)
        if difference:
            return difference
    return None


def _text(value: Any, limit: int) -> str:
    """A recorded value as short, printable ASCII (records may come from untrusted files)."""
    return ascii(str(value))[1:-1][:limit]


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _specials(full: Sequence[int], text: Sequence[int]) -> tuple[tuple[int, ...], ...] | None:
    """(prefix, suffix) special tokens of an encoding around its text tokens, or ``None``."""
    n = len(text)
    for start in range(len(full) - n + 1):
        if list(full[start : start + n]) == list(text):
            return tuple(full[:start]), tuple(full[start + n :])
    return None
