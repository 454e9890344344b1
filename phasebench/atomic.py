"""Every file and folder phasebench writes, written so that a failure never leaves half of one.

No other module writes, renames or removes a file or folder itself (``tests/test_atomic.py``
reads the package's source and fails on one that does); they call these:

- :func:`atomic_file`, :func:`atomic_write_bytes`, :func:`atomic_write_text`,
  :func:`atomic_copy`: a file written under a temporary name in its own folder and renamed into
  place, so it is either the old file or the whole new one;
- :func:`atomic_files`: several files that appear together or not at all (``pack``, plots);
- :func:`staged_folder`: a folder built under a temporary name beside its target and swapped in.
  An existing target is only replaced when it carries the marker file that says phasebench made
  it (or is empty), so a command can never delete a folder it did not create. Each staging
  folder holds a lock file that its process keeps locked while it lives; the next successful
  swap of the same target removes the staging folders whose process is gone (killed by SIGKILL
  or SIGTERM, or a machine that went down), and only those;
- :func:`lock_folder`: one writer at a time into a folder (two ``generate`` runs into one
  ``--out`` would otherwise both succeed, one silently replacing the other's configs);
- :func:`make_folder`, :func:`remove_file`, :func:`remove_empty_folder`,
  :func:`remove_entry`, :func:`scratch_folder`: a folder made, a file removed, an empty folder
  removed, one entry of a folder phasebench owns (a cache) removed, a temporary folder that is
  removed when done (or, if its process is killed, by the next process that makes one of the
  same kind: :func:`clean_stale_scratch`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from phasebench.errors import OutputError

__all__ = [
    "STAGING_LOCK",
    "FileSet",
    "atomic_copy",
    "atomic_file",
    "atomic_files",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_replaceable",
    "check_writable_dir",
    "check_writable_file",
    "clean_stale_scratch",
    "clean_stale_staging",
    "lock_folder",
    "make_folder",
    "remove_empty_folder",
    "remove_entry",
    "remove_file",
    "scratch_folder",
    "staged_folder",
]

#: The lock file inside every staging folder (and every folder holding a replaced target until
#: it is removed): locked by the process that made it for as long as it lives.
STAGING_LOCK = ".phasebench-staging.lock"


# -- files ---------------------------------------------------------------------------------------


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


def _refuse_non_regular(path: Path, what: str = "output") -> None:
    if path.exists() and not path.is_file():
        raise OutputError(
            f"{what} {str(path)!r} exists and is not a regular file; it is never replaced"
        )


# -- checks before any work ---------------------------------------------------------------------


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


@contextmanager
def lock_folder(path: Path | str, *, shared: bool = False, what: str = "--out") -> Iterator[Path]:
    """Hold a lock on the folder ``path`` (which must exist) for the block: an exclusive one,
    or with ``shared`` one that other shared holders may hold too. Another process holding a
    conflicting lock is refused at once with :class:`OutputError`; no file is made. A
    filesystem without ``flock`` locks (some network mounts) goes unlocked."""
    import fcntl

    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(
                f"{what} {str(path)!r} is being written by another phasebench process; wait "
                f"for it to finish or choose another folder"
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF):
                raise
        yield Path(path)
    finally:
        os.close(fd)  # releases the lock


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


def _flock(fd: int, blocking: bool) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError as exc:  # no flock here: a stale folder cannot be told from a live one
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF):
            return blocking
        raise
    return True


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


def _swap(new: Path, target: Path) -> None:
    """Put the folder ``new`` where ``target`` is, the previous one moved aside first and
    removed last (put back if the swap fails)."""
    old = _Holder(target, "old")
    try:
        os.rename(target, old.entry)
    except BaseException:
        old.remove()
        raise
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(old.entry, target)  # put the previous folder back rather than lose it
        old.remove()
        raise
    old.remove()


@contextmanager
def staged_folder(
    target: Path | str, marker: str | None = None, *, keep_existing: bool = False
) -> Iterator[Path]:
    """Build a folder beside ``target`` and swap it in when the block ends without error.

    Yields the staging folder. On success the previous ``target`` (if any) is replaced: it
    must be empty or hold ``marker`` (the file that says phasebench made it); anything else is
    refused before any work starts. With ``keep_existing``, a ``target`` that another process
    put in place meanwhile is kept and the new one dropped (a cache whose entries are equal by
    construction). On failure the staging folder is removed and ``target`` is left as it was.
    After a successful swap, stale staging folders of ``target`` are removed
    (:func:`clean_stale_staging`).
    """
    if keep_existing:
        target = check_writable_dir(Path(target).resolve())
    else:
        target = check_replaceable(target, marker)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _Holder(target, "staging")
    try:
        os.mkdir(staging.entry, 0o755)
        os.chmod(staging.entry, 0o755)
        yield staging.entry
        if marker is not None:
            (staging.entry / marker).touch()
        if keep_existing:
            try:
                os.rename(staging.entry, target)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
        elif target.exists():
            _swap(staging.entry, target)
        else:
            os.rename(staging.entry, target)
    finally:
        staging.remove()
    clean_stale_staging(target)
