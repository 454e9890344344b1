"""Names and constants of a phasebench dataset repository folder.

A Hub config is one family x length x tokenizer (``kv_4096_deepseek_v4``); its only split is
``test``. The folder holds ``README.md`` (the data card), ``phasebench.json`` (the index) and one
folder per config with its manifest and parquet files, byte for byte as generated.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from phasebench.errors import HubError
from phasebench.specs import slug

SPLIT = "test"
INDEX = "phasebench.json"
CARD = "README.md"
TEMPLATE = "card.md.j2"
DEFAULT_PRETTY_NAME = "phasebench: phase-balanced long-context splits"
DEFAULT_LICENSE = "apache-2.0"


def tokenizer_slug(name: str, args: dict[str, Any] | None = None) -> str:
    """A short Hub-safe name for a tokenizer: the alias, the model name of a Hub id, or the
    folder/file name of a local path, followed by any tokenizer arguments (they change the
    token sequence, so two configs that differ in them must not share a name)."""
    path = Path(name.removeprefix("python:").removeprefix("local:"))
    if name.endswith((".json", ".gguf")) and path.name == "tokenizer.json":
        base = path.parent.name or "tokenizer"
    elif name.endswith((".json", ".gguf")):
        base = path.stem
    else:
        base = path.name or name
    parts = [slug(base)]
    for key, value in sorted((args or {}).items()):
        parts.append(slug(f"{key}_{value}"))
    return "_".join(parts)


def hub_config_name(
    family: str, length: int, tokenizer: str, tokenizer_args: dict[str, Any] | None = None
) -> str:
    """The Hub config of one family x length x tokenizer, e.g. ``kv_4096_deepseek_v4``."""
    return f"{family}_{length}_{tokenizer_slug(tokenizer, tokenizer_args)}"


def manifest_config_name(manifest: dict) -> str:
    """The Hub config a manifest's spec describes; :class:`HubError` when the spec lacks its
    family, length or tokenizer."""
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    try:
        return hub_config_name(
            spec["family"], spec["length"], spec["tokenizer"], spec.get("tokenizer_args") or {}
        )
    except (KeyError, TypeError, AttributeError):
        raise HubError(
            "the manifest's spec does not name a family, a length and a tokenizer"
        ) from None


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(functools.partial(f.read, 1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_repo_id(repo_id: str) -> None:
    """Refuse anything but ``ORG/NAME``."""
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts):
        raise HubError(f"the repository id must look like ORG/NAME (got {repo_id!r})")


def is_repo_id(source: str) -> bool:
    """Whether ``source`` reads as a Hub dataset id rather than a local path."""
    parts = source.split("/")
    return len(parts) == 2 and all(parts) and not source.startswith((".", "~"))
