"""Where a phasebench prompt is cut into the context a press compresses and the question it
does not, counted in the very token ids the model is fed.

The cut is a character offset, ``question_char`` of the split's row. The ids are exact only if
encoding the context and the question apart gives the ids of the whole prompt, so that is
checked on every prompt, together with the split's own label of where the question starts
(``question_index``, which counts the BOS when the tokenizer adds one). Anything else is refused:
a press would otherwise see positions that are not the ones the phases were labelled on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phasebench.errors import PromptSplitError


def question_offset(context: str, doc: Mapping[str, Any]) -> int:
    """Character offset of the question inside ``context``, the string lm-eval built for ``doc``.

    Without a chat template the context is the row's prompt; with one, the prompt sits inside the
    template once, and the question keeps its offset relative to the prompt.
    """
    if "question_char" not in doc or "prompt" not in doc:
        raise PromptSplitError(
            "phasebench-kvpress answers phasebench kv and niah prompts only (rows with "
            "'question_char'); run other tasks with --model hf"
        )
    prompt = str(doc["prompt"])
    start = context.find(prompt)
    if start < 0 or context.find(prompt, start + 1) >= 0:
        raise PromptSplitError(
            f"the prompt of {doc.get('id')!r} does not appear exactly once in the context lm-eval "
            f"built; run without --num_fewshot, description or fewshot_as_multiturn"
        )
    return start + int(doc["question_char"])


def check_cut(
    whole: Sequence[int],
    head: Sequence[int],
    tail: Sequence[int],
    doc: Mapping[str, Any],
) -> int:
    """Number of context tokens, after checking that ``head + tail == whole`` and that the head
    ends where the split says the question starts (``question_index`` + any chat-template
    ``anchor_offset``)."""
    if list(head) + list(tail) != list(whole):
        raise PromptSplitError(
            f"{doc.get('id')!r}: the tokenizer encodes the context and the question differently "
            f"apart than together (a token spans the cut); phases would not be exact, so "
            f"phasebench-kvpress refuses this tokenizer"
        )
    if "question_index" in doc:
        expected = int(doc["question_index"]) + int(doc.get("anchor_offset") or 0)
        if len(head) != expected:
            raise PromptSplitError(
                f"{doc.get('id')!r}: the context encodes to {len(head)} tokens but the split "
                f"labels the question at token {expected}; the split was built for another "
                f"tokenizer or BOS setting (pass the model's tokenizer arguments)"
            )
    return len(head)
