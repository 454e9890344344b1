"""Every file and folder phasebench writes, written so that a failure never leaves half of one.

No other module writes, renames or removes a file or folder itself (``tests/atomic/test_atomic.py``
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

The package is split by job, every name above importable from ``phasebench.atomic``: ``_writes``
(files, sets of files, single removals), ``_folders`` (the staged folder swap), ``_locks`` (one
writer per folder, the staging lock file), ``_reclaim`` (what killed processes left behind) and
``_checks`` (output paths checked before any work).
"""

from phasebench.atomic._checks import check_replaceable, check_writable_dir, check_writable_file
from phasebench.atomic._folders import staged_folder
from phasebench.atomic._locks import STAGING_LOCK, lock_folder
from phasebench.atomic._reclaim import clean_stale_scratch, clean_stale_staging, scratch_folder
from phasebench.atomic._writes import (
    FileSet,
    atomic_copy,
    atomic_file,
    atomic_files,
    atomic_write_bytes,
    atomic_write_text,
    make_folder,
    remove_empty_folder,
    remove_entry,
    remove_file,
)

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
