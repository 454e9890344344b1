"""Loading a tokenizer by name (an alias, a ``tokenizer.json``, a folder, a GGUF file, a Hub
id) exactly as lm-eval's ``hf`` backend loads it, once per name and arguments."""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path
from typing import Any

from phasebench.errors import MissingPackageError, TokenizerError, first_line
from phasebench.tokenization._arguments import _hf_kwargs, gguf_problem
from phasebench.tokenization._hub import check_reachable
from phasebench.tokenization._names import BUILTIN_ALIASES, builtin_path, local_path
from phasebench.tokenization._tokenizer import PhaseTokenizer, piece_context, tokenizer_fingerprint
from phasebench.tokenizer_behaviour import TokenizerLoadWarning, load_warning, measure

_PROBE = "phasebench probe: alpha 12345\nbeta"


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


def load_tokenizer(name: str, args: dict[str, Any] | None = None) -> PhaseTokenizer:
    """Load ``name``: the alias ``deepseek-v4``, a tokenizer.json, a folder, or a Hub model id.

    ``args`` are lm-eval model arguments that change the tokenizer (``revision``, ``gguf_file``,
    ``add_bos_token``, ``subfolder``, ``trust_remote_code``); they are applied exactly as the
    ``hf`` backend applies them, so the loaded tokenizer produces the sequence the model sees.
    """
    items = tuple(sorted((str(k), str(v)) for k, v in (args or {}).items() if v is not None))
    return _load_cached(name, items)
