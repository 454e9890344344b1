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

from phasebench.errors import PhasebenchError, first_line
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
    cpu_s: float  # a batch's CPU time shared equally among its prompts
    batch: int = 1  # prompts answered together with this one


@dataclass(frozen=True)
class Prepared:
    """One prompt cut at its question, ready to answer."""

    doc_id: str
    head: list[int]
    tail: list[int]
    until: tuple[str, ...]
    max_new: int

    @property
    def shape(self) -> tuple:
        """Prompts of one shape can share forward passes."""
        return (len(self.head), len(self.tail), self.until, self.max_new)


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
        """Answer the prompts ``batch`` at a time: prompts whose context and question have the
        same token counts (every prompt of one phasebench config) share their forward passes."""
        from tqdm import tqdm

        prepared = [self.prepare(r.args[0], dict(r.args[1]), r.doc) for r in requests]
        groups: dict[tuple, list[int]] = {}
        for i, p in enumerate(prepared):
            groups.setdefault(p.shape, []).append(i)
        answers: list[str | None] = [None] * len(requests)
        size = max(1, self.prompt_batch)
        bar = tqdm(total=len(requests), disable=disable_tqdm or self.rank != 0, desc="kvpress")
        for members in groups.values():
            # like prompts side by side: the renderings of one base item share their beginning
            members.sort(key=lambda i: prepared[i].head)
            for start in range(0, len(members), size):
                chunk = members[start : start + size]
                texts = self.answer_prepared([prepared[i] for i in chunk])
                for i, text in zip(chunk, texts, strict=True):
                    answers[i] = text
                    context, gen_kwargs = requests[i].args
                    self.cache_hook.add_partial("generate_until", (context, gen_kwargs), text)
                bar.update(len(chunk))
        bar.close()
        if self.stats:
            logger.info("phasebench-kvpress %s: %s", self.press_description, self.summary())
        return [a for a in answers if a is not None]

    # -- one prompt, or a batch of prompts of one shape --------------------------------------------

    @property
    def prompt_batch(self) -> int:
        """Prompts answered together (lm-eval's ``--batch_size``; ``auto`` answers one at a
        time)."""
        size = getattr(self, "batch_size_per_gpu", 1)
        return size if isinstance(size, int) and size > 0 else 1

    def answer(self, context: str, gen_kwargs: dict, doc: dict) -> str:
        """Prefill the context with the press, then answer greedily on the compressed cache."""
        return self.answer_prepared([self.prepare(context, gen_kwargs, doc)])[0]

    def prepare(self, context: str, gen_kwargs: dict, doc: dict) -> Prepared:
        """The prompt's ids cut at the question (checked exact) and its decoding settings."""
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
        return Prepared(str(doc.get("id")), head, tail, tuple(until), max_gen_toks)

    def answer_prepared(self, batch: list[Prepared]) -> list[str]:
        """Answers of prompts of one shape (same context and question lengths, stop sequences
        and budget), computed together; each is what the prompt alone would get."""
        if len({p.shape for p in batch}) != 1:
            raise PhasebenchError("phasebench-kvpress batches prompts of one shape only")
        with torch.no_grad():
            generated, stats = self._run(batch)
        self.stats.extend(stats)
        return [
            postprocess_generated_text(
                generation=self.tok_decode(ids), stop=list(p.until), think_end_token=None
            )
            for ids, p in zip(generated, batch, strict=True)
        ]

    def _run(self, batch: list[Prepared]) -> tuple[list[list[int]], list[PromptStats]]:
        device = self.model.device
        cpu_start = time.process_time()
        start = time.perf_counter()
        heads = torch.tensor([p.head for p in batch], device=device)
        caches = self._prefill(heads)
        prefill_s = time.perf_counter() - start
        kept = [[layer.keys.shape[-2] for layer in cache.layers] for cache in caches]

        start = time.perf_counter()
        # prompts whose caches have the same length in every layer run on one stacked cache
        together: dict[tuple[int, ...], list[int]] = {}
        for i, lengths in enumerate(kept):
            together.setdefault(tuple(lengths), []).append(i)
        generated: list[list[int]] = [[] for _ in batch]
        for lengths, members in together.items():
            cache = _stack([caches[i] for i in members])
            position = len(batch[0].head)
            if type(self.press).__name__ in REROTATING:
                position = cache.get_seq_length()
            ragged = len(set(lengths)) > 1
            step = 1 if ragged or self.token_by_token else len(batch[0].tail)
            tails = [batch[i].tail for i in members]
            out = self._decode(cache, tails, position, step, batch[0].until, batch[0].max_new)
            for i, ids in zip(members, out, strict=True):
                generated[i] = ids
        answer_s = time.perf_counter() - start
        cpu_s = time.process_time() - cpu_start
        n = len(batch)
        stats = [
            PromptStats(
                doc_id=p.doc_id,
                context_tokens=len(p.head),
                question_tokens=len(p.tail),
                kept_min=min(lengths),
                kept_max=max(lengths),
                generated_tokens=len(ids),
                ragged=len(set(lengths)) > 1,
                prefill_s=prefill_s / n,
                answer_s=answer_s / n,
                cpu_s=cpu_s / n,
                batch=n,
            )
            for p, lengths, ids in zip(batch, kept, generated, strict=True)
        ]
        return generated, stats

    def _prefill(self, heads: torch.Tensor) -> list[Any]:
        """One cache per prompt: the contexts prefilled together, each compressed by the press
        as if it had been prefilled alone.

        One prompt goes through kvpress's own hooks (``with press(model)``). For several, the
        prefill runs without the press, recording each attention layer's call: the tokens all
        prompts begin with (the renderings of one base item share everything before the
        needle's padding) once, then the rest of every prompt as a batch on that cache. Then,
        inside ``with press(model)`` (so the press is set up for the model as always), the
        press's own ``forward_hook`` is called layer by layer on each prompt's whole context
        (its shared part and its own part joined: the hidden states, rotary tables, positions
        and cache a prefill of that prompt alone gives), one prompt after the other. (Some
        presses do not compress a batch row by row: ChunkKV keeps the first row's chunks for
        every row.)"""
        from transformers import DynamicCache

        if self.press is not None and heads.shape[0] == 1:
            cache = DynamicCache()
            try:
                with self.press(self.model):
                    self.model.model(input_ids=heads, past_key_values=cache)
            except Exception as exc:  # kvpress fails in many ways: one line naming the press
                raise _press_failure(self.press_description, exc) from exc
            return [cache]

        rows = heads.shape[0]
        shared = self._shared_prefix(heads)
        cache = DynamicCache()
        before = self._recorded(heads[:1, :shared], cache) if shared else []
        if shared:
            for layer in cache.layers:  # the shared part, once per prompt of the batch
                layer.keys = layer.keys.expand(rows, -1, -1, -1)
                layer.values = layer.values.expand(rows, -1, -1, -1)
        calls = self._recorded(heads[:, shared:], cache)
        if self.press is None:
            return _split(cache, rows)
        caches = []
        try:
            with self.press(self.model):
                for b in range(rows):
                    own = DynamicCache()
                    for i, (module, kwargs, output) in enumerate(calls):
                        index = module.layer_idx
                        full = cache.layers[index]
                        own.update(full.keys[b : b + 1], full.values[b : b + 1], index)
                        mine = _row_kwargs(kwargs, b, rows)
                        out = _row(output, b, rows)
                        if before:
                            mine, out = _joined(before[i], mine, out)
                        mine["past_key_values"] = own
                        self.press.forward_hook(module, (), mine, out)
                    caches.append(own)
        except Exception as exc:
            raise _press_failure(self.press_description, exc) from exc
        return caches

    def _shared_prefix(self, heads: torch.Tensor) -> int:
        """Tokens every row begins with, at most all but one; 0 (no sharing) with one row, or
        when the attention is not SDPA (whose whole-context prefill has no mask to rebuild)."""
        if heads.shape[0] == 1 or self.model.config._attn_implementation != "sdpa":
            return 0
        same = (heads == heads[:1]).all(dim=0).tolist() + [False]
        return min(same.index(False), heads.shape[1] - 1)

    def _recorded(self, ids: torch.Tensor, cache: Any) -> list[tuple[Any, dict, Any]]:
        """Run ``ids`` through the base model on ``cache``, returning every attention layer's
        call ``(module, keyword arguments, output)`` in layer order."""
        calls: list[tuple[Any, dict, Any]] = []

        def record(module, args, kwargs, output):
            calls.append((module, kwargs, output))

        handles = [
            layer.register_forward_hook(record, with_kwargs=True)
            for layer in _attention_layers(self.model)
        ]
        try:
            self.model.model(input_ids=ids, past_key_values=cache)
        finally:
            for handle in handles:
                handle.remove()
        return calls

    def _decode(
        self,
        cache: Any,
        tails: list[list[int]],
        position: int,
        step: int,
        until: tuple[str, ...],
        max_new: int,
    ) -> list[list[int]]:
        """The question (``step`` tokens per pass) and greedy decoding for every row of
        ``cache``; each row stops at a stop sequence, EOS or ``max_new`` tokens (rows that have
        stopped ride along until all have: rows never see each other)."""
        device = self.model.device
        rows, length = len(tails), len(tails[0])
        ids = torch.tensor(tails, device=device)
        logits = None
        for i in range(0, length, step):
            part = ids[:, i : i + step]
            positions = torch.arange(position + i, position + i + part.shape[1], device=device)
            out = self.model(
                input_ids=part,
                past_key_values=cache,
                position_ids=positions.unsqueeze(0).expand(rows, -1),
                logits_to_keep=1,
            )
            logits = out.logits[:, -1]
        position += length
        stop_ids = self._stop_ids()
        generated: list[list[int]] = [[] for _ in range(rows)]
        done = [False] * rows
        while logits is not None and not all(done):
            tokens = logits.argmax(dim=-1).tolist()
            for r, token in enumerate(tokens):
                if done[r]:
                    continue
                generated[r].append(int(token))
                text = self.tok_decode(generated[r])
                if (
                    token in stop_ids
                    or any(s and s in text for s in until)
                    or len(generated[r]) >= max_new
                ):
                    done[r] = True
            if all(done):
                break
            out = self.model(
                input_ids=torch.tensor(tokens, device=device).unsqueeze(1),
                past_key_values=cache,
                position_ids=torch.full((rows, 1), position, device=device),
            )
            position += 1
            logits = out.logits[:, -1]
        return generated

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


def _attention_layers(model: Any) -> list[Any]:
    """The attention modules kvpress hooks (those of the language model's decoder layers)."""
    base = model.model.language_model if hasattr(model.model, "language_model") else model.model
    return [layer.self_attn for layer in base.layers]


def _row(value: Any, b: int, rows: int) -> Any:
    """Row ``b`` of a batched tensor (or of each tensor in a tuple); other values unchanged."""
    if isinstance(value, torch.Tensor):
        return value[b : b + 1] if value.dim() and value.shape[0] == rows else value
    if isinstance(value, tuple):
        return tuple(_row(v, b, rows) for v in value)
    return value


def _row_kwargs(kwargs: dict, b: int, rows: int) -> dict:
    """An attention call's keyword arguments for prompt ``b`` alone: its hidden states and mask
    rows; the rotary tables and cache positions are the same for every prompt."""
    out = dict(kwargs)
    for key in ("hidden_states", "attention_mask", "position_embeddings"):
        if key in out:
            out[key] = _row(out[key], b, rows)
    return out


def _joined(before: tuple[Any, dict, Any], kwargs: dict, output: Any) -> tuple[dict, Any]:
    """One prompt's attention call over its whole context, from the call over the shared part
    (``before``, one row) and the call over its own part: hidden states, positions, rotary tables
    and the attention output joined along the sequence; no mask, as in a whole-context SDPA
    prefill."""
    _, first, first_out = before
    out = dict(kwargs)
    out["hidden_states"] = torch.cat([first["hidden_states"], kwargs["hidden_states"]], dim=1)
    if "cache_position" in kwargs:
        out["cache_position"] = torch.cat([first["cache_position"], kwargs["cache_position"]])
    if isinstance(kwargs.get("position_ids"), torch.Tensor):
        out["position_ids"] = torch.cat([first["position_ids"], kwargs["position_ids"]], dim=1)
    if "position_embeddings" in kwargs:
        out["position_embeddings"] = tuple(
            torch.cat([a, b], dim=1)
            for a, b in zip(
                first["position_embeddings"], kwargs["position_embeddings"], strict=True
            )
        )
    out["attention_mask"] = None
    joined = (torch.cat([first_out[0], output[0]], dim=1), None, *output[2:])
    return out, joined


def _split(cache: Any, rows: int) -> list[Any]:
    """One cache per row of a batched cache."""
    from transformers import DynamicCache

    if rows == 1:
        return [cache]
    out = []
    for b in range(rows):
        own = DynamicCache()
        for index, layer in enumerate(cache.layers):
            own.update(layer.keys[b : b + 1], layer.values[b : b + 1], index)
        out.append(own)
    return out


def _stack(caches: list[Any]) -> Any:
    """One batched cache from caches of equal per-layer lengths."""
    from transformers import DynamicCache

    if len(caches) == 1:
        return caches[0]
    out = DynamicCache()
    for index in range(len(caches[0].layers)):
        keys = torch.cat([c.layers[index].keys for c in caches])
        values = torch.cat([c.layers[index].values for c in caches])
        out.update(keys, values, index)
    return out


def _press_failure(description: str, exc: Exception) -> PhasebenchError:
    """One line for a press that cannot run on this model (kvpress raises assertions, missing
    Hub files, unsupported attention implementations...)."""
    text = first_line(exc, empty="")
    hint = ""
    if "eager" in text:
        hint = "; add attn_implementation=eager to --model_args"
    elif "huggingface.co" in text or type(exc).__name__.endswith("EntryNotFoundError"):
        hint = "; it needs files from the Hugging Face Hub, which phasebench never downloads"
    return PressError(f"{description} failed on this model ({type(exc).__name__}: {text}){hint}")
