"""Computing: every number of a report from the scored records of each run's samples, through
:func:`phasebench.stats.summarize_samples` (the function the lm-eval aggregates and the
leaderboard call), and the reports of several runs merged into one."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from phasebench import metrics
from phasebench._version import __version__
from phasebench.cache_reads import one_at_a_time_problem, read_order_problem, repeat_comparison
from phasebench.errors import SamplesError, SpecError, StatsError, debugging, first_line
from phasebench.families import get_family
from phasebench.report._read import REPORT_FORMAT, Run
from phasebench.rows import config_length, row_problem
from phasebench.samples import (
    MAX_OFF_LABEL_SHARE,
    SERVED_KEY,
    SERVED_STATES,
    ScoredRecord,
    extra_read,
    fed_off_label,
    scored_record,
    served_label,
    served_state,
)
from phasebench.specs import MAX_MODULUS
from phasebench.stats import summarize_samples

DOC_FIELDS = ("phase", "base_id", "phase_modulus", "length", "family")


def build_report(
    runs: Sequence[Run],
    *,
    n_boot: int = metrics.N_BOOT,
    n_perm: int = metrics.N_PERM,
    seed: int = metrics.SEED,
) -> dict[str, Any]:
    """Every number the report shows, as a JSON-ready dict.

    Layout: ``{"format", "phasebench_version", "settings", "runs": {run: {"source", "tasks":
    {task: {length: entry}}}}}`` where each entry is ``{"task", "length"}`` plus
    :func:`phasebench.stats.summarize_samples` of the task's samples at that length.
    """
    out: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "phasebench_version": __version__,
        "settings": {"n_boot": n_boot, "n_perm": n_perm, "seed": seed},
        "runs": {},
    }
    for run in runs:
        tasks: dict[str, dict[str, Any]] = {}
        for task, samples in run.samples.items():
            left_out: dict[tuple[str, int], list[ScoredRecord]] = {}
            groups, served = _group(task, samples, left_out=left_out)
            warm_vs_cold = repeat_comparison(task, samples)
            if warm_vs_cold and (
                order := read_order_problem(samples) or one_at_a_time_problem(run.config)
            ):
                raise SamplesError(f"not a measurement: {run.source}: {task}: {order}")
            for key, witness in served.items():
                if fed_off_label(witness["agree"], witness["disagree"], witness["unverified"]):
                    total = sum(witness[state] for state in SERVED_STATES)
                    first = witness["first"]
                    raise SamplesError(
                        f"not a measurement: {run.source}: {key[0]} length {key[1]}: more than "
                        f"{MAX_OFF_LABEL_SHARE:.0%} of the prompts were not fed as labelled (the "
                        f"server's prompt token count disagrees with the label for "
                        f"{witness['disagree']} of {total}; first: {first['id']} labelled "
                        f"{first['label']}, server {first['count']}): the server read other "
                        "sequences than phasebench labelled (another tokenizer, BOS or chat "
                        "template, or a truncated prompt)"
                    )
            for (label, length), records in sorted(groups.items()):
                try:
                    summary = summarize_samples(records, n_boot=n_boot, n_perm=n_perm, seed=seed)
                except SamplesError:
                    raise
                except StatsError as exc:  # names what is wrong with the data
                    raise SamplesError(f"{run.source}: {label} length {length}: {exc}") from None
                except (ValueError, TypeError, KeyError, IndexError, ArithmeticError) as exc:
                    if debugging():  # PHASEBENCH_DEBUG=1: a bug keeps its traceback
                        raise
                    raise SamplesError(
                        f"{run.source}: {label} length {length}: samples of an unexpected shape "
                        f"({type(exc).__name__}: {first_line(exc)})"
                    ) from None
                if problem := left_out_problem(
                    records, left_out.get((label, length), []), summary, n_perm=n_perm, seed=seed
                ):
                    raise SamplesError(
                        f"not a measurement: {run.source}: {label} length {length}: {problem}"
                    )
                tasks.setdefault(label, {})[str(length)] = {
                    "task": label,
                    "length": length,
                    "served": served.get((label, length)),
                    **summary,
                }
                if length in warm_vs_cold:
                    tasks[label][str(length)]["prefix_cache"] = warm_vs_cold[length]
        if not tasks:
            raise SamplesError(
                f"{run.source}: no phasebench samples (docs without 'phase'/'base_id'); "
                "are these phasebench tasks?"
            )
        out["runs"][run.name] = {"source": run.source, "tasks": tasks}
    return out


def _group(
    task: str,
    samples: list[dict[str, Any]],
    identity: dict | None = None,
    left_out: dict | None = None,
) -> tuple[dict[tuple[str, int], list[ScoredRecord]], dict[tuple[str, int], dict[str, Any]]]:
    """Scored records per (task label, config length), and per group the server's witness:
    how many samples' server counts agree with their labels, disagree, or were not reported,
    and the first disagreement. A task run with several filters is several labels. Samples that
    are not phasebench docs are left out, and so are samples whose server count disagrees (the
    model read another sequence than the one the phases were computed for); a phasebench doc
    with a broken field is refused with the sample's number. ``identity``, when given, gets
    per group what identifies its split (:func:`_split_identity`); ``left_out``, when given,
    the scored records of the samples left out because their server count disagrees."""
    filters = sorted({str(s.get("filter", "none")) for s in samples})
    groups: dict[tuple[str, int], list[ScoredRecord]] = defaultdict(list)
    served: dict[tuple[str, int], dict[str, Any]] = {}
    docs: dict[tuple[str, int], list[tuple[Any, ...]]] = defaultdict(list)
    # where each prompt was first seen, by id and by what places it (unit, phase, length, ...):
    # a repeated or conflicting line would be averaged in as a sample of its own
    seen: dict[tuple, int] = {}
    for number, s in enumerate(samples, 1):
        doc = s.get("doc")
        if not isinstance(doc, dict) or "phase" not in doc or "base_id" not in doc:
            continue
        if extra_read(doc):  # a repeat run's warm or salted read: compared apart (cache_reads)
            continue
        where = f"{task} sample {number}"
        missing = [k for k in DOC_FIELDS if k not in doc]
        if missing:
            raise SamplesError(f"{where}: doc has no {', '.join(missing)}")
        # phase 1.5 or true is refused, never read as 1; a long text field that `leaderboard
        # pack` dropped (logged as null) is not one report reads, so only its own need a value
        checked = {k: v for k, v in doc.items() if v is not None or k in DOC_FIELDS}
        if problem := row_problem(checked):
            raise SamplesError(f"{where}: doc.{problem}")
        length = doc.get("config_length", doc.get("length"))
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise SamplesError(f"{where}: doc.config_length must be a token count (got {length!r})")
        if doc["phase_modulus"] > MAX_MODULUS:  # refused before a P-wide table is allocated
            raise SamplesError(
                f"{where}: doc.phase_modulus {doc['phase_modulus']} is above {MAX_MODULUS}, the "
                f"largest modulus a phasebench split has"
            )
        if problem := salt_problem(doc):
            raise SamplesError(f"not a measurement: {where}: {problem}")
        label = task if len(filters) == 1 else f"{task}/{s.get('filter', 'none')}"
        key = (label, config_length(doc))
        docs[key].append(_doc_identity(doc, s.get("doc_hash")))
        try:
            state = served_state(doc, s.get(SERVED_KEY))
        except (SamplesError, KeyError, TypeError, ValueError) as exc:
            raise SamplesError(f"{where}: {exc}") from None
        if state is not None:  # through an API server
            witness = served.setdefault(key, dict.fromkeys(SERVED_STATES, 0) | {"first": None})
            witness[state] += 1
        # a left-out sample is put back counted wrong and right (left_out_problem): its own
        # score, which an API run may not have logged, is never read
        left = state == "disagree"
        acc = 0.0 if left else _number(s.get("acc"), f"{where}: acc")
        try:
            family = get_family(str(doc["family"]))
        except SpecError as exc:
            raise SamplesError(f"{where}: doc {exc}") from None
        margin = None
        if family.has_margin:
            margin = 0.0 if left else _number(s.get("margin"), f"{where}: margin")
        try:
            record = scored_record(doc, acc, margin)
        except (KeyError, TypeError, ValueError) as exc:
            raise SamplesError(f"{where}: doc field {exc} is missing or not a number") from None
        if left:
            if witness["first"] is None:
                witness["first"] = {
                    "id": str(doc.get("id", number)),
                    "label": served_label(doc),
                    "count": int(s[SERVED_KEY][1]),
                }
            if left_out is not None:
                left_out.setdefault(key, []).append(record)
            continue
        if not 0 <= record.phase < record.modulus:
            raise SamplesError(f"{where}: phase {record.phase} is not in 0..{record.modulus - 1}")
        cell = (record.unit, record.phase, doc.get("length"), record.length_phase, record.pad)
        ids = None if doc.get("id") is None else str(doc["id"])  # any JSON value, hashable
        for what, ident in (("id", ids), ("prompt", cell)):
            if ident is None:
                continue
            first = seen.setdefault((label, what, ident), number)
            if first != number:
                shown = f"doc.id {ascii(ident)[:80]}" if what == "id" else "its unit and phase"
                raise SamplesError(
                    f"{where}: {shown} repeats sample {first} of the same task (a prompt is "
                    f"logged once; a repeated or conflicting line would be averaged in)"
                )
        groups[key].append(record)
    if identity is not None:
        identity.update({key: _split_identity(rows) for key, rows in docs.items()})
    return groups, served


def left_out_problem(
    records: Sequence[ScoredRecord],
    left_out: Sequence[ScoredRecord],
    summary: Mapping[str, Any],
    *,
    n_perm: int,
    seed: int,
) -> str | None:
    """Whether the gap's significance rests on the samples left out because the server read
    another sequence than labelled (None where it does not, or where nothing was left out or
    tested). The left-out samples are put back at their labelled phases counted wrong, then
    counted right: the two bounds of what they could have scored. Where the verdict
    (significant or not) differs between the bounds, the rows left out can make or unmake the
    gap alone (37 right answers of phase 0 left out of a flat model make a gap of 11.9
    points), and the run is not a measurement (docs/serving.md)."""
    if not left_out or summary.get("significant") is None:
        return None
    verdicts = {}
    for counted, acc in (("wrong", 0.0), ("right", 1.0)):
        together = [*records, *(r._replace(acc=acc) for r in left_out)]
        bound = summarize_samples(together, n_boot=0, n_perm=n_perm, seed=seed)
        verdicts[counted] = bool(bound.get("significant"))
    if verdicts["wrong"] == verdicts["right"]:
        return None
    phases = sorted({r.phase for r in left_out})
    return (
        f"the gap's significance rests on the {len(left_out)} samples left out (the server's "
        f"count disagrees with the label; phase(s) {', '.join(map(str, phases[:8]))}): "
        f"significant with them counted {'wrong' if verdicts['wrong'] else 'right'}, not with "
        f"them counted {'right' if verdicts['wrong'] else 'wrong'}; rerun so the server reads "
        f"the labelled sequences"
    )


def salt_problem(doc: Mapping[str, Any]) -> str | None:
    """What is wrong with a salted read's salt (None for an unsalted doc, or a salt that is a
    positive multiple of P tokens): a salt of ``s`` tokens moves every token by ``s``, so
    unless ``s`` is a multiple of P each phase label is off by ``s mod P`` and the gap is
    measured between the wrong phases (:mod:`phasebench.salting`). A ``baseline`` run's cold
    and warm reads carry ``salt_tokens`` as null (every read has every field): unsalted."""
    if doc.get("prefix_cache") != "salted" and doc.get("salt_tokens") is None:
        return None
    salt, modulus = doc.get("salt_tokens"), int(doc["phase_modulus"])
    if isinstance(salt, bool) or not isinstance(salt, int) or salt <= 0:
        return f"a salted read without a salt token count (doc.salt_tokens is {salt!r})"
    if salt % modulus:
        return (
            f"a salted read whose salt is {salt} tokens, not a multiple of P = {modulus}: every "
            f"phase label is off by {salt % modulus} (phasebench's salted arm pads its salt to "
            f"a multiple of P; check a split with phasebench verify --prefix-cache salted)"
        )
    return None


#: What identifies the split a group of samples came from, in the order a mismatch is named.
SPLIT_FIELDS = ("tokenizer_fingerprint", "family", "phase_modulus", "seed")


def _doc_identity(doc: Mapping[str, Any], doc_hash: Any) -> tuple[Any, ...]:
    """One logged doc's part of its split's identity: the split fields and the doc itself
    (lm-eval's ``doc_hash`` of it, else its id, anchor and phases)."""
    fields = tuple(str(doc.get(k)) for k in SPLIT_FIELDS)
    if isinstance(doc_hash, str):
        return (*fields, doc_hash)
    where = (doc.get("id"), doc.get("anchor_index"), doc.get("phase"), doc.get("length_phase"))
    return (*fields, json.dumps(where, sort_keys=True, default=str))


def _split_identity(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """The split of a group: each field of :data:`SPLIT_FIELDS` (every value seen, sorted),
    the number of docs and a digest of them all (equal docs, equal digest)."""
    import hashlib

    out: dict[str, Any] = {k: sorted({r[i] for r in rows}) for i, k in enumerate(SPLIT_FIELDS)}
    out["docs"] = len(rows)
    text = "\n".join(sorted(r[-1] for r in rows))
    out["docs_digest"] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return out


def _number(value: Any, what: str) -> float:
    if isinstance(value, list | tuple):  # some lm-eval versions log [value]
        value = value[0] if value else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SamplesError(f"{what} is {value!r}, not a number; are these phasebench tasks?")
    try:
        number = float(value)
    except ValueError:
        raise SamplesError(f"{what} is {value!r}, not a number") from None
    if not math.isfinite(number):
        raise SamplesError(f"{what} is {value!r}; every sample needs a finite score")
    return number


def merge_reports(
    computed: Iterable[dict[str, Any]], loaded: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    """One report holding the runs of several (computed now or read back from JSON)."""
    merged: dict[str, Any] | None = None
    for rep in [*computed, *loaded]:
        if merged is None:
            merged = {**rep, "runs": dict(rep["runs"])}
            continue
        for name, body in rep["runs"].items():
            key, i = name, 1
            while key in merged["runs"]:
                i += 1
                key = f"{name} ({i})"
            merged["runs"][key] = body
    if merged is None:
        raise SamplesError("nothing to report; pass an lm-eval output folder")
    return merged
