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

Metric sets (``--metadata '{"metrics": "full"}'``): by default a task reports
:data:`COMPACT_METRICS` (average, worst phase plain and cross-fitted, gap and its p-value; for
code also the margin's worst phase), pooled over the requested lengths, with per-length copies
only when more than one length ran. ``full`` adds intervals, the best phase, every phase and the
phase-lock rate, always per length. Every number comes from
:func:`phasebench.samples.summarize_records`, the function ``phasebench report`` and the
leaderboard use, so the three agree.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from phasebench.errors import EvalError
from phasebench.rows import config_length
from phasebench.samples import (
    SERVED_KEY,
    scored_record,
    served_label,
    served_state,
    served_verified_share,
    summarize_records,
)

#: ``max_gen_toks`` of the generate_until task YAMLs (a test keeps them equal).
MAX_GEN_TOKS = 16
#: DeepSeek-V4's CSA stride: the period ``phase_lock_rate`` tests code margins against.
DEFAULT_LOCK_STRIDE = 4

#: Phase aggregates of the default metric set, in the order lm-eval's table sorts them.
COMPACT_METRICS = ("acc", "acc_worst_phase", "acc_worst_phase_crossfit", "phase_gap",
                   "phase_gap_p_value")  # fmt: skip
#: Added for code in the default set (``margin`` itself is a per-sample mean in the YAML).
COMPACT_CODE_METRICS = ("margin_worst_phase",)
#: Everything ``"metrics": "full"`` adds (``acc_phase_<r>`` are added per phase).
FULL_METRICS = (
    "acc_ci_low",
    "acc_ci_high",
    "acc_best_phase",
    "acc_worst_phase_ci_low",
    "acc_worst_phase_ci_high",
    "acc_worst_phase_crossfit_ci_low",
    "acc_worst_phase_crossfit_ci_high",
    "phase_gap_ci_low",
    "phase_gap_ci_high",
)
FULL_CODE_METRICS = ("margin", "phase_lock_rate")
#: The length-phase axis (``"length_phases"`` in ``--metadata``): its worst phase, gap,
#: p-value and period (0: none), next to the needle phase's.
LENGTH_METRICS = ("acc_worst_length_phase", "length_phase_gap", "length_phase_gap_p_value",
                  "length_phase_period")  # fmt: skip
#: Which axes a config varies: the needle phase (the default), the length phase alone, both.
AXES = ("needle", "length", "both")
METRIC_SETS = ("compact", "full")
#: Per-sample numbers (the YAML aggregates them with lm-eval's ``mean``); their per-length
#: copies are phase aggregates like the others. The designs are phase-balanced, so the plain
#: mean of ``acc`` is the phase-balanced mean.
SAMPLE_METRICS = ("acc", "margin")
#: Direction of each aggregate for lm-eval's table arrows; None (no arrow) for p-values.
LOWER_IS_BETTER = {"phase_gap", "phase_gap_ci_low", "phase_gap_ci_high", "length_phase_gap"}
NO_DIRECTION = {"phase_gap_p_value", "length_phase_gap_p_value", "length_phase_period"}


# -- metric names --------------------------------------------------------------------------------


def metric_key(name: str, length: int | None) -> str:
    """``phase_gap`` (pooled over lengths) or ``phase_gap@4096`` (one length)."""
    return name if length is None else f"{name}@{length}"


def parse_metric_key(key: str) -> tuple[str, int | None]:
    """Inverse of :func:`metric_key` for consumers of lm-eval's results JSON."""
    name, sep, length = key.partition("@")
    return (name, int(length)) if sep else (name, None)


def phase_metric_names(
    family: str, modulus: int, metrics: str = "full", axes: str = "needle"
) -> list[str]:
    """The aggregates a task of ``family`` reports with metric set ``metrics`` on ``axes``
    (the length axis alone reports the average and its own aggregates only)."""
    if metrics not in METRIC_SETS:
        raise EvalError(f"'metrics' must be one of {', '.join(METRIC_SETS)} (got {metrics!r})")
    if axes == "length":
        return ["acc", *LENGTH_METRICS]
    names = list(COMPACT_METRICS)
    if family == "code":
        names += COMPACT_CODE_METRICS
    if axes == "both":
        names += LENGTH_METRICS
    if metrics == "full":
        names += list(FULL_METRICS) + [f"acc_phase_{r}" for r in range(modulus)]
        if family == "code":
            names += FULL_CODE_METRICS
    return names


def metric_keys(
    family: str, modulus: int, lengths: Sequence[int], metrics: str, axes: str = "needle"
) -> list[str]:
    """Every results key a task reports: pooled names (not for the per-sample means, whose
    pooled value lm-eval computes itself) and per-length copies (always with ``full``, with the
    default set only when more than one length ran)."""
    per_length = metrics == "full" or len(lengths) > 1
    keys = []
    for name in phase_metric_names(family, modulus, metrics, axes):
        if name not in SAMPLE_METRICS:
            keys.append(metric_key(name, None))
        if per_length:
            keys += [metric_key(name, length) for length in lengths]
    return keys


def higher_is_better(name: str) -> bool | None:
    base = parse_metric_key(name)[0]
    if base in NO_DIRECTION:
        return None
    return base not in LOWER_IS_BETTER


# -- data ----------------------------------------------------------------------------------------


def task_dataset(family: str, **kwargs: Any):
    """``custom_dataset`` of every phasebench task: a ``DatasetDict`` with one ``test`` split.

    ``kwargs`` are lm-eval's merged model arguments and ``--metadata``: ``max_seq_lengths``
    (default [4096]), ``phase_modulus`` (8), ``n_base``, ``seed`` (0), or ``dataset_path`` of a
    pre-built split, which must have been built for this model's tokenizer.
    """
    import datasets

    from phasebench.lmeval.data import provenance, resolve_split

    split = resolve_split(family, **kwargs)
    dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(split.rows)})
    dataset.phasebench_provenance = provenance(split)  # PhaseTask files it under metadata
    return dataset


# -- scoring -------------------------------------------------------------------------------------


def answer_matches(response: str, answer: str) -> bool:
    """Answer-prefix match: the response, leading whitespace stripped, starts with the gold."""
    return bool(answer) and response.lstrip().startswith(answer)


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """Score one prompt: ``acc`` (0/1), ``margin`` for code, and the sample's scored record
    under the name of every phase aggregate of the full metric set (:class:`PhaseTask` keeps
    those of the set that runs).

    generate_until (kv, niah): ``results`` is ``[response]``. multiple_choice (code): one
    ``(loglikelihood, is_greedy)`` per entry of ``choices``; ``margin`` is log p(right) minus
    log p(best distractor), ``acc`` is ``margin > 0``.

    Where the response carries the server's prompt token count
    (:class:`phasebench.lmeval.witness.ServedText`), ``served_verified`` logs ``[label, count]``;
    a sample whose count disagrees with its label keeps only that: its phases were computed
    for another sequence than the one the model read, so it is left out of every statistic.
    """
    margin: float | None = None
    if doc["family"] == "code":
        lls = [float(r[0]) for r in results]
        gold = list(doc["choices"]).index(doc["answer"])
        margin = lls[gold] - max(ll for i, ll in enumerate(lls) if i != gold)
        acc = float(margin > 0)
    else:
        acc = float(answer_matches(str(results[0]), str(doc["answer"])))
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
    for name in phase_metric_names(doc["family"], int(doc["phase_modulus"]), "full", axes):
        if name not in SAMPLE_METRICS:
            out[metric_key(name, None)] = record
        out[metric_key(name, length)] = record
    return out


# -- aggregation ---------------------------------------------------------------------------------


def summary_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """The lm-eval metric values of one :func:`phasebench.samples.summarize_records` result."""
    nan = float("nan")

    def value(x: Any) -> float:
        return nan if x is None else float(x)

    out = {
        "acc": value(summary["acc"]),
        "acc_ci_low": value(summary["acc_ci"][0]),
        "acc_ci_high": value(summary["acc_ci"][1]),
        "acc_worst_phase": value(summary["worst_phase"]),
        "acc_worst_phase_ci_low": value(summary["worst_phase_ci"][0]),
        "acc_worst_phase_ci_high": value(summary["worst_phase_ci"][1]),
        "acc_worst_phase_crossfit": value(summary["worst_phase_crossfit"]),
        "acc_worst_phase_crossfit_ci_low": value(summary["worst_phase_crossfit_ci"][0]),
        "acc_worst_phase_crossfit_ci_high": value(summary["worst_phase_crossfit_ci"][1]),
        "acc_best_phase": value(summary["best_phase"]),
        "phase_gap": value(summary["gap"]),
        "phase_gap_ci_low": value(summary["gap_ci"][0]),
        "phase_gap_ci_high": value(summary["gap_ci"][1]),
        "phase_gap_p_value": value(summary["p_value"]),
    }
    for entry in summary["per_phase"]:
        out[f"acc_phase_{entry['phase']}"] = value(entry["acc"])
    by_length = summary.get("length_axis") or (summary if summary.get("axis") == "length" else None)
    if by_length is not None:
        out["acc_worst_length_phase"] = value(by_length["worst_phase"])
        out["length_phase_gap"] = value(by_length["gap"])
        out["length_phase_gap_p_value"] = value(by_length["p_value"])
        out["length_phase_period"] = float(by_length["dominant_period"] or 0)
    if "margin" in summary:
        out["margin"] = value(summary["margin"])
        out["margin_worst_phase"] = value(summary["margin_worst_phase"])
        rates = summary["code"]["phase_lock_rate"]
        out["phase_lock_rate"] = value(rates.get(str(DEFAULT_LOCK_STRIDE)))
    return out


@functools.lru_cache(maxsize=64)
def _summaries(records: tuple[tuple, ...]) -> dict[str, float]:
    """Every phase aggregate of one set of records, computed once (lm-eval asks per metric)."""
    return summary_metrics(summarize_records(records))


def aggregate(items: Sequence[Sequence[Any]], *, name: str) -> float:
    """One phase aggregate (``name``) of the records lm-eval collected for one metric key."""
    records = tuple(_hashable(r) for r in items)
    return _summaries(records)[name]


def _hashable(record: Sequence[Any]) -> tuple:
    """A record as a tuple of hashables (logged records come back with lists for tuples)."""
    return tuple(tuple(_hashable(x)) if isinstance(x, list) else x for x in record)


class _PhaseTaskBase:
    """Mixin body of :func:`PhaseTask`; kept apart so importing this module needs no lm-eval."""

    def __init__(self, *args: Any, config: dict | None = None, **kwargs: Any) -> None:
        from phasebench.lmeval import compat

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
        self._phasebench_keys = {*SAMPLE_METRICS, SERVED_KEY}
        compat.add_phase_metric(self, SERVED_KEY, served_verified_share, True)
        for key in metric_keys(family, modulus, lengths, metrics, axes):
            name = parse_metric_key(key)[0]
            aggregation = functools.partial(aggregate, name=name)
            compat.add_phase_metric(self, key, aggregation, higher_is_better(key))
            self._phasebench_keys.add(key)

    def process_results(self, doc: dict, results: list) -> dict:
        out = super().process_results(doc, results)  # type: ignore[misc]
        return {k: v for k, v in out.items() if k in self._phasebench_keys}


def _make_phase_task():
    from phasebench.lmeval import compat

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
