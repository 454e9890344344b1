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
#: The licence identifiers the Hub documents for a repository card's ``license`` field
#: (huggingface.co/docs/hub/repositories-licenses), ``other`` for anything else.
HUB_LICENSES = frozenset(
    """apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m
    bigscience-bloom-rail-1.0 bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause
    bsd-3-clause bsd-3-clause-clear c-uda cc cc0-1.0 cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0
    cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0
    cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0
    cdla-sharing-1.0 cdla-permissive-1.0 cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0
    etalab-2.0 eupl-1.1 eupl-1.2 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl lgpl-2.1 lgpl-3.0 isc
    h-research intel-research lppl-1.3c ms-pl apple-ascl apple-amlr mpl-2.0 odc-by odbl
    openrail++ osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl lgpl-lr
    deepfloyd-if-license llama2 llama3 llama3.1 llama3.2 llama3.3 llama4 gemma unknown
    other""".split()
)
#: The characters a card title may hold besides letters, digits and spaces: it goes into the
#: card's YAML (``pretty_name``) and its Markdown heading, so nothing that starts markup.
PRETTY_NAME_PUNCTUATION = frozenset("-_.,:;()'&+!?/@")
MAX_PRETTY_NAME = 120


def pretty_name_problem(text: Any) -> str | None:
    """What is wrong with a card title (None if nothing): it must be one line of at most
    :data:`MAX_PRETTY_NAME` characters, letters, digits, spaces and
    :data:`PRETTY_NAME_PUNCTUATION` only."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_PRETTY_NAME:
        return f"must be one line of 1 to {MAX_PRETTY_NAME} characters (got {ascii(text)[:80]})"
    odd = {c for c in text if not (c.isalnum() or c == " ")}
    bad = "".join(sorted(odd - PRETTY_NAME_PUNCTUATION))
    if bad:
        allowed = "".join(sorted(PRETTY_NAME_PUNCTUATION))
        return f"may hold letters, digits, spaces and {allowed} only (got {ascii(bad)[:40]})"
    return None


def license_problem(text: Any) -> str | None:
    """What is wrong with a card licence (None if nothing): it must be one of
    :data:`HUB_LICENSES`."""
    if isinstance(text, str) and text in HUB_LICENSES:
        return None
    return (
        f"{ascii(text)[:80]} is not a Hub licence identifier (apache-2.0, mit, cc-by-4.0, ..., "
        f"or other; see huggingface.co/docs/hub/repositories-licenses)"
    )


def check_pretty_name(text: Any) -> str:
    """``text`` if it is a valid card title (:func:`pretty_name_problem`), else
    :class:`HubError`."""
    if problem := pretty_name_problem(text):
        raise HubError(f"--pretty-name {problem}")
    return text


def check_license(text: Any) -> str:
    """``text`` if it is a Hub licence identifier (:func:`license_problem`), else
    :class:`HubError`."""
    if problem := license_problem(text):
        raise HubError(f"--license {problem}")
    return text


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
