"""Whether a tokenizer named by Hub id can be had: in the local Hugging Face cache, or from a
Hub that answers; refused at once, with the reason, when neither holds."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from phasebench.errors import TokenizerError, first_line
from phasebench.tokenization._arguments import truthy

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
