"""A maintainer's mark that an entry was reproduced: ``reproduced.yaml`` in its folder.

Validation recomputes every number from the submitted logs, which proves the logs are
consistent, not that the model wrote them. A maintainer who re-ran the model and got the same
samples writes the mark with ``phasebench leaderboard mark-reproduced``; it names who, when and
how, and the SHA-256 of every results and samples file it vouches for, so a file changed later
voids it (the validator refuses the submission, rule ``reproduced``, until it is marked again
or the mark is removed). A submitter could write the file too: only the review of what is merged
into the submissions folder (who may add or change a ``reproduced.yaml``) makes it a
maintainer's word.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import yaml

from phasebench._version import __version__
from phasebench.atomic import atomic_write_text
from phasebench.errors import SubmissionsError
from phasebench.leaderboard.collect import (
    MAX_BY,
    MAX_NOTE,
    REPRODUCED_FILE,
    RESULTS_NAME,
    SAMPLES_NAME,
    SUBMISSION_FILE,
    file_sha256,
    mark_text_ok,
)


def mark_reproduced(
    folder: Path | str, by: str, note: str = "", *, replace: bool = False, date: str | None = None
) -> Path:
    """Write ``reproduced.yaml`` into the submission ``folder``: ``by`` re-ran it (``note``:
    how), today (UTC) unless ``date`` is given, vouching for its current results and samples
    files. Refuses a folder that is not a submission, or one already marked unless ``replace``."""
    folder = Path(folder)
    if not (folder / SUBMISSION_FILE).is_file():
        raise SubmissionsError(f"{str(folder)!r} is not a submission folder (no {SUBMISSION_FILE})")
    if not mark_text_ok(by, MAX_BY):
        raise SubmissionsError(
            f"--by must name who re-ran it: 1-{MAX_BY} characters, no < > or controls"
        )
    if note and not mark_text_ok(note, MAX_NOTE):
        raise SubmissionsError(
            f"--note must be plain text: at most {MAX_NOTE} characters, no < > or controls"
        )
    target = folder / REPRODUCED_FILE
    if target.exists() and not replace:
        raise SubmissionsError(f"{str(target)!r} exists; pass --replace to mark it again")
    files = {}
    for path in sorted(folder.iterdir()):
        if RESULTS_NAME.match(path.name) or SAMPLES_NAME.match(path.name):
            if path.is_symlink() or not path.is_file():
                raise SubmissionsError(f"{str(path)!r} is not a regular file")
            files[path.name] = file_sha256(path)
    if not files:
        raise SubmissionsError(f"{str(folder)!r} holds no results or samples file to vouch for")
    mark = {
        "reproduced_by": by,
        "date": date or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "note": note,
        "phasebench_version": __version__,
        "files": files,
    }
    atomic_write_text(target, yaml.safe_dump(mark, sort_keys=True, allow_unicode=True))
    return target
