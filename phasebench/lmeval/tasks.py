"""What the lm-eval task YAMLs under ``tasks/`` point at: the split loader, the per-sample scorer
and the phase aggregates.

How lm-eval 0.4.13 calls into this module:

* ``custom_dataset`` -> :func:`task_dataset`, called as ``task_dataset(**metadata,
  **dataset_kwargs)``. lm-eval merges the model arguments (``pretrained``, ``tokenizer``,
  ``model``, ``gguf_file``, ``add_bos_token``, ...) with the ``--metadata`` JSON into
  ``metadata``; the YAML's ``dataset_kwargs`` name the family. So the split is generated for the
  model's own tokenizer and cached (:mod:`phasebench.lmeval.data`).
* ``process_results`` -> :func:`process_results`, once per prompt: ``acc`` (and ``margin`` for
  code) as plain numbers, plus the sample's scored record
  (:func:`phasebench.samples.scored_record`) under every phase aggregate's name.
* ``class`` -> :class:`PhaseTask`: a ``ConfigurableTask`` that, once the split is loaded, registers
  the phase aggregates (their names depend on the data: ``acc_phase_<r>``, per-length copies
  ``<metric>@<length>``), each an instance of the one parameterised :func:`aggregate`, and
  reports only those of the chosen metric set.

Which aggregates exist, their names, sets and directions come from the statistics table
(:mod:`phasebench.metrics`). Metric sets (``--metadata '{"metrics": "full"}'``): by default a
task reports the compact set (:data:`COMPACT_METRICS`: average, worst phase cross-fitted and
plain, gap and its p-value; for a family with a margin also the margin's lowest phase), pooled
over the requested lengths, with per-length copies only when more than one length ran. ``full``
adds intervals, the best phase, every phase and the phase-lock rate, always per length. A config
with the length-phase axis (``"length_phases"`` in ``--metadata``) also reports the length
axis's worst phase (cross-fitted) and lowest phase, gap, p-value and period (0: none); with the
length axis alone, the average and those. Every number comes from
:func:`phasebench.stats.summarize_samples`, the function ``phasebench report`` and the
leaderboard use, so the three agree.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from phasebench import metrics
from phasebench.errors import EvalError, PhasebenchError, TaskRefusal
from phasebench.families import get_family, task_name
from phasebench.rows import config_length
from phasebench.samples import (
    SERVED_KEY,
    WARM_KEY,
    ScoredRecord,
    is_warm,
    scored_record,
    served_label,
    served_state,
    served_verified_share,
)

#: ``max_gen_toks`` of the generate_until tasks, written for lm-eval in
#: ``tasks/_phasebench_answer.yaml`` (which kv and niah include; a test keeps the two equal).
MAX_GEN_TOKS = 16
#: The period ``phase_lock_rate`` tests code margins against (declared in phasebench.metrics).
DEFAULT_LOCK_STRIDE = metrics.LOCK_STRIDE
METRIC_SETS = metrics.METRIC_SETS

#: Which axes a config varies: the needle phase (the default), the length phase alone, both.
AXES = metrics.AXES


def _aggregates(margin: bool, metrics_set: str, axes: str = "needle") -> list[metrics.Statistic]:
    """The declared statistics that are lm-eval metrics of a task (with a margin or not) in
    ``metrics_set`` on ``axes``, in declaration order."""
    return [
        s
        for s in metrics.statistics()
        if s.metric is not None
        and (margin or not s.needs_margin)
        and (metrics_set == "full" or s.metric_set == "compact")
        and metrics.on_axes(s, axes)
    ]


#: Phase aggregates of the default metric set for a family without a margin (kv, niah).
COMPACT_METRICS = tuple(s.metric for s in _aggregates(False, "compact"))


# -- metric names --------------------------------------------------------------------------------


def metric_key(name: str, length: int | None) -> str:
    """``phase_gap`` (pooled over lengths) or ``phase_gap@4096`` (one length)."""
    return name if length is None else f"{name}@{length}"


def parse_metric_key(key: str) -> tuple[str, int | None]:
    """Inverse of :func:`metric_key` for consumers of lm-eval's results JSON."""
    name, sep, length = key.partition("@")
    return (name, int(length)) if sep else (name, None)


def _check_set(metrics_set: str) -> None:
    if metrics_set not in METRIC_SETS:
        raise EvalError(f"'metrics' must be one of {', '.join(METRIC_SETS)} (got {metrics_set!r})")


def _names(stat: metrics.Statistic, modulus: int, metrics_set: str) -> list[str]:
    """The lm-eval metric names of one statistic: itself (or one per phase), and its interval
    in the full set."""
    names = [f"{stat.metric}_{r}" for r in range(modulus)] if stat.per_phase else [stat.metric]
    if stat.interval is not None and metrics_set == "full":
        names += [f"{stat.metric}_ci_low", f"{stat.metric}_ci_high"]
    return names


def phase_metric_names(
    family: str, modulus: int, metrics: str = "full", axes: str = "needle"
) -> list[str]:
    """The aggregates a task of ``family`` reports with metric set ``metrics`` on ``axes`` (one
    of :data:`AXES`; the length axis alone reports the average and its own statistics)."""
    _check_set(metrics)
    chosen = _aggregates(get_family(family).has_margin, metrics, axes)
    return [n for s in chosen for n in _names(s, modulus, metrics)]


def _sample_metrics() -> set[str]:
    """Per-sample numbers (the YAML aggregates them with lm-eval's ``mean``); their per-length
    copies are phase aggregates like the others. The designs are phase-balanced, so the plain
    mean of ``acc`` is the phase-balanced mean."""
    return {s.metric for s in metrics.statistics() if s.per_sample and s.metric}


def metric_keys(
    family: str, modulus: int, lengths: Sequence[int], metrics: str, axes: str = "needle"
) -> list[str]:
    """Every results key a task reports: pooled names (not for the per-sample means, whose
    pooled value lm-eval computes itself) and per-length copies (always with ``full``, with the
    default set only when more than one length ran)."""
    per_length = metrics == "full" or len(lengths) > 1
    per_sample = _sample_metrics()
    keys = []
    for name in phase_metric_names(family, modulus, metrics, axes):
        if name not in per_sample:
            keys.append(metric_key(name, None))
        if per_length:
            keys += [metric_key(name, length) for length in lengths]
    return keys


def higher_is_better(name: str) -> bool | None:
    """Direction of an aggregate for lm-eval's table arrows, from its declaration (None: no
    arrow, e.g. a p-value)."""
    base = parse_metric_key(name)[0]
    for stat in metrics.statistics():
        if stat.metric is None:
            continue
        if base in _names(stat, 0, "full") or (
            stat.per_phase and base.removeprefix(f"{stat.metric}_").isdigit()
        ):
            return stat.higher_is_better
    return True


# -- data ----------------------------------------------------------------------------------------


def task_dataset(family: str, **kwargs: Any):
    """``custom_dataset`` of every phasebench task: a ``DatasetDict`` with one ``test`` split.

    ``kwargs`` are lm-eval's merged model arguments and ``--metadata``: ``max_seq_lengths``
    (default [4096]), ``phase_modulus`` (8), ``n_base``, ``seed`` (0), or ``dataset_path`` of a
    pre-built split, which must have been built for this model's tokenizer.
    """
    import datasets

    from phasebench.lmeval.data import provenance, resolve_split
    from phasebench.lmeval.metadata import check_keys
    from phasebench.lmeval_compat import under_lm_eval_cli

    try:
        check_keys(kwargs, strict=False)  # model arguments share the mapping: near misses only
        split = resolve_split(family, **kwargs)
    except PhasebenchError as exc:
        if under_lm_eval_cli():  # one line, not a traceback (lm-eval loaded the model first)
            raise TaskRefusal(f"{task_name(family)}: {exc}") from None
        raise
    dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(split.rows)})
    dataset.phasebench_provenance = provenance(split)  # PhaseTask files it under metadata
    return dataset


# -- scoring -------------------------------------------------------------------------------------


def answer_matches(response: str, answer: str) -> bool:
    """Answer-prefix match: the response, leading whitespace stripped, starts with the gold."""
    return bool(answer) and response.lstrip().startswith(answer)


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """Score one prompt: ``acc`` (0/1), ``margin`` for a family with one, and the sample's
    scored record under the name of every phase aggregate of the full metric set
    (:class:`PhaseTask` keeps those of the set that runs).

    By the output type the doc's family declares: generate_until (kv, niah): ``results`` is
    ``[response]``. multiple_choice (code): one ``(loglikelihood, is_greedy)`` per entry of
    ``choices``; ``margin`` is log p(right) minus log p(best distractor), ``acc`` is
    ``margin > 0``.

    The warm read of a ``"prefix_cache": "repeat"`` run (the doc's ``read`` is ``warm``)
    scores under :data:`~phasebench.samples.WARM_KEY` alone: every phase statistic stays the
    cold reads', and ``phasebench report`` pairs the two reads of each prompt.

    Where the response carries the server's prompt token count
    (:class:`phasebench.lmeval.witness.ServedText`), ``served_verified`` logs ``[label, count]``;
    a sample whose count disagrees with its label keeps only that: its phases were computed
    for another sequence than the one the model read, so it is left out of every statistic.
    """
    margin: float | None = None
    if get_family(doc["family"]).has_margin:
        lls = [float(r[0]) for r in results]
        gold = list(doc["choices"]).index(doc["answer"])
        margin = lls[gold] - max(ll for i, ll in enumerate(lls) if i != gold)
        acc = float(margin > 0)
    else:
        acc = float(answer_matches(str(results[0]), str(doc["answer"])))
    if is_warm(doc):  # the second read of a repeat run: compared with the cold one, apart
        return {WARM_KEY: acc}
    out: dict[str, Any] = {}
    if results and hasattr(results[0], "prompt_tokens"):  # through a witnessed API backend
        count = results[0].prompt_tokens
        out[SERVED_KEY] = [served_label(doc), None if count is None else int(count)]
        if served_state(doc, out[SERVED_KEY]) == "disagree":
            return out
    record = scored_record(doc, acc, margin)
    out["acc"] = acc
    if margin is not None:
        out["margin"] = margin
    length = config_length(doc)
    axes = "both" if doc.get("length_phase") is not None else "needle"
    per_sample = _sample_metrics()
    for name in phase_metric_names(doc["family"], int(doc["phase_modulus"]), "full", axes):
        if name not in per_sample:
            out[metric_key(name, None)] = record
        out[metric_key(name, length)] = record
    return out


# -- aggregation ---------------------------------------------------------------------------------


def _mean(items: Sequence[float]) -> float:
    return sum(items) / len(items) if items else float("nan")


def _summary_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """The lm-eval metric values of one :func:`phasebench.stats.summarize_samples` result:
    every declared statistic with an lm-eval name that the summary has, with its interval."""
    nan = float("nan")

    def value(x: Any) -> float:
        return nan if x is None else float(x)

    has_margin = "margin" in summary
    out: dict[str, float] = {}
    for stat in metrics.statistics():
        if stat.metric is None or (stat.needs_margin and not has_margin):
            continue
        if stat.per_phase:
            for r, x in enumerate(stat.value(summary)):
                out[f"{stat.metric}_{r}"] = value(x)
            continue
        x = stat.value(summary)
        if x is None and stat.unit == "tokens":
            x = 0  # a period not found is 0 tokens in lm-eval's table
        out[stat.metric] = value(x)
        if stat.interval is not None:
            lo, hi = stat.interval_of(summary)
            out[f"{stat.metric}_ci_low"], out[f"{stat.metric}_ci_high"] = value(lo), value(hi)
    return out


@functools.lru_cache(maxsize=64)
def _summaries(records: tuple[ScoredRecord, ...]) -> dict[str, float]:
    """Every phase aggregate of one set of records, computed once (lm-eval asks per metric)."""
    from phasebench.stats import summarize_samples

    return _summary_metrics(summarize_samples(records))


def aggregate(items: Sequence[Sequence[Any]], *, name: str) -> float:
    """One phase aggregate (``name``) of the records lm-eval collected for one metric key."""
    records = tuple(ScoredRecord.of(r) for r in items)
    return _summaries(records)[name]


class _PhaseTaskBase:
    """Mixin body of :func:`PhaseTask`; kept apart so importing this module needs no lm-eval."""

    def __init__(self, *args: Any, config: dict | None = None, **kwargs: Any) -> None:
        from phasebench import lmeval_compat as compat

        config = {k: v for k, v in (config or {}).items() if k != "class"}
        super().__init__(*args, config=config, **kwargs)  # type: ignore[call-arg]
        docs = self.dataset[self.config.test_split]  # type: ignore[attr-defined]
        metadata = self.config.metadata  # type: ignore[attr-defined]
        # results JSON -> configs -> <task> -> metadata -> phasebench: the exact prompts used
        origin = getattr(self.dataset, "phasebench_provenance", [])  # type: ignore[attr-defined]
        metadata["phasebench"] = origin
        metrics = str(metadata.get("metrics") or "compact")
        family = docs[0]["family"]
        modulus = int(docs[0]["phase_modulus"])
        lengths = sorted({config_length(d) for d in docs})
        axes = "needle"
        if docs[0].get("length_phase") is not None:
            axes = "both" if str(metadata.get("length_phases")) == "crossed" else "length"
        self._phasebench_keys = {*_sample_metrics(), SERVED_KEY}
        compat.add_phase_metric(self, SERVED_KEY, served_verified_share, True)
        if "read" in docs.column_names:
            # a repeat run: the warm reads' accuracy, beside the cold reads' acc
            compat.add_phase_metric(self, WARM_KEY, _mean, True)
            self._phasebench_keys.add(WARM_KEY)
        for key in metric_keys(family, modulus, lengths, metrics, axes):
            name = parse_metric_key(key)[0]
            aggregation = functools.partial(aggregate, name=name)
            compat.add_phase_metric(self, key, aggregation, higher_is_better(key))
            self._phasebench_keys.add(key)

    def construct_requests(self, doc: dict, ctx: Any, **kwargs: Any) -> Any:
        """lm-eval's requests for ``doc``; a generation request also names its prompt's token
        count among its stop sequences, so lm-eval batches it only with prompts of the same
        count and never pads it on the left (:mod:`phasebench.lmeval.batching`)."""
        from phasebench import lmeval_compat as compat
        from phasebench.lmeval.batching import one_length_per_batch

        requests = super().construct_requests(doc, ctx, **kwargs)  # type: ignore[misc]
        length = served_label(doc)
        if isinstance(requests, list):  # log-likelihood: padded on the right, positions kept
            return requests
        return compat.with_gen_kwargs(requests, lambda g: one_length_per_batch(g, length))

    def process_results(self, doc: dict, results: list) -> dict:
        out = super().process_results(doc, results)  # type: ignore[misc]
        return {k: v for k, v in out.items() if k in self._phasebench_keys}


def _make_phase_task():
    from phasebench import lmeval_compat as compat

    base = compat.configurable_task()
    return type("PhaseTask", (_PhaseTaskBase, base), {"__module__": __name__})


def __getattr__(name: str):
    # ``PhaseTask`` subclasses lm-eval's ConfigurableTask; built on first access so that
    # ``import phasebench.lmeval.tasks`` works where lm-eval is not installed.
    if name == "PhaseTask":
        cls = _make_phase_task()
        globals()["PhaseTask"] = cls
        return cls
    raise AttributeError(name)
