"""``--model phasebench-kvpress``: lm-eval's ``hf`` backend that prefills the context of each
phasebench prompt through a kvpress press and answers the question on the compressed cache.

What happens to one prompt (kvpress's own pipeline does the same steps, minus its chat template,
which would shift every position):

1. the whole prompt is encoded exactly as the ``hf`` backend encodes it, and cut at the question
   (:mod:`phasebench.kvpress.prompt` checks that the two halves give the same ids and that the
   context ends where the split labels the question);
2. the context runs through the base model with the press's hooks on the attention layers; each
   layer's cache is compressed as the prefill leaves it;
3. the question runs on that cache with its own positions (counted in the uncompressed sequence,
   as kvpress does), without hooks, then greedy decoding until a stop sequence, EOS or
   ``max_gen_toks``.

Presses that keep a different number of tokens per layer (PyramidKV by design, ChunkKV when the
context is not a whole number of chunks) leave a cache that transformers' multi-token attention
mask cannot describe: kvpress's pipeline fails there with ``The size of tensor a (N) must match
the size of tensor b (M)``. phasebench then feeds the question one token at a time, for which no
mask is needed; the result is the same computation, the press untouched and no position moved.

This module imports lm-eval, torch and (on first use) kvpress; lm-eval imports it only when a run
asks for ``--model phasebench-kvpress`` (see :func:`phasebench.kvpress.register_model_type`).
"""

from __future__ import annotations

import inspect
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

import torch
from lm_eval.models.huggingface import HFLM
from lm_eval.models.utils import (
    handle_stop_sequences,
    normalize_gen_kwargs,
    postprocess_generated_text,
)

from phasebench.errors import PhasebenchError
from phasebench.kvpress.presses import PressError, PressSpec, parse_press, press_fields
from phasebench.kvpress.prompt import check_cut, question_offset

#: Under lm-eval's logger, so ``phasebench eval`` prints the summary with lm-eval's own lines.
logger = logging.getLogger("lm_eval.phasebench_kvpress")

#: ``from_pretrained`` keywords the ``hf`` backend forwards through its ``**kwargs``.
MODEL_KWARGS = ("attn_implementation",)
#: Presses after which kvpress places the question right after the kept tokens (they re-rotate
#: the kept keys onto positions 0..kept-1), as its pipeline does.
REROTATING = ("KeyRerotationPress", "RestoreKVPress")


@dataclass(frozen=True)
class PromptStats:
    """What one prompt cost and what the press kept."""

    doc_id: str
    context_tokens: int
    question_tokens: int
    kept_min: int
    kept_max: int
    generated_tokens: int
    ragged: bool  # layers kept different lengths: the question went token by token
    prefill_s: float
    answer_s: float
    cpu_s: float


class KVPressLM(HFLM):
    """The ``hf`` backend plus a press (``press=None`` runs the same path uncompressed).

    ``press`` is a name with its fields in ``**kwargs`` (see :mod:`phasebench.kvpress.presses`)
    or, from Python, a press object. Only ``generate_until`` is supported: phasebench's kv and
    niah tasks; the code task scores log-likelihoods, which have no question to answer.
    """

    def __init__(
        self, pretrained: Any, press: Any = None, inner: str | None = None, **kwargs: Any
    ) -> None:
        spec: PressSpec | None = None
        if press is None or isinstance(press, str):
            spec, kwargs = parse_press(press, inner, kwargs)
            press_obj = spec.build() if spec is not None else None
        else:
            press_obj = press
        allowed = set(inspect.signature(HFLM.__init__).parameters) | set(MODEL_KWARGS)
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            fields = press_fields(spec)
            where = f"fields of the press: {', '.join(fields)}" if fields else "no press fields"
            raise PressError(
                f"unknown argument(s) {', '.join(unknown)} for --model phasebench-kvpress ({where})"
            )
        super().__init__(pretrained=pretrained, **kwargs)
        if self.backend != "causal":
            raise PhasebenchError("phasebench-kvpress needs a decoder-only (causal) model")
        self.press = press_obj
        self._described = (press_obj, spec.describe() if spec is not None else None)
        self.stats: list[PromptStats] = []
        #: Feed every question token by token, not only after a ragged press (for tests: the
        #: two must give the same answers).
        self.token_by_token = False

    @property
    def press_description(self) -> str:
        """``ChunkKVPress(press=KnormPress(compression_ratio=0.25), chunk_length=8)``: the press
        as named in ``--model_args``, else its repr (a press object set from Python)."""
        built, text = self._described
        if self.press is None:
            return "no press"
        return text if self.press is built and text else repr(self.press)

    # -- lm-eval entry points --------------------------------------------------------------------

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise PhasebenchError(
            "phasebench-kvpress answers generate_until tasks (phasebench_kv, phasebench_niah); "
            "run phasebench_code with --model hf"
        )

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        return self.loglikelihood(requests, disable_tqdm)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        from tqdm import tqdm

        answers = []
        for request in tqdm(requests, disable=disable_tqdm or self.rank != 0, desc="kvpress"):
            context, gen_kwargs = request.args
            answer = self.answer(context, dict(gen_kwargs), request.doc)
            self.cache_hook.add_partial("generate_until", (context, gen_kwargs), answer)
            answers.append(answer)
        if self.stats:
            logger.info("phasebench-kvpress %s: %s", self.press_description, self.summary())
        return answers

    # -- one prompt ------------------------------------------------------------------------------

    def answer(self, context: str, gen_kwargs: dict, doc: dict) -> str:
        """Prefill the context with the press, then answer greedily on the compressed cache."""
        kwargs = normalize_gen_kwargs(gen_kwargs, self.max_gen_toks)
        eos_text = self.tok_decode(self.eot_token_id, skip_special_tokens=False)
        until = handle_stop_sequences(kwargs.pop("until", None), eos=eos_text)
        max_gen_toks = int(kwargs.pop("max_gen_toks"))
        if kwargs.get("do_sample") or float(kwargs.get("temperature") or 0.0) > 0.0:
            raise PhasebenchError("phasebench-kvpress decodes greedily; drop do_sample/temperature")

        cut = question_offset(context, doc)
        whole = self.tok_batch_encode([context])[0][0].tolist()
        head = self.tok_batch_encode([context[:cut]])[0][0].tolist()
        tail = list(self.tokenizer.encode(context[cut:], add_special_tokens=False))
        check_cut(whole, head, tail, doc)
        if len(whole) + max_gen_toks > self.max_length:
            raise PhasebenchError(
                f"{doc.get('id')!r}: {len(whole)} prompt tokens plus {max_gen_toks} generated "
                f"exceed max_length {self.max_length}; raise max_length in --model_args"
            )
        with torch.no_grad():
            generated, stats = self._run(head, tail, until, max_gen_toks, str(doc.get("id")))
        self.stats.append(stats)
        text = self.tok_decode(generated)
        return postprocess_generated_text(generation=text, stop=until, think_end_token=None)

    def _run(
        self, head: list[int], tail: list[int], until: list[str], max_new: int, doc_id: str
    ) -> tuple[list[int], PromptStats]:
        from transformers import DynamicCache

        device = self.model.device
        cache = DynamicCache()
        cpu_start = time.process_time()
        start = time.perf_counter()
        if self.press is None:
            self.model.model(input_ids=torch.tensor([head], device=device), past_key_values=cache)
        else:
            try:
                with self.press(self.model):
                    self.model.model(
                        input_ids=torch.tensor([head], device=device), past_key_values=cache
                    )
            except Exception as exc:  # kvpress fails in many ways: one line naming the press
                raise _press_failure(self.press_description, exc) from exc
        prefill_s = time.perf_counter() - start
        kept = [layer.keys.shape[-2] for layer in cache.layers]
        ragged = len(set(kept)) > 1
        position = len(head)
        if type(self.press).__name__ in REROTATING:
            position = cache.get_seq_length()

        start = time.perf_counter()
        step = 1 if ragged or self.token_by_token else len(tail)
        logits = None
        for i in range(0, len(tail), step):
            ids = tail[i : i + step]
            positions = torch.arange(position + i, position + i + len(ids), device=device)
            out = self.model(
                input_ids=torch.tensor([ids], device=device),
                past_key_values=cache,
                position_ids=positions.unsqueeze(0),
                logits_to_keep=1,
            )
            logits = out.logits[0, -1]
        position += len(tail)
        stop_ids = self._stop_ids()
        generated: list[int] = []
        while logits is not None and len(generated) < max_new:
            token = int(logits.argmax())
            generated.append(token)
            if token in stop_ids or any(s and s in self.tok_decode(generated) for s in until):
                break
            if len(generated) == max_new:
                break
            out = self.model(
                input_ids=torch.tensor([[token]], device=device),
                past_key_values=cache,
                position_ids=torch.tensor([[position]], device=device),
            )
            position += 1
            logits = out.logits[0, -1]
        stats = PromptStats(
            doc_id=doc_id,
            context_tokens=len(head),
            question_tokens=len(tail),
            kept_min=min(kept),
            kept_max=max(kept),
            generated_tokens=len(generated),
            ragged=ragged,
            prefill_s=prefill_s,
            answer_s=time.perf_counter() - start,
            cpu_s=time.process_time() - cpu_start,
        )
        return generated, stats

    def _stop_ids(self) -> set[int]:
        ids = self.model.generation_config.eos_token_id
        found = set(ids if isinstance(ids, list) else [ids] if ids is not None else [])
        if self.tokenizer.eos_token_id is not None:
            found.add(int(self.tokenizer.eos_token_id))
        return found

    def summary(self) -> dict[str, Any]:
        """Means over the prompts answered so far (cost and kept cache)."""
        n = len(self.stats)
        rows = [asdict(s) for s in self.stats]

        def mean(key: str) -> float:
            return sum(float(r[key]) for r in rows) / n

        return {
            "prompts": n,
            "context_tokens": mean("context_tokens"),
            "kept_min": min(s.kept_min for s in self.stats),
            "kept_max": max(s.kept_max for s in self.stats),
            "kept_fraction": mean("kept_max") / mean("context_tokens"),
            "ragged": sum(s.ragged for s in self.stats),
            "prefill_s": mean("prefill_s"),
            "answer_s": mean("answer_s"),
            "cpu_s": mean("cpu_s"),
        }


def _press_failure(description: str, exc: Exception) -> PhasebenchError:
    """One line for a press that cannot run on this model (kvpress raises assertions, missing
    Hub files, unsupported attention implementations...)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    hint = ""
    if "eager" in text:
        hint = "; add attn_implementation=eager to --model_args"
    elif "huggingface.co" in text or type(exc).__name__.endswith("EntryNotFoundError"):
        hint = "; it needs files from the Hugging Face Hub, which phasebench never downloads"
    return PressError(
        f"{description} failed on this model ({type(exc).__name__}: {text[:200]}){hint}"
    )
