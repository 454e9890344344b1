"""Specs -> sharded, streamed, atomic parquet files plus one ``manifest.json`` per config.

Layout of an output folder::

    OUT/<config>/spec.json                       the spec (written first)
    OUT/<config>/data-00000-of-00016.parquet     fixed chunks of base items
    OUT/<config>/manifest.json                   written last: a config is complete iff it exists

Chunks are cut by the spec alone, never by ``--shard`` or ``--num-proc``, so every way of running
the job writes byte-identical files. Each file is written to a temporary name and renamed;
the manifest is written only when every chunk of the config exists. An unsharded run builds each
config in a hidden folder beside its target (``OUT/.<config>.staging-*``) and swaps it in when
every config of the run is complete, so an interrupted ``--overwrite`` keeps the previous
complete config; a folder that ``generate`` did not make is never replaced. One unsharded run
writes into an output folder at a time (it holds a lock on the folder; a second run is refused
at once, while the shards of one job share the folder), and a staging folder left by a killed
run is removed by the next run that completes the same config.

Whatever reads a config checks it: :func:`read_manifest` refuses a manifest of the wrong shape or
one naming a data file that is not a plain name inside the folder, and :func:`iter_rows` with
``check=True`` refuses rows that do not hash to the manifest's content hash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import multiprocessing
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from phasebench import prefill
from phasebench._version import GENERATOR_VERSION, __version__
from phasebench.atomic import (
    atomic_file,
    atomic_write_text,
    check_writable_dir,
    lock_folder,
    make_folder,
    remove_empty_folder,
    remove_file,
    staged_folder,
)
from phasebench.errors import OutputError, SpecError, SplitError, first_line
from phasebench.families import Family, SplitPlan, get_family
from phasebench.rows import LENGTH_PHASE_FIELDS, row_schema
from phasebench.specs import SplitSpec
from phasebench.tokenization import PhaseTokenizer, load_tokenizer

MANIFEST = "manifest.json"
#: Keys every manifest has (``read_manifest`` refuses a file without them).
MANIFEST_KEYS = ("config", "spec", "tokenizer", "rows", "files", "content_hash", "balance")
SPEC_FILE = "spec.json"
HASH_KEY = b"phasebench_content_sha256"
#: A data file named by a manifest: a plain file name inside the config folder.
DATA_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.parquet$")
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
#: Prefix of the folders ``generate`` builds a config in before swapping it into place.
STAGING_MARK = ".staging-"


def units_per_chunk(spec: SplitSpec, rows_per_unit: int | None = None) -> int:
    """Base items per parquet file, a function of the spec and the family's layout: a kv or niah
    unit holds ``modulus`` prompts, a code unit 16, and every file about as many prompt tokens."""
    rows = rows_per_unit or spec.modulus
    return max(1, (1 << 20) * spec.modulus // (max(spec.length, 1024) * rows))


def content_hash(rows: Iterable[dict]) -> str:
    """SHA-256 of the rows, each as ``json.dumps(row, sort_keys=True, ensure_ascii=False)`` in
    UTF-8 followed by a newline (the definition; every reader recomputes it).

    Computed a value at a time (:func:`_json_parts`), so that a long prompt is escaped on its
    UTF-8 bytes with three replacements instead of by the ``json`` module's escaper, several
    times slower on a 128K-token niah prompt; the bytes hashed are the same."""
    h = hashlib.sha256()
    for row in rows:
        for part in _json_parts(row):
            h.update(part)
        h.update(b"\n")
    return h.hexdigest()


#: Strings at least this long are escaped by :func:`_json_string` (shorter ones by ``json``).
LONG_STRING = 4096
#: The bytes ``json`` escapes in a string besides the quote, the backslash and the newline.
_CONTROL = bytes(b for b in range(32) if b != 10)


def _json_parts(row: dict) -> Iterator[bytes]:
    """``json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8")`` in pieces."""
    if not all(isinstance(key, str) for key in row):
        yield json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return
    sep = b"{"
    for key in sorted(row):
        value = row[key]
        yield sep + json.dumps(key, ensure_ascii=False).encode("utf-8") + b": "
        if isinstance(value, str) and len(value) >= LONG_STRING:
            yield _json_string(value)
        else:
            yield json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")
        sep = b", "
    yield b"{}" if sep == b"{" else b"}"


def _json_string(text: str) -> bytes:
    """``json.dumps(text, ensure_ascii=False).encode("utf-8")``: on UTF-8 bytes, where no byte
    of a multi-byte character is below 0x80, escaping the quote, the backslash and the newline
    is three replacements; a text with any other control character goes to ``json``."""
    data = text.encode("utf-8")
    if len(data.translate(None, _CONTROL)) != len(data):
        return json.dumps(text, ensure_ascii=False).encode("utf-8")
    data = data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b'"' + data + b'"'


@dataclass
class _Job:
    """One config being generated: its plan and where its chunks go."""

    spec: SplitSpec
    plan: SplitPlan
    family: Family
    folder: Path

    @property
    def n_units(self) -> int:
        return self.plan.n_units

    @property
    def n_chunks(self) -> int:
        per = units_per_chunk(self.spec, self.plan.rows_per_unit)
        return -(-self.n_units // per)

    def chunk_path(self, i: int) -> Path:
        return self.folder / f"data-{i:05d}-of-{self.n_chunks:05d}.parquet"

    def chunk_units(self, i: int) -> range:
        per = units_per_chunk(self.spec, self.plan.rows_per_unit)
        return range(i * per, min(self.n_units, (i + 1) * per))

    def schema(self) -> pa.Schema:
        axis = LENGTH_PHASE_FIELDS if self.spec.length_phases else []
        return row_schema([*self.family.extra_fields, *axis])


_ACTIVE: _Job | None = None  # set before forking workers, read by _write_chunk


def _write_chunk(i: int) -> int:
    job = _ACTIVE
    assert job is not None
    rows = list(job.plan.render(job.chunk_units(i)))
    # the fast path, re-proved on every file; files take turns at the rows of a unit, so every
    # phase (and, for code, every padding step) gets checked somewhere in a large config
    job.family.exact_check(job.plan, rows[i % min(len(rows), job.plan.rows_per_unit)])
    table = pa.Table.from_pylist(rows, schema=job.schema())
    table = table.replace_schema_metadata({HASH_KEY: content_hash(rows).encode()})
    path = job.chunk_path(i)
    with atomic_file(path) as handle:
        pq.write_table(table, handle, **parquet_options(table))
    return len(rows)


def parquet_options(table: pa.Table) -> dict:
    """How every data file is written: zstd, one row group (a change here changes the bytes of
    every split; ``benchmarks/generate.py`` times writing with them alone, the floor of
    ``generate``)."""
    return {"compression": "zstd", "row_group_size": max(1, table.num_rows)}


def check_out_dir(out: Path, specs: Sequence[SplitSpec], overwrite: bool, sharded: bool) -> None:
    """Refuse an existing, non-empty output folder unless it is ours to extend or replace."""
    check_writable_dir(out)
    if not out.exists() or overwrite:
        return
    entries = [p for p in out.iterdir() if not p.name.startswith(".")]
    if not entries:
        return
    if sharded:
        ours = {s.config_name: s for s in specs}
        for entry in entries:
            spec_file = entry / SPEC_FILE
            if entry.name in ours and spec_file.exists():
                if json.loads(spec_file.read_text()) == ours[entry.name].to_dict():
                    continue
            elif entry.name not in ours:
                continue
            raise OutputError(
                f"{str(entry)!r} holds another spec; choose a new output folder or pass --overwrite"
            )
        return
    raise OutputError(
        f"output folder {str(out)!r} exists and is not empty; choose another output folder or "
        "pass --overwrite"
    )


def generate(
    specs: Sequence[SplitSpec],
    out: Path | str,
    *,
    num_proc: int = 1,
    shard: tuple[int, int] = (0, 1),
    overwrite: bool = False,
    progress: bool = True,
    tokenizer: PhaseTokenizer | None = None,
) -> list[Path]:
    """Generate every config of ``specs`` under ``out``; returns the config folders.

    With ``shard=(i, n)`` only chunks ``i, i+n, ...`` are written; whichever run completes a
    config writes its manifest. All specs must name the same tokenizer.
    """
    out = Path(out)
    if not specs:
        raise SpecError("nothing to generate: give at least one --length")
    if len({(s.tokenizer, s.tokenizer_args) for s in specs}) != 1:
        raise SpecError("all specs of one run must use the same tokenizer")
    if num_proc < 1:
        raise SpecError(f"'num_proc' must be >= 1 (got {num_proc})")
    sharded = shard != (0, 1)
    check_out_dir(out, specs, overwrite, sharded)
    check_memory(specs, num_proc)
    created_out = not out.exists()
    make_folder(out)
    try:
        # one unsharded run at a time (shards of one job run side by side): a second run into
        # the same --out is refused rather than silently replacing the first one's configs
        with lock_folder(out, shared=sharded):
            check_out_dir(out, specs, overwrite, sharded)  # again: a run may have just ended
            tok = tokenizer or load_tokenizer(specs[0].tokenizer, dict(specs[0].tokenizer_args))
            jobs = []
            for spec in specs:  # plan everything before writing anything: bad input writes nothing
                family = get_family(spec)
                jobs.append(_Job(spec, family.prepare(spec, tok), family, out / spec.config_name))
            if sharded:
                _generate_shard(jobs, shard, num_proc, progress, tok)
            else:
                _generate_staged(jobs, num_proc, progress, tok)
    except BaseException:
        if created_out:
            remove_empty_folder(out)
        raise
    return [job.folder for job in jobs]


def memory_available() -> tuple[int, str]:
    """The most memory this process may use and what sets it: the address-space limit
    (``RLIMIT_AS``, e.g. ``ulimit -v``), the cgroup's ``memory.max``, or the machine's memory,
    whichever is smallest."""
    import resource

    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    found = [(pages, "the machine's memory")]
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        found.append((soft, "the address-space limit (ulimit -v)"))
    cgroup = Path("/sys/fs/cgroup/memory.max")
    try:
        text = cgroup.read_text()[:64].strip()
        if text.isdigit():
            found.append((int(text), "the cgroup's memory.max"))
    except OSError:
        pass
    return min(found)


def check_memory(specs: Sequence[SplitSpec], num_proc: int = 1) -> None:
    """Refuse, before any work, a run whose estimated memory (:meth:`SplitSpec.estimated_memory`,
    once per worker process) exceeds what this process may use."""
    biggest = max(specs, key=lambda s: s.estimated_memory())
    need = biggest.estimated_memory() * max(1, num_proc)
    limit, why = memory_available()
    if need > limit:
        raise SpecError(
            f"{biggest.config_name} needs about {need / 2**30:.1f} GiB of memory to build "
            f"({f'{num_proc} processes x ' if num_proc > 1 else ''}{biggest.length:,} tokens); "
            f"{why} allows {limit / 2**30:.1f} GiB (a shorter --length, fewer --num-proc, or "
            f"more memory)"
        )


def _generate_staged(
    jobs: Sequence[_Job], num_proc: int, progress: bool, tok: PhaseTokenizer
) -> None:
    """Every config is built in a folder beside its target and swapped in once all of them are
    complete: an interrupted run leaves the previous configs (and nothing new) behind. A
    target is replaced only if ``generate`` made it (it holds ``spec.json``) or it is empty."""
    for job in jobs:
        folder = job.folder
        if folder.is_dir() and any(folder.iterdir()) and not (folder / SPEC_FILE).is_file():
            raise OutputError(
                f"{str(folder)!r} is not a phasebench config made by `generate` (no {SPEC_FILE})"
                f"; it is never replaced: move it away or choose another --out"
            )
    with contextlib.ExitStack() as stack:
        for job in jobs:
            staging = stack.enter_context(staged_folder(job.folder, marker=SPEC_FILE))
            _build_config(dataclasses.replace(job, folder=staging), num_proc, progress, tok)


def _generate_shard(
    jobs: Sequence[_Job], shard: tuple[int, int], num_proc: int, progress: bool, tok
) -> None:
    """Chunks ``i, i+n, ...`` of every config, written in place; whichever run completes a
    config writes its manifest."""
    for job in jobs:
        make_folder(job.folder)
        remove_file(job.folder / MANIFEST)  # the config is incomplete until its last chunk
        mine = [i for i in range(job.n_chunks) if i % shard[1] == shard[0]]
        _build_config(job, num_proc, progress, tok, mine)


def _build_config(
    job: _Job, num_proc: int, progress: bool, tok: PhaseTokenizer, chunks: list[int] | None = None
) -> None:
    spec_text = json.dumps(job.spec.to_dict(), indent=2) + "\n"
    atomic_write_text(job.folder / SPEC_FILE, spec_text)
    _run_chunks(job, list(range(job.n_chunks)) if chunks is None else chunks, num_proc, progress)
    if all(job.chunk_path(i).exists() for i in range(job.n_chunks)):
        write_manifest(job, tok)


def _run_chunks(job: _Job, chunks: list[int], num_proc: int, progress: bool) -> None:
    global _ACTIVE
    _ACTIVE = job
    bar = tqdm(
        total=sum(len(job.chunk_units(i)) for i in chunks) * job.plan.rows_per_unit,
        desc=f"{job.spec.config_name}",
        unit="prompt",
        disable=not progress,
    )
    try:
        if num_proc == 1 or len(chunks) <= 1:
            for i in chunks:
                bar.update(_write_chunk(i))
        else:
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(min(num_proc, len(chunks))) as pool:
                for n in pool.imap_unordered(_write_chunk, chunks):
                    bar.update(n)
    finally:
        bar.close()
        _ACTIVE = None


def write_manifest(job: _Job, tok: PhaseTokenizer) -> Path:
    files, hashes, n_rows = [], [], 0
    for i in range(job.n_chunks):
        path = job.chunk_path(i)
        meta = pq.read_metadata(path)
        digest = meta.metadata[HASH_KEY].decode()
        files.append({"path": path.name, "rows": meta.num_rows, "content_sha256": digest})
        hashes.append(digest)
        n_rows += meta.num_rows
    manifest = {
        "phasebench_version": __version__,
        "generator_version": GENERATOR_VERSION,
        "config": job.spec.config_name,
        "spec": job.spec.to_dict(),
        "tokenizer": tok.describe(),
        "rows": n_rows,
        "files": files,
        "content_hash": "sha256:" + hashlib.sha256("\n".join(hashes).encode()).hexdigest(),
        "balance": job.plan.balance(),
        "family": job.family.describe(job.plan),
    }
    if (figures := prefill_figures(job, tok)) is not None:
        manifest[prefill.MANIFEST_KEY] = figures
    path = job.folder / MANIFEST
    atomic_write_text(path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def prefill_figures(job: _Job, tok: PhaseTokenizer) -> dict | None:
    """The manifest's prefill tokens without and with an ideal prefix cache, in the stored
    order and in lm-eval's (:mod:`phasebench.prefill`), from the plan's pieces (the fast path,
    no whole prompt encoded; ``verify`` re-derives them from exact ids). None for a plan that
    does not lay its prompts out in pieces."""
    pieces = getattr(job.plan, "prompt_pieces", None)
    if pieces is None:
        return None
    generated = job.family.output_type == "generate_until"
    return prefill.plan_figures(tok, pieces(), lm_eval_order=generated)


def read_manifest(folder: Path | str) -> dict:
    """The manifest of a complete config folder, checked for shape: every key present with its
    type, and every data file a plain ``*.parquet`` name inside the folder. A clear
    :class:`SplitError` otherwise."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not path.is_file():
        raise SplitError(
            f"{str(folder)!r} is not a complete phasebench config (no {MANIFEST}); "
            f"generate it with `phasebench generate`"
        )
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise SplitError(f"{path} is larger than {MAX_MANIFEST_BYTES} bytes; not a manifest")
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SplitError(f"{path} is not a readable manifest ({type(exc).__name__})") from None
    missing = [k for k in MANIFEST_KEYS if not isinstance(manifest, dict) or k not in manifest]
    if missing:
        raise SplitError(f"{path} is not a phasebench manifest (no {', '.join(missing)})")
    if problem := _manifest_problem(manifest):
        raise SplitError(f"{path}: {problem}; regenerate the config with `phasebench generate`")
    return manifest


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _manifest_problem(manifest: dict) -> str | None:
    """What is wrong with the shape of a manifest that has every key, or None."""
    for key, kind in (("config", str), ("spec", dict), ("tokenizer", dict), ("files", list),
                      ("content_hash", str), ("balance", dict)):  # fmt: skip
        if not isinstance(manifest[key], kind):
            return f"{key} must be a {kind.__name__}"
    if not _count(manifest["rows"]):
        return "rows must be a count"
    spec = manifest["spec"]
    if not isinstance(spec.get("family"), str) or not _count(spec.get("length")):
        return "spec needs a family and a length"
    if not isinstance(spec.get("tokenizer"), str):
        return "spec needs a tokenizer"
    if not all(isinstance(manifest["tokenizer"].get(k), str) for k in ("name", "fingerprint")):
        return "tokenizer needs a name and a fingerprint"
    if not manifest["files"]:
        return "files lists no data file"
    if (problem := prefill.shape_problem(manifest.get(prefill.MANIFEST_KEY))) is not None:
        return f"{prefill.MANIFEST_KEY} {problem}"
    for i, entry in enumerate(manifest["files"]):
        if not isinstance(entry, dict):
            return f"files[{i}] must be a mapping"
        name = entry.get("path")
        if not isinstance(name, str) or not DATA_FILE.match(name):
            return f"files[{i}].path {ascii(name)[:80]} is not a plain file name inside the folder"
        if not _count(entry.get("rows")) or not isinstance(entry.get("content_sha256"), str):
            return f"files[{i}] needs rows and content_sha256"
    return None


def is_partial(folder: Path) -> bool:
    """A folder ``generate`` started but did not complete: it holds ``spec.json`` or data files
    but no manifest, or it is a staging folder left by an interrupted run."""
    if not folder.is_dir() or folder.is_symlink() or (folder / MANIFEST).exists():
        return False
    if folder.name.startswith(".") and STAGING_MARK in folder.name:
        return True
    return (folder / SPEC_FILE).exists() or any(folder.glob("*.parquet"))


def config_folders(path: Path | str) -> list[Path]:
    """``path`` itself if it is a config folder, else its complete config sub-folders (hidden
    ones, such as a staging folder of ``generate``, and symbolic links, which may lead out of
    the folder, are never configs)."""
    path = Path(path)
    if (path / MANIFEST).exists():
        return [path]
    if not path.is_dir():
        raise SplitError(f"{str(path)!r} is not a folder")
    found = sorted(
        p
        for p in path.iterdir()
        if not p.name.startswith(".") and not p.is_symlink() and (p / MANIFEST).exists()
    )
    if not found:
        partial = partial_configs(path)
        hint = f" (partial: {', '.join(p.name for p in partial)})" if partial else ""
        raise SplitError(f"no complete phasebench config under {str(path)!r}{hint}")
    return found


def partial_configs(path: Path | str) -> list[Path]:
    """Configs under ``path`` (or ``path`` itself) that ``generate`` did not complete."""
    path = Path(path)
    if is_partial(path) and not path.name.startswith("."):
        return [path]
    if not path.is_dir() or (path / MANIFEST).exists():
        return []
    return sorted(p for p in path.iterdir() if is_partial(p))


def _read_table(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        raise SplitError(
            f"{path} is not a readable parquet file ({type(exc).__name__}: "
            f"{first_line(exc, 160, '')}); "
            f"regenerate the config"
        ) from None


def iter_rows(
    folder: Path | str, columns: Sequence[str] | None = None, *, check: bool = False
) -> Iterator[dict]:
    """Stream the rows of a config folder in order, one file at a time.

    With ``check`` every file's rows must hash to the content hash its manifest entry and its
    own metadata record (a changed prompt is refused with :class:`SplitError`); ``check`` reads
    whole rows, so it takes no ``columns``."""
    if check and columns is not None:
        raise ValueError("check=True reads whole rows; give no columns")
    manifest = read_manifest(folder)
    for entry in manifest["files"]:
        path = Path(folder) / entry["path"]
        table = _read_table(path, columns)
        rows = table.to_pylist()
        if check:
            stored = (table.schema.metadata or {}).get(HASH_KEY, b"").decode()
            if not (content_hash(rows) == stored == entry["content_sha256"]):
                raise SplitError(
                    f"{path}: the rows do not match the manifest's content hash; the config "
                    f"was changed after it was built"
                )
        yield from rows
