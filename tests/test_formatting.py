"""Every number is written by :mod:`phasebench.formatting`: one table keyed by unit, a terminal
and a site style, hand-checked here case by case; and no other module of the package defines a
formatter of its own (read from the source, so a new ``_pct`` fails here, not in review)."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

from phasebench import metrics
from phasebench.formatting import (
    FORMATS,
    MARKDOWN,
    MISSING,
    SITE,
    TERMINAL,
    format_exact_p,
    format_interval,
    format_note,
    format_p,
    format_value,
)

PACKAGE = Path(__file__).resolve().parent.parent / "phasebench"
HOME = PACKAGE / "formatting.py"
#: Names the package's formatters had before they moved into one module.
FORMATTER_NAMES = {
    "_pct", "pct", "_ci", "_p", "_interval", "_signed", "_signed_points", "_by_unit",
    "_interval_by_unit", "note", "_note", "format_value", "format_interval", "format_p",
}  # fmt: skip


def _formatters(source: str) -> list[tuple[int, str]]:
    """The functions (at any depth) named like a formatter that write text: a name of
    :data:`FORMATTER_NAMES` or ``format_*``, unless annotated to return something other than
    ``str`` (a reader that parses, as the leaderboard's percent-to-fraction ``_pct``). An
    assignment to ``MISSING`` counts too: the missing mark has one home."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            named = node.name in FORMATTER_NAMES or node.name.startswith("format_")
            returns = node.returns
            parses = returns is not None and not (
                (isinstance(returns, ast.Name) and returns.id == "str")
                or (isinstance(returns, ast.Constant) and returns.value == "str")
            )
            if named and not parses:
                found.append((node.lineno, node.name))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [(node.lineno, t.id) for t in targets
                      if isinstance(t, ast.Name) and t.id == "MISSING"]  # fmt: skip
    return sorted(found)


def test_no_other_module_defines_a_formatter():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != HOME
        for line, name in _formatters(path.read_text(encoding="utf-8"))
    ]
    assert not found, "write numbers with phasebench.formatting, not here: " + "; ".join(found)


def test_the_check_sees_a_formatter_and_passes_a_parser():
    source = (
        "def _pct(x: float | None) -> str:\n    return f'{100 * x:.1f}'\n"
        "def table():\n    def pct(x):\n        return str(x)\n    return pct\n"
        "def _ci(ci) -> 'str':\n    return ''\n"
        "def _pct2(value) -> float | None:\n    return value / 100\n"
        "def _fraction_pct(value):\n    return value\n"
        "MISSING = '-'\n"
    )
    assert _formatters(source) == [(1, "_pct"), (4, "pct"), (7, "_ci"), (13, "MISSING")]
    assert _formatters("def _pct(value) -> float | None:\n    return value / 100\n") == []


def test_every_unit_of_a_statistic_has_both_styles():
    for unit in typing.get_args(metrics.Unit):
        assert {TERMINAL, SITE} <= set(FORMATS[unit]), unit
    assert all({TERMINAL, SITE} <= set(styles) for styles in FORMATS.values())


def _stat(unit: str, **fields) -> metrics.Statistic:
    return metrics.Statistic("x", "x", unit, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("unit", "value", "terminal", "site"),
    [
        ("%", 0.45, " 45.0", "45.0%"),
        ("%", 1.0, "100.0", "100.0%"),
        ("%", 0.0004, "  0.0", "0.0%"),
        ("%", None, "  n/a", MISSING),
        ("pp", -0.031, " -3.1", "-3.1 pp"),
        ("pp", None, "  n/a", MISSING),
        ("difference", 0.031, "   +3.1", "+3.1 pp"),
        ("difference", -0.031, "   -3.1", "\u22123.1 pp"),
        ("difference", None, "    n/a", MISSING),
        ("tokens", 8, "8", "8 tokens"),
        ("tokens", [4, 2], "4 or 2", "4 or 2 tokens"),
        ("tokens", [], "none", MISSING),
        ("tokens", None, "none", MISSING),
        ("phase", 3, "phase 3", "phase 3"),
        ("phase", None, metrics.FLAT, metrics.FLAT),
        ("nats", 0.1234, "+0.123", "+0.123"),
        ("nats", None, "n/a", MISSING),
        ("number", 2.0, "2.00", "2.00"),
        ("number", 2, "2.00", "2"),
        ("number", None, "n/a", MISSING),
        ("flag", True, "yes", "yes"),
        ("flag", False, "no", "no"),
        ("flag", None, "n/a", MISSING),
        ("exact p", 0.0123, "0.012", "0.012"),
        ("exact p", 0.00001234, "1.2e-05", "1.2e-05"),
        ("measure", 0.25, "0.250", "0.250"),
    ],
)
def test_a_value_in_each_style(unit, value, terminal, site):
    assert format_value(unit, value, style=TERMINAL) == terminal
    assert format_value(unit, value, style=SITE) == site
    assert format_value(_stat(unit) if unit in typing.get_args(metrics.Unit) else unit,
                        value) == site  # fmt: skip


def test_a_p_value_at_the_permutation_floor_says_only_that_it_is_below():
    gap_p = _stat("p", permutation=True)
    cochran = _stat("p")
    floor = 1 / 1001
    assert format_p(floor, 1000) == "< 0.001" and format_p(0.0123, 1000) == "0.0123"
    assert format_p(floor, None) == "0.000999" and format_p(None) is None
    assert format_value(gap_p, floor) == "p < 0.001"
    assert format_value(gap_p, 0.0123) == "p = 0.0123"
    assert format_value(gap_p, 1 / 101, 100) == "p < 0.01"  # the site's own count
    assert format_value(cochran, floor) == "p = 0.000999"  # not a permutation test
    assert format_value(gap_p, floor, style=TERMINAL) == "< 0.001"
    # the terminal's floor is that of the default count, whatever the run used
    assert format_value(gap_p, 1 / 101, 100, style=TERMINAL) == "0.0099"
    assert format_value(gap_p, None, style=TERMINAL) == "n/a"
    assert format_value(gap_p, None) == MISSING
    assert format_exact_p(0.5) == "0.5"


def test_a_missing_period_shown_beside_another_is_a_dash_in_the_terminal():
    beside = _stat("tokens", shown_with="dominant_period")
    assert format_value(beside, None, style=TERMINAL) == "-"
    assert format_value(_stat("tokens"), None, style=TERMINAL) == "none"
    assert format_value(beside, None) == MISSING


@pytest.mark.parametrize(
    ("unit", "interval", "terminal", "site"),
    [
        ("%", (0.301, 0.602), "[30.1, 60.2]", "[30.1–60.2%]"),
        ("pp", (0.04, 0.205), "[4.0, 20.5]", "[4.0–20.5 pp]"),
        ("pp", (None, 0.2), "[  n/a]", ""),
        ("pp", None, "[  n/a]", ""),
        ("difference", (-0.1, 0.05), "[-10.0, 5.0]", "[\u221210.0 to +5.0 pp]"),
        ("difference", (-0.763, -0.629), "[-76.3, -62.9]", "[\u221276.3 to \u221262.9 pp]"),
        ("nats", (0.361, 0.425), "[+0.361, +0.425]", "[+0.361, +0.425]"),
        ("nats", (), "[  n/a]", ""),
        ("measure", (0.1, 0.25), "[0.100, 0.250]", "[0.100, 0.250]"),
        ("measure", (None, None), "[-]", ""),
    ],
)
def test_an_interval_in_each_style(unit, interval, terminal, site):
    assert format_interval(unit, interval, style=TERMINAL) == terminal
    assert format_interval(unit, interval, style=SITE) == site


def test_the_markdown_tables_write_points_and_a_dash():
    assert format_value("%", 0.4567, style=MARKDOWN) == "45.7"
    assert format_value("%", None, style=MARKDOWN) == "-"
    assert format_interval("pp", (0.01, 0.2), style=MARKDOWN) == "[1.0, 20.0]"


def test_a_note_beside_its_statistic_in_each_style():
    declared = {s.key: s for s in metrics.statistics()}
    p, null, weak, significant = (
        declared[k] for k in ("p_value", "null_gap_mean", "lowest_phase_index", "significant")
    )
    assert format_note(p, 0.0123) == "p = 0.0123"
    assert format_note(p, 1 / 1001, 1000) == "p < 0.001"
    assert format_note(null, 0.031) == "null gap 3.1 pp"
    assert format_note(weak, 3) == "weak phase 3"
    assert format_note(weak, None) == f"weak phase: {metrics.FLAT}"
    assert format_note(p, 0.0123, style=TERMINAL) == "p = 0.0123"
    assert format_note(p, 1 / 1001, style=TERMINAL) == "p < 0.001"  # not "p = < 0.001"
    assert format_note(null, 0.031, style=TERMINAL) == "null gap 3.1"
    assert format_note(weak, None, style=TERMINAL) == f"weak phase: {metrics.FLAT}"
    assert format_note(significant, True, style=TERMINAL) == "significant"
    assert format_note(significant, False, style=TERMINAL) == "not significant"
    assert format_note(significant, None, style=TERMINAL) == "n/a"
