"""How every number phasebench shows is written: one table, keyed by unit and style.

A value is written from its unit (:data:`phasebench.metrics.Unit`, or one of the few units
here that no declared statistic has), in one of two styles (and a third for the few units the
docs' Markdown tables show):

* :data:`TERMINAL`, the tables ``phasebench report`` prints: accuracies and gaps in points
  (0..100) without a sign of the unit, padded to line up in a column (``" 45.0"``), a missing
  value as ``n/a``;
* :data:`SITE`, what the leaderboard's pages, its badges, the model cards' notes and the
  exports' readers show: every value carries its unit (``45.0%``, ``12.3 pp``, ``8 tokens``,
  ``p = 0.0123``), a missing one :data:`MISSING`;
* :data:`MARKDOWN`, the tables the docs quote in Markdown (the kvpress audit, the demo's
  interval column): points to one decimal, unpadded, a missing value ``-``.

:func:`format_value` and :func:`format_interval` read :data:`FORMATS`; :func:`format_p` is the
one rule for a permutation p-value at its floor, and :func:`format_note` writes a statistic
shown beside another. No other module of the package writes a statistic's number itself
(``tests/test_formatting.py`` reads the source), so the terminal, the site and the badges
cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from phasebench.metrics import FLAT, N_PERM, Statistic

__all__ = [
    "FORMATS",
    "MARKDOWN",
    "MISSING",
    "SITE",
    "TERMINAL",
    "Style",
    "Written",
    "format_exact_p",
    "format_interval",
    "format_note",
    "format_p",
    "format_value",
]

Style = Literal["terminal", "site", "markdown"]
TERMINAL: Style = "terminal"
SITE: Style = "site"
MARKDOWN: Style = "markdown"
#: A missing value, as every page writes it.
MISSING = "—"


@dataclass(frozen=True)
class Written:
    """How one unit is written in one style: a value that is there (``value``), a missing one
    (``missing``; ``beside`` instead for a statistic shown beside another, where it differs),
    an interval whose ends are both there (``interval``) and one that is not (``no_interval``).
    A p-value reaches ``value`` already written by :func:`format_p`."""

    value: Callable[[Any], str]
    missing: str
    interval: Callable[[Any, Any], str]
    no_interval: str
    beside: str | None = None


def _points(value: float) -> str:
    return f"{100 * value:5.1f}"


def _points_interval(lo: float, hi: float) -> str:
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def _signed_interval(lo: float, hi: float) -> str:
    return f"[{lo:+.3f}, {hi:+.3f}]"


def _plain_interval(lo: float, hi: float) -> str:
    return f"[{lo:.3g}–{hi:.3g}]"


def _yes_no(value: Any) -> str:
    return "yes" if value else "no"


def _phase(value: Any) -> str:
    return f"phase {value}"


def _periods(value: Any) -> str:
    """A period, or several each consistent with the data (``4 or 2``; ``none`` for no one)."""
    if isinstance(value, list):
        return " or ".join(str(v) for v in value) if value else "none"
    return str(value)


def _periods_site(value: Any) -> str:
    if isinstance(value, list):
        return " or ".join(str(v) for v in value) + " tokens" if value else MISSING
    return f"{value} tokens"


def _p_site(shown: str) -> str:
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"


def _exact_p(value: float) -> str:
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def _measure_interval(lo: float, hi: float) -> str:
    return f"[{lo:.3f}, {hi:.3f}]"


def _site_points(suffix: str) -> Written:
    """The site's points of an accuracy (``45.0%``) or a difference of two (``12.3 pp``)."""
    return Written(
        lambda v: f"{100 * v:.1f}{suffix}", MISSING,
        lambda lo, hi: f"[{100 * lo:.1f}–{100 * hi:.1f}{suffix}]", "",
    )  # fmt: skip


def _signed_site(value: float) -> str:
    """A signed difference of points on the site, with a true minus sign (``−3.1``, ``+3.1``)."""
    return f"{100 * value:+.1f}".replace("-", "\u2212")


#: A difference of two accuracy statistics on the site: signed, its interval's ends joined by
#: "to" (``[−76.3 to −62.9 pp]``), never a dash beside a minus sign.
_SITE_DIFFERENCE = Written(
    lambda v: f"{_signed_site(v)} pp", MISSING,
    lambda lo, hi: f"[{_signed_site(lo)} to {_signed_site(hi)} pp]", "",
)  # fmt: skip


#: Points in a terminal column and in a Markdown table, accuracies and gaps alike.
_TERMINAL_POINTS = Written(_points, "  n/a", _points_interval, "[  n/a]")
_MARKDOWN_POINTS = Written(lambda v: f"{100 * v:.1f}", "-", _points_interval, "-")


#: Every unit in the terminal and site styles, and in the markdown style where a docs table
#: shows it: ``FORMATS[unit][style]``. Besides the units of the declared statistics:
#: ``difference``, a change of an accuracy statistic between two runs (signed points in the
#: terminal); ``exact p``, an exact test's p-value (McNemar's, two digits); ``measure``, a
#: value in the unit of ``phasebench probe``'s measure (a margin or 0/1).
FORMATS: dict[str, dict[Style, Written]] = {
    "%": {TERMINAL: _TERMINAL_POINTS, MARKDOWN: _MARKDOWN_POINTS, SITE: _site_points("%")},
    "pp": {TERMINAL: _TERMINAL_POINTS, MARKDOWN: _MARKDOWN_POINTS, SITE: _site_points(" pp")},
    "difference": {
        TERMINAL: Written(lambda v: f"{100 * v:+7.1f}", "    n/a", _points_interval, "[  n/a]"),
        SITE: _SITE_DIFFERENCE,
    },
    "p": {
        TERMINAL: Written(str, "n/a", _points_interval, "[  n/a]"),
        SITE: Written(_p_site, MISSING, _plain_interval, ""),
    },
    "exact p": {
        TERMINAL: Written(_exact_p, "n/a", _points_interval, "[  n/a]"),
        SITE: Written(_exact_p, MISSING, _plain_interval, ""),
    },
    "tokens": {
        TERMINAL: Written(_periods, "none", _points_interval, "[  n/a]", beside="-"),
        SITE: Written(_periods_site, MISSING, _plain_interval, ""),
    },
    "phase": {
        TERMINAL: Written(_phase, FLAT, _points_interval, "[  n/a]"),
        SITE: Written(_phase, FLAT, _plain_interval, ""),
    },
    "nats": {
        TERMINAL: Written(_signed, "n/a", _signed_interval, "[  n/a]"),
        SITE: Written(_signed, MISSING, _signed_interval, ""),
    },
    "number": {
        TERMINAL: Written(lambda v: f"{v:.2f}", "n/a", _points_interval, "[  n/a]"),
        SITE: Written(
            lambda v: f"{v:.2f}" if isinstance(v, float) else str(v), MISSING,
            _plain_interval, "",
        ),
    },
    "flag": {
        TERMINAL: Written(_yes_no, "n/a", _points_interval, "[  n/a]"),
        SITE: Written(_yes_no, MISSING, _plain_interval, ""),
    },
    "measure": {
        TERMINAL: Written(lambda v: f"{v:.3f}", "n/a", _measure_interval, "[-]"),
        SITE: Written(lambda v: f"{v:.3f}", MISSING, _measure_interval, ""),
    },
}  # fmt: skip


def format_p(value: float | None, n_perm: int | None = N_PERM) -> str | None:
    """A permutation p-value as every table writes it: ``0.0123`` (3 significant digits), and
    ``< 0.001`` at the floor ``1 / (1 + n_perm)`` of ``n_perm`` permutations (no shuffle reached
    the observed gap: the test says only that p is below ``1 / n_perm``). None for no value;
    ``n_perm`` None for a p-value that is not a permutation test's (written as it is)."""
    if value is None:
        return None
    if n_perm and value <= 1.0 / (1 + n_perm) * (1 + 1e-9):
        return f"< {1.0 / n_perm:.3g}"
    return f"{value:.3g}"


def format_value(
    stat: Statistic | str, value: Any, n_perm: int | None = N_PERM, *, style: Style = SITE
) -> str:
    """One value of a statistic (or of a unit, for a value with no statistic behind it: a
    per-phase cell, a published figure) in ``style``. Site: ``45.0%``, ``12.3 pp``,
    ``p = 0.0123`` (``p < 0.001`` at the permutation floor of ``n_perm``), ``8 tokens``,
    ``phase 3`` (:data:`~phasebench.metrics.FLAT` for no weak phase), ``+0.123`` nats, ``yes``.
    Terminal: points padded to a column (``" 45.0"``), ``0.0123``, ``8``, ``n/a``.
    The terminal's permutation floor is always that of :data:`~phasebench.metrics.N_PERM`
    permutations (a true statement for any other count too)."""
    unit = stat if isinstance(stat, str) else stat.unit
    written = FORMATS[unit][style]
    if unit == "p" and value is not None:
        permutation = not isinstance(stat, str) and stat.permutation
        floor = (N_PERM if style == TERMINAL else n_perm) if permutation else None
        value = format_p(value, floor)
    if value is None:
        beside = not isinstance(stat, str) and stat.shown_with is not None
        return written.beside if beside and written.beside is not None else written.missing
    return written.value(value)


def format_interval(
    stat: Statistic | str, interval: Sequence[Any] | None, *, style: Style = SITE
) -> str:
    """An interval in its statistic's (or unit's) unit. Site: ``[30.1–60.2%]``,
    ``[4.0–20.5 pp]``, empty where there is none. Terminal: ``[30.1, 60.2]`` in points,
    ``[+0.361, +0.425]`` for nats, ``[  n/a]`` where there is none."""
    written = FORMATS[stat if isinstance(stat, str) else stat.unit][style]
    if not interval or interval[0] is None or interval[1] is None:
        return written.no_interval
    lo, hi = interval
    return written.interval(lo, hi)


def format_exact_p(value: float, *, style: Style = TERMINAL) -> str:
    """An exact test's p-value (McNemar's): two significant digits, ``1.2e-05`` below 1e-4."""
    return format_value("exact p", value, style=style)


def format_note(
    stat: Statistic, value: Any, n_perm: int | None = N_PERM, *, style: Style = SITE
) -> str:
    """A statistic shown beside another (``shown_with``), after its symbol. Site: ``p = 0.01``,
    ``null gap 3.1 pp``, ``weak phase 3``, ``weak phase: none (flat)``. Terminal: ``p = 0.01``,
    ``null gap 3.1``, ``weak phase 3``, ``significant`` / ``not significant`` for a flag."""
    if stat.unit == "phase" and value is None:  # "weak phase: none (flat)" in both styles
        return f"{stat.label}: {FLAT}"
    if style == SITE:
        if stat.unit == "p":
            return format_value(stat, value, n_perm)
        if stat.unit == "phase":
            return f"{stat.label} {value}"
        return f"{stat.symbol or stat.label} {format_value(stat, value, n_perm)}"
    if stat.unit == "flag":
        return "n/a" if value is None else ("" if value else "not ") + stat.label
    shown = format_value(stat, value, n_perm, style=TERMINAL).strip()
    symbol = stat.symbol or stat.label
    if shown.startswith("<"):  # "p < 0.001", not "p = < 0.001"
        symbol = symbol.removesuffix(" =")
    return f"{symbol} {shown}"
