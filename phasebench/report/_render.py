"""Rendering: the terminal tables of a report, its legend and its comparison frame, from the
report dict alone (a report JSON given back renders without recomputing anything). Every number
is written by :mod:`phasebench.formatting` in its terminal style."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phasebench import metrics
from phasebench.cache_reads import cache_lines
from phasebench.formatting import TERMINAL, format_interval, format_note, format_p, format_value

#: The widest line a report prints (a terminal of 100 columns shows every line whole).
WIDTH = 100
NBSP = "\u00a0"


def _shown(stat: metrics.Statistic, entry: Mapping[str, Any]) -> bool:
    """Whether an entry has this statistic (a family without a margin has no margin rows;
    Cochran's Q is only defined for 0/1 outcomes)."""
    if stat.needs_margin and "margin" not in entry:
        return False
    if stat.unit == "number" and stat.value(entry) is None:
        return False
    if stat.shown_with is not None and isinstance(stat.value(entry), list):
        return len(stat.value(entry)) > 1  # "period 4 (consistent with 4)" says nothing more
    return stat.per_phase or stat.read is not None or stat.key in entry


def _statistic_lines(entry: Mapping[str, Any]) -> list[str]:
    """One line per declared statistic of the entry, with its interval and the statistics
    declared to be shown with it."""
    declared = metrics.statistics()
    lines = []
    for stat in declared:
        if not stat.terminal or stat.shown_with is not None or not _shown(stat, entry):
            continue
        label = stat.label.ljust(12) if len(stat.label) < 12 else stat.label + " "
        line = f"  {label}{format_value(stat, stat.value(entry), style=TERMINAL)}"
        if stat.interval is not None:
            line += f"  {format_interval(stat, stat.interval_of(entry), style=TERMINAL)}"
        notes = [
            format_note(n, n.value(entry), style=TERMINAL)
            for n in declared
            if n.shown_with == stat.key and n.terminal and _shown(n, entry)
        ]
        lines += _with_notes(line, notes)
    return lines


def _with_notes(line: str, notes: list[str]) -> list[str]:
    """A statistic's line with its notes in parentheses, cut between notes where it would be
    wider than :data:`WIDTH` (the rest on lines of their own, indented under the value)."""
    if not notes:
        return [line]
    lines, current = [], f"{line}  ({notes[0]}"
    for note in notes[1:]:
        if len(current) + len(note) + 3 > WIDTH:
            lines.append(current + ";")
            current = " " * 16 + note
        else:
            current += f"; {note}"
    return [*lines, current + ")"]


def render_tables(report: dict[str, Any], full_legend: bool = False) -> str:
    """Terminal tables, no line wider than :data:`WIDTH`: with several runs first one table per
    task and length, its finding first (:func:`comparison_blocks`); then one block per run,
    task and length (numbers in points, 0..100; runs in the order given); then the legend of
    what the tables show (:func:`legend`; every statistic defined with ``full_legend``). A
    config with the length axis shows each varied axis and, when both ran, the 2-D table of
    accuracy per (needle phase, length phase)."""
    blocks = comparison_blocks(report) if len(report["runs"]) > 1 else []
    for run, body in report["runs"].items():
        for task, lengths in body["tasks"].items():
            for length, e in sorted(lengths.items(), key=lambda kv: int(kv[0])):
                units = "paired units" if "margin" in e else "base items"
                covered = len(e["phases"]) if e.get("phases") else e["modulus"]
                of = (
                    f"{covered} of {e['modulus']} phases"
                    if e.get("phases")
                    else (f"{e['modulus']} phases")
                )
                lines = [f"{task}  length {length}  ({run}; {e['n_base']} {units} x {of})"]
                if e.get("axis") == "length":
                    lines.append("  length phase (total prompt length mod P; the needle fixed)")
                elif e.get("axis") == "needle":
                    lines.append("  needle phase (anchor index mod P; each length phase paired)")
                lines += _axis_lines(e)
                if e.get("length_axis"):
                    lines.append("  length phase (total prompt length mod P; anchor fixed)")
                    lines += _axis_lines(e["length_axis"])
                    lines.append("  accuracy per needle phase (rows) x length phase (columns)")
                    lines.append(_indent(_fit(_phase_table_frame(e["phase_table"]))))
                if e.get("served"):
                    lines.append(f"  server      {_witness_line(e['served'])}")
                if e.get("prefix_cache"):
                    lines += cache_lines(e["prefix_cache"])
                blocks.append("\n".join(lines))
    if report.get("difference"):
        blocks.append(_difference_block(report["difference"]))
    blocks.append(legend(report, full=full_legend, tables="\n\n".join(blocks)))
    return "\n\n".join(blocks) + "\n"


def _fit(frame, width: int = WIDTH - 2, index: bool = True) -> str:
    """``frame`` as text no wider than ``width``: its columns cut into as few consecutive
    groups of near-equal size as fit, each under its own header (the index, or the first
    column with ``index`` False, repeated in each)."""
    import numpy as np

    def text(columns: list) -> str:
        return frame[columns].to_string(index=index)

    def wide(columns: list) -> bool:
        return max(map(len, text(columns).splitlines()), default=0) > width

    keep = [] if index else [frame.columns[0]]
    rest = [c for c in frame.columns if c not in keep]
    if not wide(keep + rest):
        return text(keep + rest)
    for n in range(2, len(rest) + 1):
        groups = [list(g) for g in np.array_split(np.array(rest, dtype=object), n)]
        if not any(wide(keep + group) for group in groups):
            break
    return "\n".join(text(keep + group) for group in groups)


def _difference_block(diff: Mapping[str, Any]) -> str:
    """The two-run difference: per task and length, each compared statistic before, after,
    the difference (after minus before) with its paired bootstrap interval and the p it
    inverts to."""
    from phasebench.stats.compare import COMPARED

    declared = {stat.key: stat for stat in metrics.statistics()}
    import textwrap

    lines = textwrap.wrap(
        f"difference  {diff['after']} minus {diff['before']} (points; paired over the base "
        "items both ran: one bootstrap resample drives both runs; the interval and p come from it "
        "and agree)",
        WIDTH,
        subsequent_indent="  ",
        break_on_hyphens=False,
        break_long_words=False,
    )
    for task, lengths in diff["tasks"].items():
        for length, e in sorted(lengths.items(), key=lambda kv: int(kv[0])):
            lines.append(f"  {task}  length {length}  ({e['n_base']} base items)")
            for key in COMPARED:
                d, stat = e[key], declared[key]
                p = format_p(d["p_value"], None) or "n/a"  # the bootstrap's p: no permutation floor
                p = p if p.startswith("<") else f"= {p}"
                before, after = (
                    format_value(stat, d[k], style=TERMINAL) for k in ("before", "after")
                )
                change = format_value("difference", d["difference"], style=TERMINAL)
                interval = format_interval("difference", d["difference_ci"], style=TERMINAL)
                lines.append(
                    f"    {stat.label:<12}{before} -> {after}  {change}  {interval}  p {p}"
                )
            if e.get("prefix_cache"):
                lines += ["  " + line for line in cache_lines(e["prefix_cache"])]
    return "\n".join(lines)


def _axis_lines(e: Mapping[str, Any]) -> list[str]:
    """One axis's summary: a line per declared statistic, the phase subset it covers, the
    phase-lock rates of a margin family and the per-phase table."""
    import pandas as pd

    lines = _statistic_lines(e)
    if e.get("phases"):
        lines.append(f"  subset      residues {_ranges(e['phases'])} of 0..{e['modulus'] - 1}")
    # a phase subset shows only its own residues
    shown = [r for r in e["per_phase"] if r["n"] or not e.get("phases")]
    table = {
        "acc": [format_value("%", r["acc"], style=TERMINAL).strip() for r in shown],
        "ci": [format_interval("%", r["ci"], style=TERMINAL) for r in shown],
        "n": [str(r["n"]) for r in shown],
    }
    if "per_phase_margin" in e:
        margins = {r["phase"]: r["margin"] for r in e["per_phase_margin"]}
        table["margin"] = [
            format_value("nats", margins.get(r["phase"]), style=TERMINAL) for r in shown
        ]
        sweeps = e["margin_sweeps"]
        rates = ", ".join(
            f"S={s}: {format_value('%', v, style=TERMINAL).strip()}"
            for s, v in sweeps["phase_lock_rate"].items()
        )
        lines.append(f"  phase-lock  {rates}  ({len(sweeps['patterns'])} patterns)")
    frame = pd.DataFrame(table, index=[f"p{r['phase']}" for r in shown]).T
    lines.append(_indent(_fit(frame)))
    return lines


def _phase_table_frame(table: Mapping[str, Any]):
    import pandas as pd

    return pd.DataFrame(
        [[format_value("%", v, style=TERMINAL).strip() for v in row] for row in table["acc"]],
        index=[f"p{p}" for p in table["needle_phases"]],
        columns=[f"l{q}" for q in table["length_phases"]],
    )


def _ranges(values: Sequence[int]) -> str:
    """``0,16,32,125-127``: consecutive runs shortened."""
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ",".join(parts)


def legend(
    report: Mapping[str, Any] | None = None, *, full: bool = False, tables: str | None = None
) -> str:
    """What the tables show: the units, the intervals, the p-value and the marks the tables
    print (``tables``, the text they make: a mark is explained only where it is printed, in
    the words it is printed with); with ``full``, every statistic's definition, from its
    declaration (only those some entry of ``report`` has, when given), and the command for it
    otherwise."""
    import textwrap

    entries = [
        e
        for body in (report or {}).get("runs", {}).values()
        for lengths in body["tasks"].values()
        for e in lengths.values()
    ]
    said = [
        f"legend: points (0-100); [lo, hi] a {metrics.LEVEL} interval (paired bootstrap over "
        "base items; the gap's from the permutation test); p: the share of phase shuffles "
        "within base items whose gap reaches the observed one"
    ]
    for mark, meaning in _marks():
        if tables is None or mark in tables:
            # a mark is never cut across two lines (no-break spaces while wrapping)
            said.append(f'"{mark.replace(" ", NBSP)}": {meaning}')
    lines = [
        line.replace(NBSP, " ")
        for line in textwrap.wrap(
            "; ".join(said), WIDTH - 2, subsequent_indent="  ", break_on_hyphens=False
        )
    ]
    if not full:
        lines.append("  every line defined: phasebench report ... --legend full")
        return "\n".join(lines)
    for stat in metrics.statistics():
        if not stat.terminal or not stat.help:
            continue
        if entries and not any(_shown(stat, e) for e in entries):
            continue
        lines += textwrap.wrap(
            f"{stat.label}: {stat.help}", WIDTH - 2, initial_indent="  ",
            subsequent_indent="    ", break_on_hyphens=False,
        break_long_words=False,
        )  # fmt: skip
    return "\n".join(lines)


def _marks() -> list[tuple[str, str]]:
    """Each mark a table may print and what it means, the mark written by
    :mod:`phasebench.formatting` as the tables write it."""
    period = metrics.get("dominant_period")
    significant = metrics.get("significant")
    return [
        (f"p {format_p(0.0)}", f"no shuffle of {metrics.N_PERM:,} reached the gap"),
        (format_note(significant, True, style=TERMINAL), f"p <= {metrics.ALPHA}"),
        (format_note(significant, False, style=TERMINAL), f"p > {metrics.ALPHA}"),
        (format_value(period, None, style=TERMINAL), "no period named (a gap that is not "
         "significant, or no pattern beyond noise)"),
        (format_value("%", None, style=TERMINAL).strip(), "not computed for this run"),
        (EFFECT, f'"yes" where the gap is significant, "{FINDING}" on the largest such gap '
         "of the table, the finding its first line names"),
    ]  # fmt: skip


#: The comparison's column that says which gaps are significant, and its mark of the largest.
EFFECT = "phase effect"
FINDING = "finding"


def comparison_blocks(report: Mapping[str, Any]) -> list[str]:
    """One table per task and length over the runs, ranked by the ranking statistic (ties in
    the order given), its finding first: the run with the largest significant gap, its
    interval, p and period (or that no gap is significant)."""
    import pandas as pd

    ranking, gap, p = metrics.RANKING, metrics.get("gap"), metrics.get("p_value")
    significant = metrics.get("significant")
    tables: dict[tuple[str, int], list[tuple[str, Mapping[str, Any]]]] = {}
    for run, body in report["runs"].items():
        for task, lengths in body["tasks"].items():
            for length, e in lengths.items():
                tables.setdefault((task, int(length)), []).append((run, e))
    blocks = []
    for (task, length), runs in tables.items():  # in the order the runs hold them
        runs = sorted(runs, key=lambda r: -(ranking.value(r[1]) or -1.0))  # stable: ties as given
        found = [(run, e) for run, e in runs if significant.value(e)]
        best = max(found, key=lambda r: gap.value(r[1]), default=None)
        head = f"{task}  length {length}  ({len(runs)} runs, ranked by {ranking.label})"
        if best is None:
            finding = f"  {FINDING}: none (no run's gap is significant)"
        else:
            run, e = best
            finding = (
                f"  {FINDING}: {run}, {gap.label} "
                f"{format_value(gap, gap.value(e), style=TERMINAL).strip()} "
                f"{format_interval(gap, gap.interval_of(e), style=TERMINAL)}, "
                f"{format_note(p, p.value(e), style=TERMINAL)}, period {_period(e)}"
            )
        rows = []
        for run, e in runs:
            row = {"run": run}
            for stat in (metrics.get("acc"), ranking):
                row[stat.label] = format_value(stat, stat.value(e), style=TERMINAL).strip()
            row[f"{gap.label} [{metrics.LEVEL} CI]"] = (
                f"{format_value(gap, gap.value(e), style=TERMINAL).strip()} "
                f"{format_interval(gap, gap.interval_of(e), style=TERMINAL)}"
            )
            row[p.label] = format_value(p, p.value(e), style=TERMINAL)
            row["period"] = _period(e)
            row[EFFECT] = (
                FINDING if best is not None and run == best[0]
                else _yes_no(significant.value(e))
            )  # fmt: skip
            rows.append(row)
        width = max(len(row["run"]) for row in rows)
        for row in rows:  # names read from the left
            row["run"] = row["run"].ljust(width)
        table = _fit(pd.DataFrame(rows).rename(columns={"run": "run".ljust(width)}), index=False)
        blocks.append("\n".join([head, finding, _indent(table)]))
    return blocks


def _yes_no(flag: Any) -> str:
    return format_value("flag", flag, style=TERMINAL)


def _period(e: Mapping[str, Any]) -> str:
    """The period as the comparison and the finding name it: every period the data are
    consistent with where there are several (``4 or 2``), the one named, or none."""
    periods = metrics.get("consistent_periods").value(e)
    if e.get("dominant_period") is not None and isinstance(periods, list) and len(periods) > 1:
        return format_value(metrics.get("consistent_periods"), periods, style=TERMINAL)
    return format_value(metrics.get("dominant_period"), e.get("dominant_period"), style=TERMINAL)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def comparison_frame(report: dict[str, Any]):
    """One row per (task, length, run): the statistics the site shows, in points."""
    import pandas as pd

    shown = [s for s in metrics.statistics() if s.site and not s.per_phase]
    rows = []
    for run, body in report["runs"].items():
        for task, lengths in body["tasks"].items():
            for length, e in lengths.items():
                row = {"task": task, "length": int(length), "run": run}
                for stat in shown:
                    value = stat.value(e)
                    if stat.shown_with is not None and isinstance(value, list) and len(value) < 2:
                        value = None  # one period or none: the period column says it all
                    row[stat.label] = format_value(stat, value, style=TERMINAL).strip()
                    if stat.interval is not None:
                        row[f"{stat.label} CI"] = format_interval(
                            stat, stat.interval_of(e), style=TERMINAL
                        )
                rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.sort_values(["task", "length", "run"], kind="stable")


def _witness_line(w: dict[str, Any]) -> str:
    """What the server's prompt token counts say about one group's labels."""
    total = w["agree"] + w["disagree"] + w["unverified"]
    if w["unverified"] == total:
        return f"labels unverified: the server reported no prompt token count ({total} samples)"
    parts = [f"{w['agree']}/{total} agree with the label"]
    if w["disagree"]:
        f = w["first"]
        parts.append(
            f"{w['disagree']} disagree and are left out (first: {f['id']} labelled "
            f"{f['label']}, server {f['count']})"
        )
    if w["unverified"]:
        parts.append(f"{w['unverified']} unverified")
    return "; ".join(parts)
