"""The ``metric`` rule: every aggregate a results file reports equals the one recomputed from
its samples with the task's own aggregation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from phasebench.errors import PhasebenchError
from phasebench.leaderboard.collect import Refused
from phasebench.samples import SERVED_KEY, WARM_KEY, served_verified_share

#: How far a reported aggregate may be from the recomputed one (float noise only).
METRIC_TOLERANCE = 1e-9


def check_aggregates(
    task: str, path: Path, results: dict, frame: pd.DataFrame, scored: Sequence[dict]
) -> None:
    """Every reported aggregate equals the one recomputed from the samples with the task's own
    aggregation (:func:`phasebench.lmeval.tasks.aggregate` over the scorer's records, in sample
    order, as lm-eval collects them); per-sample means for ``acc`` and ``margin``. A metric
    reported under the name an earlier version gave it (``acc_worst_phase``, now
    ``acc_lowest_phase``) is recomputed under its current name
    (:func:`phasebench.metrics.current_metric`), so older submissions still validate."""
    from phasebench.lmeval.tasks import aggregate, metric_key, parse_metric_key
    from phasebench.metrics import current_metric

    reported = results["results"][task]
    if not any(k.split(",")[0] == "acc" for k in reported):
        raise Refused("metric", path, f"{task}: no reported acc")
    for key, value in sorted(reported.items()):
        metric, sep, _ = key.partition(",")
        if not sep or "_stderr" in metric:
            continue
        try:
            name, length = parse_metric_key(metric)
        except ValueError:
            raise Refused("metric", path, f"{task}: {key} is not a metric name") from None
        metric = metric_key(current_metric(name), length)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Refused("metric", path, f"{task}: {key} is not a number ({value!r})")
        items = None
        if metric in ("acc", "margin", WARM_KEY) and metric in frame:
            expected = float(frame[metric].mean())
        elif metric == SERVED_KEY:
            expected = served_verified_share([s[metric] for s in scored if metric in s])
        else:
            items = [s[metric] for s in scored if metric in s]
            if not items:
                raise Refused("metric", path, f"{task}: {key} is not a metric of this task")
            try:
                expected = aggregate(items, name=parse_metric_key(metric)[0])
            except (KeyError, ValueError, PhasebenchError) as exc:
                raise Refused(
                    "metric", path, f"{task}: {key} cannot be recomputed ({exc})"
                ) from None
        if not _agrees(value, expected) and items is not None:
            # a phase aggregate written by a phasebench before the gap's p-value and interval
            # were one construction validates if the earlier rule gives it (the site shows
            # the current rule's numbers, recomputed from the samples either way)
            earlier = aggregate(items, name=parse_metric_key(metric)[0], earlier=True)
            if _agrees(value, earlier):
                continue
        if not _agrees(value, expected):
            raise Refused(
                "metric",
                path,
                f"{task}: reported {key} = {value}, the samples give {expected:.12g}",
            )


def _agrees(value: float, expected: float) -> bool:
    if math.isnan(value) and math.isnan(expected):
        return True
    return math.isclose(value, expected, rel_tol=0, abs_tol=METRIC_TOLERANCE)
