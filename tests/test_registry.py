"""The one rule of every registry (families, statistics): a name belongs to one declaration."""

import pytest

from phasebench.errors import SpecError
from phasebench.registry import Registry


def test_a_name_belongs_to_one_declaration():
    reg = Registry("thing", SpecError)
    first, second = object(), object()
    assert reg.add(first, ["a", "b"]) is first
    assert reg.add(first, ["a"]) is first  # the same declaration again changes nothing
    with pytest.raises(SpecError, match="a thing named 'b' is already declared"):
        reg.add(second, ["c", "b"])
    assert list(reg) == [first] and "c" not in reg  # a refused declaration leaves no trace
    with reg.added(second, ["c"]):
        assert list(reg) == [first, second] and reg.get("c") is second
    assert list(reg) == [first] and reg.get("c") is None
    reg.remove(first)
    assert reg.add(second, ["a"]) is second  # its names are free again
