"""Independent re-tokenization of a built split.

``verify`` trusts nothing the generator computed: it loads the tokenizer the manifest names,
refuses a fingerprint mismatch, re-encodes every prompt whole (exact path, offsets mapping) and
re-derives lengths, anchors, question indices, phases, pairing and balance from the rows; the
families also read each needle back from the prompt text (its key once, its value the answer, the
question asking for it), which no recomputed hash can hide.

A folder that cannot be checked is a finding, not a crash: an unreadable or malformed manifest, a
data file that is not readable parquet or lies outside the folder, and a config that ``generate``
never completed each become a problem in the report (``phasebench verify`` exits 1).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import defaultdict
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from phasebench import prefill
from phasebench.build import HASH_KEY, MANIFEST, content_hash, partial_configs, read_manifest
from phasebench.errors import SpecError, SplitError, TokenizerError, debugging, first_line
from phasebench.families import get_family
from phasebench.placement import TOLERANCE, axis_balance
from phasebench.rng import derive_rng
from phasebench.rows import LENGTH_PHASE_FIELDS, row_problem
from phasebench.specs import SplitSpec
from phasebench.tokenization import (
    PhaseTokenizer,
    encoding_difference,
    load_tokenizer,
    truthy,
)

META_COLUMNS = (
    "id",
    "length",
    "phase_modulus",
    "phase",
    "base_id",
    "anchor_index",
    "question_index",
    "needle_key",
    "answer",
    "depth",
    "tokenizer_fingerprint",
)


@dataclass
class Report:
    config: str
    rows: int = 0
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    #: True for a config that was not verified at all (partial: ``generate`` never finished it).
    skipped: bool = False
    #: What was checked only in part (not a problem), e.g. prefill figures left unchecked.
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.skipped

    def lines(self) -> list[str]:
        head = (
            f"{self.config}: {'OK' if self.ok else 'FAILED'} ({self.rows} rows, "
            f"{self.checked} re-encoded)"
        )
        if self.skipped:
            head = f"{self.config}: SKIPPED, not verified"
        return (
            [head]
            + [f"  - {p}" for p in self.problems[:50]]
            + [f"  note: {n}" for n in self.notes]
            + ([f"  ... and {len(self.problems) - 50} more"] if len(self.problems) > 50 else [])
        )


def check_fingerprint(manifest: dict, tok: PhaseTokenizer) -> None:
    """Refuse a split that ``tok``, as loaded on this install, would not encode as the split's
    tokenizer did: another tokenizer, other special tokens, or another encoding of the probe
    text (:func:`~phasebench.tokenization.encoding_difference`)."""
    recorded = manifest.get("tokenizer") or {}
    difference = encoding_difference(recorded, tok)
    if difference:
        raise TokenizerError(
            f"split {manifest['config']!r} was built for tokenizer "
            f"{recorded.get('name')!r}, not for {tok.name!r} as loaded here "
            f"({difference}); generate it for this tokenizer instead"
        )


_WORK: tuple | None = None

#: Prompts encoded together by the tokenizer's batch encoder (its own threads spread them over
#: the cores), and handed to a worker process at a time with ``num_proc``.
BATCH = 8


class _Encoded:
    """The split's tokenizer with one batch of whole prompts already encoded by its batch
    encoder: ``encode`` and ``token_index_at`` of those prompts read that encoding (the same
    exact path, the whole text encoded as lm-eval's ``hf`` backend encodes it); any other
    text, and everything else, goes to the tokenizer itself."""

    def __init__(self, tok: PhaseTokenizer, texts: Sequence[str]) -> None:
        self._tok = tok
        encoding = tok.hf(list(texts))
        self._at = {text: (encoding, i) for i, text in enumerate(texts)}

    def __getattr__(self, name: str):
        return getattr(self._tok, name)

    def encode(self, text: str) -> list[int]:
        if text not in self._at:
            return self._tok.encode(text)
        encoding, i = self._at[text]
        return list(encoding["input_ids"][i])

    def token_index_at(self, text: str, char_positions: Sequence[int]) -> tuple[int, list[int]]:
        if text not in self._at:
            return self._tok.token_index_at(text, char_positions)
        encoding, i = self._at[text]
        found = []
        for c in char_positions:
            hit = encoding.char_to_token(i, c) if 0 <= c < len(text) else None
            found.append(-1 if hit is None else int(hit))
        return len(encoding["input_ids"][i]), found


def _verify_batch(rows: list[dict]) -> list[tuple[list[str], np.ndarray | None]]:
    """Re-encode a batch of rows whole (a worker's task): each row's exact-path problems, named
    by its id, and, when the prefill figures are checked, its exact token ids."""
    tok, family, with_ids = _WORK  # type: ignore[misc]
    try:
        encoded = _Encoded(tok, [row["prompt"] for row in rows])
    except (KeyError, TypeError, ValueError):  # a row without a prompt string: each says so
        encoded = tok
    return [_verify_one(encoded, family, with_ids, row) for row in rows]


def _verify_one(tok, family, with_ids: bool, row: dict) -> tuple[list[str], np.ndarray | None]:
    try:
        ids = np.asarray(tok.encode(row["prompt"]), dtype=np.int64) if with_ids else None
        return [f"{row['id']}: {p}" for p in family.verify_row(tok, row)], ids
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        if debugging():  # PHASEBENCH_DEBUG=1: a bug keeps its traceback
            raise
        return [f"{ascii(row.get('id'))}: row of an unexpected shape ({type(exc).__name__})"], None


def _batches(rows, size: int = BATCH):
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def verify_config(
    folder: Path | str,
    sample: int | None = None,
    num_proc: int = 1,
    progress: bool = True,
    tokenizer: PhaseTokenizer | None = None,
    salted: bool = False,
) -> Report:
    """Check every claim of one config folder; problems are collected in the report (a
    different tokenizer raises :class:`TokenizerError`: that is a question to the caller).
    With ``salted``, the salted arm of the prefix-cache axis as well: every row salted as an
    lm-eval task salts it, and every claim re-checked on the salted sequence
    (:func:`phasebench.salting.salt_problems`)."""
    global _WORK
    folder = Path(folder)
    if sample is not None and sample < 1:
        raise SpecError(f"'sample' must be >= 1 (got {sample})")
    try:
        manifest = read_manifest(folder)
        spec = SplitSpec.from_dict(manifest["spec"])
    except (SplitError, SpecError, TypeError, ValueError) as exc:
        return Report(folder.name, problems=[f"{MANIFEST}: {_short(exc)}"])
    report = Report(manifest["config"])
    if tokenizer is None and truthy(dict(spec.tokenizer_args).get("trust_remote_code")):
        report.problems.append(
            "the manifest asks for trust_remote_code: verify never runs code a split names; "
            "load the tokenizer yourself and pass it (verify_config(..., tokenizer=...))"
        )
        return report
    tok = tokenizer or load_tokenizer(spec.tokenizer, dict(spec.tokenizer_args))
    check_fingerprint(manifest, tok)
    family = get_family(spec)

    # file integrity and row metadata (the family's extra columns too, for verify_config)
    columns = META_COLUMNS + tuple(name for name, _ in family.extra_fields)
    if spec.length_phases:
        columns += tuple(name for name, _ in LENGTH_PHASE_FIELDS)
    meta: dict[str, list] = defaultdict(list)
    damaged = 0
    for entry in manifest["files"]:
        where = entry["path"]
        try:
            table = pq.read_table(folder / where)
        except (OSError, pa.ArrowException) as exc:
            report.problems.append(f"{where}: not a readable parquet file ({_short(exc)})")
            damaged += 1
            continue
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            report.problems.append(f"{where}: no column(s) {', '.join(missing)}")
            damaged += 1
            continue
        stored = (table.schema.metadata or {}).get(HASH_KEY, b"").decode()
        rows = table.to_pylist()
        if content_hash(rows) != stored or stored != entry["content_sha256"]:
            report.problems.append(f"{where}: content hash does not match the manifest")
        for row in rows:
            if problem := row_problem(row, family.extra_fields):
                report.problems.append(f"{where}: row {ascii(row.get('id'))[:80]}: {problem}")
                damaged += 1
                break
            for col in columns:
                meta[col].append(row[col])
    if damaged:
        report.problems.append(
            f"{damaged} of {len(manifest['files'])} data file(s) unusable: the other checks "
            f"were skipped; regenerate the config"
        )
        return report
    n = len(meta["id"])
    report.rows = n
    try:
        report.problems += _config_problems(manifest, spec, family, tok, meta)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        if debugging():
            raise
        report.problems.append(f"rows of an unexpected shape ({_short(exc)})")
        return report

    # exact re-encoding
    indices = np.arange(n)
    if sample is not None and sample < n:
        indices = np.sort(derive_rng(0, "verify", manifest["config"]).choice(n, sample, False))
    wanted = set(indices.tolist())
    claimed = manifest.get(prefill.MANIFEST_KEY)
    prompts = _PrefillCheck(claimed, meta, family, len(wanted) == n) if claimed else None
    _WORK = (tok, family, prompts is not None)
    bar = tqdm(
        total=len(wanted), desc=f"verify {manifest['config']}", unit="prompt", disable=not progress
    )
    try:
        selected = (row for i, row in enumerate(_stream(folder, manifest)) if i in wanted)
        if prompts is not None:
            selected = prompts.texts(selected)
        with _workers(num_proc) as pool:
            batches = _batches(selected)
            done = pool.imap(_verify_batch, batches) if pool else map(_verify_batch, batches)
            for results in done:
                for found, ids in results:
                    report.problems += found
                    if prompts is not None:
                        prompts.add(ids)
                bar.update(len(results))
    finally:
        bar.close()
        _WORK = None
    report.checked = len(wanted)
    if prompts is not None:
        report.problems += prompts.problems()
        report.notes += prompts.notes
    elif claimed is None and not report.problems:
        report.notes.append(f"the manifest states no {prefill.MANIFEST_KEY} figures")
    if salted:
        _check_salted(folder, manifest, tok, wanted, report)
    return report


@contextmanager
def _workers(num_proc: int):
    """A pool of ``num_proc`` forked workers (None for one: the work runs here). The workers
    encode with the tokenizer's batch encoder single-threaded (``TOKENIZERS_PARALLELISM``
    false while they are forked), one batch each at a time: the processes share the cores."""
    if num_proc <= 1:
        yield None
        return
    saved = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        with multiprocessing.get_context("fork").Pool(num_proc) as pool:
            yield pool
    finally:
        if saved is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = saved


def _check_salted(
    folder: Path, manifest: dict, tok: PhaseTokenizer, wanted: set[int], report: Report
) -> None:
    """The salted arm of the rows ``verify`` re-encoded: problems, or a note of what held."""
    from phasebench.salting import salt_problems

    rows = [row for i, row in enumerate(_stream(folder, manifest)) if i in wanted]
    found = salt_problems(rows, tok)
    report.problems += found
    if not found:
        report.notes.append(
            f"salted arm: {len(rows)} rows salted, each salt a multiple of "
            f"{manifest['spec']['modulus']} tokens; every phase and length phase label holds "
            "on the salted sequence, no two salted prompts share their salt"
        )


#: Prompt tokens up to which ``verify`` keeps every prompt's ids and text to re-derive the
#: prefill figures in lm-eval's send order (beyond it, the stored order's figures only).
MAX_ORDER_TOKENS = 1 << 24


class _PrefillCheck:
    """Re-derives a manifest's prefill figures from the exact ids of every whole prompt: the
    stored order's as the prompts stream past (one previous prompt kept), lm-eval's order's from
    every prompt's ids and text where the config has at most :data:`MAX_ORDER_TOKENS` tokens."""

    def __init__(self, claimed: dict, meta: dict[str, list], family, every_row: bool) -> None:
        self.claimed, self.every_row = claimed, every_row
        self.base_ids = list(meta["base_id"])
        self.generated = family.output_type == "generate_until"
        self.keep = every_row and sum(meta["length"]) <= MAX_ORDER_TOKENS
        self.ids: list[np.ndarray] = []
        self.prompts: list[str] = []
        self.lengths: list[int] = []
        self.cached, self.previous, self.damaged = 0, None, False
        self.notes: list[str] = []

    def texts(self, rows):
        for row in rows:
            if self.keep and self.generated:
                self.prompts.append(row["prompt"])
            yield row

    def add(self, ids: np.ndarray | None) -> None:
        if ids is None:
            self.damaged = True
            return
        self.lengths.append(len(ids))
        shared = 0 if self.previous is None else prefill.shared_prefix(self.previous, ids)
        self.cached += len(ids) - shared
        self.previous = ids
        if self.keep:
            self.ids.append(ids)

    def problems(self) -> list[str]:
        key = prefill.MANIFEST_KEY
        if not self.every_row or self.damaged:
            self.notes.append(f"{key} figures not re-derived (not every prompt was re-encoded)")
            return []
        if self.keep:
            texts = self.prompts if self.generated else None
            found = prefill.exact_figures(self.ids, texts, self.base_ids)
        else:
            found = prefill.figures(self.lengths, lambda i, j: 0, None, self.base_ids)
            found["stored_order"]["prefill_tokens_prefix_cache"] = self.cached
            found["stored_order"]["prefix_cache_saving"] = prefill.saving(
                self.cached, int(found["prefill_tokens"])
            )
            found["lm_eval_order"] = self.claimed.get("lm_eval_order")
            if found["lm_eval_order"] is not None:
                self.notes.append(
                    f"{key}.lm_eval_order not re-derived (more than {MAX_ORDER_TOKENS:,} prompt "
                    f"tokens: the check keeps every prompt)"
                )
        return [
            f"manifest {key} {name} is {self.claimed.get(name)!r}, the exact ids give {value!r}"
            for name, value in found.items()
            if self.claimed.get(name) != value
        ]


def prefill_problems(folder: Path | str, tokenizer: PhaseTokenizer | None = None) -> list[str]:
    """What ``verify`` finds wrong with a config's ``prefill`` figures alone, re-derived from
    the exact ids of every whole prompt ([] when the manifest states none): ``publish`` prints
    them on the data card, so it checks them as ``verify`` does (:class:`_PrefillCheck`, the
    one comparison). The rows themselves are the build's, checked by their content hashes."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    claimed = manifest.get(prefill.MANIFEST_KEY)
    if not claimed:
        return []
    spec = SplitSpec.from_dict(manifest["spec"])
    if tokenizer is None and truthy(dict(spec.tokenizer_args).get("trust_remote_code")):
        return [
            f"its {prefill.MANIFEST_KEY} figures cannot be re-derived: the manifest asks for "
            f"trust_remote_code, and phasebench never runs code a split names"
        ]
    tok = tokenizer or load_tokenizer(spec.tokenizer, dict(spec.tokenizer_args))
    check_fingerprint(manifest, tok)
    family = get_family(spec)
    meta: dict[str, list] = defaultdict(list)
    for entry in manifest["files"]:
        table = pq.read_table(folder / entry["path"], columns=["base_id", "length"])
        for col in ("base_id", "length"):
            meta[col] += table.column(col).to_pylist()
    check = _PrefillCheck(claimed, meta, family, every_row=True)
    for row in check.texts(_stream(folder, manifest)):
        check.add(np.asarray(tok.encode(row["prompt"]), dtype=np.int64))
    return check.problems()


def _config_problems(
    manifest: dict, spec: SplitSpec, family, tok: PhaseTokenizer, meta: dict[str, list]
) -> list[str]:
    """Config-level claims: row count, unique ids, phases, fingerprints, depths, the family's
    pairing and coverage, and the balance the manifest records."""
    problems = []
    n, P = len(meta["id"]), spec.modulus
    if n != manifest["rows"]:
        problems.append(f"manifest claims {manifest['rows']} rows, files hold {n}")
    if len(set(meta["id"])) != n:
        problems.append("row ids are not unique")
    anchors, phases = np.array(meta["anchor_index"]), np.array(meta["phase"])
    if np.any(phases != anchors % P):
        problems.append("some rows have phase != anchor_index mod modulus")
    if set(meta["tokenizer_fingerprint"]) != {tok.fingerprint}:
        problems.append("rows carry a tokenizer fingerprint other than the manifest's")
    if not np.allclose(meta["depth"], anchors / np.array(meta["length"])):
        problems.append("depth != anchor_index / length")
    problems += family.verify_config(spec, meta)
    # per varied axis (a spec without the length axis or a phase subset: the plain phase stats)
    stats = axis_balance(spec, anchors, phases, np.array(meta["length"]) % P)
    claimed = manifest["balance"]
    axes = [("", stats, claimed)]
    if "length_phase" in stats:
        axes.append(("length_phase ", stats["length_phase"], claimed.get("length_phase") or {}))
    for axis, found, said in axes:
        for key in ("count_per_phase", "anchor_mean_per_phase", "anchor_std_per_phase"):
            if said.get(key) is None or not np.allclose(found[key], said[key], atol=1e-3):
                problems.append(f"manifest balance {axis}{key} does not match the rows")
        if len(set(found["count_per_phase"])) != 1:
            problems.append(f"{axis}phase counts differ: {found['count_per_phase']}")
        for key in ("max_mean_deviation", "max_std_deviation"):
            if found[key] > TOLERANCE:
                problems.append(f"{axis}{key} is {found[key]} tokens (> {TOLERANCE})")
    return problems


def _short(exc: BaseException) -> str:
    return " ".join(first_line(exc).split())


def _stream(folder: Path, manifest: dict):
    for entry in manifest["files"]:
        pf = pq.ParquetFile(folder / entry["path"])
        for batch in pf.iter_batches(batch_size=16):
            yield from batch.to_pylist()


def verify(
    paths: Sequence[Path | str],
    sample: int | None = None,
    num_proc: int = 1,
    progress: bool = True,
    salted: bool = False,
) -> list[Report]:
    """A report per complete config under ``paths``, and a skipped report for each config
    ``generate`` did not complete (so a half-built folder is never passed over in silence).
    ``salted``: check the salted arm too (:func:`verify_config`)."""
    reports = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            raise SplitError(f"{str(path)!r} is not a folder; give a config folder or its parent")
        if (path / MANIFEST).exists():
            folders = [path]
        else:
            folders = sorted(
                p for p in path.iterdir() if not p.name.startswith(".") and (p / MANIFEST).exists()
            )
        partial = partial_configs(path)
        if not folders and not partial:
            raise SplitError(f"no phasebench config under {str(path)!r}")
        reports += [verify_config(f, sample, num_proc, progress, salted=salted) for f in folders]
        reports += [
            Report(
                f.name,
                skipped=True,
                problems=[
                    f"partial config: no {MANIFEST} (an interrupted or unfinished generate); "
                    f"finish it with the same command or delete it"
                ],
            )
            for f in partial
        ]
    return reports
