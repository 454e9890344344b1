"""phasebench's tasks in Inspect AI: ``inspect eval phasebench/kv`` (and ``niah``).

Each task builds its samples with the split engine the lm-eval tasks use
(:func:`phasebench.lmeval.data.resolve_split`: generated for the tokenizer of the model under
test and cached, or read from a pre-built folder after its fingerprint is checked), takes the
lm-eval tasks' knobs as ``-T`` task arguments, and scores each response as they do
(:func:`phasebench.lmeval.tasks.answer_matches`). Its metrics are the phase statistics, each
read off one :func:`phasebench.stats.summarize_samples` of the run's scored records, the
computation ``phasebench report`` and the leaderboard make.

Which tokenizer: ``-T tokenizer=NAME`` where given; else the one the model's provider loads
(``hf/PATH``: ``-M tokenizer=`` or ``tokenizer_path=`` where given, else ``PATH``; ``vllm/ID``:
``ID``). Any other provider (an API) names no tokenizer phasebench can load, and the task is
refused in one line asking for ``-T tokenizer=``.

What the model reads: Inspect sends a chat; its ``hf`` provider renders it with the tokenizer's
chat template, or without one as ``user: TEXT`` and a newline. The exact prompt is sent with the
pass-through template :data:`PROMPT_AS_IS` (``--model-config`` of
:data:`phasebench.inspectai.MODEL_CONFIG`, which holds it); with ``-T chat_template=true`` the
tokenizer's own template is measured and the phases relabelled, as ``phasebench eval
--apply_chat_template`` does. Either way each score keeps the witness ``served_verified``: the
label's token count beside the count the provider reports it fed (Inspect's ``input_tokens``,
which for ``hf`` is the fed tensor's width, left pads included). A sample whose counts disagree
(another frame, a pad) is left out of every statistic, as the lm-eval tasks leave it out, and
``phasebench report`` refuses a run with more than a few such samples.

The code family scores the log-likelihood of two one-token choices. Inspect asks models for
generations; its log probabilities are of the generated token's top candidates only (an API
gives at most 20), so log p(distractor) is not available for every prompt, and the code task
is refused with that reason rather than scored otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from inspect_ai import Task, task

# Inspect prints this exception's message as one line, no traceback (its CLI's refusal of a
# missing prerequisite); the class is not re-exported, so it is imported from where it lives
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

from phasebench import metrics
from phasebench.errors import PhasebenchError
from phasebench.families import get_family, task_name
from phasebench.inspect_log import PROMPT_AFTER, REPORTED
from phasebench.lmeval.tasks import MAX_GEN_TOKS, answer_matches
from phasebench.samples import (
    SERVED_KEY,
    ScoredRecord,
    scored_record,
    served_label,
    served_state,
)

#: A chat template that renders the one user message as it is: the prompt's exact text.
PROMPT_AS_IS = "{{ messages[0]['content'] }}"
#: Providers whose model name is the tokenizer's Hub id or folder.
NAMED_BY_MODEL = ("hf", "vllm", "sglang")

# -- the tokenizer of the model under test --------------------------------------------------------


def model_tokenizer(tokenizer: str | None = None) -> tuple[str, dict[str, Any]]:
    """The tokenizer name and arguments of the active Inspect model (see the module's
    docstring), or :class:`PrerequisiteError` in one line where it cannot be had."""
    if tokenizer:
        return tokenizer, {}
    model = get_model()
    provider, _, name = str(model).partition("/")
    args = dict(getattr(model, "model_args", None) or {})
    if provider not in NAMED_BY_MODEL:
        raise PrerequisiteError(
            f"phasebench builds its prompts for the model's tokenizer, and Inspect's "
            f"{provider!r} provider names none; pass -T tokenizer=HUB_ID_OR_FOLDER (the "
            f"tokenizer {name or provider!r} is served with)"
        )
    chosen = args.get("tokenizer") or args.get("tokenizer_path") or args.get("model_path")
    extra = {k: args[k] for k in ("revision", "subfolder") if args.get(k)}
    return str(chosen or model.name), extra


# -- samples --------------------------------------------------------------------------------------


def _lengths(length: Any) -> list[int]:
    values = length if isinstance(length, list | tuple) else str(length).split(",")
    try:
        return [int(v) for v in values]
    except ValueError:
        raise PrerequisiteError(
            f"-T length takes token counts, e.g. 4096 or 512,1024 (got {length!r})"
        ) from None


def split_samples(family: str, tokenizer: str | None = None, **options: Any) -> list[Sample]:
    """The samples of one task run: the rows :func:`phasebench.lmeval.data.resolve_split`
    gives for these options, each a sample whose input is the prompt and whose metadata is the
    rest of the row (the phase, the base item, the length phase among it)."""
    from phasebench.lmeval.data import resolve_split

    name, args = model_tokenizer(tokenizer)
    if options.get("prefix_cache") == "repeat":
        raise PrerequisiteError(
            "phasebench: -T prefix_cache=repeat needs each prompt sent twice in a row, one request "
            "at a time, and Inspect runs samples concurrently; run the repeat arm with phasebench "
            "eval"
        )
    try:
        split = resolve_split(family, tokenizer=name, **args, **options)
    except PhasebenchError as exc:
        raise PrerequisiteError(f"{task_name(family)}: {exc}") from None
    samples = []
    for row in split.rows:
        metadata = {k: v for k, v in row.items() if k != "prompt"}
        if PROMPT_AFTER not in metadata:
            raise PrerequisiteError(f"{task_name(family)}: a row without {PROMPT_AFTER!r}")
        samples.append(Sample(id=row["id"], input=row["prompt"], target=row["answer"],
                              metadata=metadata))  # fmt: skip
    return samples


# -- scoring and the statistics --------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _summary(records: tuple[ScoredRecord, ...]) -> dict[str, Any]:
    from phasebench.stats import summarize_samples

    return summarize_samples(records)


def statistic(scores: Sequence[SampleScore], key: str, part: str = "value") -> float:
    """One phase statistic of a run's scores: ``part`` (``value``, ``low``, ``high``) of the
    statistic ``key`` of :func:`phasebench.stats.summarize_samples` over their records (a
    period not found is 0 tokens, as in lm-eval's table)."""
    records = tuple(
        ScoredRecord.of(s.score.metadata["record"])
        for s in scores
        if s.score.metadata and s.score.metadata.get("record") is not None
    )
    if not records:
        return float("nan")
    summary = _summary(records)
    stat = metrics.get(key)
    if part == "value":
        value = stat.value(summary)
        if value is None and stat.unit == "tokens":
            value = 0
    else:
        value = stat.interval_of(summary)[0 if part == "low" else 1]
    return float("nan") if value is None else float(value)


def _declare(name: str, key: str, part: str) -> Any:
    def factory() -> Any:
        def compute(scores: list[SampleScore]) -> float:
            return statistic(scores, key, part)

        return compute

    factory.__name__ = name
    factory.__doc__ = f"{metrics.get(key).label} ({part}) over the run's phase-balanced samples."
    return metric(factory)


METRICS = tuple(_declare(*entry) for entry in REPORTED)


@scorer(metrics=[m() for m in METRICS])
def phase_answer() -> Any:
    """Answer-prefix match, as the lm-eval tasks score (:func:`answer_matches`); the score's
    metadata holds the sample's scored record and the witness of its token count."""

    async def score(state: TaskState, target: Target) -> Score:
        doc = {**state.metadata, "prompt": state.input_text}
        response = state.output.completion
        acc = float(answer_matches(response, str(doc["answer"])))
        meta: dict[str, Any] = {"acc": acc}
        usage = state.output.usage
        if usage is not None:  # the provider's count of what it fed (none: no witness)
            meta[SERVED_KEY] = [served_label(doc), int(usage.input_tokens)]
        if served_state(doc, meta.get(SERVED_KEY)) != "disagree":  # else off its label: left out
            meta["record"] = list(scored_record(doc, acc, None))
        return Score(value=acc, answer=response, metadata=meta)

    return score


def _phase_task(family: str, **options: Any) -> Task:
    if get_family(family).has_margin:
        raise PrerequisiteError(
            f"{task_name(family)} scores the log-likelihoods of two choices, which Inspect "
            "does not give for every prompt (log probabilities of the top generated candidates "
            "only); run it with phasebench eval (lm-eval)"
        )
    samples = split_samples(family, **options)
    # prompts of several token counts in one batch would be padded on the left (Inspect's hf
    # provider batches up to max_connections): then one at a time
    counts = {int(s.metadata["length"]) for s in samples}
    one_at_a_time = 1 if len(counts) > 1 else None
    return Task(
        dataset=MemoryDataset(samples, name=task_name(family)),
        solver=generate(),
        scorer=phase_answer(),
        config=GenerateConfig(
            max_tokens=MAX_GEN_TOKS,
            temperature=0.0,
            stop_seqs=["\n"],
            max_connections=one_at_a_time,
        ),  # fmt: skip
        epochs=1,
        version=1,
    )


def _options(
    length: Any, modulus: int | None, n_base: Any, seed: int | None, phases: Any,
    length_phases: Any, prefix_cache: Any, dataset_path: str | None, chat_template: bool,
    tokenizer: str | None,
) -> dict[str, Any]:  # fmt: skip
    given = {
        "max_seq_lengths": None if length is None else _lengths(length),
        "phase_modulus": modulus,
        "n_base": n_base,
        "seed": seed,
        "phases": phases,
        "length_phases": length_phases,
        "prefix_cache": prefix_cache,
        "dataset_path": dataset_path,
        "apply_chat_template": chat_template or None,
        "tokenizer": tokenizer,
    }
    return {k: v for k, v in given.items() if v is not None}


@task
def kv(
    length: Any = None, modulus: int | None = None, n_base: Any = None, seed: int | None = None,
    phases: Any = None, length_phases: Any = None, prefix_cache: Any = None,
    dataset_path: str | None = None, chat_template: bool = False, tokenizer: str | None = None,
) -> Task:  # fmt: skip
    """phasebench's kv retrieval at every phase (``-T`` arguments: the lm-eval tasks' knobs)."""
    return _phase_task("kv", **_options(**locals()))


@task
def niah(
    length: Any = None, modulus: int | None = None, n_base: Any = None, seed: int | None = None,
    phases: Any = None, length_phases: Any = None, prefix_cache: Any = None,
    dataset_path: str | None = None, chat_template: bool = False, tokenizer: str | None = None,
) -> Task:  # fmt: skip
    """phasebench's needle in a haystack at every phase (``-T``: the lm-eval tasks' knobs)."""
    return _phase_task("niah", **_options(**locals()))


@task
def code(
    length: Any = None, modulus: int | None = None, n_base: Any = None, seed: int | None = None,
    dataset_path: str | None = None, tokenizer: str | None = None,
) -> Task:  # fmt: skip
    """phasebench's code completion: refused under Inspect (see the module's docstring)."""
    return _phase_task("code")
