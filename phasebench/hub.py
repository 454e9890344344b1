"""Hugging Face dataset repository folders, their data card, and the push.

``phasebench publish`` turns generated config folders into one dataset repository folder::

    REPO/README.md                                   data card (YAML front matter + prose)
    REPO/phasebench.json                             index: configs, files, hashes, card options
    REPO/<config>/manifest.json                      each config's manifest, byte for byte
    REPO/<config>/data-00000-of-00001.parquet        each config's parquet files, byte for byte

A Hub config is one family x length x tokenizer (``kv_4096_deepseek_v4``); its only split is
``test``. The repository is laid out like a generated output folder (one config folder with its
manifest and parquet files per config), so everything that reads those (``config_folders``,
``read_manifest``, ``iter_rows``, ``phasebench verify``, the lm-eval tasks) reads a published
dataset too; :func:`config_folders` also fetches selected configs of a Hub dataset.

The card is rendered with jinja2 from ``data_cards/card.md.j2`` and numbers that come only from
the manifests and the data files, so the same inputs always give the same folder bytes.
Before anything is pushed the folder is validated again (files against the index and the
manifests, row content hashes, card metadata, card text), and the push is one commit.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import pyarrow as pa
import pyarrow.parquet as pq

from phasebench import __version__, build
from phasebench.build import HASH_KEY, MANIFEST, content_hash, read_manifest
from phasebench.errors import PhasebenchError, TokenizerError
from phasebench.resources import resource_dir
from phasebench.specs import FAMILIES, slug

if TYPE_CHECKING:
    import datasets
    from huggingface_hub import CommitInfo

    from phasebench.tokenization import PhaseTokenizer

__all__ = [
    "build_repo",
    "card_metadata",
    "commit_operations",
    "config_folders",
    "hub_config_name",
    "load_split",
    "push_repo",
    "read_index",
    "register",
    "render_card",
    "repo_problems",
    "size_category",
    "tokenizer_slug",
    "validate_repo",
]

SPLIT = "test"
INDEX = "phasebench.json"
CARD = "README.md"
TEMPLATE = "card.md.j2"
DEFAULT_PRETTY_NAME = "phasebench: phase-balanced long-context splits"
DEFAULT_LICENSE = "apache-2.0"
_SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
    (10_000_000_000, "1B<n<10B"),
    (100_000_000_000, "10B<n<100B"),
    (1_000_000_000_000, "100B<n<1T"),
)
_TASK_CATEGORIES = {"kv": "question-answering", "niah": "question-answering"}
_FAMILY_TAGS = {
    "kv": "key-value-retrieval",
    "niah": "needle-in-a-haystack",
    "code": "code-completion",
}


# -- naming ---------------------------------------------------------------------------------------


def tokenizer_slug(name: str, args: dict[str, Any] | None = None) -> str:
    """A short Hub-safe name for a tokenizer: the alias, the model name of a Hub id, or the
    folder/file name of a local path, followed by any tokenizer arguments (they change the
    token sequence, so two configs that differ in them must not share a name)."""
    path = Path(name)
    if name.endswith((".json", ".gguf")) and path.name == "tokenizer.json":
        base = path.parent.name or "tokenizer"
    elif name.endswith((".json", ".gguf")):
        base = path.stem
    else:
        base = path.name or name
    parts = [slug(base)]
    for key, value in sorted((args or {}).items()):
        parts.append(slug(f"{key}_{value}"))
    return "_".join(parts)


def hub_config_name(
    family: str, length: int, tokenizer: str, tokenizer_args: dict[str, Any] | None = None
) -> str:
    """The Hub config of one family x length x tokenizer, e.g. ``kv_4096_deepseek_v4``."""
    return f"{family}_{length}_{tokenizer_slug(tokenizer, tokenizer_args)}"


def _manifest_config_name(manifest: dict) -> str:
    spec = manifest["spec"]
    return hub_config_name(
        spec["family"], spec["length"], spec["tokenizer"], spec.get("tokenizer_args") or {}
    )


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(functools.partial(f.read, 1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- reading generated configs --------------------------------------------------------------------


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


def _check_parquet(path: Path, entry: dict, where: str, deep: bool) -> list[str]:
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
            name = _manifest_config_name(manifest)
            if name in sources:
                raise PhasebenchError(
                    f"two generated configs map to the Hub config {name!r} "
                    f"({sources[name].folder} and {folder}); publish them to separate repositories"
                )
            source = _Source(name, folder, manifest, manifest_bytes)
            problems = [
                p
                for src, _, entry in source.files()
                for p in _check_parquet(src, entry, str(src), deep=True)
            ]
            if problems:
                raise PhasebenchError(
                    f"{folder} does not match its manifest ({problems[0]}); "
                    f"regenerate it with `phasebench generate`"
                )
            sources[name] = source
    order = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(
        sources.values(),
        key=lambda s: (order[s.family], s.manifest["spec"]["length"], s.name),
    )


# -- card -----------------------------------------------------------------------------------------


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket for ``rows`` examples."""
    for bound, label in _SIZE_CATEGORIES:
        if rows < bound:
            return label
    return "n>1T"


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("data_cards"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def card_metadata(index: dict, schemas: dict[str, pa.Schema]) -> Any:
    """The card's front matter as a ``huggingface_hub.DatasetCardData``: configs with their
    data files (written through ``datasets``' own serializers), license, language, task
    categories, size, tags, pretty name and the row features of every config."""
    import datasets
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    configs = index["configs"]
    families = sorted({c["family"] for c in configs}, key=FAMILIES.index)
    total = sum(c["rows"] for c in configs)
    data = DatasetCardData(
        pretty_name=index["pretty_name"],
        license=index["license"],
        language=["en"],
        task_categories=sorted({_TASK_CATEGORIES.get(f, "text-generation") for f in families}),
        size_categories=[size_category(total)],
        tags=[
            "long-context",
            "phase-sensitivity",
            "kv-cache-compression",
            "positional-bias",
            "phasebench",
        ]
        + [_FAMILY_TAGS[f] for f in families],
    )
    MetadataConfigs(
        {
            c["name"]: {
                "data_files": [{"split": SPLIT, "path": [f["path"] for f in c["files"]]}],
                **({"default": True} if c["name"] == index["default_config"] else {}),
            }
            for c in configs
        }
    ).to_dataset_card_data(data)
    infos = {}
    for c in configs:
        splits = SplitDict()
        splits.add(SplitInfo(name=SPLIT, num_bytes=c["num_bytes"], num_examples=c["rows"]))
        infos[c["name"]] = DatasetInfo(
            features=datasets.Features.from_arrow_schema(schemas[c["name"]].remove_metadata()),
            splits=splits,
            download_size=sum(f["size"] for f in c["files"]),
            dataset_size=c["num_bytes"],
        )
    DatasetInfosDict(infos).to_dataset_card_data(data)
    return data


def family_facts(info: dict, max_items: int = 12) -> list[tuple[str, str]]:
    """The family's manifest summary as short (label, text) lines for the card: scalars, and
    small lists or mappings of scalars; anything bigger is left to the manifest."""

    def scalar(value: Any) -> bool:
        return isinstance(value, str | int | float | bool) or value is None

    def small(values: Any) -> bool:
        return len(values) <= max_items and all(map(scalar, values))

    facts = []
    for key in sorted(info):
        value = info[key]
        if scalar(value):
            text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)
        elif isinstance(value, dict) and small(list(value.values())):
            text = ", ".join(f"{k}: {v}" for k, v in sorted(value.items())) or "none"
        elif isinstance(value, list) and small(value):
            text = ", ".join(map(str, value)) or "none"
        else:
            text = f"see `{MANIFEST}`"
        facts.append((key.replace("_", " "), text))
    return facts


def render_card(index: dict, manifests: dict[str, dict], schemas: dict[str, pa.Schema]) -> str:
    """The whole ``README.md``: front matter from :func:`card_metadata`, body from the
    template, every figure taken from ``index``, ``manifests`` and the parquet ``schemas``."""
    data = card_metadata(index, schemas)
    configs = []
    for c in index["configs"]:
        manifest = manifests[c["name"]]
        balance = manifest["balance"]
        configs.append(
            {
                **c,
                "manifest": manifest,
                "spec": manifest["spec"],
                "tokenizer": manifest["tokenizer"],
                "phases": [
                    {"phase": r, "count": n, "mean": m, "std": s}
                    for r, (n, m, s) in enumerate(
                        zip(
                            balance["count_per_phase"],
                            balance["anchor_mean_per_phase"],
                            balance["anchor_std_per_phase"],
                            strict=True,
                        )
                    )
                ],
                "balance": balance,
                "family_facts": family_facts(manifest.get("family") or {}),
            }
        )
    families = [f for f in FAMILIES if any(c["family"] == f for c in configs)]
    text = (
        _environment()
        .get_template(TEMPLATE)
        .render(
            front_matter=data.to_yaml().strip(),
            index=index,
            configs=configs,
            families=families,
            repo_id=index["repo_id"] or "ORG/NAME",
            default_config=index["default_config"],
            split=SPLIT,
        )
    )
    return text.rstrip("\n") + "\n"


# -- building the folder --------------------------------------------------------------------------


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
                "sha256": _file_sha256(src),
                "size": src.stat().st_size,
            }
        )
    tok = source.manifest["tokenizer"]
    return {
        "name": source.name,
        "family": source.family,
        "length": source.manifest["spec"]["length"],
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
    if out.exists() and not out.is_dir():
        raise PhasebenchError(f"--out {str(out)!r} exists and is not a folder")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise PhasebenchError(
            f"--out {str(out)!r} exists and is not empty; choose another --out or pass --overwrite"
        )
    target = out.resolve()
    for root in generated:
        src = Path(root).resolve()
        if target == src or target in src.parents or src in target.parents:
            raise PhasebenchError(
                f"--out {str(out)!r} overlaps the generated folder {str(root)!r}; "
                f"choose a separate --out"
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
        raise PhasebenchError("give at least one generated folder to publish")
    _check_out(out, generated, overwrite)
    if repo_id is not None:
        _check_repo_id(repo_id)
    sources = _collect(generated)
    names = [s.name for s in sources]
    default = default_config or names[0]
    if default not in names:
        raise PhasebenchError(
            f"'--default-config' must be one of {', '.join(names)} (got {default!r})"
        )
    index = {
        "phasebench_version": __version__,
        "repo_id": repo_id,
        "pretty_name": pretty_name,
        "license": license,
        "default_config": default,
        "split": SPLIT,
        "configs": [_config_entry(s) for s in sources],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{os.getpid()}.tmp"
    old = out.parent / f".{out.name}.{os.getpid()}.old"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for s in sources:
            (tmp / s.name).mkdir(parents=True, exist_ok=True)
            (tmp / s.name / MANIFEST).write_bytes(s.manifest_bytes)
            for src, repo_path, _ in s.files():
                (tmp / repo_path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, tmp / repo_path)
        (tmp / INDEX).write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", "utf-8")
        (tmp / CARD).write_text(
            render_card(
                index,
                {s.name: s.manifest for s in sources},
                {s.name: pq.read_schema(s.files()[0][0]) for s in sources},
            ),
            encoding="utf-8",
        )
        validate_repo(tmp, deep=False)
        if out.exists():
            os.replace(out, old)
        try:
            os.replace(tmp, out)
        except BaseException:
            if old.exists():  # put the previous folder back rather than lose it
                os.replace(old, out)
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return out


# -- validating a folder --------------------------------------------------------------------------


def read_index(repo_dir: Path | str) -> dict:
    """The folder's ``phasebench.json``, or a clear error if it has none (or a broken one)."""
    path = Path(repo_dir) / INDEX
    if not path.is_file():
        raise PhasebenchError(
            f"{str(repo_dir)!r} is not a phasebench dataset folder (no {INDEX}); "
            f"build one with `phasebench publish GENERATED_DIR --out REPO_DIR`"
        )
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise PhasebenchError(f"{path} is not valid JSON ({exc}); rebuild the folder") from None
    if not isinstance(index, dict) or not isinstance(index.get("configs"), list):
        raise PhasebenchError(f"{path} lists no configs; rebuild the folder")
    return index


def _folder_files(repo: Path) -> list[str]:
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
    expected_files = {INDEX, CARD}
    for c in index["configs"]:
        name = c["name"]
        mpath = repo / c["manifest"]
        expected_files.add(c["manifest"])
        if not mpath.is_file():
            problems.append(f"{c['manifest']}: missing")
            continue
        mbytes = mpath.read_bytes()
        if hashlib.sha256(mbytes).hexdigest() != c["manifest_sha256"]:
            problems.append(f"{c['manifest']}: changed since the folder was built")
        manifest = manifests[name] = json.loads(mbytes)
        if _manifest_config_name(manifest) != name:
            problems.append(f"{c['manifest']}: describes {_manifest_config_name(manifest)!r}")
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
            found = _check_parquet(path, entry, f["path"], deep=deep)
            if not found and _file_sha256(path) != f["sha256"]:
                found.append(f"{f['path']}: file bytes differ from the index")
            problems += found
        if not problems:
            schemas[name] = pq.read_schema(repo / c["files"][0]["path"])
    present = set(_folder_files(repo))
    problems += [
        f"{p}: not part of the published configs" for p in sorted(present - expected_files)
    ]
    if problems:
        return problems

    card_path = repo / CARD
    if not card_path.is_file():
        return [f"{CARD}: missing"]
    try:
        card = DatasetCard.load(card_path)
        declared = MetadataConfigs.from_dataset_card_data(card.data)
        infos = DatasetInfosDict.from_dataset_card_data(card.data)
        default = declared.get_default_config_name()
    except Exception as exc:  # huggingface_hub/datasets raise ValueError, YAMLError, ...
        return [f"{CARD}: its metadata does not parse ({str(exc).splitlines()[0][:200]})"]
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
    if not problems and card_path.read_text(encoding="utf-8") != render_card(
        index, manifests, schemas
    ):
        problems.append(f"{CARD}: differs from the card rendered from the manifests")
    return problems


def validate_repo(repo_dir: Path | str, *, deep: bool = True) -> dict:
    """The folder's index if the folder is consistent, else a :class:`PhasebenchError`."""
    problems = repo_problems(repo_dir, deep=deep)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PhasebenchError(
            f"{str(repo_dir)!r} is not a consistent dataset folder: {problems[0]}{more}; "
            f"rebuild it with `phasebench publish ... --overwrite`"
        )
    return read_index(repo_dir)


# -- pushing --------------------------------------------------------------------------------------


def _check_repo_id(repo_id: str) -> None:
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts):
        raise PhasebenchError(f"'--repo-id' must look like ORG/NAME (got {repo_id!r})")


def commit_operations(repo_dir: Path | str, remote_files: Sequence[str] = ()) -> list:
    """The operations of the one commit that makes the repository equal the folder: an add
    for every file, and a delete for each remote file of an earlier publish's config folder
    (a top-level folder holding ``manifest.json``) that the folder no longer holds. Other
    remote files (``.gitattributes``, anything a maintainer added) are left alone."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    repo = Path(repo_dir)
    local = _folder_files(repo)
    ours = {p.split("/")[0] for p in remote_files if p.count("/") == 1 and p.endswith(MANIFEST)}
    stale = sorted(p for p in set(remote_files) - set(local) if p.split("/")[0] in ours)
    return [CommitOperationDelete(path_in_repo=p) for p in stale] + [
        CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(repo / p)) for p in local
    ]


def push_repo(
    repo_dir: Path | str,
    repo_id: str,
    *,
    revision: str | None = None,
    create_pr: bool = False,
    private: bool | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    commit_message: str | None = None,
) -> CommitInfo:
    """Validate ``repo_dir`` and upload it to the dataset repository ``repo_id`` as one commit.

    With ``revision`` the commit goes to that branch (created from the default branch if
    missing); with ``create_pr`` it opens a pull request (against ``revision`` if given).
    The token is ``token`` or the usual ``HF_TOKEN`` / ``hf auth login`` one.
    """
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError, RevisionNotFoundError

    _check_repo_id(repo_id)
    index = validate_repo(repo_dir, deep=True)
    if index["repo_id"] != repo_id:
        raise PhasebenchError(
            f"{str(repo_dir)!r} was built for repository {index['repo_id']!r}, not {repo_id!r}; "
            f"rebuild it with `phasebench publish ... --repo-id {repo_id} --overwrite`"
        )
    token = token or get_token()
    if not token:
        raise PhasebenchError(
            "no Hugging Face token: run `hf auth login` or set HF_TOKEN before --push"
        )
    api = HfApi(endpoint=endpoint, token=token)
    message = commit_message or (
        f"phasebench {__version__}: {len(index['configs'])} configs "
        f"({', '.join(c['name'] for c in index['configs'])})"
    )
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
        if revision and not create_pr:
            api.create_branch(repo_id, branch=revision, repo_type="dataset", exist_ok=True)
        try:
            remote = api.list_repo_files(repo_id, repo_type="dataset", revision=revision)
        except RevisionNotFoundError:
            remote = []
        return api.create_commit(
            repo_id,
            commit_operations(repo_dir, remote),
            commit_message=message,
            repo_type="dataset",
            revision=revision,
            create_pr=create_pr,
        )
    except HfHubHTTPError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PhasebenchError(
            f"push to {repo_id!r} failed ({first[:200]}); check the repository id, your token's "
            f"write access and --revision"
        ) from None


# -- loading back ---------------------------------------------------------------------------------


def _fetch_json(
    source: str, filename: str, revision: str | None, endpoint: str | None = None
) -> dict:
    local = Path(source).expanduser()
    if local.is_dir():
        path = local / filename
        if not path.is_file():
            raise PhasebenchError(
                f"{source!r} is not a phasebench dataset folder (no {filename}); "
                f"build one with `phasebench publish`"
            )
        return json.loads(path.read_text(encoding="utf-8"))
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    try:
        path = hf_hub_download(
            source, filename, repo_type="dataset", revision=revision, endpoint=endpoint
        )
    except EntryNotFoundError:
        raise PhasebenchError(
            f"dataset {source!r} has no {filename}; it was not published by `phasebench publish`"
        ) from None
    except (HfHubHTTPError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PhasebenchError(
            f"cannot read {filename} of dataset {source!r} ({first[:200]}); give a local "
            f"folder or a Hub dataset id you can access"
        ) from None
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _is_repo_id(source: str) -> bool:
    parts = source.split("/")
    return len(parts) == 2 and all(parts) and not source.startswith((".", "~"))


def config_folders(
    source: str | Path,
    *,
    family: str | None = None,
    lengths: Sequence[int] | None = None,
    revision: str | None = None,
    endpoint: str | None = None,
) -> list[Path]:
    """Config folders (``manifest.json`` plus parquet files) of ``family`` at ``lengths``
    (all when ``None``) from a generated folder, a published folder, or a Hub dataset id.

    For a Hub id only ``phasebench.json`` and the selected configs are downloaded (into the
    usual Hugging Face cache). The folders read like generated ones: ``read_manifest``,
    ``iter_rows`` and ``phasebench verify`` work on them; checking the tokenizer fingerprint
    is the caller's job (:func:`phasebench.verify.check_fingerprint`).
    """
    text = str(source)
    local = Path(text).expanduser()

    def wanted(fam: str, length: int) -> bool:
        return (family is None or fam == family) and (lengths is None or length in lengths)

    if local.exists():
        if (local / INDEX).is_file():
            folders = [local / c["name"] for c in read_index(local)["configs"]]
        else:
            folders = build.config_folders(local)
        selected = []
        for folder in folders:
            spec = read_manifest(folder)["spec"]
            if wanted(spec["family"], spec["length"]):
                selected.append(folder)
    elif _is_repo_id(text):
        index = _fetch_json(text, INDEX, revision, endpoint)
        chosen = [c["name"] for c in index["configs"] if wanted(c["family"], c["length"])]
        root = local
        if chosen:
            from huggingface_hub import snapshot_download

            try:
                root = Path(
                    snapshot_download(
                        text,
                        repo_type="dataset",
                        revision=revision,
                        endpoint=endpoint,
                        allow_patterns=[f"{name}/*" for name in chosen],
                    )
                )
            except Exception as exc:  # offline, gated, missing: one line for the user
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                raise PhasebenchError(
                    f"cannot download {', '.join(chosen)} of dataset {text!r} "
                    f"({type(exc).__name__}: {first[:160]}); give a local folder instead"
                ) from None
        selected = [root / name for name in chosen]
    else:
        raise PhasebenchError(
            f"{text!r} is neither a folder nor a Hub dataset id (ORG/NAME); give a folder made "
            f"by `phasebench generate` or `phasebench publish`, or a dataset id"
        )
    if not selected:
        what = " ".join(
            x for x in (family, f"at lengths {list(lengths)}" if lengths is not None else None) if x
        )
        raise PhasebenchError(f"{text!r} holds no config {what}".rstrip())
    return selected


def load_split(
    source: str | Path,
    config: str,
    *,
    tokenizer: PhaseTokenizer | str | None = None,
    tokenizer_args: dict[str, Any] | None = None,
    revision: str | None = None,
    cache_dir: str | None = None,
    check_content: bool = True,
) -> datasets.Dataset:
    """The ``test`` split of ``config`` from a published folder or Hub dataset id, checked.

    Every row must carry the manifest's tokenizer fingerprint and, with ``check_content``,
    the rows must hash to the manifest's per-file content hashes. With ``tokenizer`` (a
    loaded :class:`~phasebench.tokenization.PhaseTokenizer` or a name for
    :func:`~phasebench.tokenization.load_tokenizer`), a split built for another tokenizer is
    refused (:func:`phasebench.verify.check_fingerprint`).
    """
    import datasets

    from phasebench.verify import check_fingerprint

    source = str(source)
    index = _fetch_json(source, INDEX, revision)
    names = [c["name"] for c in index["configs"]]
    if config not in names:
        raise PhasebenchError(
            f"{source!r} has no config {config!r}; available: {', '.join(names)} "
            f"(e.g. load_split({source!r}, {names[0]!r}))"
        )
    entry = next(c for c in index["configs"] if c["name"] == config)
    manifest = _fetch_json(source, entry["manifest"], revision)
    if tokenizer is not None:
        if isinstance(tokenizer, str):
            from phasebench.tokenization import load_tokenizer

            tokenizer = load_tokenizer(tokenizer, tokenizer_args)
        check_fingerprint(manifest, tokenizer)
    local = Path(source).expanduser()
    ds = datasets.load_dataset(
        str(local) if local.is_dir() else source,
        config,
        split=SPLIT,
        revision=None if local.is_dir() else revision,
        cache_dir=cache_dir,
    )
    expected = manifest["tokenizer"]["fingerprint"]
    if len(ds) != manifest["rows"]:
        raise PhasebenchError(
            f"{source!r} config {config!r} holds {len(ds)} rows, its manifest says "
            f"{manifest['rows']}; republish it"
        )
    if set(ds.unique("tokenizer_fingerprint")) != {expected}:
        raise TokenizerError(
            f"{source!r} config {config!r} has rows built for another tokenizer than its "
            f"manifest's ({expected[:19]}...); republish it"
        )
    if check_content:
        start = 0
        for f in manifest["files"]:
            rows = ds.select(range(start, start + f["rows"])).to_list()
            if content_hash(rows) != f["content_sha256"]:
                raise PhasebenchError(
                    f"{source!r} config {config!r}: rows {start}..{start + f['rows'] - 1} do not "
                    f"hash to the manifest's content hash; republish it"
                )
            start += f["rows"]
    return ds


# -- command --------------------------------------------------------------------------------------


def _publish(args: argparse.Namespace) -> int:
    if args.push and not args.repo_id:
        raise PhasebenchError("--push needs --repo-id ORG/NAME")
    if (args.revision or args.create_pr) and not args.push:
        raise PhasebenchError("--revision and --create-pr only apply with --push")
    out = build_repo(
        args.generated,
        args.out,
        repo_id=args.repo_id,
        pretty_name=args.pretty_name,
        license=args.license,
        default_config=args.default_config,
        overwrite=args.overwrite,
    )
    index = read_index(out)
    for c in index["configs"]:
        mark = "  (default)" if c["name"] == index["default_config"] else ""
        print(f"{out}/{c['name']}  {c['rows']} rows, {len(c['files'])} file(s){mark}")
    print(f"{out}/{CARD}")
    if args.push:
        info = push_repo(
            out,
            args.repo_id,
            revision=args.revision,
            create_pr=args.create_pr,
            private=True if args.private else None,
            endpoint=args.endpoint,
        )
        print(f"pushed: {info.pr_url or info.commit_url}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    pub = subparsers.add_parser(
        "publish",
        help="build a Hugging Face dataset repository folder with its data card (and push it)",
    )
    pub.add_argument("generated", nargs="+", metavar="GENERATED_DIR")
    pub.add_argument("--out", required=True, metavar="REPO_DIR")
    pub.add_argument("--overwrite", action="store_true")
    pub.add_argument("--repo-id", default=None, metavar="ORG/NAME")
    pub.add_argument("--pretty-name", default=DEFAULT_PRETTY_NAME)
    pub.add_argument("--license", default=DEFAULT_LICENSE)
    pub.add_argument("--default-config", default=None, metavar="CONFIG")
    pub.add_argument("--push", action="store_true", help="upload REPO_DIR as one commit")
    pub.add_argument("--revision", default=None, help="branch to commit to (created if missing)")
    pub.add_argument("--create-pr", action="store_true", help="open a pull request instead")
    pub.add_argument("--private", action="store_true", help="create the repository private")
    pub.add_argument(
        "--endpoint", default=None, help="Hub endpoint (default: HF_ENDPOINT or the public Hub)"
    )
    pub.set_defaults(func=_publish)
