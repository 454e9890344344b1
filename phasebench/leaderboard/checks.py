"""The per-task rules: every logged sample against the regenerated split, re-scored, and every
reported aggregate recomputed (``limit``, ``count``, ``tokenizer``, ``hash``, ``metric``,
``served``: a sample whose server-reported prompt token count disagrees with its label or is
not a whole number, or the server's witness on some samples only)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from phasebench.cache_reads import BASELINE_NOT_ACCEPTED, one_at_a_time_problem, read_order_problem
from phasebench.errors import MachineError, PhasebenchError, SamplesError
from phasebench.families import paired_unit
from phasebench.leaderboard.aggregates import check_aggregates
from phasebench.leaderboard.collect import RawSubmission, Refused
from phasebench.leaderboard.excerpts import Collector
from phasebench.leaderboard.regenerate import Regenerator
from phasebench.leaderboard.staged import check_prefix, doc_limit, replay
from phasebench.lmeval.data import relabel
from phasebench.lmeval_compat import DEFAULT_MAX_GEN_TOKS, doc_hash, hash_string
from phasebench.rows import config_length
from phasebench.samples import (
    SERVED_KEY,
    WARM_KEY,
    is_warm,
    served_label,
    served_state,
)
from phasebench.tokenizer_behaviour import provenance_difference

#: The longest config a board accepts (the 128K of the published figures): a claimed spec
#: beyond it is refused before anything is regenerated, so a submission cannot spend the
#: validator's time and memory on a split no board would show.
BOARD_MAX_LENGTH = 131_072


def task_configs(raw: RawSubmission, tasks: Mapping[str, str]) -> dict[str, tuple[Path, dict]]:
    """``{task: (results file, results dict)}`` for the phasebench tasks of the submission."""
    found: dict[str, tuple[Path, dict]] = {}
    for path, results in raw.results:
        groups = set(results.get("groups") or {}) | set(results.get("group_subtasks") or {})
        for task in results["results"]:
            if task in groups and task not in tasks:
                continue  # a group row (e.g. "phasebench"), not a task
            if task not in tasks:
                raise Refused(
                    "task", path, f"{ascii(task)}: not a task of this phasebench ({sorted(tasks)})"
                )
            version = str((results.get("versions") or {}).get(task))
            if version != tasks[task]:
                raise Refused(
                    "task", path, f"{task} version {version!r}; this phasebench has {tasks[task]!r}"
                )
            if task in found:
                raise Refused("task", path, f"{task} appears in two results files")
            found[task] = (path, results)
    if not found:
        raise Refused("task", raw.name, "no phasebench task in the results")
    return found


def _check_limit(task: str, path: Path, results: dict, n_logged: int) -> int | None:
    """The run's ``--limit`` (a staged run's look, checked later against the split), after
    checking lm-eval's sample counts."""
    limit = doc_limit(task, path, results)
    counts = (results.get("n-samples") or {}).get(task) or {}
    original, effective = counts.get("original"), counts.get("effective")
    for label, value in (("original", original), ("effective", effective)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise Refused(
                "count", path, f"n-samples.{task}.{label} must be a count (got {value!r})"
            )
    if original != effective and (limit is None or effective != min(limit, original)):
        raise Refused("limit", path, f"{task}: {effective} of {original} samples evaluated")
    if n_logged != effective:
        raise Refused("count", path, f"{task}: {n_logged} samples logged, results say {effective}")
    return limit


#: The fields phasebench.lmeval's ``relabel`` adds to a row of a chat-template run.
_RELABEL_FIELDS = ("split_phase", "anchor_offset")
_INT_FIELDS = ("base_id", "phase", "phase_modulus", "length")


def _check_sample_shape(rec: dict, path: Path, number: int) -> dict:
    doc = rec.get("doc")
    if not isinstance(doc, dict):
        raise Refused("json", path, f"sample {number}: no 'doc' object")
    for name in _INT_FIELDS:
        value = doc.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise Refused(
                "count", path, f"sample {number}: doc.{name} must be >= 0 (got {value!r})"
            )
    if doc["phase"] >= doc["phase_modulus"]:
        raise Refused("count", path, f"sample {number}: phase {doc['phase']} >= modulus")
    for name in ("doc_hash", "prompt_hash", "target_hash"):
        if not isinstance(rec.get(name), str):
            raise Refused("hash", path, f"sample {number}: no {name} (run lm-eval --log_samples)")
    if not isinstance(doc.get("id"), str):
        raise Refused("json", path, f"sample {number}: doc.id missing")
    return doc


def _spec_for(
    docs: Sequence[dict], length: int, results: dict, task: str, meta: dict, path: Path
) -> Any:
    from phasebench.specs import SplitSpec

    first = docs[0]
    metadata = ((results.get("configs") or {}).get(task) or {}).get("metadata") or {}
    if metadata.get("haystack"):
        raise Refused("hash", path, "a custom haystack file cannot be regenerated here")
    modulus = first["phase_modulus"]
    n_base = metadata.get("n_base")
    if not isinstance(n_base, int) or isinstance(n_base, bool):
        n_base = len({d["base_id"] for d in docs})
    seeds = {d.get("seed") for d in docs}
    if len(seeds) != 1:
        raise Refused("hash", path, f"{task} length {length}: samples disagree on the seed")
    try:
        spec = SplitSpec(
            family=first["family"],
            length=length,
            modulus=modulus,
            n_base=n_base,
            seed=seeds.pop(),
            tokenizer=first["tokenizer"],
            tokenizer_args=tuple(sorted((meta["tokenizer"].get("args") or {}).items())),
        )
    except (PhasebenchError, TypeError, KeyError) as exc:
        raise Refused("hash", path, f"{task} length {length}: no valid spec ({exc})") from None
    if spec.length > BOARD_MAX_LENGTH:
        raise Refused(
            "hash",
            path,
            f"{task} length {length:,}: beyond what the leaderboard's boards accept (at most "
            f"{BOARD_MAX_LENGTH:,} tokens; building it would need about "
            f"{spec.estimated_memory() / 2**30:.1f} GiB); it is not regenerated",
        )
    return spec


def expected_context(
    doc: Mapping[str, Any], config: Mapping[str, Any], tok: Any, chat: bool
) -> str:
    """The context string lm-eval builds for a zero-shot phasebench doc (its prompt_hash input).

    The phasebench tasks use the row's prompt as the whole context. With a chat template the
    prompt is one user turn rendered by the tokenizer's template with a generation prompt, as
    lm-eval's ``hf`` backend does.
    """
    template = config.get("doc_to_text", "prompt")
    if isinstance(template, str) and template in doc:
        text = doc[template]
    elif isinstance(template, str) and "{{" in template:
        from phasebench.lmeval_compat import apply_template

        text = apply_template(template, doc)
    else:
        text = doc["prompt"]
    text = (config.get("description") or "") + str(text)
    if chat:
        text = tok.hf.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
    return text


def _recompute_sample_metrics(doc: Mapping[str, Any], rec: Mapping[str, Any]) -> dict[str, Any]:
    """What the task's own scorer (:func:`phasebench.lmeval.tasks.process_results`, the
    function the task YAML points at) returns for the logged responses: ``acc``, ``margin`` for
    code, and the scored records lm-eval aggregates."""
    from phasebench.lmeval.tasks import process_results

    resps = rec.get("filtered_resps")
    choices = doc.get("choices") or []
    if not isinstance(resps, list) or len(resps) != (len(choices) if choices else 1):
        raise ValueError(f"expected {len(choices) or 1} response(s)")
    if choices:
        parsed = []
        for r in resps:
            # lm-eval logs each (loglikelihood, is_greedy) pair with its values as strings
            value = r[0] if isinstance(r, list) and r else r
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError("log-likelihoods must be numbers")
            number = float(value)  # ValueError for anything that is not a number
            if not math.isfinite(number):
                raise ValueError("non-finite log-likelihood")
            parsed.append([number])
        resps = parsed
    elif not isinstance(resps[0], str):
        raise ValueError("a generated string expected")
    return process_results(doc, resps)


def _restore_doc(doc: dict, rec: dict, row: Mapping[str, Any]) -> dict:
    restored = dict(doc)
    for name in rec.get("packed_fields") or []:
        if name not in row or name not in restored:
            raise KeyError(name)
        restored[name] = row[name]
    return restored


def check_task(
    raw: RawSubmission,
    task: str,
    results_path: Path,
    results: dict,
    regen: Regenerator,
    tok: Any,
) -> tuple[pd.DataFrame, int, dict[str, Any] | None, str | None, dict[str, list]]:
    """All per-task rules; returns the scored samples (one row per sample: its scored record
    with task, family and n_base), the longest sequence the run needed, for a staged run
    (``--limit`` at a look of the design) the board's mark recomputed from the samples
    (:mod:`phasebench.leaderboard.staged`), else None, what the server's witness says of
    the samples (:func:`_witness`), and a few samples per phase of each length for the
    details page (:mod:`phasebench.leaderboard.excerpts`, keyed ``task@length``)."""
    if task not in raw.samples:
        raise Refused("files", raw.name, f"no samples_{task}_*.jsonl for task {task}")
    path, records = raw.samples[task]
    limit = _check_limit(task, results_path, results, len(records))
    config = (results.get("configs") or {}).get(task) or {}
    docs = [_check_sample_shape(rec, path, i + 1) for i, rec in enumerate(records)]
    _check_arm(task, path, config, docs)
    if any("read" in d for d in docs):
        order = read_order_problem(records) or one_at_a_time_problem(results.get("config") or {})
        if order:
            raise Refused("prefix_cache", path, f"{task}: not a repeat run's order: {order}")
    _check_tokenizer(raw, path, docs, tok, config)
    task_hash = "".join(r["doc_hash"] + r["prompt_hash"] + r["target_hash"] for r in records)
    reported_hash = (results.get("task_hashes") or {}).get(task)
    if reported_hash and hash_string(task_hash) != reported_hash:
        raise Refused("hash", results_path, f"task_hashes.{task} does not match the samples")
    by_length: dict[int, list[int]] = {}
    for i, doc in enumerate(docs):
        by_length.setdefault(config_length(doc), []).append(i)
    lengths_wanted = ((config.get("metadata") or {}).get("max_seq_lengths")) or []
    missing = sorted(set(int(x) for x in lengths_wanted if isinstance(x, int)) - set(by_length))
    if missing:
        raise Refused("count", path, f"{task}: no samples for length(s) {missing}")
    if limit is not None and len(by_length) != 1:
        raise Refused("limit", path, f"run with --limit {limit} over several lengths; submit "
                      "the full split (a staged run has one length)")  # fmt: skip
    context = _TaskContext(raw, task, path, config, tok)
    rows_out: list[dict[str, Any]] = []
    excerpts: dict[str, Collector] = {}
    scored: list[dict[str, Any]] = []
    base_ids: list[int] = []
    staged = None
    for length, indices in sorted(by_length.items()):
        spec = _spec_for([docs[i] for i in indices], length, results, task, raw.meta, path)
        try:
            expected = regen.rows(spec, tok)
        except MachineError:  # the machine's failure, not the submission's
            raise
        except PhasebenchError as exc:
            raise Refused(
                "count", path, f"{task} length {length}: the samples name no complete split ({exc})"
            ) from None
        offset = context.derive_offset(expected.values())
        collector = excerpts[f"{task}@{int(length)}"] = Collector()
        seen: set[str] = set()
        # a "prefix_cache": "repeat" run logs every prompt twice: its cold read (scored like any
        # sample) and its warm read, checked against the same row and kept beside the cold one
        warm: dict[str, float] = {}
        cold_at: dict[str, int] = {}
        for i in indices:
            row = expected.get(docs[i]["id"])
            if row is None:
                raise Refused(
                    "hash", path, f"sample {i + 1}: {ascii(docs[i]['id'])} is not in the split"
                )
            read = docs[i].get("read")
            if read not in (None, "cold", "warm"):
                raise Refused("hash", path, f"sample {i + 1}: doc.read is {ascii(read)[:40]}")
            if docs[i]["id"] in (warm if is_warm(docs[i]) else seen):
                raise Refused("count", path, f"sample {i + 1}: {docs[i]['id']} appears twice")
            logged_as = row if read is None else {**row, "read": read}
            metrics, full = context.check_sample(i + 1, records[i], docs[i], logged_as, offset)
            if is_warm(docs[i]):
                warm[docs[i]["id"]] = float(metrics[WARM_KEY])
                continue
            seen.add(docs[i]["id"])
            cold_at[docs[i]["id"]] = len(rows_out)
            collector.add(records[i], full, metrics["acc"])
            scored.append(metrics)
            rows_out.append(
                {
                    "task": task,
                    "family": row["family"],
                    "length": length,
                    "modulus": spec.modulus,
                    "n_base": spec.n_base,
                    "unit": paired_unit(row),
                    "phase": int(full["phase"]),
                    "acc": metrics["acc"],
                    "margin": metrics.get("margin"),
                    "pad": int(row.get("pad_tokens") or 0),
                    "length_phase": row.get("length_phase"),
                }
            )
            base_ids.append(int(row["base_id"]))
        if warm:
            if set(warm) != seen:
                raise Refused(
                    "count", path, f"{task} length {length}: {len(warm)} warm reads of "
                    f"{len(seen)} prompts; a repeat run reads every prompt twice"
                )  # fmt: skip
            for name, at in cold_at.items():
                rows_out[at][WARM_KEY] = warm[name]
        if limit is not None and seen != set(expected):
            bases = check_prefix(task, length, path, spec, expected, seen, limit)
            staged = replay(task, length, path, rows_out, base_ids, bases, spec)
        elif seen != set(expected):
            raise Refused(
                "count",
                path,
                f"{task} length {length}: {len(seen)} of {len(expected)} prompts of the split "
                f"present (every phase of every base item is needed)",
            )
    if limit is not None and staged is None and limit != len(rows_out):
        # a --limit that is no look of the staged design (one that sent every prompt is a
        # whole run)
        raise Refused("limit", results_path, f"run with --limit {limit}; submit the full split")
    frame = pd.DataFrame(rows_out)
    witness = _witness(task, path, scored)
    check_aggregates(task, results_path, results, frame, scored)
    return frame, context.longest, staged, witness, {k: c.result() for k, c in excerpts.items()}


#: What the server's witness says of a task's samples (:func:`_witness`), and of a submission.
WITNESSED, NOT_WITNESSED = "witnessed", "not witnessed"


def _witness(task: str, path: Path, scored: Sequence[dict]) -> str | None:
    """``witnessed`` when every sample carries the server's count and each agrees with its label
    (a disagreeing one was refused already), ``not witnessed`` when every sample carries the
    key but the server reported no count for some, None when no sample carries it (no server
    witnessed the run). The key on some samples only is half a witness: removing it from the
    samples that disagree would pass the ``served`` rule, so it is refused."""
    present = [s[SERVED_KEY] for s in scored if SERVED_KEY in s]
    if not present:
        return None
    if len(present) != len(scored):
        raise Refused(
            "served",
            path,
            f"{task}: {len(present)} of {len(scored)} samples carry the server's witness "
            f"({SERVED_KEY}); a run through a server logs it on every sample (phasebench eval)",
        )
    return WITNESSED if all(value[1] is not None for value in present) else NOT_WITNESSED


def _check_arm(task: str, path: Path, config: Mapping[str, Any], docs: Sequence[dict]) -> None:
    """A salted run (``"prefix_cache": "salted"``) is refused as what it is: an arm that tells
    a prefix-cache fault from a phase effect beside a plain run of the same split (``phasebench
    report PLAIN SALTED --diff``), not an entry; its prompts are not the split's."""
    if any(d.get("read") == "salted" for d in docs):  # a baseline run's third read
        raise Refused("prefix_cache", path, f"{task}: {BASELINE_NOT_ACCEPTED}")
    salted = (config.get("metadata") or {}).get("prefix_cache") == "salted" or any(
        d.get("prefix_cache") == "salted" or "salt_tokens" in d for d in docs
    )
    if salted:
        raise Refused(
            "prefix_cache",
            path,
            f'{task}: a salted run ("prefix_cache": "salted") is not a board entry: the salted '
            "arm is compared with a plain run of the split (phasebench report PLAIN SALTED "
            "--diff); submit the plain run, or a repeat run for the warm-versus-cold reading",
        )


def _check_tokenizer(
    raw: RawSubmission, path: Path, docs: Sequence[dict], tok: Any, config: Mapping[str, Any]
) -> None:
    """The samples carry this tokenizer's fingerprint and, where the run recorded how its
    tokenizer encoded the probe text, this install encodes it the same way."""
    fingerprints = {d.get("tokenizer_fingerprint") for d in docs}
    if fingerprints != {tok.fingerprint}:
        raise Refused(
            "tokenizer",
            path,
            f"samples were made with tokenizer {sorted(map(str, fingerprints))}, but "
            f"{raw.meta['tokenizer']['name']} here is {tok.fingerprint}",
        )
    if why := provenance_difference((config.get("metadata") or {}).get("phasebench"), tok):
        raise Refused("tokenizer", path, f"the run's tokenizer differs: {why}")


class _TaskContext:
    """What every sample of one task is checked against, and the longest sequence seen."""

    def __init__(
        self, raw: RawSubmission, task: str, path: Path, config: Mapping[str, Any], tok: Any
    ) -> None:
        self.task, self.path, self.config, self.tok = task, path, config, tok
        self.chat = bool(raw.meta["chat_template"])
        self.gen_budget = int(
            (config.get("generation_kwargs") or {}).get("max_gen_toks", DEFAULT_MAX_GEN_TOKS)
        )
        self.longest = 0
        self.template_extra: int | None = None

    def derive_offset(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """The chat-template relabelling offset of one config, derived here and never read from
        the samples: 0 without a template; with one, the tokens the tokenizer's own template
        adds before the prompt, measured as ``phasebench eval`` measures it (on the first and
        last row, which must agree)."""
        if not self.chat:
            return 0
        from phasebench.lmeval.data import chat_shift

        rows = list(rows)
        try:
            shifts = {chat_shift(self.tok, row) for row in (rows[0], rows[-1])}
        except PhasebenchError as exc:
            raise Refused("tokenizer", self.path, f"chat template: {exc}") from None
        if len(shifts) != 1:
            raise Refused(
                "tokenizer",
                self.path,
                f"the chat template shifts prompts by different amounts ({sorted(shifts)})",
            )
        # the templated length too: a logged served_length is checked against it
        offset, self.template_extra = shifts.pop()
        return offset

    def check_sample(
        self, number: int, rec: dict, doc: dict, row: Mapping[str, Any], offset: int
    ) -> tuple[dict[str, Any], dict]:
        """The rules for one sample against its regenerated row, relabelled by the ``offset``
        the validator derived; returns its re-scored metrics and its doc with packed fields
        restored."""
        path = self.path
        try:
            full = _restore_doc(doc, rec, row)
        except KeyError as exc:
            raise Refused("hash", path, f"sample {number}: cannot restore field {exc}") from None
        logged_as = relabel(row, offset, self.template_extra) if self.chat else row
        self._check_doc(number, rec, full, logged_as)
        served = self._check_served(number, rec, full)
        context = expected_context(full, self.config, self.tok, self.chat)
        if hash_string(context) != rec["prompt_hash"]:
            raise Refused(
                "hash", path, f"sample {number}: prompt_hash does not match the regenerated prompt"
            )
        metrics = self._rescore(number, rec, full)
        if served is not None:
            metrics[SERVED_KEY] = served
        need = row["length"] + (
            _longest_choice(self.tok, row["choices"]) if row["choices"] else self.gen_budget
        )
        if self.chat:
            need = len(self.tok.encode(context)) + (self.gen_budget if not row["choices"] else 16)
        self.longest = max(self.longest, need)
        return metrics, full

    def _check_doc(self, number: int, rec: dict, full: dict, row: Mapping[str, Any]) -> None:
        """``row`` is the regenerated row as the run must have logged it (relabelled for a chat
        template by the derived offset): every field it has must be logged unchanged, and the
        relabelling fields appear exactly when the submission declares a chat template."""
        path = self.path
        for name in _RELABEL_FIELDS:
            if name in full and name not in row:
                raise Refused(
                    "hash",
                    path,
                    f"sample {number}: doc.{name} relabels phases, but the submission declares "
                    f"no chat template (chat_template: false); phases are never taken from "
                    f"the samples",
                )
            if name in row and name not in full:
                raise Refused(
                    "hash",
                    path,
                    f"sample {number}: doc.{name} missing; a chat template run relabels its "
                    f"phases (phasebench eval --apply_chat_template)",
                )
        how = " relabelled by its chat template" if self.chat else ""
        for name, value in row.items():
            if name != "tokenizer" and name in full and full[name] != value:
                raise Refused(
                    "hash", path, f"sample {number}: doc.{name} differs from the split{how}"
                )
        if doc_hash(full) != rec["doc_hash"]:
            raise Refused("hash", path, f"sample {number}: doc_hash does not match the split")
        target = str(rec.get("target"))
        if hash_string(target) != rec["target_hash"] or target not in (
            str(row["answer"]),
            str(_gold_index(row)),
        ):
            raise Refused("hash", path, f"sample {number}: target does not match the split")

    def _check_served(self, number: int, rec: dict, full: dict) -> list | None:
        """The server's witness of the sample (``[label, count]``, None for a run without a
        server): a count that disagrees with the label means the model read another sequence
        than the one the phases were computed for, and refuses the submission."""
        value = rec.get(SERVED_KEY)
        if "served_length" in full and not self.chat:
            raise Refused(
                "served", self.path, f"sample {number}: doc.served_length without a chat template"
            )
        try:
            state = served_state(full, value)
        except (SamplesError, KeyError, TypeError, ValueError) as exc:
            raise Refused("served", self.path, f"sample {number}: {exc}") from None
        if state == "disagree":
            raise Refused(
                "served",
                self.path,
                f"sample {number}: the server counted {value[1]} prompt tokens where the "
                f"labelled prompt has {served_label(full)}; every sample's server count must "
                f"agree with its label",
            )
        return None if state is None else [served_label(full), value[1]]

    def _rescore(self, number: int, rec: dict, full: dict) -> dict[str, Any]:
        path = self.path
        try:
            metrics = _recompute_sample_metrics(full, rec)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise Refused("metric", path, f"sample {number}: responses unusable ({exc})") from None
        for name in ("acc", "margin", WARM_KEY):
            if name not in metrics:
                continue
            logged, value = rec.get(name), metrics[name]
            if isinstance(logged, bool) or not isinstance(logged, int | float):
                raise Refused("metric", path, f"sample {number}: {name} missing")
            if not math.isclose(float(logged), value, rel_tol=0, abs_tol=1e-9):
                raise Refused(
                    "metric",
                    path,
                    f"sample {number}: {name} is {logged}, the responses give {value}",
                )
        return metrics


def _gold_index(row: Mapping[str, Any]) -> int | None:
    choices = row.get("choices") or []
    return choices.index(row["answer"]) if row["answer"] in choices else None


def _longest_choice(tok: Any, choices: Iterable[str]) -> int:
    return max(len(ids) for ids in tok.piece_ids(list(choices)))
