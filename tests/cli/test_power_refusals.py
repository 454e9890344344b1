"""``phasebench power`` refuses a modulus beyond its limit at once."""

from __future__ import annotations

import contextlib
import io

import pytest

from phasebench.cli import main


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("modulus", ["1000000", "100000"])
def test_power_refuses_a_modulus_beyond_its_limit_at_once(modulus):
    code, _, err = run(["power", "--acc", "0.9", "--gap", "0.1", "--modulus", modulus])
    assert code == 2 and "--modulus" in one_line(err) and "4096" in err
