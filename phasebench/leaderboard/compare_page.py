"""What the compare page shows of two entries of a board, every value written as text by the
build (the page's script only places it): each entry's statistics and standing, and for each
ordered pair the paired difference A − B score computed, led by a verdict sentence that says
which entry has the larger gap and the lower worst phase, by how much, with the paired interval
and p, or that the two cannot be told apart at this design. Words and numbers only; every number
is score's (:func:`phasebench.leaderboard.score.comparisons`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phasebench import metrics
from phasebench.formatting import format_interval, format_value
from phasebench.leaderboard import standing as _standing


def _standing_text(row: Mapping[str, Any]) -> str:
    """How a row stands on its board, in words (a place, or why it has none)."""
    standing = row.get("standing") or _standing.RANKED
    if standing == _standing.RANKED:
        return f"ranked {row.get('rank_worst')}"
    if standing == _standing.AT_FLOOR:
        return _standing.FLOOR_NOTE + ", not ranked"
    return f"{standing}, not ranked"


def _verdict(a: str, b: str, result: Mapping[str, Any]) -> str:
    """The compare page's first sentence for entries ``a`` and ``b`` (their labels) from the
    paired difference A − B score computed: which has the larger gap and the lower worst
    phase, by how much, with the paired interval and p, or that the two cannot be told apart
    at this design. A difference counts where score called it significant: its p at most the
    board's alpha, exactly where its interval excludes 0 (one bootstrap gives both)."""
    names = {"A": f"A ({a})", "B": f"B ({b})"}

    def part(stat: metrics.Statistic) -> tuple[bool, float, str]:
        d = result[stat.key]
        told = bool(d.get("significant"))
        # the bootstrap's p, no permutation floor: written as it is
        shown = (f"A − B {format_value('difference', d['difference'])} "
                 f"{format_interval('difference', d['difference_ci'])}, "
                 f"{format_value('p', d['p_value'])}")  # fmt: skip
        return told, d["difference"] or 0.0, shown

    gap_told, gap, gap_shown = part(metrics.get("gap"))
    worst_told, worst, worst_shown = part(metrics.RANKING)
    n = result.get("n_base")
    if not gap_told and not worst_told:
        return (f"A and B cannot be told apart at this design ({n} shared base items): gap "
                f"{gap_shown}; worst phase {worst_shown}.")  # fmt: skip
    out = []
    if gap_told:
        larger, other = ("A", "B") if gap > 0 else ("B", "A")
        out.append(f"{names[larger]} has the larger phase gap, by {format_value('pp', abs(gap))}"
                   f" over {other} ({gap_shown}; {n} shared base items).")  # fmt: skip
    else:
        out.append(f"Their phase gaps cannot be told apart at this design ({gap_shown}; {n} "
                   "shared base items).")  # fmt: skip
    if worst_told:
        lower, other = ("A", "B") if worst < 0 else ("B", "A")
        who = lower if gap_told else names[lower]
        out.append(f"{who} has the lower worst phase, by {format_value('pp', abs(worst))} "
                   f"({worst_shown}).")  # fmt: skip
    else:
        out.append(f"Their worst phases cannot be told apart ({worst_shown}).")
    return " ".join(out)


def compare_data(
    b: Mapping[str, Any], pairs: Mapping[str, Any] | None, columns: Sequence[metrics.Statistic]
) -> dict[str, Any]:
    """What the compare page's script shows, every value already written as text: each entry's
    label, page, standing and statistics (``columns``, the board's; test fixtures are left out), and
    for each ordered pair ``"<a>|<b>"`` the paired difference A − B as score computed it, with
    the verdict sentence (:func:`_verdict`)."""
    entries = {}
    for row, label in zip(b["rows"], b["labels"], strict=True):
        if row.get("fixture"):
            continue
        stats = [["standing", _standing_text(row)]]
        for stat in columns:
            text = format_value(stat, row.get(stat.column))
            interval = format_interval(stat, row.get(stat.column_interval))
            stats.append([stat.label, f"{text} {interval}".strip()])
        stats.append(["KV cache", str(row.get("kv_label") or row.get("kv_cache") or "")])
        stats.append(
            ["items", f"{row.get('n_base')} × {row.get('n_phases') or row.get('modulus')}"]
        )
        entries[row["anchor"]] = {"label": label, "page": row["page"], "stats": stats,
                                  "preliminary": bool(row.get("preliminary"))}  # fmt: skip
    shown = {}
    for key, result in (pairs or {}).items():
        first, second = key.split("|")
        if first not in entries or second not in entries:
            continue
        lines = []
        for stat in (metrics.get("gap"), metrics.RANKING):
            part = result[stat.key]
            lines.append(
                {
                    "label": stat.label + (f" ({stat.qualifier})" if stat.qualifier else ""),
                    "a": format_value(stat, part["after"]),
                    "b": format_value(stat, part["before"]),
                    "difference": format_value("difference", part["difference"]),
                    "ci": format_interval("difference", part["difference_ci"]),
                    "p": format_value("p", part["p_value"]),  # the bootstrap's, as it is
                }
            )
        verdict = _verdict(entries[first]["label"], entries[second]["label"], result)
        shown[key] = {"n_base": result["n_base"], "lines": lines, "verdict": verdict}
    return {"entries": entries, "pairs": shown}
