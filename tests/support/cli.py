"""The command line run in-process, as the refusal tests call it."""

from __future__ import annotations

import contextlib
import io

from phasebench.cli import main


def run(argv: list[str]) -> tuple[int, str, str]:
    """``phasebench ARGV`` in this process: its exit code, what it printed and its stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    """The one line a refusal wrote to stderr (fails on a traceback or several lines)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
