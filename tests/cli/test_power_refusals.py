"""``phasebench power`` refuses a modulus beyond its limit at once."""

from __future__ import annotations

import pytest

from support.cli import one_line, run


@pytest.mark.parametrize("modulus", ["1000000", "100000"])
def test_power_refuses_a_modulus_beyond_its_limit_at_once(modulus):
    code, _, err = run(["power", "--acc", "0.9", "--gap", "0.1", "--modulus", modulus])
    assert code == 2 and "--modulus" in one_line(err) and "4096" in err
