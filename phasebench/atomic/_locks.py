"""Locks: one writer at a time into an output folder (:func:`lock_folder`), and the lock file
(:data:`STAGING_LOCK`) that a staging or scratch folder's process holds while it lives."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from phasebench.errors import OutputError

#: The lock file inside every staging folder (and every folder holding a replaced target until
#: it is removed): locked by the process that made it for as long as it lives.
STAGING_LOCK = ".phasebench-staging.lock"


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
