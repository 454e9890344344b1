"""Rendering: the terminal tables of a report, its legend and its comparison frame, from the
report dict alone (a report JSON given back renders without recomputing anything). Every number
is written by :mod:`phasebench.formatting` in its terminal style."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phasebench import metrics
from phasebench.cache_reads import cache_lines
from phasebench.formatting import TERMINAL, format_interval, format_note, format_p, format_value


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
        if notes:
            line += f"  ({'; '.join(notes)})"
        lines.append(line)
    return lines


def render_tables(report: dict[str, Any]) -> str:
    """Terminal tables: one block per run, task and length (numbers in points, 0..100), then a
    legend of the statistics shown. A config with the length axis shows each varied axis and,
    when both ran, the 2-D table of accuracy per (needle phase, length phase)."""
    blocks = []
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
                    lines.append(_indent(_phase_table_frame(e["phase_table"]).to_string()))
                if e.get("served"):
                    lines.append(f"  server      {_witness_line(e['served'])}")
                if e.get("prefix_cache"):
                    lines += cache_lines(e["prefix_cache"])
                blocks.append("\n".join(lines))
    if len(report["runs"]) > 1:
        blocks.append("comparison\n" + _indent(comparison_frame(report).to_string(index=False)))
    if report.get("difference"):
        blocks.append(_difference_block(report["difference"]))
    blocks.append(legend(report))
    return "\n\n".join(blocks) + "\n"


def _difference_block(diff: Mapping[str, Any]) -> str:
    """The two-run difference: per task and length, each compared statistic before, after,
    the difference (after minus before) with its paired bootstrap interval and the p it
    inverts to."""
    from phasebench.stats.compare import COMPARED

    declared = {stat.key: stat for stat in metrics.statistics()}
    lines = [
        f"difference  {diff['after']} minus {diff['before']} (points; paired over the base "
        "items both ran: one bootstrap resample drives both runs; the interval and p come from it "
        "and agree)"
    ]
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
    lines.append(_indent(frame.to_string()))
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


def legend(report: Mapping[str, Any] | None = None) -> str:
    """What each statistic of the tables means, from its declaration (only those some entry
    of ``report`` has, when given)."""
    import textwrap

    entries = [
        e
        for body in (report or {}).get("runs", {}).values()
        for lengths in body["tasks"].values()
        for e in lengths.values()
    ]
    lines = ["legend (points, 0-100; intervals 95%, paired bootstrap over base items unless said)"]
    for stat in metrics.statistics():
        if not stat.terminal or not stat.help:
            continue
        if entries and not any(_shown(stat, e) for e in entries):
            continue
        lines += textwrap.wrap(
            f"{stat.label}: {stat.help}", 98, initial_indent="  ", subsequent_indent="    "
        )
    return "\n".join(lines)


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
