"""Reading published splits back: config folders from a local folder or a Hub dataset id, and
``load_split`` through ``datasets.load_dataset`` with every check a consumer needs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phasebench import build
from phasebench.build import MANIFEST, content_hash, read_manifest
from phasebench.errors import HubError, SplitError, TokenizerError, first_line
from phasebench.hub.naming import CARD, INDEX, SPLIT, is_repo_id
from phasebench.hub.repo import MAX_CARD_BYTES, MAX_INDEX_BYTES, parse_index, read_index

if TYPE_CHECKING:
    import datasets

    from phasebench.tokenization import PhaseTokenizer


def _download(source: str, filename: str, revision: str | None, endpoint: str | None) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    try:
        path = hf_hub_download(
            source, filename, repo_type="dataset", revision=revision, endpoint=endpoint
        )
    except EntryNotFoundError:
        raise HubError(
            f"dataset {source!r} has no {filename}; it was not published by `phasebench publish`"
        ) from None
    except (HfHubHTTPError, OSError, ValueError) as exc:
        raise HubError(
            f"cannot read {filename} of dataset {source!r} ({first_line(exc)}); give a local "
            f"folder or a Hub dataset id you can access"
        ) from None
    return Path(path)


def _index(source: str, revision: str | None, endpoint: str | None = None) -> dict:
    """The checked ``phasebench.json`` of a local folder or a Hub dataset id."""
    local = Path(source).expanduser()
    if local.is_dir():
        return read_index(local)
    path = _download(source, INDEX, revision, endpoint)
    if path.stat().st_size > MAX_INDEX_BYTES:
        raise HubError(f"{INDEX} of dataset {source!r} is larger than {MAX_INDEX_BYTES} bytes")
    return parse_index(path.read_bytes(), f"{INDEX} of dataset {source!r}")


def _inside(root: Path, name: str) -> Path:
    """``root / name`` for a config ``name`` the index listed (a plain name, checked by
    :func:`parse_index`), refused when it is a symbolic link or resolves outside ``root``."""
    folder = root / name
    real_root = root.resolve()
    if folder.is_symlink() or not folder.resolve().is_relative_to(real_root):
        raise HubError(
            f"{str(folder)!r} is a symbolic link or leads outside the dataset folder {str(root)!r}"
        )
    return folder


def select_configs(
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
    is the caller's job (:func:`phasebench.verification.check_fingerprint`).
    """
    text = str(source)
    local = Path(text).expanduser()

    def wanted(fam: str, length: int) -> bool:
        return (family is None or fam == family) and (lengths is None or length in lengths)

    if local.exists():
        if (local / INDEX).is_file():
            folders = [_inside(local, c["name"]) for c in read_index(local)["configs"]]
        else:
            folders = build.config_folders(local)
        selected = []
        for folder in folders:
            # checked before it is opened: a link to /etc/passwd would be read, then named
            _inside(local, (folder / MANIFEST).relative_to(local).as_posix())
            spec = read_manifest(folder)["spec"]
            if wanted(spec["family"], spec["length"]):
                selected.append(folder)
    elif is_repo_id(text):
        index = _index(text, revision, endpoint)
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
                raise HubError(
                    f"cannot download {', '.join(chosen)} of dataset {text!r} "
                    f"({type(exc).__name__}: {first_line(exc, 160, '')}); give a local folder "
                    "instead"
                ) from None
        selected = [root / name for name in chosen]
    else:
        raise HubError(
            f"{text!r} is neither a folder nor a Hub dataset id (ORG/NAME); give a folder made "
            f"by `phasebench generate` or `phasebench publish`, or a dataset id"
        )
    if not selected:
        what = " ".join(
            x for x in (family, f"at lengths {list(lengths)}" if lengths is not None else None) if x
        )
        raise HubError(f"{text!r} holds no config {what}".rstrip())
    return selected


def _check_file_sizes(folder: Path, entry: dict) -> None:
    """Every data file the index lists is a regular file of the size it gives, checked before
    ``datasets`` opens anything (a swapped, grown or linked file is refused unread)."""
    for f in entry["files"]:
        path = folder / f["path"].partition("/")[2]
        if path.is_symlink() or not path.is_file() or path.stat().st_size != f["size"]:
            raise HubError(
                f"{path}: missing or not the {f['size']}-byte file the index lists; "
                f"republish the folder"
            )


def _load_dataset(path: str, config: str, **kwargs: Any) -> datasets.Dataset:
    """``datasets.load_dataset`` of one config, its failures on a damaged folder (card YAML
    that does not parse, files that do not match the card's features) as one line."""
    import datasets
    import yaml

    try:
        return datasets.load_dataset(path, config, split=SPLIT, **kwargs)
    except (datasets.exceptions.DatasetsError, yaml.YAMLError, ValueError, KeyError,
            TypeError, OSError) as exc:  # fmt: skip
        cause = exc.__cause__ or exc.__context__ or exc
        raise HubError(
            f"{path!r} config {config!r} does not load with datasets ({type(exc).__name__}: "
            f"{first_line(cause, 160)}); republish it with `phasebench publish`"
        ) from None


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
    refused (:func:`phasebench.verification.check_fingerprint`).
    """
    from phasebench.verification import check_fingerprint

    source = str(source)
    index = _index(source, revision)
    names = [c["name"] for c in index["configs"]]
    if config not in names:
        raise HubError(
            f"{source!r} has no config {ascii(config)[:80]}; available: {', '.join(names)}"
            + (f" (e.g. load_split({source!r}, {names[0]!r}))" if names else "")
        )
    local = Path(source).expanduser()
    if local.is_dir():
        folder = _inside(local, config)
        _check_file_sizes(folder, next(c for c in index["configs"] if c["name"] == config))
        card = local / CARD
        if card.is_file() and card.stat().st_size > MAX_CARD_BYTES:
            raise HubError(f"{card} is larger than {MAX_CARD_BYTES} bytes; not a data card")
    else:
        folder = _download(source, f"{config}/{MANIFEST}", revision, None).parent
    try:
        manifest = read_manifest(folder)
    except SplitError as exc:
        raise HubError(f"{source!r} config {config!r}: {exc}") from None
    if tokenizer is not None:
        if isinstance(tokenizer, str):
            from phasebench.tokenization import load_tokenizer

            tokenizer = load_tokenizer(tokenizer, tokenizer_args)
        check_fingerprint(manifest, tokenizer)
    ds = _load_dataset(
        str(local) if local.is_dir() else source,
        config,
        revision=None if local.is_dir() else revision,
        cache_dir=cache_dir,
    )
    expected = manifest["tokenizer"]["fingerprint"]
    if len(ds) != manifest["rows"]:
        raise HubError(
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
                raise HubError(
                    f"{source!r} config {config!r}: rows {start}..{start + f['rows'] - 1} do not "
                    f"hash to the manifest's content hash; republish it"
                )
            start += f["rows"]
    return ds
