"""Output paths checked before any work: a file that can be written, a folder that can be made,
a folder that may be replaced (it is empty or holds the marker of the command that made it).
Each raises :class:`~phasebench.errors.OutputError` naming the option."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from phasebench.errors import OutputError


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
    if not os.access(parent, os.W_OK | os.X_OK):  # a read-only mount: refused before the work
        raise OutputError(f"{what} {str(path)!r}: cannot write into {str(parent)!r}")
    return path


def check_writable_dir(path: Path | str, what: str = "--out") -> Path:
    """``path`` can become a folder: it is one, or it does not exist and no file stands in the
    way of its parents. Raises :class:`OutputError` naming ``what`` otherwise.

    Permission bits do not settle it (``os.access`` says yes to root everywhere, ``/proc``
    included), so the folder that would hold the output is asked directly: a hidden folder is
    made in it and removed at once, leaving nothing behind."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{what} {str(path)!r} exists and is not a folder")
    if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {str(path)!r}: cannot write into it")
    holder = path if path.is_dir() else None
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{what} {str(path)!r} lies under {str(parent)!r}, a file")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise OutputError(f"{what} {str(path)!r}: cannot write into {str(parent)!r}")
            holder = holder or parent
            break
    if holder is not None:
        _try_making_a_folder_in(holder, path, what)
    return path


def _try_making_a_folder_in(holder: Path, path: Path, what: str) -> None:
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".phasebench-check-", dir=holder))
    except OSError as exc:
        raise OutputError(
            f"{what} {str(path)!r}: cannot make a folder in {str(holder)!r} ({exc.strerror or exc})"
        ) from None


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
