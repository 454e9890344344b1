"""The ``.eval_results/*.yaml`` files a model repository would carry for its leaderboard entries.

The Hub shows scores that a model repository keeps in ``.eval_results/*.yaml`` on the model's
page and gathers them into the leaderboard of the benchmark dataset they name (Hub
documentation, "Evaluation Results"; the dataset's tasks come from its ``eval.yaml``,
:mod:`phasebench.hub.benchmark`). For every accepted entry of a built board
(``leaderboard.json``) this writes one such file: one result per board the entry is on, under
the board's own Hub task (:func:`phasebench.hub.benchmark.task_id`: family, length, modulus,
and the axis where it is not the needle's, so boards at modulus 4 and 12 never share a task), with

* the cross-fitted worst phase, in percent, as the value (the number the board ranks by),
* the average and the gap with its interval beside it, in ``notes`` (the format holds one value
  per result), led by ``preliminary`` where the board marks the entry so (its design cannot
  detect the gap a board is read for), with the variant when the entry has one and how the
  numbers were checked,
* the date of the run and a link back to the board as the ``source``.

Test fixtures (``fixture: true`` in ``submission.yaml``: a random or toy model that proves the
pipeline) are never exported, nor are the boards of a family that is no task of the benchmark
(code: :func:`phasebench.hub.benchmark.inspect_runs`); they are named in ``skipped``.
A row that cannot become a result
(no cross-fitted worst phase, a length that is not a count, a value that is not a number) is
skipped with its reason and the entry's other rows are still written: one bad row never takes
the entry's other boards with it; an entry none of whose rows can be exported is refused.

Files are named after the entry: ``<org>__<model>/.eval_results/phasebench.yaml``, or
``phasebench_<variant>.yaml`` for a variant (one file per configuration of the same weights, so
the Hub never merges two); two accepted revisions of one model (and variant) each get a file,
the revision's first 12 characters added to its name. The names come from the board JSON, so
each is checked (the submission schema's patterns for a model id and a variant) and the joined
path must stay inside the output folder; an entry whose name fails is left out and named,
the others are written. Entries are written with ``huggingface_hub``'s own
serialiser (:func:`huggingface_hub.eval_result_entries_to_yaml`) and read back with its parser
before the folder is swapped in.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from phasebench import metrics
from phasebench.atomic import atomic_write_text, staged_folder
from phasebench.errors import HubError, OutputError, SubmissionsError
from phasebench.families import get_family
from phasebench.families import names as family_names
from phasebench.formatting import format_interval, format_value
from phasebench.hub.benchmark import NOT_IN_INSPECT, inspect_runs, task_id
from phasebench.leaderboard.score import CLAIMED_NOT_WITNESSED

#: Marks a folder this module wrote: only such a folder (or an empty one) is replaced.
MARKER = ".phasebench-eval-results"
FOLDER = ".eval_results"
SOURCE_NAME = "phasebench leaderboard"
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def _board_link(site_url: str, board: str) -> str:
    """The address of a board on the published site."""
    from phasebench.leaderboard.render import board_page

    return f"{site_url.rstrip('/')}/{board_page(board)}"


def _family(task: str) -> str:
    family = task.removeprefix("phasebench_")
    if family not in family_names():
        raise OutputError(f"board task {task!r} is not a phasebench task (phasebench_<family>)")
    return family


def _notes(row: Mapping[str, Any], variant: str | None) -> str:
    # the site's words and formatter (phasebench.formatting), so a card reads like the board
    worst, acc, gap = metrics.RANKING, metrics.get("acc"), metrics.get("gap")
    gap_text = format_value(gap, row.get(gap.column))
    interval = format_interval(gap, row.get(gap.column_interval))
    parts = []
    if row.get("preliminary"):
        detectable = metrics.get("detectable_gap")
        parts.append(
            f"{metrics.get('preliminary').label}: with {metrics.POWER:.0%} power this design "
            f"detects gaps of {format_value(detectable, row.get(detectable.column))} or "
            f"more, not the {100 * metrics.PRELIMINARY_GAP:.0f} pp a board is read for"
        )
    parts += [
        f"{worst.label} ({worst.qualifier}) {format_value(worst, row.get(worst.column))}",
        f"{acc.label} {format_value(acc, row.get(acc.column))}",
        f"{gap.label} ({gap.qualifier}) {gap_text}" + (f" {interval}" if interval else ""),
        f"{row['task']} at {row['length']} tokens, modulus {row['modulus']}"
        + (f", {row['axis']} axis" if row.get("axis", "needle") != "needle" else ""),
    ]
    if variant:
        parts.append(f"variant {variant}")
    if row.get("serving"):
        witness = row.get("serving_witness") or CLAIMED_NOT_WITNESSED
        parts.append(f"served by {row['serving']} ({witness})")
    parts.append(
        "reproduced by the maintainers"
        if row.get("evidence") == "reproduced"
        else "recomputed from the submitted logs"
    )
    return "; ".join(parts)


def _number(row: Mapping[str, Any], key: str) -> float | None:
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key} is not a number ({ascii(value)[:40]})")
    return float(value)


def _entry(board: Mapping[str, Any], row: Mapping[str, Any], dataset_id: str, site_url: str):
    """One row's ``EvalResultEntry``; ValueError (one line) when the row cannot make one."""
    from huggingface_hub import EvalResultEntry

    detail = board["models"].get(row.get("page"))
    if not isinstance(detail, Mapping):
        raise ValueError(f"its page {ascii(row.get('page'))[:80]} is not among the board's models")
    meta = detail.get("meta") or {}
    task = row.get("task")
    if not isinstance(task, str) or not isinstance(row.get("board"), str):
        raise ValueError("task or board is not a name")
    family = _family(task)
    length, modulus, phases = (row.get(k) for k in ("length", "modulus", "n_phases"))
    # a length as the family counts it (code's 0: no unrelated context before the item)
    for name, value, least in (("length", length, get_family(family).min_length),
                               ("modulus", modulus, 2), ("n_phases", phases, 1)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} is not a count of at least {least} ({ascii(value)[:40]})")
    axis = row.get("axis", "needle")
    if axis not in metrics.AXES:
        raise ValueError(f"axis {ascii(axis)[:40]} is not one of {', '.join(metrics.AXES)}")
    worst = _number(row, metrics.RANKING.column)
    if worst is None:
        raise ValueError("it has no cross-fitted worst phase")
    for key in ("acc", "gap"):
        _number(row, key)
    date = row.get("date")
    return EvalResultEntry(
        dataset_id=dataset_id,
        task_id=task_id(family, length, modulus, axis, phases),
        value=round(100 * worst, 2),
        date=date if isinstance(date, str) and _DATE.match(date) else None,
        source_url=_board_link(site_url, row["board"]),
        source_name=SOURCE_NAME,
        notes=_notes(row, meta.get("variant") if isinstance(meta, Mapping) else None),
    )


def check_site_url(site_url: str) -> str:
    """``--site-url``: an ``https://`` address with a host and no space or control character
    (it is written into every file's ``source.url`` and followed by whoever reads it)."""
    from urllib.parse import urlsplit

    bad = [c for c in site_url if c.isspace() or unicodedata.category(c)[0] in "CZ"]
    parts = urlsplit(site_url) if not bad else None
    if bad or parts.scheme != "https" or not parts.netloc:
        raise HubError(
            f"--site-url {ascii(site_url)[:120]} is not an https:// address of the published "
            f"site (one line, no spaces)"
        )
    return site_url


def check_board(board: Any, where: str = "the board") -> Mapping[str, Any]:
    """A built board's shape (a mapping with a ``rows`` list of mappings and a ``models``
    mapping), or a :class:`SubmissionsError` naming ``where``."""
    if (
        not isinstance(board, Mapping)
        or not isinstance(board.get("rows"), list)
        or not all(isinstance(row, Mapping) for row in board["rows"])
        or not isinstance(board.get("models"), Mapping)
    ):
        raise SubmissionsError(
            f"{where} is not a leaderboard.json made by `phasebench leaderboard build` (no rows "
            f"list and models mapping)"
        )
    return board


#: Why a test fixture's rows are not exported.
FIXTURE = "a test fixture (fixture: true), never exported"


def entry_results(
    board: Mapping[str, Any],
    dataset_id: str,
    site_url: str,
    skipped: dict[str, dict[str, str]] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Per accepted entry (its model page), the results of its ``.eval_results`` file, as
    ``huggingface_hub`` serialises them, one per board. A row that is not exported goes into
    ``skipped`` (page: {board: why}): a test fixture's, or one that cannot become a result; the
    entry's other rows are exported all the same. Published figures are not entries."""
    from huggingface_hub import eval_result_entries_to_yaml

    from phasebench.hub.naming import check_repo_id

    check_repo_id(dataset_id)
    check_site_url(site_url)
    check_board(board)
    skipped = {} if skipped is None else skipped
    by_page: dict[str, list[Any]] = {}
    for row in board["rows"]:
        if row.get("reported"):
            continue
        page, name = str(row.get("page")), str(row.get("board"))
        if row.get("fixture"):
            skipped.setdefault(page, {})[name] = FIXTURE
            continue
        if str(row.get("task", "")).removeprefix("phasebench_") in family_names() and not (
            inspect_runs(str(row["task"]).removeprefix("phasebench_"))
        ):
            skipped.setdefault(page, {})[name] = NOT_IN_INSPECT
            continue
        try:
            entry = _entry(board, row, dataset_id, site_url)
        except (ValueError, TypeError, OutputError) as exc:
            skipped.setdefault(page, {})[name] = str(exc)
            continue
        by_page.setdefault(page, []).append(entry)
    return {page: eval_result_entries_to_yaml(entries) for page, entries in by_page.items()}


#: What a model id and a variant may be to become a folder and a file name: the submission
#: schema's own patterns (ASCII letters, digits, ``.``, ``_``, ``-``; never ``..``).
def _name_patterns() -> tuple[re.Pattern, re.Pattern]:
    from phasebench.leaderboard.schema import submission_schema

    props = submission_schema()["properties"]
    return re.compile(props["model"]["pattern"]), re.compile(props["variant"]["pattern"])


def _file_path(detail: Mapping[str, Any], revision: bool = False) -> str:
    """Where an entry's file goes, relative to the output folder; with ``revision``, the
    revision's first 12 characters join the file name (two revisions of one model are two
    entries). ValueError for a model or variant that is not a plain name."""
    model_pattern, variant_pattern = _name_patterns()
    model, meta = detail.get("model"), detail.get("meta") or {}
    variant = meta.get("variant") if isinstance(meta, Mapping) else None
    if not isinstance(model, str) or not model_pattern.fullmatch(model) or ".." in model:
        raise ValueError(f"model {ascii(model)[:80]} is not a Hub id ORG/NAME")
    if variant is not None and (not isinstance(variant, str)
                                or not variant_pattern.fullmatch(variant)):  # fmt: skip
        raise ValueError(f"variant {ascii(variant)[:80]} is not a plain name")
    parts = ["phasebench"] + ([variant] if variant else [])
    if revision:
        rev = detail.get("revision")
        if not isinstance(rev, str) or not re.fullmatch(r"[0-9a-fA-F]{7,64}", rev):
            raise ValueError(f"revision {ascii(rev)[:80]} is not a commit")
        parts.append(rev[:12].lower())
    return f"{model.replace('/', '__')}/{FOLDER}/{'_'.join(parts)}.yaml"


def export_eval_results(
    board: Mapping[str, Any],
    out: Path | str,
    *,
    dataset_id: str,
    site_url: str,
    refused: dict[str, str] | None = None,
    skipped: dict[str, dict[str, str]] | None = None,
) -> list[Path]:
    """Write every accepted entry's ``.eval_results`` file under ``out`` (built beside it and
    swapped in; an existing ``out`` is replaced only if this function made it or it is empty).
    Returns the files written. An entry that cannot be written inside ``out`` (a name that is
    not a plain Hub id or variant, or no row that can become a result) is left out and named in
    ``refused`` (its page: why); the others are written. A row left out of a written entry's
    file (one that cannot become a result), of a test fixture or of a board that is no task of
    the benchmark (an entry of code boards alone has no file, and is not refused) is named in
    ``skipped`` (page: {board: why}). Two revisions of one model (and variant) each get a file,
    named with the revision."""
    import yaml
    from huggingface_hub import parse_eval_result_entries

    refused = {} if refused is None else refused
    skipped = {} if skipped is None else skipped
    results = entry_results(board, dataset_id, site_url, skipped)
    for page, boards in list(skipped.items()):
        if page not in results and not set(boards.values()) <= {FIXTURE, NOT_IN_INSPECT}:
            # an entry none of whose rows can be exported is refused, in one line
            refused[page] = "; ".join(f"{name}: {why}" for name, why in sorted(boards.items()))
            del skipped[page]
    planned: dict[str, tuple[Mapping[str, Any], list[dict[str, Any]]]] = {}
    for page, entries in sorted(results.items()):
        try:
            planned[page] = (board["models"][page], entries)
            _file_path(board["models"][page])  # refuse an unsafe name before anything is made
        except (ValueError, TypeError, AttributeError) as exc:
            planned.pop(page, None)
            refused[page] = str(exc)
    shared: dict[str, int] = {}
    for detail, _ in planned.values():
        shared[_file_path(detail)] = shared.get(_file_path(detail), 0) + 1
    out = Path(out)
    with staged_folder(out, marker=MARKER) as staging:
        root = staging.resolve()
        seen: set[str] = set()
        for page, (detail, entries) in planned.items():
            try:
                rel = _file_path(detail, revision=shared[_file_path(detail)] > 1)
                target = (staging / rel).resolve()
                if not target.is_relative_to(root) or rel in seen:
                    raise ValueError(f"{rel} is not a file of its own inside --out")
            except ValueError as exc:
                refused[page] = str(exc)
                continue
            seen.add(rel)
            text = yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=96)
            parsed = parse_eval_result_entries(yaml.safe_load(text))
            if len(parsed) != len(entries):
                raise OutputError(f"{rel} does not read back as eval results")
            atomic_write_text(staging / rel, text)
    return sorted(p for p in out.rglob("*.yaml") if FOLDER in p.parts)
