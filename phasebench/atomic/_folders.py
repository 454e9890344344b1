"""A folder built under a temporary name beside its target and swapped in
(:func:`staged_folder`): an existing target is replaced only when phasebench made it."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from phasebench.atomic._checks import check_replaceable, check_writable_dir
from phasebench.atomic._reclaim import _Holder, clean_stale_staging


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
