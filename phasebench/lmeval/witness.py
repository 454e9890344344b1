"""The witness of what an OpenAI-compatible server saw: its own prompt token count.

phasebench labels every prompt with the exact token count of the sequence it built (positions
come only from tokenizing the final, whole sequence). Through an API that label is a claim about
someone else's tokenizer: a server that re-tokenizes the text differently (another tokenizer, a
BOS it adds or drops, a chat template phasebench did not measure) or cuts a long prompt (Ollama
drops the middle of a prompt longer than ``num_ctx``, without an error) feeds the model other
positions than the ones the phases were computed for. OpenAI-compatible servers report what they
fed the model as ``usage.prompt_tokens`` (vLLM, SGLang, llama.cpp, transformers serve, Ollama),
so every sample can be checked against its label.

``phasebench eval`` runs lm-eval's ``local-completions`` and ``local-chat-completions`` through
the subclasses built here (registered as :data:`WITNESSED_BACKENDS`, otherwise unchanged): each
generated text comes back as a :class:`ServedText` carrying the count the server reported for
its prompt, and :func:`phasebench.lmeval.tasks.process_results` logs ``[label, count]`` per
sample as ``served_verified``. A response that answers several prompts at once (``batch_size`` > 1
on completions) reports one total, which cannot be attributed to a prompt: its samples stay
unverified, like those of a server that reports no count.

Which backends send token ids (the server then cannot re-tokenize): ``local-completions`` with
its default ``tokenized_requests=True`` sends the ids phasebench's tokenizer made; vLLM, SGLang
and llama.cpp's ``llama-server`` accept them. Chat endpoints, Ollama, llama-cpp-python's server
and transformers serve take text only (``tokenized_requests=False``), so the witness is the one
check that the server's tokenization matched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "WITNESSED_BACKENDS",
    "ServedText",
    "register_witnessed_backends",
    "served_counts",
    "witnessed_backend",
]

#: lm-eval backend -> the name of its witnessing subclass (registered by ``phasebench eval``).
WITNESSED_BACKENDS = {
    "local-completions": "phasebench-local-completions",
    "local-chat-completions": "phasebench-local-chat-completions",
}
_CLASS_NAMES = {
    "local-completions": "WitnessedCompletions",
    "local-chat-completions": "WitnessedChatCompletions",
}


class ServedText(str):
    """A generated text with the prompt token count the server reported for its prompt
    (``None`` when the server reported none that belongs to this prompt alone)."""

    prompt_tokens: int | None

    def __new__(cls, text: str, prompt_tokens: int | None) -> ServedText:
        out = super().__new__(cls, text)
        out.prompt_tokens = prompt_tokens
        return out


def served_counts(outputs: Any) -> list[int | None]:
    """The prompt token count of each choice of each response in ``outputs`` (one JSON response
    or a list of them): ``usage.prompt_tokens`` where a response answers one prompt, else None."""
    responses = outputs if isinstance(outputs, list) else [outputs]
    counts: list[int | None] = []
    for response in responses:
        if not isinstance(response, dict):
            response = {}
        choices = response.get("choices") or []
        usage = response.get("usage")
        count = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or len(choices) != 1:
            count = None
        counts.extend([count] * max(len(choices), 1))
    return counts


def _witnessed(texts: Sequence[Any], outputs: Any) -> list[Any]:
    counts = served_counts(outputs)
    if len(counts) != len(texts):
        counts = [None] * len(texts)
    return [t if t is None else ServedText(t, c) for t, c in zip(texts, counts, strict=True)]


def _build(backend: str) -> type:
    from lm_eval.api.registry import get_model

    base = get_model(backend)

    def parse_generations(self: Any, outputs: Any, **kwargs: Any) -> list[Any]:
        texts = super(cls, self).parse_generations(outputs=outputs, **kwargs)
        return _witnessed(texts, outputs)

    doc = f"lm-eval's ``{backend}`` whose texts carry the server's prompt token count."
    namespace = {"parse_generations": parse_generations, "__doc__": doc, "__module__": __name__}
    cls = type(_CLASS_NAMES[backend], (base,), namespace)
    return cls


def witnessed_backend(backend: str) -> str:
    """The registered name to run ``backend`` under (itself when phasebench has no witness
    for it)."""
    return WITNESSED_BACKENDS.get(backend, backend)


def register_witnessed_backends() -> None:
    """Make ``--model phasebench-local-completions`` etc. load the witnessing subclasses,
    imported only when a run names them."""
    from phasebench.lmeval_compat import register_model

    for backend, name in WITNESSED_BACKENDS.items():
        register_model(name, f"{__name__}:{_CLASS_NAMES[backend]}")


def __getattr__(name: str) -> type:
    # built on first access: importing this module needs no lm-eval
    for backend, class_name in _CLASS_NAMES.items():
        if name == class_name:
            cls = _build(backend)
            globals()[name] = cls
            return cls
    raise AttributeError(name)
