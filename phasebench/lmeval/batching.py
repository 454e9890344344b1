"""Generation batches that hold prompts of one token count, so no row is padded on the left.

A phase label counts tokens from the first one the model is fed. lm-eval's ``hf`` backend
answers generation requests in batches and pads the shorter prompts of a batch on the left;
a model whose compression grid is laid from index 0 of the tensor it is fed, pads included
(transformers' DeepSeek-V4 compressors do not read the attention mask), then sees a row padded
by ``k`` tokens ``k`` slots further along its grid than its label says. Prompts of different
lengths meet in one batch whenever a run holds several lengths: the length-phase axis, several
``max_seq_lengths``, or another task answered in the same run.

lm-eval never puts two generation requests with different generation arguments into one batch
(its ``Collator`` groups ``generate_until`` requests by their ``gen_kwargs`` before it cuts
batches, in the ``hf`` backend and in every backend built on it: the assumption
:data:`phasebench.lmeval_compat.GENERATION_GROUPED_BY` states, and its contract test checks).
So every phasebench generation request carries one more stop sequence that names its prompt's
token count: the task's first stop sequence followed by :data:`MARKER`. Generation stops at the
first stop sequence found, and the added one begins with the first, so it can never stop a
generation earlier than before; it only keeps requests of different lengths (and of other
tasks) apart. Then every batch holds prompts of one token count, and no row is padded, whatever
``--batch_size`` (``auto`` included) picks.

Log-likelihood requests (the code family) are padded on the right, after the scored tokens,
which keeps every position; backends that do not pad (vLLM, servers, the reference models run
padded rows unpadded, ``phasebench-kvpress`` batches only prompts of one shape) are unaffected.

**Four stop sequences through an API.** lm-eval's OpenAI-type backends append the tokenizer's
end-of-sequence text to the stop sequences (unless it is one of them already); OpenAI's API, and
servers that follow it, answer more than four with HTTP 400, and lm-eval's chat backends send
only the first four, which would drop the added one or the end of sequence without a word. So a
run through such a backend may give at most :data:`API_STOP_LIMIT` minus two stop sequences of
its own (:func:`stops_over_limit`), counted before anything runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: What the added stop sequence says after the task's first stop sequence.
MARKER = "[phasebench batch: {length}-token prompts]"
_ADDED = re.compile(re.escape(MARKER).replace(r"\{length\}", r"\d+") + r"\Z")


def batch_stop(length: int, first: str = "") -> str:
    """The stop sequence that keeps prompts of ``length`` tokens in batches of their own."""
    return first + MARKER.format(length=int(length))


def one_length_per_batch(gen_kwargs: Mapping[str, Any] | None, length: int) -> dict[str, Any]:
    """``gen_kwargs`` with :func:`batch_stop` of ``length`` appended to its stop sequences
    (``until``); a stop sequence added before is replaced, so calling it twice is harmless."""
    out = dict(gen_kwargs or {})
    until = out.get("until")
    stops = [] if until is None else [until] if isinstance(until, str) else list(until)
    stops = [s for s in stops if not _is_batch_stop(s)]
    out["until"] = [*stops, batch_stop(length, stops[0] if stops else "")]
    return out


#: Stop sequences one request of lm-eval's OpenAI-type backends may carry (OpenAI's API refuses
#: more; ``local-chat-completions`` sends ``stop[:4]``).
API_STOP_LIMIT = 4


def stops_over_limit(gen_kwargs: Mapping[str, Any] | None) -> tuple[list[str], int] | None:
    """``(own, most)`` when the run's own stop sequences (``until`` in ``gen_kwargs``) plus the
    one :func:`one_length_per_batch` adds and the end of sequence lm-eval adds exceed
    :data:`API_STOP_LIMIT`: its own stop sequences and how many of them fit; None when they fit
    (or when ``until`` is not given: the task's one stop sequence fits)."""
    if not gen_kwargs or gen_kwargs.get("until") is None:
        return None
    until = gen_kwargs["until"]
    own = [until] if isinstance(until, str) else list(until)
    own = list(dict.fromkeys(s for s in own if not _is_batch_stop(s)))
    most = API_STOP_LIMIT - 2  # the added stop sequence and the end of sequence
    return (own, most) if len(own) > most else None


def _is_batch_stop(stop: Any) -> bool:
    return isinstance(stop, str) and _ADDED.search(stop) is not None
