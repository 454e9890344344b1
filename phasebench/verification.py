"""Independent re-tokenization of a built split.

``verify`` trusts nothing the generator computed: it loads the tokenizer the manifest names,
refuses a fingerprint mismatch, re-encodes every prompt whole (exact path, offsets mapping) and
re-derives lengths, anchors, question indices, phases, pairing and balance from the rows.
"""

from __future__ import annotations

import multiprocessing
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from phasebench.build import HASH_KEY, config_folders, content_hash, read_manifest
from phasebench.errors import TokenizerError
from phasebench.families import get_family
from phasebench.placement import TOLERANCE, phase_stats
from phasebench.rng import derive_rng
from phasebench.specs import SplitSpec
from phasebench.tokenization import PhaseTokenizer, encoding_difference, load_tokenizer

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

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        head = (
            f"{self.config}: {'OK' if self.ok else 'FAILED'} ({self.rows} rows, "
            f"{self.checked} re-encoded)"
        )
        return (
            [head]
            + [f"  - {p}" for p in self.problems[:50]]
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


def _check_one(row: dict) -> list[str]:
    tok, family = _WORK  # type: ignore[misc]
    return [f"{row['id']}: {p}" for p in family.verify_row(tok, row)]


def verify_config(
    folder: Path | str,
    sample: int | None = None,
    num_proc: int = 1,
    progress: bool = True,
    tokenizer: PhaseTokenizer | None = None,
) -> Report:
    global _WORK
    folder = Path(folder)
    manifest = read_manifest(folder)
    spec = SplitSpec.from_dict(manifest["spec"])
    report = Report(manifest["config"])
    tok = tokenizer or load_tokenizer(spec.tokenizer, dict(spec.tokenizer_args))
    check_fingerprint(manifest, tok)
    family = get_family(spec)
    P = spec.modulus

    # file integrity and row metadata (the family's extra columns too, for verify_config)
    columns = META_COLUMNS + tuple(name for name, _ in family.EXTRA_FIELDS)
    meta: dict[str, list] = defaultdict(list)
    for entry in manifest["files"]:
        table = pq.read_table(folder / entry["path"])
        stored = (table.schema.metadata or {}).get(HASH_KEY, b"").decode()
        rows = table.to_pylist()
        if content_hash(rows) != stored or stored != entry["content_sha256"]:
            report.problems.append(f"{entry['path']}: content hash does not match the manifest")
        for row in rows:
            for col in columns:
                meta[col].append(row[col])
    n = len(meta["id"])
    report.rows = n
    if n != manifest["rows"]:
        report.problems.append(f"manifest claims {manifest['rows']} rows, files hold {n}")
    if len(set(meta["id"])) != n:
        report.problems.append("row ids are not unique")
    anchors, phases = np.array(meta["anchor_index"]), np.array(meta["phase"])
    if np.any(phases != anchors % P):
        report.problems.append("some rows have phase != anchor_index mod modulus")
    if set(meta["tokenizer_fingerprint"]) != {tok.fingerprint}:
        report.problems.append("rows carry a tokenizer fingerprint other than the manifest's")
    if not np.allclose(meta["depth"], anchors / np.array(meta["length"])):
        report.problems.append("depth != anchor_index / length")
    report.problems += family.verify_config(spec, meta)
    stats = phase_stats(anchors, phases, P)
    claimed = manifest["balance"]
    for key in ("count_per_phase", "anchor_mean_per_phase", "anchor_std_per_phase"):
        if not np.allclose(stats[key], claimed[key], atol=1e-3):
            report.problems.append(f"manifest balance {key} does not match the rows")
    if len(set(stats["count_per_phase"])) != 1:
        report.problems.append(f"phase counts differ: {stats['count_per_phase']}")
    for key in ("max_mean_deviation", "max_std_deviation"):
        if stats[key] > TOLERANCE:
            report.problems.append(f"{key} is {stats[key]} tokens (> {TOLERANCE})")

    # exact re-encoding
    indices = np.arange(n)
    if sample is not None and sample < n:
        indices = np.sort(derive_rng(0, "verify", manifest["config"]).choice(n, sample, False))
    wanted = set(indices.tolist())
    _WORK = (tok, family)
    bar = tqdm(
        total=len(wanted), desc=f"verify {manifest['config']}", unit="prompt", disable=not progress
    )
    try:
        selected = (row for i, row in enumerate(_stream(folder, manifest)) if i in wanted)
        if num_proc > 1:
            with multiprocessing.get_context("fork").Pool(num_proc) as pool:
                for found in pool.imap(_check_one, selected, chunksize=4):
                    report.problems += found
                    bar.update()
        else:
            for row in selected:
                report.problems += _check_one(row)
                bar.update()
    finally:
        bar.close()
        _WORK = None
    report.checked = len(wanted)
    return report


def _stream(folder: Path, manifest: dict):
    for entry in manifest["files"]:
        pf = pq.ParquetFile(folder / entry["path"])
        for batch in pf.iter_batches(batch_size=16):
            yield from batch.to_pylist()


def verify(
    paths: Sequence[Path | str], sample: int | None = None, num_proc: int = 1, progress: bool = True
) -> list[Report]:
    return [verify_config(f, sample, num_proc, progress) for p in paths for f in config_folders(p)]
