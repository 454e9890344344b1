"""Building and checking a dataset repository folder from generated config folders.

``build_repo`` copies each config's manifest and parquet files byte for byte, writes the index
and the card, validates the result and renames it into place; ``repo_problems`` lists every
inconsistency between a folder's index, manifests, data files and card (what a push checks
again before anything leaves the machine).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from phasebench import build
from phasebench._version import __version__
from phasebench.atomic import (
    atomic_copy,
    atomic_write_bytes,
    atomic_write_text,
    check_writable_dir,
    staged_folder,
)
from phasebench.build import HASH_KEY, MANIFEST, content_hash, read_manifest
from phasebench.errors import HubError, SplitError, first_line
from phasebench.families import names as family_names
from phasebench.hub.benchmark import (
    AXIS_OF_LENGTH_PHASES,
    EVAL_FILE,
    render_eval_yaml,
    writes_eval_yaml,
)
from phasebench.hub.card import render_card
from phasebench.hub.naming import (
    CARD,
    DEFAULT_LICENSE,
    DEFAULT_PRETTY_NAME,
    INDEX,
    SPLIT,
    check_license,
    check_pretty_name,
    check_repo_id,
    file_sha256,
    license_problem,
    manifest_config_name,
    pretty_name_problem,
)
from phasebench.verification import prefill_problems


@dataclass(frozen=True)
class _Source:
    """One generated config folder, checked, with where its files go in the repository."""

    name: str
    folder: Path
    manifest: dict
    manifest_bytes: bytes

    @property
    def family(self) -> str:
        return self.manifest["spec"]["family"]

    def files(self) -> list[tuple[Path, str, dict]]:
        """(source file, path in the repository, manifest entry), in manifest order."""
        return [
            (self.folder / e["path"], f"{self.name}/{e['path']}", e) for e in self.manifest["files"]
        ]


def _parquet_problems(path: Path, entry: dict, where: str, deep: bool) -> list[str]:
    """Problems of one data file against its manifest entry (rows and content hash)."""
    if not path.is_file():
        return [f"{where}: missing"]
    try:
        meta = pq.read_metadata(path)
    except (OSError, pa.ArrowException) as exc:
        return [f"{where}: not a readable parquet file ({str(exc)[:100]})"]
    stored = (meta.metadata or {}).get(HASH_KEY, b"").decode()
    problems = []
    if meta.num_rows != entry["rows"]:
        problems.append(f"{where}: {meta.num_rows} rows, the manifest says {entry['rows']}")
    if stored != entry["content_sha256"]:
        problems.append(f"{where}: stored content hash does not match the manifest")
    elif deep and content_hash(pq.read_table(path).to_pylist()) != stored:
        problems.append(f"{where}: rows do not hash to the manifest's content hash")
    return problems


def _collect(generated: Sequence[Path | str]) -> list[_Source]:
    """Every complete config under ``generated``, checked against its manifest, sorted by
    family (kv, niah, code), length and tokenizer."""
    sources: dict[str, _Source] = {}
    for root in generated:
        for folder in build.config_folders(root):
            manifest_bytes = (folder / MANIFEST).read_bytes()
            manifest = read_manifest(folder)
            name = manifest_config_name(manifest)
            if name in sources:
                raise HubError(
                    f"two generated configs map to the Hub config {name!r} "
                    f"({sources[name].folder} and {folder}); publish them to separate repositories"
                )
            source = _Source(name, folder, manifest, manifest_bytes)
            problems = [
                p
                for src, _, entry in source.files()
                for p in _parquet_problems(src, entry, str(src), deep=True)
            ]
            problems = problems or prefill_problems(folder)  # the card prints the figures
            if problems:
                raise HubError(
                    f"{folder} does not match its manifest ({problems[0]}); "
                    f"regenerate it with `phasebench generate`"
                )
            sources[name] = source
    order = {f: i for i, f in enumerate(family_names())}
    return sorted(
        sources.values(),
        key=lambda s: (order[s.family], s.manifest["spec"]["length"], s.name),
    )


def _config_entry(source: _Source) -> dict:
    files, num_bytes, lengths = [], 0, []
    for src, repo_path, entry in source.files():
        table = pq.read_table(src, columns=["length"])
        lengths.extend(table.column("length").to_pylist())
        num_bytes += pq.read_table(src).nbytes
        files.append(
            {
                "path": repo_path,
                "rows": entry["rows"],
                "content_sha256": entry["content_sha256"],
                "sha256": file_sha256(src),
                "size": src.stat().st_size,
            }
        )
    tok = source.manifest["tokenizer"]
    spec = source.manifest["spec"]
    return {
        "name": source.name,
        "family": source.family,
        "length": spec["length"],
        # the board's design, which names its Hub task (phasebench.hub.benchmark.task_id)
        "modulus": spec["modulus"],
        "axis": AXIS_OF_LENGTH_PHASES.get(spec.get("length_phases"), "needle"),
        "phases": len(spec.get("phases") or ()) or spec["modulus"],
        "rows": source.manifest["rows"],
        "content_hash": source.manifest["content_hash"],
        "tokenizer": tok["name"],
        "tokenizer_fingerprint": tok["fingerprint"],
        "manifest": f"{source.name}/{MANIFEST}",
        "manifest_sha256": hashlib.sha256(source.manifest_bytes).hexdigest(),
        "num_bytes": num_bytes,
        "prompt_tokens": {"min": min(lengths), "max": max(lengths)},
        "files": files,
    }


def _check_out(out: Path, generated: Sequence[Path | str], overwrite: bool) -> None:
    check_writable_dir(out, "output folder")
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise HubError(
                f"output folder {str(out)!r} exists and is not empty; choose another or pass "
                "--overwrite"
            )
        if not (out / INDEX).is_file():
            raise HubError(
                f"output folder {str(out)!r} was not made by `phasebench publish` (no {INDEX})"
                f"; it is never replaced, even with --overwrite: choose another or an empty folder"
            )
    target = out.resolve()
    for root in generated:
        src = Path(root).resolve()
        if target == src or target in src.parents or src in target.parents:
            raise HubError(
                f"output folder {str(out)!r} overlaps the generated folder {str(root)!r}; "
                f"choose a separate output folder"
            )


def build_repo(
    generated: Sequence[Path | str],
    out: Path | str,
    *,
    repo_id: str | None = None,
    pretty_name: str = DEFAULT_PRETTY_NAME,
    license: str = DEFAULT_LICENSE,
    default_config: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Build the dataset repository folder ``out`` from generated config folders.

    ``repo_id`` only appears in the card's usage examples (``ORG/NAME`` when not given); a
    folder can only be pushed to the repository it was built for. The folder is assembled
    under a temporary name next to ``out``, validated, then renamed into place.
    """
    out = Path(out)
    if not generated:
        raise HubError("give at least one generated folder to publish")
    _check_out(out, generated, overwrite)
    if repo_id is not None:
        check_repo_id(repo_id)
    check_pretty_name(pretty_name)  # both go into the card's YAML and Markdown
    check_license(license)
    sources = _collect(generated)
    names = [s.name for s in sources]
    default = default_config or names[0]
    if default not in names:
        raise HubError(f"'default_config' must be one of {', '.join(names)} (got {default!r})")
    index = {
        "phasebench_version": __version__,
        "repo_id": repo_id,
        "pretty_name": pretty_name,
        "license": license,
        "default_config": default,
        "split": SPLIT,
        "configs": [_config_entry(s) for s in sources],
    }
    with staged_folder(out, marker=INDEX) as tmp:  # built beside, validated, swapped in
        for s in sources:
            atomic_write_bytes(tmp / s.name / MANIFEST, s.manifest_bytes)
            for src, repo_path, _ in s.files():
                atomic_copy(src, tmp / repo_path)
        atomic_write_text(tmp / INDEX, json.dumps(index, indent=2, sort_keys=True) + "\n")
        card = render_card(
            index,
            {s.name: s.manifest for s in sources},
            {s.name: pq.read_schema(s.files()[0][0]) for s in sources},
        )
        atomic_write_text(tmp / CARD, card)
        if writes_eval_yaml(index):
            atomic_write_text(tmp / EVAL_FILE, render_eval_yaml(index))
        validate_repo(tmp, deep=False)
    return out


#: Largest ``phasebench.json`` read (a folder of thousands of configs stays far below it).
MAX_INDEX_BYTES = 16 * 1024 * 1024
#: Largest data card (``README.md``) or ``eval.yaml`` read (``datasets`` parses the card's YAML
#: header whole).
MAX_CARD_BYTES = 16 * 1024 * 1024


def _read_bounded(path: Path, limit: int, what: str) -> bytes:
    """At most ``limit`` bytes of the regular file ``path`` (never more is read, whatever its
    size says or becomes), or a one-line :class:`HubError` naming ``what`` it should be."""
    if path.is_symlink() or not path.is_file():
        raise HubError(f"{path}: not a regular file (symbolic links are refused); not {what}")
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise HubError(f"{path} is larger than {limit} bytes; not {what}")
    return data


#: A Hub config name (``^\w+(\.\w+)*$``, ASCII): never a path, never ``..``.
CONFIG_NAME = re.compile(r"^\w+(\.\w+)*$", re.ASCII)


def read_index(repo_dir: Path | str) -> dict:
    """The folder's ``phasebench.json``, read with a size bound and checked for shape
    (:func:`parse_index`), or a clear one-line :class:`HubError`."""
    path = Path(repo_dir) / INDEX
    if not path.is_file():
        raise HubError(
            f"{str(repo_dir)!r} is not a phasebench dataset folder (no {INDEX}); "
            f"build one with `phasebench publish`"
        )
    return parse_index(_read_bounded(path, MAX_INDEX_BYTES, "a phasebench index"), str(path))


def parse_index(data: bytes, where: str) -> dict:
    """``phasebench.json`` from its bytes, checked so that nothing read from it can name a
    path outside its folder: every config has a Hub config name, its manifest is
    ``NAME/manifest.json`` and its data files are plain parquet names inside ``NAME/``.
    Raises :class:`HubError` (one line, naming ``where``) otherwise."""
    if len(data) > MAX_INDEX_BYTES:
        raise HubError(f"{where} is larger than {MAX_INDEX_BYTES} bytes; not a phasebench index")
    try:
        index = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise HubError(
            f"{where} is not valid JSON ({type(exc).__name__}); rebuild the folder"
        ) from None
    if not isinstance(index, dict) or not isinstance(index.get("configs"), list):
        raise HubError(f"{where} lists no configs; rebuild the folder")
    if problem := _index_problem(index):
        raise HubError(f"{where}: {problem}; rebuild the folder with `phasebench publish`")
    return index


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _index_problem(index: dict) -> str | None:
    names: set[str] = set()
    for i, c in enumerate(index["configs"]):
        if not isinstance(c, dict):
            return f"configs[{i}] is not a mapping"
        name = c.get("name")
        if not isinstance(name, str) or not CONFIG_NAME.match(name):
            return f"configs[{i}].name {ascii(name)[:80]} is not a config name (letters, digits, _)"
        if name in names:
            return f"config {name} is listed twice"
        names.add(name)
        if c.get("family") not in family_names() or not _count(c.get("length")):
            return f"config {name} needs a family ({', '.join(family_names())}) and a length"
        if c.get("manifest") != f"{name}/{MANIFEST}":
            return (
                f"config {name}: manifest {ascii(c.get('manifest'))[:80]} is not {name}/{MANIFEST}"
            )
        files = c.get("files")
        if not isinstance(files, list) or not files:
            return f"config {name} lists no data file"
        for f in files:
            path = f.get("path") if isinstance(f, dict) else None
            folder, _, file = path.partition("/") if isinstance(path, str) else ("", "", "")
            if folder != name or not build.DATA_FILE.match(file):
                return (
                    f"config {name}: data file {ascii(path)[:80]} is not a parquet file in {name}/"
                )
            if not _count(f.get("rows")) or not _count(f.get("size")):
                return f"config {name}: data file {file} needs rows and size"
        if not _count(c.get("rows")):
            return f"config {name} needs rows"
    default = index.get("default_config")
    if default is not None and (not isinstance(default, str) or default not in names):
        return f"default_config {ascii(default)[:80]} is not one of the configs"
    for key, problem_of in (("pretty_name", pretty_name_problem), ("license", license_problem)):
        if key in index and (problem := problem_of(index[key])):
            return f"{key} {problem}"
    return None


def folder_files(repo: Path) -> list[str]:
    """Files of a repository folder, relative and sorted; hidden ones (``.git``, ``.cache``
    of a clone or a download) are not part of the dataset."""
    files = (p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file())
    return sorted(f for f in files if not any(part.startswith(".") for part in f.split("/")))


def repo_problems(repo_dir: Path | str, *, deep: bool = True) -> list[str]:
    """Every inconsistency between the folder's index, manifests, data files and card.

    ``deep`` also re-hashes every row (what a push does); without it only file bytes,
    parquet metadata and the card are checked (what a fresh build does, having hashed the
    rows of its sources already).
    """
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    repo = Path(repo_dir)
    index = read_index(repo)
    problems: list[str] = []
    manifests: dict[str, dict] = {}
    schemas: dict[str, pa.Schema] = {}
    expected_files = {INDEX, CARD, EVAL_FILE}  # a present eval.yaml is judged below
    for c in index["configs"]:
        name = c["name"]
        mpath = repo / c["manifest"]
        expected_files.add(c["manifest"])
        if not mpath.is_file():
            problems.append(f"{c['manifest']}: missing")
            continue
        try:
            mbytes = _read_bounded(mpath, build.MAX_MANIFEST_BYTES, "a manifest")
            manifest = read_manifest(mpath.parent)
            described = manifest_config_name(manifest)
        except (HubError, SplitError) as exc:
            problems.append(f"{c['manifest']}: {exc}")
            continue
        if hashlib.sha256(mbytes).hexdigest() != c.get("manifest_sha256"):
            problems.append(f"{c['manifest']}: changed since the folder was built")
        manifests[name] = manifest
        if described != name:
            problems.append(f"{c['manifest']}: describes {described!r}")
        if [f["path"] for f in c["files"]] != [f"{name}/{e['path']}" for e in manifest["files"]]:
            problems.append(f"{name}: data files do not match the manifest's file list")
            continue
        if sum(f["rows"] for f in c["files"]) != manifest["rows"] or c["rows"] != manifest["rows"]:
            problems.append(
                f"{name}: row counts do not add up to the manifest's {manifest['rows']}"
            )
        for f, entry in zip(c["files"], manifest["files"], strict=True):
            expected_files.add(f["path"])
            path = repo / f["path"]
            if path.is_symlink() or (path.is_file() and path.stat().st_size != f["size"]):
                problems.append(f"{f['path']}: not the {f['size']}-byte file the index lists")
                continue
            found = _parquet_problems(path, entry, f["path"], deep=deep)
            if not found and file_sha256(path) != f["sha256"]:
                found.append(f"{f['path']}: file bytes differ from the index")
            problems += found
        if not problems:
            schemas[name] = pq.read_schema(repo / c["files"][0]["path"])
    present = set(folder_files(repo))
    problems += [
        f"{p}: not part of the published configs" for p in sorted(present - expected_files)
    ]
    if problems:
        return problems

    card_path = repo / CARD
    if not card_path.is_file():
        return [f"{CARD}: missing"]
    try:
        card_text = _read_bounded(card_path, MAX_CARD_BYTES, "a data card").decode("utf-8")
    except (HubError, UnicodeDecodeError) as exc:
        return [f"{CARD}: {first_line(exc)}"]
    try:
        card = DatasetCard(card_text)
        declared = MetadataConfigs.from_dataset_card_data(card.data)
        infos = DatasetInfosDict.from_dataset_card_data(card.data)
        default = declared.get_default_config_name()
    except Exception as exc:  # huggingface_hub/datasets raise ValueError, YAMLError, ...
        return [f"{CARD}: its metadata does not parse ({first_line(exc)})"]
    names = [c["name"] for c in index["configs"]]
    if sorted(declared) != sorted(names):
        problems.append(f"{CARD}: declares configs {sorted(declared)}, the folder holds {names}")
    for c in index["configs"]:
        files = declared.get(c["name"], {}).get("data_files")
        if files != [{"split": SPLIT, "path": [f["path"] for f in c["files"]]}]:
            problems.append(f"{CARD}: data_files of {c['name']!r} do not list its parquet files")
        info = infos.get(c["name"])
        split = (info.splits or {}).get(SPLIT) if info is not None else None
        if split is None or split.num_examples != c["rows"]:
            problems.append(f"{CARD}: dataset_info of {c['name']!r} does not say {c['rows']} rows")
    if default != index["default_config"]:
        problems.append(f"{CARD}: default config is {default!r}, not {index['default_config']!r}")
    if not problems and card_text != render_card(index, manifests, schemas):
        problems.append(f"{CARD}: differs from the card rendered from the manifests")
    eval_path = repo / EVAL_FILE
    if not eval_path.is_file():
        if writes_eval_yaml(index):
            problems.append(f"{EVAL_FILE}: missing (the Hub reads it to list the benchmark)")
        return problems
    try:
        eval_bytes = _read_bounded(eval_path, MAX_CARD_BYTES, f"the benchmark's {EVAL_FILE}")
    except HubError as exc:
        return [*problems, f"{EVAL_FILE}: {exc}"]
    if not writes_eval_yaml(index):
        problems.append(
            f"{EVAL_FILE}: present, but the Hub does not accept the framework it would name, "
            f"or the repository holds no task Inspect AI runs (docs/hub.md); remove it"
        )
    elif eval_bytes != render_eval_yaml(index).encode("utf-8"):
        problems.append(f"{EVAL_FILE}: differs from the one written from the index")
    return problems


def validate_repo(repo_dir: Path | str, *, deep: bool = True) -> dict:
    """The folder's index if the folder is consistent, else a :class:`HubError`."""
    problems = repo_problems(repo_dir, deep=deep)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise HubError(
            f"{str(repo_dir)!r} is not a consistent dataset folder: {problems[0]}{more}; "
            f"rebuild it with `phasebench publish`"
        )
    return read_index(repo_dir)
