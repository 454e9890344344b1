"""Ask the model every shifted prompt, through lm-eval's own model API.

The model is built exactly as ``lm_eval --model M --model_args ARGS`` builds it (any backend
lm-eval has: ``hf`` with ``gguf_file``, ``vllm``, ``local-completions`` and
``local-chat-completions`` for llama.cpp, Ollama, LM Studio and vLLM servers, and
``phasebench-kvpress``), and each rendering is sent as one lm-eval request: two
``loglikelihood`` requests with ``--choices`` (the margin log p(right) - log p(other)), one
``generate_until`` request otherwise, greedy.

Two witnesses that the model received the sequence whose positions were checked:

* backends that tokenize in this process (``hf``, ``vllm``, ``phasebench-kvpress``): the
  backend's own ``tok_encode`` of the context must be the ids the shift was checked on;
* API backends: the server's own count of the prompt (``usage.prompt_tokens`` in an
  OpenAI-compatible response) must equal the sequence's length (with ``--choices``, plus the
  scored token, which the server counts in the echoed prompt). A shift whose count disagrees
  is marked and left out of the statistics; a server that reports no count leaves the run
  "unverified", and the result says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from phasebench.lmeval.harness import API_BACKENDS
from phasebench.lmeval.tasks import MAX_GEN_TOKS
from phasebench.lmeval.witness import served_counts
from phasebench.probe.prompt import QUESTION, ProbeError
from phasebench.probe.shifts import Rendering, ShiftPlan, check_question_cut, encode_texts
from phasebench.tokenization import PhaseTokenizer

#: Stop sequence and generation budget of ``--expect`` and of the plain answer (as the
#: phasebench kv and niah tasks answer).
UNTIL = ("\n",)


@dataclass(frozen=True)
class Answer:
    """What the model did with one rendering."""

    rendering: Rendering
    response: str | None  # generated text (generation), None with --choices
    logprobs: tuple[float, ...]  # per choice, with --choices
    server_tokens: int | None  # usage.prompt_tokens, API backends
    expected_tokens: int | None  # what the server should have counted
    backend_checked: bool = False  # the backend's own tok_encode gave the checked ids

    @property
    def margin(self) -> float | None:
        if len(self.logprobs) != 2:
            return None
        return self.logprobs[0] - self.logprobs[1]

    @property
    def witnessed(self) -> bool | None:
        """True/False: the server's count agrees/disagrees; None: no count to compare."""
        if self.expected_tokens is None or self.server_tokens is None:
            return None
        return self.server_tokens == self.expected_tokens


def _is_api(model: str) -> bool:
    return model in API_BACKENDS


def ask(
    plan: ShiftPlan,
    tok: PhaseTokenizer,
    model: str,
    model_args: str,
    *,
    device: str | None = None,
    max_gen_toks: int = MAX_GEN_TOKS,
    progress: bool = False,
    on_event: Callable[[str], None] | None = None,
) -> list[Answer]:
    """Every rendering of ``plan``, answered by the model (see the module docstring). With
    ``progress`` one bar counts the shifts; lm-eval's own bar of each call is off."""
    from phasebench import lmeval_compat as compat

    compat.check_version()
    if model == "phasebench-kvpress":
        from phasebench.kvpress import register_model_type

        register_model_type()
        if QUESTION not in plan.ref.chars:
            raise ProbeError(
                f"--model phasebench-kvpress compresses the context before the question and "
                f"answers the question uncompressed: mark where the question starts with "
                f"{QUESTION}"
            )
        check_question_cut(tok, plan)
        if plan.choices:
            raise ProbeError(
                "--model phasebench-kvpress generates answers only; use --expect TEXT instead "
                "of --choices"
            )
    if on_event is not None:
        on_event(
            f"{len(plan.renderings)} exact shifts planned; loading the model through lm-eval's "
            f"{model} backend"
        )
    lm = compat.create_model(model, model_args, batch_size=1, device=device)
    responses = compat.record_responses(lm) if _is_api(model) else None
    answers = []
    for r in _progress(plan.renderings, progress):
        context = _context(lm, plan, r)
        checked = not _is_api(model) and hasattr(lm, "tok_encode")
        if checked:
            _check_backend_ids(lm, tok, plan, r, context)
        doc = {"id": f"{r.style}-k{r.shift:03d}", "prompt": r.content}
        if r.question_char >= 0:
            doc |= {"question_char": r.question_char, "question_index": r.question_index}
        before = len(responses) if responses is not None else 0
        if plan.choices:
            requests = [
                compat.request("loglikelihood", doc, (context, c), i)
                for i, c in enumerate(plan.choices)
            ]
            scored = lm.loglikelihood(requests, disable_tqdm=True)
            logprobs, response = tuple(float(ll) for ll, _ in scored), None
            expected = r.n_tokens + 1
        else:
            gen = {"until": list(UNTIL), "max_gen_toks": max_gen_toks, "do_sample": False}
            ask_one = [compat.request("generate_until", doc, (context, gen))]
            (response,) = lm.generate_until(ask_one, disable_tqdm=True)
            logprobs, expected = (), r.n_tokens
        counted = None
        if responses is not None:
            counted = _prompt_tokens(responses[before:])
        answers.append(
            Answer(
                rendering=r,
                response=response,
                logprobs=logprobs,
                server_tokens=counted,
                expected_tokens=expected if responses is not None else None,
                backend_checked=checked,
            )
        )
    return answers


def _progress(items: Sequence[Rendering], on: bool) -> Iterator[Rendering]:
    if not on:
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, desc="probe", unit="shift")


def _context(lm: Any, plan: ShiftPlan, r: Rendering) -> Any:
    """The context string lm-eval's backend is handed for ``r``: the prompt itself, or the
    backend's own chat template around it (which must be the text the shift was checked on)."""
    if not plan.frame.chat:
        return r.content
    messages = [{"role": "user", "content": r.content}]
    if plan.frame.system:
        messages.insert(0, {"role": "system", "content": plan.frame.system})
    context = lm.apply_chat_template(messages, add_generation_prompt=True)
    if isinstance(context, str) and context != r.text:
        raise ProbeError(
            "the backend's chat template renders the prompt differently from the tokenizer's "
            "template phasebench checked the shifts on; pass the model's own tokenizer= in "
            "--model_args"
        )
    return context  # a chat-completions backend sends the messages; the server templates them


def _check_backend_ids(
    lm: Any, tok: PhaseTokenizer, plan: ShiftPlan, r: Rendering, context: str
) -> None:
    (ours,) = encode_texts(tok, plan.frame, [r.text])
    theirs = list(lm.tok_encode(context))
    if theirs != ours:
        raise ProbeError(
            f"the backend encodes shift {r.shift} ({r.style}) to {len(theirs)} tokens, "
            f"phasebench's tokenizer to {len(ours)}: pass the model's own tokenizer arguments "
            f"(tokenizer=, gguf_file=, add_bos_token=) so that both load the same tokenizer"
        )


def _prompt_tokens(responses: Sequence[Any]) -> int | None:
    """The server's count of the prompt of the one request just sent (``usage.prompt_tokens``,
    read as ``phasebench eval``'s witness reads it); None unless exactly one response with one
    choice carries a count."""
    counts = served_counts(list(responses))
    return counts[0] if len(counts) == 1 else None
