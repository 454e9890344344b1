"""Folders a killed process left behind, reclaimed: staging folders beside a target and scratch
folders in the temporary folder each hold a :data:`~phasebench.atomic.STAGING_LOCK` their
process keeps locked; a folder whose lock nobody holds is removed by the next process of the
same kind, and nothing else is."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from phasebench.atomic._locks import STAGING_LOCK, _flock
from phasebench.atomic._writes import remove_empty_folder


class _Holder:
    """A hidden folder beside a target, holding a locked :data:`STAGING_LOCK` file and one
    entry named like the target (the folder being built, or the target being replaced)."""

    def __init__(self, target: Path, kind: str) -> None:
        self.folder = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.{kind}-"))
        self.entry = self.folder / target.name
        self._fd: int | None = None
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            self._fd = os.open(self.folder / STAGING_LOCK, flags, 0o644)
            _flock(self._fd, blocking=True)
            os.write(self._fd, f"{os.getpid()}\n".encode())  # for whoever looks
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        _remove_holder(self.folder)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        remove_empty_folder(self.folder)


def _remove_holder(folder: Path) -> None:
    """Everything in a holder folder but its lock file first (so that a removal cut short still
    leaves a folder a later run recognises), then the lock file."""
    for entry in folder.iterdir():
        if entry.name == STAGING_LOCK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    (folder / STAGING_LOCK).unlink(missing_ok=True)


def clean_stale_staging(target: Path | str) -> list[Path]:
    """Remove the staging folders of ``target`` (``.<name>.staging-*`` and ``.<name>.old-*``
    beside it) that phasebench made and whose process is gone: each holds a
    :data:`STAGING_LOCK` file nobody holds locked. Anything else is left alone. Returns the
    folders removed."""
    target = Path(target)
    return _reclaim_unlocked(target.parent, (f".{target.name}.staging-", f".{target.name}.old-"))


def _reclaim_unlocked(base: Path, prefixes: tuple[str, ...]) -> list[Path]:
    """The folders in ``base`` named ``prefixes*`` whose :data:`STAGING_LOCK` nobody holds,
    emptied and removed (a folder without the lock file, a link or a locked one is kept)."""
    import fcntl

    removed: list[Path] = []
    if not base.is_dir():
        return removed
    for folder in sorted(base.iterdir()):
        if not folder.name.startswith(prefixes) or folder.is_symlink() or not folder.is_dir():
            continue
        try:
            fd = os.open(folder / STAGING_LOCK, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:  # no lock file: not a folder phasebench made, or being made right now
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held by a live process, or no way to tell: keep it
                continue
            _remove_holder(folder)
        finally:
            os.close(fd)
        if remove_empty_folder(folder):
            removed.append(folder)
    return removed


def scratch_folder(
    prefix: str = "phasebench-", dir: Path | str | None = None, *, reclaim: bool = False
):
    """A temporary folder (``tempfile.TemporaryDirectory``, usable with ``with`` or kept as an
    object), removed with everything in it when done.

    With ``reclaim``, the folder holds a :data:`STAGING_LOCK` file its process keeps locked, and
    the folders of the same ``prefix`` that a killed process left in the temporary folder (their
    lock free) are removed first: a process killed by a signal cannot remove its own."""
    if not reclaim:
        return tempfile.TemporaryDirectory(prefix=prefix, dir=dir)
    return _LockedScratch(prefix, Path(dir or tempfile.gettempdir()))


class _LockedScratch:
    """A scratch folder holding a locked :data:`STAGING_LOCK` (:func:`scratch_folder`)."""

    def __init__(self, prefix: str, base: Path) -> None:
        clean_stale_scratch(base, prefix)
        self.name = tempfile.mkdtemp(prefix=prefix, dir=base)
        self._fd: int | None = None
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            self._fd = os.open(Path(self.name) / STAGING_LOCK, flags, 0o644)
            _flock(self._fd, blocking=True)
        except BaseException:
            self.cleanup()
            raise

    def __enter__(self) -> str:
        return self.name

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def cleanup(self) -> None:
        shutil.rmtree(self.name, ignore_errors=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def clean_stale_scratch(base: Path | str, prefix: str) -> list[Path]:
    """Remove the folders ``prefix*`` in ``base`` that hold a :data:`STAGING_LOCK` nobody holds
    locked (left by a killed process, :func:`scratch_folder` with ``reclaim``); anything else is
    left alone. Returns the folders removed."""
    return _reclaim_unlocked(Path(base), (prefix,))
