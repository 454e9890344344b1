"""Scores from validated samples, through :mod:`phasebench.stats` only: the board the JSON, CSV
and parquet files are written from (:mod:`phasebench.leaderboard.tables`) and the site is
rendered from (compute -> JSON -> render).

One leaderboard row per (submission, task, length). A *board* is one task at one length, phase
modulus, phase axis and set of phases (:func:`_board_key`): a minimum over 12 phases is not
comparable with one over 4, so runs that differ there are never ranked together. Within a
board, models are ranked by worst phase with a place from paired comparisons on the base items
the entries share (:func:`phasebench.stats.ranks.paired_ranks`: 1 + the number of entries
significantly better, places following the statistic, entries the paired test cannot separate
sharing a place; the rank interval from the same tests). The average ranking is computed the
same way and offered as a toggle. Reported (published, not reproduced) rows are carried along
but never ranked, and neither are test fixtures (``fixture: true`` in ``submission.yaml``: a
random or toy model that shows the pipeline). A row whose design cannot detect a gap of
:data:`phasebench.metrics.PRELIMINARY_GAP` is ranked but marked ``preliminary`` and never
called a board's leader.

Every ranked row says how it was checked (``evidence``): ``recomputed`` from the submitted logs
(validation proves the logs consistent, not that the model wrote them), or ``reproduced`` when a
maintainer re-ran the model and marked it (``reproduced.yaml``, shown with who and when). What
the boards found is read off the rows by :mod:`phasebench.leaderboard.readings`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from phasebench import metrics
from phasebench._version import __version__
from phasebench.leaderboard import staged as _staged
from phasebench.leaderboard import standing as _standing
from phasebench.leaderboard.checks import WITNESSED
from phasebench.leaderboard.presses import describe_kv_cache
from phasebench.leaderboard.readings import findings, settings
from phasebench.leaderboard.summaries import board_summary
from phasebench.leaderboard.validate import Outcome, Submission
from phasebench.lmeval.served_settings import SETTINGS, differing_settings, settings_label
from phasebench.samples import ScoredRecord

REPORTED_NOTE = "reported, not reproduced"
#: ``evidence`` of a row, and what the site says about it.
RECOMPUTED = "recomputed"
REPRODUCED = "reproduced"
EVIDENCE_NOTE = (
    "recomputed from the submitted logs: validation proves every number follows from the logs "
    "and the regenerated prompts, not that the logs came from the model; 'reproduced' marks an "
    "entry a maintainer re-ran"
)


def _clean(value: Any) -> Any:
    """JSON-ready: numpy scalars to Python, non-finite to None; floats kept exactly as computed
    (the same numbers as lm-eval's results and `phasebench report`; the site rounds for display)."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def _page_name(sub: Submission) -> str:
    """The per-model page, one per entry: a readable lower-case prefix and a hash of the exact
    folder name (so neither long names nor a case-insensitive file system merge two pages)."""
    digest = hashlib.sha256(sub.name.encode("utf-8")).hexdigest()[:16]
    readable = re.sub(r"[^a-z0-9._-]+", "-", sub.name.replace("/", "__").lower())[:80]
    return f"models/{readable.strip('-.') or 'model'}-{digest}.html"


def evidence(sub: Submission) -> tuple[str, dict[str, str] | None]:
    """How an entry was checked: ``reproduced`` (with the maintainer's mark) or ``recomputed``."""
    if sub.reproduced:
        return REPRODUCED, dict(sub.reproduced)
    return RECOMPUTED, None


def _board_axis(summary: Mapping[str, Any]) -> str:
    """Which phase axes a board summary varies (one of :data:`phasebench.metrics.AXES`)."""
    if summary.get("length_axis"):
        return "both"
    return "length" if summary.get("axis") == "length" else "needle"


def _board_key(task: str, length: int, modulus: int, axis: str = "needle",
              phases: int | None = None) -> str:  # fmt: skip
    """The name of the board a row belongs to: ``phasebench_kv@512/m8``, with the axis when it
    is not the needle's (``/length``, ``/both``) and the number of phases when a run covered a
    subset of the residues (``/5of128``)."""
    key = f"{task}@{int(length)}/m{int(modulus)}"
    if axis != "needle":
        key += f"/{axis}"
    if phases is not None and phases != modulus:
        key += f"/{int(phases)}of{int(modulus)}"
    return key


def exported(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The exported statistics of one board summary, as a leaderboard row carries them: each
    declared statistic's value under its key, its interval under the interval's key, the
    per-phase accuracies as a list."""
    out: dict[str, Any] = {}
    for stat in metrics.statistics():
        if not stat.exported:
            continue
        out[stat.column] = stat.value(summary)
        if stat.interval is not None:
            out[stat.column_interval] = list(stat.interval_of(summary))
    return out


def _staged_note(provenance: Mapping[str, Any], board: str) -> str:
    """The mark of a staged run (recomputed by validation), else empty."""
    mark = (provenance.get("staged") or {}).get(board)
    if not mark:
        return ""
    return (
        f"staged run: stopped at look {mark['look']} of {mark['looks']} ({mark['n_base']} of "
        f"{mark['n_base_design']} base items), {mark['verdict']} gap"
    )


def _lacks_a_statistic(summary: Mapping[str, Any]) -> bool:
    """Whether a summary misses a declared statistic computed outside the built-in summary."""
    return any(
        stat.compute is not None
        and stat.key not in summary
        and (not stat.needs_margin or "margin" in summary)
        for stat in metrics.statistics()
    )


def _kv_fields(kv_cache: str | None) -> dict[str, Any]:
    """A row's KV-cache label (whole, for tables), method and parameters, read from the
    declared text (:func:`~phasebench.leaderboard.presses.describe_kv_cache`)."""
    described = describe_kv_cache(kv_cache)
    return {
        "kv_label": described["label"],
        "kv_method": described["method"],
        "kv_parameters": described["parameters"],
    }


def _family_of(task: str) -> Any:
    """The family whose lm-eval task is ``task`` (None for none this phasebench knows)."""
    from phasebench.families import get_family, names

    for name in names():
        family = get_family(name)
        if family.task == task:
            return family
    return None


def _length_note(task: str) -> str:
    """What the board's length means, where its family says it is not the prompt's token
    count (the code family's 0), else empty."""
    family = _family_of(task)
    return family.length_note if family is not None else ""


def _chance(task: str) -> float:
    """The accuracy of a model that cannot do ``task`` (its family's ``chance``; 0 for none)."""
    family = _family_of(task)
    return family.chance if family is not None else 0.0


def _records(frame: pd.DataFrame) -> list[ScoredRecord]:
    """One row's scored records, as :func:`~phasebench.leaderboard.summaries.board_summary`
    reads them (accuracy only: ranks and comparisons use no margin)."""
    return [
        ScoredRecord(int(r.length), int(r.modulus), str(r.unit), int(r.phase), float(r.acc),
                     None, int(r.pad), None if getattr(r, "length_phase", None) is None
                     or r.length_phase != r.length_phase else int(r.length_phase))
        for r in frame.itertuples(index=False)
    ]  # fmt: skip


def _phase_matrix(records: Sequence[ScoredRecord]) -> tuple[list[Any], np.ndarray]:
    """One row's paired units and accuracy phase matrix, on the axis its summary leads with."""
    from phasebench.stats.paired import top_axis, unit_matrix

    units, phases = top_axis(list(records))
    return unit_matrix(units, phases, [r.acc for r in records], records[0].modulus)


#: A board compares every pair of its entries that are runs of one split, up to this many
#: pairs (``phasebench report A B --diff`` for each, at build time); a board with more pairs
#: is compared side by side only, and its compare page says so.
COMPARE_MAX_PAIRS = 200


def comparisons(
    members: Sequence[Mapping[str, Any]],
    runs: Mapping[int, tuple[list[ScoredRecord], str]],
) -> dict[str, Any] | None:
    """The paired differences of a board's entries that are runs of one split (the same
    tokenizer, and the same base items at the same length and modulus, which validation
    regenerated and matched to every logged doc), keyed ``"<anchor a>|<anchor b>"`` for both
    orders: :func:`phasebench.stats.compare_runs` with ``b`` as before and ``a`` as after, so
    each difference reads A minus B (the computation ``phasebench report B A --diff`` makes).
    None when the board has more than :data:`COMPARE_MAX_PAIRS` such pairs."""
    from phasebench.stats import compare_runs

    entries = [r for r in members if not r.get("fixture")]
    pairs = []
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            (ra, ta), (rb, tb) = runs[id(a)], runs[id(b)]
            if ta == tb and {r.unit for r in ra} == {r.unit for r in rb}:
                pairs.append((a, b))
    if len(pairs) > COMPARE_MAX_PAIRS:
        return None
    out = {}
    for a, b in pairs:
        # both orders, each computed as it is read (A - B in the order a visitor picks)
        out[f"{a['anchor']}|{b['anchor']}"] = _clean(compare_runs(runs[id(b)][0], runs[id(a)][0]))
        out[f"{b['anchor']}|{a['anchor']}"] = _clean(compare_runs(runs[id(a)][0], runs[id(b)][0]))
    return out


def _places(
    members: Sequence[dict[str, Any]],
    ranked: Sequence[dict[str, Any]],
    matrices: Mapping[int, tuple[list[Any], np.ndarray]],
) -> None:
    """Each of a board's rows' place and rank interval by the ranking statistic
    (``rank_worst``, ``rank_worst_interval``) and by the average (``rank_average``,
    ``rank_average_interval``), from paired comparisons of the ``ranked`` rows alone on their
    shared base items (:func:`phasebench.stats.ranks.paired_ranks`); a row not ranked has
    None."""
    from phasebench.stats.ranks import paired_ranks

    for key, statistic in (("rank_worst", metrics.RANKING.key), ("rank_average", "acc")):
        for row in members:
            row[key] = row[f"{key}_interval"] = None
        places = paired_ranks([matrices[id(r)] for r in ranked], statistic,
                              n_boot=metrics.N_BOOT, seed=metrics.SEED)  # fmt: skip
        for row, place in zip(ranked, places, strict=True):
            if place is not None:
                row[key], row[f"{key}_interval"] = place.place, list(place.interval)


def _lowest_ties(per_phase: Sequence[float | None] | None) -> list[int] | None:
    """The phases that share the lowest accuracy, where several do and not all (a flat row
    names no weak phase): one index would name one of them as if it stood out."""
    values = [v for v in per_phase or [] if v is not None]
    if not values:
        return None
    low = min(values)
    tied = [i for i, v in enumerate(per_phase or []) if v is not None and math.isclose(v, low)]
    return tied if 1 < len(tied) < len(values) else None


def _anchor(row: Mapping[str, Any]) -> str:
    """The row's permalink id on its board page: its model page's name (one per entry)."""
    return "e-" + Path(str(row["page"])).stem


def score(outcome: Outcome, reported: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The whole leaderboard as one JSON-ready dict (rows, per-model detail, rejections)."""
    from phasebench.stats.ranks import RANK_INTERVAL_RULE, RANK_RULE

    rows: list[dict[str, Any]] = []
    models: dict[str, Any] = {}
    matrices: dict[int, tuple[list[Any], np.ndarray]] = {}  # each row's units and phase matrix
    runs: dict[int, tuple[list[ScoredRecord], str]] = {}  # its records and tokenizer
    for sub in sorted(outcome.accepted, key=lambda s: s.name):
        page = _page_name(sub)
        checked, mark = evidence(sub)
        detail = {
            "evidence": checked,
            "reproduced": mark,
            "fixture": bool(sub.meta.get("fixture")),
            "name": sub.name,
            "model": sub.meta["model"],
            "revision": sub.meta["revision"],
            "variant": sub.meta.get("variant"),
            "meta": {k: sub.meta[k] for k in sorted(sub.meta) if k != "tokenizer"},
            "tokenizer": sub.meta["tokenizer"],
            "provenance": sub.provenance,
            "task_versions": sub.task_versions,
            "serving_witness": serving_witness(sub),
            "boards": [],
        }
        for (task, length), frame in sub.samples.groupby(["task", "length"], sort=True):
            modulus = int(frame["modulus"].iloc[0])
            summary = (sub.summaries or {}).get(f"{task}@{int(length)}")
            if summary is None or _lacks_a_statistic(summary):
                # not computed by the validating process, or computed where a statistic
                # registered here is unknown
                summary = board_summary(frame)
            # a staged run stopped on a significant gap is a reading at its design's strength
            stop = (sub.provenance.get("staged") or {}).get(f"{task}@{int(length)}")
            summary = _staged.reading(summary, stop)
            axis = _board_axis(summary)
            phases = len(summary.get("phases") or summary.get("per_phase") or []) or modulus
            name = _board_key(task, int(length), modulus, axis, phases)
            shown = (sub.excerpts or {}).get(f"{task}@{int(length)}") or []
            detail["boards"].append(
                {"board": name, "task": task, "length": int(length), "summary": summary,
                 "samples": shown}
            )  # fmt: skip
            rows.append(
                {
                    "board": name,
                    "task": task,
                    "task_version": sub.task_versions[task],
                    "length": int(length),
                    "modulus": modulus,
                    "axis": axis,
                    "n_phases": phases,
                    "n_base": int(summary["n_base"]),
                    "model": sub.meta["model"],
                    "revision": sub.meta["revision"],
                    "variant": sub.meta.get("variant"),
                    "precision": sub.meta["precision"],
                    "backend": sub.meta["backend"],
                    "kv_cache": sub.meta["kv_cache"],
                    **_kv_fields(sub.meta["kv_cache"]),
                    "length_note": _length_note(task),
                    "serving": _serving_label(sub.meta.get("serving")),
                    "serving_settings": settings_label(sub.meta.get("serving")),
                    "serving_witness": detail["serving_witness"],
                    "chat_template": bool(sub.meta["chat_template"]),
                    **exported(summary),
                    "framework": sub.provenance.get("framework", "lm-eval"),
                    "lm_eval_version": sub.provenance["lm_eval_version"],
                    "transformers_version": sub.provenance["transformers_version"],
                    "phasebench_version": __version__,
                    "date": sub.provenance["date"],
                    "page": page,
                    "reported": False,
                    "note": _staged_note(sub.provenance, f"{task}@{int(length)}"),
                    "evidence": checked,
                    "reproduced": mark,
                    "fixture": bool(sub.meta.get("fixture")),
                    "role": sub.meta.get("role"),
                    "chance": _chance(task),
                    "anchor": _anchor({"page": page}),
                }
            )
            rows[-1]["lowest_phase_ties"] = _lowest_ties(rows[-1].get("per_phase"))
            if stop:
                rows[-1]["staged"] = stop  # recomputed by validation, never the submitter's
            records = _records(frame)
            matrices[id(rows[-1])] = _phase_matrix(records)
            runs[id(rows[-1])] = (records, json.dumps(sub.meta["tokenizer"], sort_keys=True))
        models[page] = detail
    _compare_settings(models)
    cleaned = [_clean(r) for r in rows]
    matrices = {id(c): matrices[id(r)] for r, c in zip(rows, cleaned, strict=True)}
    runs = {id(c): runs[id(r)] for r, c in zip(rows, cleaned, strict=True)}
    rows = cleaned
    for board in sorted({r["board"] for r in rows}):
        members = [r for r in rows if r["board"] == board]
        _standing.assign(members, {r["task"]: r["chance"] for r in members})
        # places and rank intervals over the ranked rows only (one per configuration; no
        # reference, at-floor row or fixture takes or holds a place)
        _places(members, [r for r in members if r["ranked"]], matrices)
    heads = _standing.heads(rows)
    rows.sort(key=lambda r: (r["board"], _standing.order_key(r, heads, metrics.RANKING.column)))
    compared = {
        board: comparisons([r for r in rows if r["board"] == board], runs)
        for board in sorted({r["board"] for r in rows})
    }
    return {
        "phasebench_version": __version__,
        "method": {
            "n_boot": metrics.N_BOOT,
            "n_perm": metrics.N_PERM,
            "seed": metrics.SEED,
            "alpha": metrics.ALPHA,
            "rank": f"{RANK_RULE} (cross-fitted worst phase by default, average as a toggle)",
            "rank_interval": RANK_INTERVAL_RULE,
            "rank_reason": "the plain worst phase is the minimum of noisy per-phase means and "
            "is biased low, more so with fewer base items; the cross-fitted worst phase (chosen "
            "on half the items, measured on the other half) is measured by simulation to be "
            "unbiased on null and stride-4 models with 94-100% interval coverage",
            "evidence": EVIDENCE_NOTE,
            "preliminary_gap": metrics.PRELIMINARY_GAP,
            "power": metrics.POWER,
            "board": "one task at one length, phase modulus and phase axis: runs that differ "
            "in any of these are never ranked together",
            "configuration": "runs of one model, revision, backend, declared KV cache, "
            "precision, serving stack and chat template on one board are one configuration, "
            "ranked once at its strongest design (most base items); the others are listed "
            "under it as earlier designs, not ranked",
            "reference": "a run its submission declares 'role: reference' (no compression, "
            "full attention) is drawn as a reference row and line, never ranked or the leader",
            "floor": f"{_standing.FLOOR_NOTE}: the gap is not significant and the lower end of "
            f"the average's {metrics.LEVEL} interval is at most "
            f"{100 * _standing.FLOOR_MARGIN:g} points above the task's chance level; not ranked",
        },
        "rows": rows,
        "findings": findings(rows),
        "settings": settings(rows),
        "comparisons": compared,
        "reported": _reported_rows(reported) if reported is not None else [],
        "models": _clean(models),
        "rejections": outcome.report_json(),
    }


def load_reported(path: Path | None = None) -> dict[str, Any]:
    """The published figures (``phasebench/leaderboard/reported_results.json``, shipped inside
    the package; the one copy)."""
    if path is not None:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    text = resources.files("phasebench.leaderboard").joinpath("reported_results.json")
    return json.loads(text.read_text(encoding="utf-8"))


def _pct(value: Any) -> float | None:
    return round(value / 100.0, 6) if isinstance(value, int | float) else None


def _reported_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows for the published figures (percent -> fraction); never ranked."""
    rows = []
    source = str(data.get("source", ""))

    def row(model: str, task: str, length: int | None, **values: Any) -> dict[str, Any]:
        base = {
            "board": "reported",
            "task": task,
            "length": length,
            "model": model,
            "acc": None,
            "lowest_phase": None,
            "best_phase": None,
            "gap": None,
            "dominant_period": None,
            "reported": True,
            "note": REPORTED_NOTE,
            "source": source,
            "rank_worst": None,
            "rank_average": None,
        }
        base.update(values)
        return base

    for item in data.get("kv_retrieval_128k", []):
        extra = ""
        if "even_phases_range" in item:
            even, odd = item["even_phases_range"], item["odd_phases_range"]
            extra = f"; even phases {even[0]}-{even[1]}, odd {odd[0]}-{odd[1]}"
        rows.append(
            row(
                item["model"],
                "kv retrieval (paper)",
                131072,
                lowest_phase=_pct(item.get("lowest_phase")),
                best_phase=_pct(item.get("best_phase")),
                gap=_pct(item.get("gap")),
                kv_cache=item.get("compression"),
                detail=f"{item.get('compression', '')}{extra}",
            )
        )
    for item in data.get("trained_from_scratch_qwen3_0.6b_100B_tokens", []):
        rows.append(
            row(
                f"Qwen3-0.6B from scratch: {item['model']}",
                "kv retrieval (paper)",
                None,
                acc=_pct(item.get("average")),
                lowest_phase=_pct(item.get("lowest_phase")),
                gap=_pct(item.get("gap")),
                detail=f"validation loss {item.get('validation_loss')}",
            )
        )
    code = data.get("code_completion_fp8_cast", {})
    for model, item in sorted(code.items()):
        if not isinstance(item, dict):
            continue
        if "period" in item:
            detail = (
                f"margin P(8)-P(32) from {item['margin_range_p8_minus_p32'][0]} to "
                f"{item['margin_range_p8_minus_p32'][1]}; {item['inputs_following_period']} of "
                f"{item['inputs']} inputs follow the period"
            )
        else:
            detail = (
                f"{item.get('errors')} errors of {item.get('inputs')} inputs; "
                f"{item.get('note', '')}"
            )
        rows.append(
            row(model, "code completion (paper)", None, dominant_period=item.get("period"),
                detail=detail)
        )  # fmt: skip
    return rows


# -- files --------------------------------------------------------------------------------------


def _serving_label(serving: Mapping[str, Any] | None) -> str | None:
    """How a row names its serving stack (``vllm 0.28; prefix-caching, chunked-prefill``), or
    None for a run on lm-eval's own backend."""
    if not serving:
        return None
    flags = ", ".join(serving.get("flags") or [])
    return f"{serving['engine']} {serving['version']}" + (f"; {flags}" if flags else "")


def _compare_settings(models: dict[str, dict[str, Any]]) -> None:
    """Give every entry that another entry of its model shares the page with a list of those
    others (``other_stacks``: page, serving label, the settings whose declarations differ), so
    that two entries of one model on two stacks show what differs."""

    by_model: dict[str, list[str]] = {}
    for page, detail in models.items():
        by_model.setdefault(detail["model"], []).append(page)
    for pages in by_model.values():
        for page in pages:
            mine = models[page]["meta"].get("serving") or {}
            others = []
            for other in pages:
                if other == page:
                    continue
                theirs = models[other]["meta"].get("serving") or {}
                a, b = mine.get("settings") or {}, theirs.get("settings") or {}
                differ = differing_settings(a, b)
                others.append(
                    {
                        "page": other,
                        "serving": _serving_label(theirs) or "lm-eval's own backend",
                        "differ": [
                            {"setting": n, "unit": SETTINGS[n].unit, "this": a.get(n),
                             "other": b.get(n)}
                            for n in differ
                        ],
                    }
                )  # fmt: skip
            if others:
                models[page]["other_stacks"] = others


#: How a row shows a serving claim the server's witness does not back (no sample carries the
#: witness, or the server reported no count); one it backs shows validation's
#: :data:`~phasebench.leaderboard.checks.WITNESSED`.
CLAIMED_NOT_WITNESSED = "claimed, not witnessed"


def serving_witness(sub: Submission) -> str | None:
    """``witnessed`` or ``claimed, not witnessed`` for an entry that declares a serving stack
    (None for one that declares none): the claim is witnessed only when validation found the
    server's agreeing count on every sample."""
    if not sub.meta.get("serving"):
        return None
    return WITNESSED if sub.provenance.get("served") == WITNESSED else CLAIMED_NOT_WITNESSED
