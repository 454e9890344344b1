"""Files written whole or not at all, sets of files that appear together, and the single
removals phasebench makes (a file, an empty folder, one entry of a folder it owns)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from phasebench.atomic._checks import _refuse_non_regular, check_writable_dir
from phasebench.errors import OutputError


def _temp_beside(path: Path) -> tuple[int, Path]:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    return fd, Path(tmp)


@contextmanager
def atomic_file(path: Path | str, mode: int = 0o644) -> Iterator[BinaryIO]:
    """Yield a binary file open for writing (by any means: a parquet writer, gzip, a
    subprocess's output); it is a temporary file in ``path``'s folder, renamed onto ``path``
    when the block ends without error and removed otherwise. The folder is created if missing.

    Only a regular file is ever replaced: a rename over a device, a pipe or a folder (as root,
    ``/dev/null`` would become a file) is refused with :class:`OutputError`."""
    path = Path(path)
    _refuse_non_regular(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.chmod(tmp, mode)  # mkstemp creates 0600; outputs are meant to be shared
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path | str, data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename
    (:func:`atomic_file`)."""
    with atomic_file(path, mode) as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: Path | str, text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_copy(source: Path | str, path: Path | str) -> Path:
    """Copy the file ``source`` to ``path`` (:func:`atomic_file`); its bytes only, not its
    permissions or times."""
    with atomic_file(path) as handle, open(source, "rb") as src:
        shutil.copyfileobj(src, handle, 1 << 20)
    return Path(path)


class FileSet:
    """Files written under temporary names and renamed into place together
    (:func:`atomic_files`)."""

    def __init__(self) -> None:
        self._pending: dict[Path, tuple[Path, BinaryIO]] = {}
        self._made: list[Path] = []  # folders made for the set, removed again if it fails

    def open(self, target: Path | str) -> BinaryIO:
        """A binary file open for writing, renamed onto ``target`` when the set is complete
        (closing it early is allowed)."""
        target = Path(target)
        if target in self._pending:
            raise OutputError(f"{str(target)!r} would be written twice")
        _refuse_non_regular(target)
        missing = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
        for folder in reversed(missing):
            folder.mkdir(exist_ok=True)
            self._made.append(folder)
        fd, tmp = _temp_beside(target)
        handle = os.fdopen(fd, "wb")
        self._pending[target] = (tmp, handle)
        return handle

    def add_bytes(self, target: Path | str, data: bytes) -> Path:
        """``data`` as the file ``target``."""
        with self.open(target) as handle:
            handle.write(data)
        return Path(target)

    def add_text(self, target: Path | str, text: str) -> Path:
        """``text`` as the UTF-8 file ``target``."""
        return self.add_bytes(target, text.encode("utf-8"))

    def add_copy(self, source: Path | str, target: Path | str) -> Path:
        """A copy of the file ``source`` (its bytes) as ``target``."""
        with self.open(target) as handle, open(source, "rb") as src:
            shutil.copyfileobj(src, handle, 1 << 20)
        return Path(target)

    @property
    def targets(self) -> list[Path]:
        """The files of the set, in the order they were opened."""
        return list(self._pending)

    def _commit(self, mode: int) -> None:
        for tmp, handle in self._pending.values():
            handle.close()  # a failing final flush (a full disk) stops the set here
            os.chmod(tmp, mode)
        for target, (tmp, _) in self._pending.items():  # renames in a folder: no disk space
            os.replace(tmp, target)

    def _discard(self) -> None:
        for tmp, handle in self._pending.values():
            with contextlib.suppress(OSError):
                handle.close()
            tmp.unlink(missing_ok=True)

    def _remove_made(self) -> None:
        for folder in reversed(self._made):
            remove_empty_folder(folder)


@contextmanager
def atomic_files(mode: int = 0o644) -> Iterator[FileSet]:
    """Yield a :class:`FileSet`; every file written through it appears when the block ends
    without error, none of them otherwise (a full disk while writing the third file leaves
    neither the first two nor a partial third)."""
    files = FileSet()
    try:
        yield files
        files._commit(mode)
    except BaseException:
        files._discard()
        files._remove_made()  # a folder made for the set goes with it (only if empty)
        raise
    files._discard()


# -- folders -------------------------------------------------------------------------------------


def make_folder(path: Path | str, what: str = "--out") -> Path:
    """``path`` as a folder (with its parents), after :func:`check_writable_dir`."""
    path = check_writable_dir(path, what)
    path.mkdir(parents=True, exist_ok=True)
    return path


def remove_file(path: Path | str) -> bool:
    """Remove the file (or symbolic link) ``path`` if it is one; a folder is never removed.
    True if removed."""
    path = Path(path)
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
        return True
    return False


def remove_empty_folder(path: Path | str) -> bool:
    """Remove ``path`` if it is an empty folder (never anything in it); True if removed."""
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def remove_entry(entry: Path | str, owner: Path | str) -> None:
    """Remove ``entry``, a direct child of ``owner`` (a folder phasebench owns whole, such as a
    cache): a file or a symbolic link is unlinked (never followed), a folder is first renamed
    to a hidden name, so that no reader sees half of it, then removed."""
    entry, owner = Path(entry), Path(owner)
    if entry.parent != owner:
        raise ValueError(f"{str(entry)!r} is not an entry of {str(owner)!r}")
    if entry.is_symlink() or entry.is_file():
        entry.unlink(missing_ok=True)
        return
    if not entry.is_dir():
        return
    trash = owner / f".trash-{entry.name}-{os.getpid()}"
    try:
        os.replace(entry, trash)
    except FileNotFoundError:  # another process removed it first
        return
    shutil.rmtree(trash, ignore_errors=True)
