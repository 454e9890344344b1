"""The ``.eval_results/*.yaml`` files a model repository would carry for its leaderboard entries.

The Hub shows scores that a model repository keeps in ``.eval_results/*.yaml`` on the model's
page and gathers them into the leaderboard of the benchmark dataset they name (Hub
documentation, "Evaluation Results"; the dataset's tasks come from its ``eval.yaml``,
:mod:`phasebench.hub.benchmark`). For every accepted entry of a built board
(``leaderboard.json``) this writes one such file: one result per board the entry is on, with

* the cross-fitted worst phase, in percent, as the value (the number the board ranks by),
* the average and the gap with its interval beside it, in ``notes`` (the format holds one value
  per result), with the variant when the entry has one and how the numbers were checked,
* the date of the run and a link back to the board as the ``source``.

Files are named after the entry: ``<org>__<model>/.eval_results/phasebench.yaml``, or
``phasebench_<variant>.yaml`` for a variant (one file per configuration of the same weights, so
the Hub never merges two). Entries are written with ``huggingface_hub``'s own serialiser
(:func:`huggingface_hub.eval_result_entries_to_yaml`) and read back with its parser before the
folder is swapped in.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from phasebench import metrics
from phasebench.atomic import atomic_write_text, staged_folder
from phasebench.errors import OutputError
from phasebench.families import names as family_names
from phasebench.hub.benchmark import task_id

#: Marks a folder this module wrote: only such a folder (or an empty one) is replaced.
MARKER = ".phasebench-eval-results"
FOLDER = ".eval_results"
SOURCE_NAME = "phasebench leaderboard"


def board_link(site_url: str, board: str) -> str:
    """The address of a board on the published site."""
    from phasebench.leaderboard.render import board_page

    return f"{site_url.rstrip('/')}/{board_page(board)}"


def _family(task: str) -> str:
    family = task.removeprefix("phasebench_")
    if family not in family_names():
        raise OutputError(f"board task {task!r} is not a phasebench task (phasebench_<family>)")
    return family


def _notes(row: Mapping[str, Any], variant: str | None) -> str:
    # the site's words and formatter (phasebench.metrics), so a card reads like the board
    worst, acc, gap = (metrics.get(k) for k in ("worst_phase_crossfit", "acc", "gap"))
    gap_text = metrics.format_value(gap, row.get(gap.column))
    interval = metrics.format_interval(gap, row.get(gap.column_interval))
    parts = [
        f"{worst.label} ({worst.qualifier}) {metrics.format_value(worst, row.get(worst.column))}",
        f"{acc.label} {metrics.format_value(acc, row.get(acc.column))}",
        f"{gap.label} ({gap.qualifier}) {gap_text}" + (f" {interval}" if interval else ""),
        f"{row['task']} at {row['length']} tokens",
    ]
    if variant:
        parts.append(f"variant {variant}")
    parts.append(
        "reproduced by the maintainers"
        if row.get("evidence") == "reproduced"
        else "recomputed from the submitted logs"
    )
    return "; ".join(parts)


def entry_results(
    board: Mapping[str, Any], dataset_id: str, site_url: str
) -> dict[str, list[dict[str, Any]]]:
    """Per accepted entry (its model page), the results of its ``.eval_results`` file, as
    ``huggingface_hub`` serialises them; boards without a cross-fitted worst phase are left
    out."""
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    from phasebench.hub.naming import check_repo_id

    check_repo_id(dataset_id)
    by_page: dict[str, list[Any]] = {}
    for row in board["rows"]:
        if row.get("reported") or row.get("worst_phase_crossfit") is None:
            continue
        meta = board["models"][row["page"]].get("meta") or {}
        entry = EvalResultEntry(
            dataset_id=dataset_id,
            task_id=task_id(_family(row["task"]), row["length"]),
            value=round(100 * row["worst_phase_crossfit"], 2),
            date=row["date"] if row.get("date") not in (None, "unknown") else None,
            source_url=board_link(site_url, row["board"]),
            source_name=SOURCE_NAME,
            notes=_notes(row, meta.get("variant")),
        )
        by_page.setdefault(row["page"], []).append(entry)
    return {page: eval_result_entries_to_yaml(entries) for page, entries in by_page.items()}


def file_path(detail: Mapping[str, Any]) -> str:
    """Where an entry's file goes, relative to the output folder."""
    meta = detail.get("meta") or {}
    variant = meta.get("variant")
    name = f"phasebench_{variant}.yaml" if variant else "phasebench.yaml"
    return f"{str(detail['model']).replace('/', '__')}/{FOLDER}/{name}"


def export_eval_results(
    board: Mapping[str, Any], out: Path | str, *, dataset_id: str, site_url: str
) -> list[Path]:
    """Write every accepted entry's ``.eval_results`` file under ``out`` (built beside it and
    swapped in; an existing ``out`` is replaced only if this function made it or it is empty).
    Returns the files written."""
    import yaml
    from huggingface_hub import parse_eval_result_entries

    results = entry_results(board, dataset_id, site_url)
    out = Path(out)
    with staged_folder(out, marker=MARKER) as staging:
        seen: set[str] = set()
        for page, entries in sorted(results.items()):
            rel = file_path(board["models"][page])
            if rel in seen:  # two entries of one model and variant: the board never has them
                raise OutputError(f"two entries would share {rel}")
            seen.add(rel)
            text = yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=96)
            parsed = parse_eval_result_entries(yaml.safe_load(text))
            if len(parsed) != len(entries):
                raise OutputError(f"{rel} does not read back as eval results")
            atomic_write_text(staging / rel, text)
    return sorted(p for p in out.rglob("*.yaml") if FOLDER in p.parts)
