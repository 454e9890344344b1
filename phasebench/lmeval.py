"""What the lm-eval task YAMLs under ``tasks/`` point at: the split loader, the per-sample scorer
and the phase aggregates.

How lm-eval 0.4.13 calls into this module:

* ``custom_dataset`` -> :func:`load_split`, called as ``load_split(**metadata, **dataset_kwargs)``.
  lm-eval merges the model arguments (``pretrained``, ``tokenizer``, ``gguf_file``,
  ``add_bos_token``, ...) with the ``--metadata`` JSON into ``metadata``; the YAML's
  ``dataset_kwargs`` name the family. So the split is generated for the model's own tokenizer,
  and cached on disk (:func:`cache_root`) keyed by spec and tokenizer fingerprint.
* ``process_results`` -> :func:`process_results`, once per prompt: ``acc`` (and ``margin`` for
  code) as plain numbers, plus one compact record per phase aggregate.
* ``class`` -> :class:`PhaseTask`: a ``ConfigurableTask`` that, once the split is loaded, registers
  the phase aggregates whose names depend on the data (``acc_phase_0`` ... ``acc_phase_{P-1}`` and
  the per-length copies ``<metric>@<length>``), each an instance of the one parameterised
  :func:`aggregate`.

Per length. lm-eval's results table is keyed by task and metric name only, and its aggregation
functions see nothing but the list of per-sample values. Every phase aggregate therefore gets its
per-sample value as a record ``(length, modulus, unit, phase, acc, margin, pad)`` and
is reported twice: pooled over the requested lengths (``phase_gap``) and for each length
(``phase_gap@4096``), a prompt contributing only to its own length. The key is built and parsed by
:func:`metric_key`/:func:`parse_metric_key` alone; there are no placeholder values.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phasebench import GENERATOR_VERSION
from phasebench.errors import PhasebenchError, TokenizerError
from phasebench.specs import FAMILIES, TOKENIZER_ARG_NAMES, SplitSpec
from phasebench.tokenization import PhaseTokenizer, encoding_difference, load_tokenizer

DEFAULT_LENGTHS = (4096,)
DEFAULT_MODULUS = 8
DEFAULT_N_BASE = {"kv": 256, "niah": 256, "code": 64}
#: DeepSeek-V4's CSA stride: the period ``phase_lock_rate`` tests code margins against.
DEFAULT_LOCK_STRIDE = 4

#: Phase aggregates every task reports (``acc_phase_<r>`` are added per phase).
PHASE_METRICS = (
    "acc",
    "acc_ci_low",
    "acc_ci_high",
    "acc_worst_phase",
    "acc_best_phase",
    "phase_gap",
    "phase_gap_ci_low",
    "phase_gap_ci_high",
    "phase_gap_p_value",
)
CODE_METRICS = ("margin", "margin_worst_phase", "phase_lock_rate")
#: Per-sample numbers (the YAML aggregates them with lm-eval's ``mean``); their per-length
#: copies are phase aggregates like the others. The designs are phase-balanced, so the plain
#: mean of ``acc`` is the phase-balanced mean.
SAMPLE_METRICS = ("acc", "margin")
LOWER_IS_BETTER = {"phase_gap", "phase_gap_ci_low", "phase_gap_ci_high"}


# -- metric names --------------------------------------------------------------------------------


def metric_key(name: str, length: int | None) -> str:
    """``phase_gap`` (pooled over lengths) or ``phase_gap@4096`` (one length)."""
    return name if length is None else f"{name}@{length}"


def parse_metric_key(key: str) -> tuple[str, int | None]:
    """Inverse of :func:`metric_key` for consumers of lm-eval's results JSON."""
    name, sep, length = key.partition("@")
    return (name, int(length)) if sep else (name, None)


def phase_metric_names(family: str, modulus: int) -> list[str]:
    names = list(PHASE_METRICS) + [f"acc_phase_{r}" for r in range(modulus)]
    return names + list(CODE_METRICS) if family == "code" else names


def config_length(doc: Mapping[str, Any]) -> int:
    """The config length a row belongs to (code rows carry ``config_length``)."""
    return int(doc.get("config_length", doc["length"]))


# -- data ----------------------------------------------------------------------------------------


def cache_root() -> Path:
    """``$PHASEBENCH_CACHE`` or ``~/.cache/phasebench``: generated splits, keyed by content."""
    return Path(os.environ.get("PHASEBENCH_CACHE") or Path.home() / ".cache" / "phasebench")


def _tokenizer_source(kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Tokenizer name and arguments exactly as lm-eval's ``hf`` backend takes them."""
    name = kwargs.get("tokenizer") or kwargs.get("pretrained")
    if not name or not isinstance(name, str):
        raise PhasebenchError(
            "phasebench tasks build their split for the model's tokenizer: pass "
            "--model_args pretrained=MODEL (or tokenizer=...), or --metadata "
            '\'{"dataset_path": "FOLDER"}\' for a pre-built split'
        )
    args = {k: kwargs[k] for k in TOKENIZER_ARG_NAMES if kwargs.get(k) not in (None, "")}
    if kwargs.get("tokenizer"):
        args.pop("gguf_file", None)  # lm-eval ignores gguf_file for an explicit tokenizer
    return name, args


def _lengths(kwargs: Mapping[str, Any]) -> tuple[int, ...] | None:
    value = kwargs.get("max_seq_lengths")
    if value is None:
        return None
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("[") else value.split(",")
    if isinstance(value, int):
        value = [value]
    try:
        return tuple(dict.fromkeys(int(v) for v in value))
    except (TypeError, ValueError):
        raise PhasebenchError(
            f"'max_seq_lengths' must be a list of token counts, e.g. [4096, 8192] (got {value!r})"
        ) from None


def _n_base(family: str, value: Any) -> int:
    """``n_base`` is one number for every family or a mapping such as ``{"kv": 32, "code": 8}``
    (code counts items, each swept over 4 padding styles x 16 lengths)."""
    if isinstance(value, str) and value.strip().startswith("{"):
        value = json.loads(value)
    if isinstance(value, Mapping):
        value = value.get(family)
    if value is None:
        return DEFAULT_N_BASE[family]
    try:
        return int(value)
    except (TypeError, ValueError):
        raise PhasebenchError(
            f'\'n_base\' must be an integer or a mapping like {{"kv": 32, "code": 8}} '
            f"(got {value!r})"
        ) from None


def split_specs(family: str, kwargs: Mapping[str, Any]) -> list[SplitSpec]:
    """The specs a task run asks for: one per length in ``max_seq_lengths``."""
    if family not in FAMILIES:
        raise PhasebenchError(f"'family' must be one of {', '.join(FAMILIES)} (got {family!r})")
    name, args = _tokenizer_source(kwargs)
    return [
        SplitSpec(
            family=family,  # type: ignore[arg-type]
            length=length,
            modulus=int(kwargs.get("phase_modulus", DEFAULT_MODULUS)),
            n_base=_n_base(family, kwargs.get("n_base")),
            seed=int(kwargs.get("seed", 0)),
            tokenizer=name,
            tokenizer_args=tuple((k, str(v)) for k, v in args.items()),
        )
        for length in (_lengths(kwargs) or DEFAULT_LENGTHS)
    ]


def cached_config(spec: SplitSpec, tok: PhaseTokenizer, root: Path | None = None) -> Path:
    """The config folder for ``spec`` in the cache, generating it on first use.

    The key hashes the spec, the tokenizer fingerprint and the generator version, so a changed
    tokenizer or generator never reuses stale prompts. Generation goes to a temporary folder that
    is renamed into place: an interrupted run leaves nothing a later run could mistake for data.
    """
    from phasebench.build import generate

    root = root or cache_root()
    text = json.dumps(
        {"spec": spec.to_dict(), "fingerprint": tok.encoding_key, "generator": GENERATOR_VERSION},
        sort_keys=True,
    )
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    final = root / "splits" / f"{spec.config_name}-{key}"
    if (final / spec.config_name / "manifest.json").exists():
        return final / spec.config_name
    tmp = root / "splits" / f".tmp-{spec.config_name}-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        generate([spec], tmp, progress=False, tokenizer=tok)
        try:
            os.replace(tmp, final)
        except OSError:  # another process finished the same split first
            if not (final / spec.config_name / "manifest.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / spec.config_name


def prebuilt_folders(
    dataset_path: str, family: str, lengths: Sequence[int] | None, tok: PhaseTokenizer
) -> list[Path]:
    """Config folders of ``family`` built for ``tok``, from a folder made by ``phasebench
    generate`` or ``publish``, or a Hub dataset id (:func:`phasebench.hub.config_folders`).

    A published repository may hold the same family and length for several tokenizers; the
    configs whose tokenizer fingerprint is this model's are taken. A length with none is refused
    (never evaluated on another tokenizer's positions).
    """
    from phasebench import hub
    from phasebench.build import read_manifest
    from phasebench.verify import check_fingerprint

    candidates = hub.config_folders(dataset_path, family=family, lengths=lengths)
    if not candidates:
        wanted = "" if lengths is None else f" at lengths {list(lengths)}"
        raise PhasebenchError(f"{dataset_path!r} holds no {family} config{wanted}")
    by_length: dict[int, list[tuple[Path, dict]]] = {}
    for folder in candidates:
        manifest = read_manifest(folder)
        by_length.setdefault(int(manifest["spec"]["length"]), []).append((folder, manifest))
    chosen = []
    for length in sorted(by_length):
        mine = [f for f, m in by_length[length] if not encoding_difference(m["tokenizer"], tok)]
        if not mine:
            check_fingerprint(by_length[length][0][1], tok)  # raises the one-line refusal
        chosen.extend(mine)
    return chosen


@dataclass(frozen=True)
class LoadedSplit:
    """The rows of one task run and where they came from."""

    folders: tuple[Path, ...]
    manifests: tuple[dict, ...]
    rows: list[dict]
    anchor_offset: int


def resolve_split(family: str, **kwargs: Any) -> LoadedSplit:
    """Find or build the configs a task run needs, check them against the model's tokenizer,
    and return their rows (phases relabelled for a chat template, see :func:`chat_offset`)."""
    from phasebench.build import iter_rows, read_manifest

    name, args = _tokenizer_source(kwargs)
    tok = load_tokenizer(name, args)
    if kwargs.get("dataset_path"):
        folders = prebuilt_folders(str(kwargs["dataset_path"]), family, _lengths(kwargs), tok)
    else:
        folders = [cached_config(spec, tok) for spec in split_specs(family, kwargs)]
    manifests = tuple(read_manifest(f) for f in folders)
    per_config = [list(iter_rows(folder)) for folder in folders]
    rows = [row for config_rows in per_config for row in config_rows]
    offset = 0
    if _truthy(kwargs.get("apply_chat_template")):
        system = kwargs.get("system_instruction")
        # measured on the first and last row of every config: the prefix must be constant
        offsets = {chat_offset(tok, r, system) for c in per_config for r in (c[0], c[-1])}
        if len(offsets) != 1:
            raise TokenizerError(
                f"the chat template of {tok.name!r} shifts prompts by different amounts "
                f"({sorted(offsets)}); run without --apply_chat_template"
            )
        offset = offsets.pop()
        rows = [relabel(row, offset) for row in rows]
    return LoadedSplit(tuple(folders), manifests, rows, offset)


def load_split(family: str, **kwargs: Any):
    """``custom_dataset`` of every phasebench task: a ``DatasetDict`` with one ``test`` split.

    ``kwargs`` are lm-eval's merged model arguments and ``--metadata``: ``max_seq_lengths``
    (default [4096]), ``phase_modulus`` (8), ``n_base``, ``seed`` (0), or ``dataset_path`` of a
    pre-built split, which must have been built for this model's tokenizer.
    """
    import datasets

    split = resolve_split(family, **kwargs)
    dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(split.rows)})
    dataset.phasebench_provenance = provenance(split)  # PhaseTask files it under metadata
    return dataset


def provenance(split: LoadedSplit) -> list[dict]:
    """What identifies the prompts of a run: per config its content hash, generator version,
    tokenizer fingerprint and spec, plus the chat-template offset applied to the phases."""
    return [
        {
            "config": m["config"],
            "content_hash": m["content_hash"],
            "generator_version": m["generator_version"],
            "phasebench_version": m["phasebench_version"],
            "tokenizer_fingerprint": m["tokenizer"]["fingerprint"],
            "tokenizer_behaviour": m["tokenizer"].get("behaviour"),
            "spec": m["spec"],
            "anchor_offset": split.anchor_offset,
        }
        for m in split.manifests
    ]


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return bool(value)


# -- chat template offset ------------------------------------------------------------------------

_SENTINEL = "\x00PHASEBENCH\x00"


def chat_offset(tok: PhaseTokenizer, row: Mapping[str, Any], system: str | None = None) -> int:
    """Tokens a chat template adds before the prompt, as lm-eval's ``hf`` backend encodes it.

    Measured on the exact path: the templated prompt is encoded whole and the anchor's token is
    found through the offsets mapping. A template that the tokenizer does not define raises, and
    the caller falls back on offset invariance (DESIGN section 2).
    """
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": _SENTINEL}
    ]
    try:
        text = tok.hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception as exc:  # no template, or one that rejects the roles
        raise TokenizerError(
            f"tokenizer {tok.name!r} has no usable chat template ({type(exc).__name__}); "
            f"run without --apply_chat_template (phases only relabel under a constant offset)"
        ) from None
    before, _, after = text.partition(_SENTINEL)
    whole = before + row["prompt"] + after
    bos = getattr(tok.hf, "bos_token", None)
    special = not (bos and whole.startswith(bos))  # lm-eval skips a second BOS the same way
    enc = tok.hf(whole, return_offsets_mapping=True, add_special_tokens=special)
    if row["family"] == "code":  # the anchor is the first answer token: after the whole context
        return len(enc["input_ids"]) - int(row["anchor_index"])
    anchor_char = len(before) + int(row["key_char"])
    for i, (s, e) in enumerate(enc["offset_mapping"]):
        if s <= anchor_char < e:
            return i - int(row["anchor_index"])
    raise TokenizerError("cannot locate the needle inside the chat-templated prompt")


def relabel(row: Mapping[str, Any], offset: int) -> dict:
    """``row`` with ``anchor_index``/``phase`` counted in the templated sequence."""
    out = dict(row)
    out["anchor_offset"] = offset
    out["split_phase"] = row["phase"]
    out["anchor_index"] = int(row["anchor_index"]) + offset
    out["phase"] = out["anchor_index"] % int(row["phase_modulus"])
    return out


# -- scoring -------------------------------------------------------------------------------------


def answer_matches(response: str, answer: str) -> bool:
    """Answer-prefix match: the response, leading whitespace stripped, starts with the gold."""
    return bool(answer) and response.lstrip().startswith(answer)


def paired_unit(doc: Mapping[str, Any]) -> str:
    """What is paired across phases: a base item (kv, niah) or an (item, padding style)
    sweep (code, whose 16 padding lengths visit each phase 16/P times)."""
    if doc["family"] == "code":
        return f"{doc['item_id']}/{doc['pad_style']}"
    return str(doc["base_id"])


def _record(doc: Mapping[str, Any], acc: float, margin: float | None) -> tuple:
    return (
        config_length(doc),
        int(doc["phase_modulus"]),
        paired_unit(doc),
        int(doc["phase"]),
        acc,
        margin,
        int(doc.get("pad_tokens", 0)),
    )


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """Score one prompt: ``acc`` (0/1), ``margin`` for code, and the phase records.

    generate_until (kv, niah): ``results`` is ``[response]``. multiple_choice (code): one
    ``(loglikelihood, is_greedy)`` per entry of ``choices``; ``margin`` is log p(right) minus
    log p(best distractor), ``acc`` is ``margin > 0``.
    """
    margin: float | None = None
    if doc["family"] == "code":
        lls = [float(r[0]) for r in results]
        gold = list(doc["choices"]).index(doc["answer"])
        margin = lls[gold] - max(ll for i, ll in enumerate(lls) if i != gold)
        acc = float(margin > 0)
    else:
        acc = float(answer_matches(str(results[0]), str(doc["answer"])))
    record = _record(doc, acc, margin)
    out: dict[str, Any] = {"acc": acc}
    if margin is not None:
        out["margin"] = margin
    for name in phase_metric_names(doc["family"], int(doc["phase_modulus"])):
        if name not in SAMPLE_METRICS:
            out[metric_key(name, None)] = record
        out[metric_key(name, config_length(doc))] = record
    return out


# -- aggregation ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _summaries(records: tuple[tuple, ...]) -> dict[str, float]:
    """Every phase aggregate of one set of records, computed once (lm-eval asks per metric).

    A paired unit is one unit at one length, so pooled lengths stack their units. A unit seen
    more than once at a phase (code: 16 padding lengths over P phases) enters as its mean there.
    """
    import pandas as pd

    from phasebench import stats

    frame = pd.DataFrame.from_records(
        records, columns=["length", "modulus", "unit", "phase", "acc", "margin", "pad"]
    )
    if frame["modulus"].nunique() != 1:
        raise PhasebenchError("cannot pool rows built with different phase moduli")
    modulus = int(frame["modulus"].iloc[0])
    frame["unit"] = frame["length"].astype(str) + "/" + frame["unit"]
    cells = frame.groupby(["unit", "phase"], as_index=False)[["acc", "margin"]].mean()

    def matrix(column: str) -> np.ndarray:
        return stats.phase_matrix(cells["unit"], cells["phase"], cells[column], modulus)

    binary = bool(cells["acc"].isin([0.0, 1.0]).all())
    summary = stats.summarize(matrix("acc"), binary=binary)
    out = {
        "acc": summary.acc,
        "acc_ci_low": summary.acc_ci[0],
        "acc_ci_high": summary.acc_ci[1],
        "acc_worst_phase": summary.worst_phase,
        "acc_best_phase": summary.best_phase,
        "phase_gap": summary.gap,
        "phase_gap_ci_low": summary.gap_ci[0],
        "phase_gap_ci_high": summary.gap_ci[1],
        "phase_gap_p_value": summary.p_value,
    }
    for entry in summary.per_phase:
        out[f"acc_phase_{entry['phase']}"] = entry["acc"]
    if frame["margin"].notna().all():
        margin_per_phase = np.nanmean(matrix("margin"), axis=0)
        out["margin"] = float(np.mean(margin_per_phase))
        out["margin_worst_phase"] = float(np.min(margin_per_phase))
        out["phase_lock_rate"] = _lock_rate(frame, DEFAULT_LOCK_STRIDE)
    return {k: float(v) for k, v in out.items()}


def _lock_rate(frame, stride: int) -> float:
    """``stats.phase_lock_rate`` over the padding sweeps, each in increasing padding order."""
    from phasebench import stats

    rows = [
        group.sort_values("pad")["margin"].to_numpy(dtype=float)
        for _, group in frame.groupby("unit", sort=True)
    ]
    width = min(len(r) for r in rows)
    return stats.phase_lock_rate(np.array([r[:width] for r in rows]), stride)


def aggregate(items: Sequence[Sequence[Any]], *, name: str) -> float:
    """One phase aggregate (``name``) of the records lm-eval collected for one metric key."""
    records = tuple(tuple(r) for r in items)
    return _summaries(records)[name]


class _PhaseTaskBase:
    """Mixin body of :func:`PhaseTask`; kept apart so importing this module needs no lm-eval."""

    def __init__(self, *args: Any, config: dict | None = None, **kwargs: Any) -> None:
        config = {k: v for k, v in (config or {}).items() if k != "class"}
        super().__init__(*args, config=config, **kwargs)  # type: ignore[call-arg]
        docs = self.dataset[self.config.test_split]  # type: ignore[attr-defined]
        # results JSON -> configs -> <task> -> metadata -> phasebench: the exact prompts used
        origin = getattr(self.dataset, "phasebench_provenance", [])  # type: ignore[attr-defined]
        self.config.metadata["phasebench"] = origin  # type: ignore[attr-defined]
        family = docs[0]["family"]
        modulus = int(docs[0]["phase_modulus"])
        lengths = sorted({config_length(d) for d in docs})
        for name in phase_metric_names(family, modulus):
            pooled = [] if name in SAMPLE_METRICS else [None]
            for length in pooled + lengths:
                key = metric_key(name, length)
                self._aggregation_list[key] = functools.partial(aggregate, name=name)
                self._higher_is_better[key] = name not in LOWER_IS_BETTER


def _make_phase_task():
    from lm_eval.api.task import ConfigurableTask

    return type("PhaseTask", (_PhaseTaskBase, ConfigurableTask), {"__module__": __name__})


def __getattr__(name: str):
    # ``PhaseTask`` subclasses lm-eval's ConfigurableTask; built on first access so that
    # ``import phasebench.lmeval`` works where lm-eval is not installed.
    if name == "PhaseTask":
        cls = _make_phase_task()
        globals()["PhaseTask"] = cls
        return cls
    raise AttributeError(name)
