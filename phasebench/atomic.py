"""Writing files and folders so that a failure never leaves half of one behind.

Files are written under a temporary name in the same folder and renamed into place. Folders are
built under a temporary name beside their target and swapped in; an existing target is only
replaced when it carries the marker file that says phasebench made it (or is empty), so a
command can never delete a folder it did not create.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from phasebench.errors import OutputError

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "check_replaceable",
    "check_writable_dir",
    "check_writable_file",
    "staged_folder",
]


def atomic_write_bytes(path: Path | str, data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    Only a regular file is ever replaced: a rename over a device, a pipe or a folder (as root,
    ``/dev/null`` would become a file) is refused with :class:`OutputError`."""
    path = Path(path)
    _refuse_non_regular(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)  # mkstemp creates 0600; outputs are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path | str, text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def _refuse_non_regular(path: Path, what: str = "output") -> None:
    if path.exists() and not path.is_file():
        raise OutputError(
            f"{what} {str(path)!r} exists and is not a regular file; it is never replaced"
        )


def check_writable_file(path: Path | str, what: str = "output") -> Path:
    """``path`` can be written as a file, checked before any work: its folder exists (it is not
    created) and nothing but a regular file stands at ``path``. Raises :class:`OutputError`."""
    path = Path(path)
    _refuse_non_regular(path, what)
    parent = path.parent
    if not parent.is_dir():
        what_is = "is not a folder" if parent.exists() else "does not exist"
        raise OutputError(f"{what} {str(path)!r}: the folder {str(parent)!r} {what_is}")
    return path


def check_writable_dir(path: Path | str, what: str = "--out") -> Path:
    """``path`` can become a folder: it is one, or it does not exist and no file stands in the
    way of its parents. Raises :class:`OutputError` naming ``what`` otherwise."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{what} {str(path)!r} exists and is not a folder")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{what} {str(path)!r} lies under {str(parent)!r}, a file")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise OutputError(f"{what} {str(path)!r}: cannot write into {str(parent)!r}")
            break
    return path


def check_replaceable(target: Path | str, marker: str | None, what: str = "--out") -> Path:
    """``target`` may be (re)built by :func:`staged_folder`: it can become a folder, and if it
    exists and holds anything, it holds ``marker`` (it was made by the same command). Returns
    the resolved path; raises :class:`OutputError` before any work otherwise."""
    target = check_writable_dir(Path(target).resolve(), what)
    if target.exists() and any(target.iterdir()):
        if marker is None or not (target / marker).is_file():
            raise OutputError(
                f"{what} {str(target)!r} exists and was not made by this command (no "
                f"{marker or 'marker'} file); choose an empty or new folder"
            )
    return target


@contextmanager
def staged_folder(target: Path | str, marker: str | None = None) -> Iterator[Path]:
    """Build a folder beside ``target`` and swap it in when the block ends without error.

    Yields the staging folder. On success the previous ``target`` (if any) is replaced: it
    must be empty or hold ``marker`` (the file that says phasebench made it); anything else is
    refused before any work starts. On failure the staging folder is removed and ``target`` is
    left as it was.
    """
    target = check_replaceable(target, marker)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.staging-"))
    try:
        yield staging
        if marker is not None:
            (staging / marker).touch()
        os.chmod(staging, 0o755)
        if target.exists():
            old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
            os.rmdir(old)
            os.replace(target, old)
            try:
                os.replace(staging, target)
            except BaseException:
                os.replace(old, target)  # put the previous folder back rather than lose it
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
