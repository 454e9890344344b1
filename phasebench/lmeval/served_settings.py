"""The serving settings that decide where a boundary falls, declared by a serving entry and,
where the server reports one about itself, read from it and checked against the declaration.

A phase effect through a server is a fact about the stack as much as the model: llama.cpp's
micro-batch (``n_ubatch``), vLLM's KV block and chunked-prefill sizes, the unit a prefix cache
matches in, speculative decoding and its draft length, and batch-invariant kernels each move or
cut the windows the compressor lays (docs/serving.md, "What can move the grid"). A submission's
``serving.settings`` declares them (:data:`SETTINGS`, each optional, each with its unit), the
leaderboard shows them, and two entries of one model on two stacks show which differ.

What a server reports about itself is read once per ``phasebench eval`` through an API backend
(:func:`reported_settings`) and recorded in the run's task metadata (``served_settings``), so the
leaderboard can check the declaration the way the witness checks tokenization
(:func:`settings_mismatch`): a setting both declared and reported must agree. Servers report
few of them: llama.cpp's ``llama-server`` its context per slot (``GET /props``,
``default_generation_settings.n_ctx``) and its slots (``total_slots``), vLLM its
``max_model_len`` (``GET /v1/models``); llama-cpp-python's server reports none of them (its
``/v1/models`` lists ids only). A setting no server reports stays a declaration.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "SETTINGS",
    "Setting",
    "differing_settings",
    "reported_settings",
    "setting_text",
    "settings_label",
    "settings_mismatch",
]


class Setting(NamedTuple):
    """One serving setting: its unit (``tokens``, ``requests``, ``on/off`` or ``name``) and what
    it is, with the engines' own names for it."""

    unit: str
    meaning: str


#: The settings a serving entry may declare, in the order they are shown.
SETTINGS: dict[str, Setting] = {
    "context_tokens": Setting("tokens", "the context a request gets (llama.cpp n_ctx per slot, "
                              "vLLM --max-model-len)"),
    "kv_block_tokens": Setting("tokens", "KV cache block or page size (vLLM --block-size, "
                               "SGLang --page-size)"),
    "ubatch_tokens": Setting("tokens", "micro-batch: the most prompt tokens computed in one step "
                             "(llama.cpp -ub / n_ubatch)"),
    "batch_tokens": Setting("tokens", "logical batch (llama.cpp -b / n_batch, vLLM "
                            "--max-num-batched-tokens)"),
    "prefill_chunk_tokens": Setting("tokens", "chunked prefill size, 0 for off (vLLM with "
                                    "--enable-chunked-prefill, SGLang --chunked-prefill-size)"),
    "prefix_cache": Setting("on/off", "prefix caching (vLLM --enable-prefix-caching, SGLang's "
                            "radix cache, llama-cpp-python --cache)"),
    "prefix_match_tokens": Setting("tokens", "the unit a prefix cache matches in (vLLM: the "
                                   "block size; SGLang's radix tree and llama.cpp: 1)"),
    "speculative": Setting("name", "speculative decoding method, \"off\" for none (vLLM "
                           "--speculative-config, llama.cpp --draft-*)"),
    "draft_tokens": Setting("tokens", "draft length: tokens proposed per speculative step"),
    "batch_invariant": Setting("on/off", "batch-invariant kernels (vLLM VLLM_BATCH_INVARIANT=1)"),
    "parallel_requests": Setting("requests", "requests served at once (llama.cpp -np / "
                                 "total_slots, vLLM --max-num-seqs)"),
}  # fmt: skip

#: The most bytes read from one of the server's self-descriptions (llama.cpp's /props holds
#: the chat template: tens of kilobytes).
MAX_REPORT_BYTES = 1 << 20
TIMEOUT_SECONDS = 10


def settings_label(serving: Mapping[str, Any] | None) -> str | None:
    """A serving entry's declared settings in one cell (``ubatch_tokens=512; prefix_cache=on``),
    in :data:`SETTINGS` order; None when it declares none."""
    declared = (serving or {}).get("settings") or {}
    shown = {n: ("on" if v else "off") if isinstance(v, bool) else v for n, v in declared.items()}
    return "; ".join(f"{n}={shown[n]}" for n in SETTINGS if n in shown) or None


def setting_text(name: str, value: Any) -> str:
    """``value`` of setting ``name`` as shown: ``512 tokens``, ``on``, ``ngram``."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if not isinstance(value, int):  # read from a file: shown short and printable
        return ascii(str(value))[1:-1][:40]
    unit = SETTINGS[name].unit
    return f"{value} {unit}" if unit in ("tokens", "requests") else str(value)


def _get(url: str) -> Any:
    """The JSON at ``url``, or None when there is none (no such route, not JSON, too big)."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:
            data = response.read(MAX_REPORT_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    if len(data) > MAX_REPORT_BYTES:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _whole(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def server_root(base_url: str) -> str:
    """The server's address without the OpenAI path (``http://h:8000/v1/completions`` ->
    ``http://h:8000``)."""
    root = base_url.rstrip("/")
    for tail in ("/chat/completions", "/completions", "/v1"):
        root = root.removesuffix(tail)
    return root


def reported_settings(base_url: str) -> dict[str, Any]:
    """What the server at ``base_url`` (lm-eval's ``base_url``) reports of :data:`SETTINGS`, by
    setting, with ``source`` naming where each came from; empty when it reports none.

    llama.cpp's ``/props``: ``default_generation_settings.n_ctx`` (``context_tokens``) and
    ``total_slots`` (``parallel_requests``); an OpenAI ``/v1/models`` whose first model carries
    ``max_model_len`` (vLLM): ``context_tokens``."""
    root = server_root(base_url)
    found: dict[str, Any] = {}
    sources: dict[str, str] = {}
    props = _get(f"{root}/props")
    if isinstance(props, dict):
        defaults = props.get("default_generation_settings")
        n_ctx = _whole(defaults.get("n_ctx")) if isinstance(defaults, dict) else None
        if n_ctx is not None:
            found["context_tokens"], sources["context_tokens"] = n_ctx, "/props n_ctx"
        slots = _whole(props.get("total_slots"))
        if slots is not None:
            found["parallel_requests"], sources["parallel_requests"] = slots, "/props total_slots"
    models = _get(f"{root}/v1/models")
    data = models.get("data") if isinstance(models, dict) else None
    if "context_tokens" not in found and isinstance(data, list) and data:
        first = data[0] if isinstance(data[0], dict) else {}
        length = _whole(first.get("max_model_len"))
        if length is not None:
            found["context_tokens"] = length
            sources["context_tokens"] = "/v1/models max_model_len"
    return {**found, "source": sources} if found else {}


def settings_mismatch(declared: Mapping[str, Any], reported: Mapping[str, Any]) -> str | None:
    """The first setting declared otherwise than the server reported it, as one line's tail
    (``ubatch_tokens: declared 512 tokens, the server reports 256 tokens (/props ...)``), or
    None when every setting both name agrees."""
    sources = reported.get("source") or {}
    for name in SETTINGS:
        if name in declared and name in reported and declared[name] != reported[name]:
            where = f" ({ascii(str(sources[name]))[1:-1][:60]})" if name in sources else ""
            return (
                f"{name}: declared {setting_text(name, declared[name])}, the server reports "
                f"{setting_text(name, reported[name])}{where}"
            )
    return None


def differing_settings(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The settings two entries' declarations differ in (one declares it and the other does
    not, or they give different values), in :data:`SETTINGS` order."""
    return [n for n in SETTINGS if (n in a or n in b) and a.get(n) != b.get(n)]
