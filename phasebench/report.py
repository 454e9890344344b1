"""``phasebench report`` and ``phasebench power``: tables, JSON and plots from lm-eval outputs.

Compute -> JSON -> render. :func:`build_report` reads per-sample logs and computes every number
(through :mod:`phasebench.stats`); the terminal tables, the ``--json`` file and the plots are all
rendered from that one report dict, and a report JSON given back to ``phasebench report`` is
rendered without recomputing anything.

What is read: lm-eval writes ``<output_path>/<model_name_sanitized>/results_<date>.json`` and,
with ``--log_samples``, ``samples_<task>_<date>.jsonl`` next to it. Each sample line keeps the
split row in ``doc`` (``phase``, ``base_id``, ``phase_modulus``, ``length``, for code
``config_length``, ``item_id``, ``pad_style``, ``pad_tokens``) and the per-sample metrics
(``acc``; ``margin`` for code) as top-level keys. A folder holding several model folders is
several runs; several runs give a comparison table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from phasebench import __version__
from phasebench.errors import PhasebenchError
from phasebench.stats import (
    divisors,
    phase_lock_rate,
    phase_matrix,
    power_n_base,
    summarize,
    sweep_units,
)

REPORT_FORMAT = "phasebench-report/1"
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")
_RESULTS = re.compile(r"^results_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.json$")


@dataclass
class Run:
    """The per-sample logs of one model's lm-eval run: ``samples[task]`` = sample dicts."""

    name: str
    source: str
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


# ----------------------------------------------------------------------------- reading


def load_runs(paths: Sequence[str | Path]) -> tuple[list[Run], list[dict[str, Any]]]:
    """Find lm-eval runs (folders or sample files) and phasebench report JSONs under ``paths``.

    Returns ``(runs, reports)``. In a folder, the newest ``samples_<task>_<date>.jsonl`` of each
    task wins (lm-eval appends a new date per invocation into the same model folder).
    """
    runs: list[Run] = []
    reports: list[dict[str, Any]] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise PhasebenchError(f"{path} does not exist; pass an lm-eval --output_path folder")
        if path.is_file() and path.suffix == ".json" and not _RESULTS.match(path.name):
            reports.append(_read_report_json(path))
            continue
        if path.is_file():
            files = [path] if _SAMPLES.match(path.name) else _samples_next_to(path)
        else:
            files = sorted(path.rglob("samples_*.jsonl"))
        files = [f for f in files if _SAMPLES.match(f.name)]
        if not files:
            raise PhasebenchError(
                f"no samples_<task>_<date>.jsonl under {path}; run lm_eval with --log_samples "
                "and --output_path, then pass that folder"
            )
        by_folder: dict[Path, list[Path]] = defaultdict(list)
        for f in files:
            by_folder[f.parent].append(f)
        for folder in sorted(by_folder):
            runs.append(_read_run(folder, by_folder[folder]))
    _unique_names(runs)
    return runs, reports


def _samples_next_to(results_file: Path) -> list[Path]:
    date = _RESULTS.match(results_file.name)
    if not date:
        return []
    return sorted(results_file.parent.glob(f"samples_*_{date['date']}.jsonl"))


def _read_run(folder: Path, files: list[Path]) -> Run:
    newest: dict[str, Path] = {}
    for f in sorted(files, key=lambda f: _SAMPLES.match(f.name)["date"]):
        newest[_SAMPLES.match(f.name)["task"]] = f
    run = Run(name=_model_name(folder), source=str(folder))
    for task, f in sorted(newest.items()):
        lines = []
        with f.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        lines.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise PhasebenchError(f"{f}:{number} is not JSON ({exc.msg})") from None
        run.samples[task] = lines
    return run


def _model_name(folder: Path) -> str:
    results = sorted(folder.glob("results_*.json"))
    if results:
        try:
            data = json.loads(results[-1].read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            data = {}
        name = data.get("model_name") or data.get("config", {}).get("model_args")
        if isinstance(name, str) and name:
            return name
    return folder.name


def _unique_names(runs: list[Run]) -> None:
    seen: dict[str, int] = {}
    for run in runs:
        if run.name in seen:
            seen[run.name] += 1
            run.name = f"{run.name} ({seen[run.name]})"
        else:
            seen[run.name] = 1


def _read_report_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PhasebenchError(f"{path} is not JSON ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise PhasebenchError(
            f"{path} is neither an lm-eval results_<date>.json nor a phasebench report "
            f"(format {REPORT_FORMAT}); pass the lm-eval output folder instead"
        )
    return data


# ----------------------------------------------------------------------------- computing


def build_report(
    runs: Sequence[Run], *, n_boot: int = 1000, n_perm: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Every number the report shows, as a JSON-ready dict.

    Layout: ``{"format", "phasebench_version", "settings", "runs": {run: {"source", "tasks":
    {task: {length: entry}}}}}`` where each entry has the keys of the ``--json`` contract
    (``acc``, ``acc_ci``, ``worst_phase`` ... ``per_phase``; for code also ``margin``,
    ``per_phase_margin``, ``phase_lock_rate``) plus ``n_base``, ``modulus`` and the rest of
    :class:`phasebench.stats.PhaseSummary`.
    """
    out: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "phasebench_version": __version__,
        "settings": {"n_boot": n_boot, "n_perm": n_perm, "seed": seed},
        "runs": {},
    }
    for run in runs:
        tasks: dict[str, dict[str, Any]] = {}
        for task, samples in run.samples.items():
            for (label, length), group in sorted(_group(task, samples).items()):
                entry = _entry(label, length, group, n_boot=n_boot, n_perm=n_perm, seed=seed)
                tasks.setdefault(label, {})[str(length)] = entry
        if not tasks:
            raise PhasebenchError(
                f"{run.source}: no phasebench samples (docs without 'phase'/'base_id'); "
                "are these phasebench tasks?"
            )
        out["runs"][run.name] = {"source": run.source, "tasks": tasks}
    return out


def _group(task: str, samples: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict]]:
    filters = sorted({str(s.get("filter", "none")) for s in samples})
    groups: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for s in samples:
        doc = s.get("doc")
        if not isinstance(doc, dict) or "phase" not in doc or "base_id" not in doc:
            continue
        label = task if len(filters) == 1 else f"{task}/{s.get('filter', 'none')}"
        length = int(doc.get("config_length", doc.get("length", 0)))
        groups[(label, length)].append(s)
    return groups


def _entry(
    task: str, length: int, samples: list[dict], *, n_boot: int, n_perm: int, seed: int
) -> dict[str, Any]:
    moduli = {int(s["doc"]["phase_modulus"]) for s in samples}
    if len(moduli) != 1:
        raise PhasebenchError(
            f"{task} length {length}: samples mix phase moduli {sorted(moduli)}; "
            "report one split per run"
        )
    modulus = moduli.pop()
    if any("acc" not in s for s in samples):
        raise PhasebenchError(
            f"{task} length {length}: samples lack the per-sample 'acc' metric; "
            "use the phasebench task YAMLs"
        )
    units = _pairing_units(samples, modulus)
    phases = [int(s["doc"]["phase"]) for s in samples]
    acc = phase_matrix(units, phases, [_num(s["acc"]) for s in samples], modulus)
    summary = summarize(acc, n_boot=n_boot, n_perm=n_perm, seed=seed).to_dict()
    entry = {"task": task, "length": length, **summary}
    if any("margin" in s for s in samples):
        margins = phase_matrix(units, phases, [_num(s.get("margin")) for s in samples], modulus)
        msum = summarize(margins, binary=False, n_boot=n_boot, n_perm=n_perm, seed=seed)
        m = msum.to_dict()
        entry["margin"] = m["acc"]
        entry["margin_ci"] = m["acc_ci"]
        entry["margin_gap_p_value"] = m["p_value"]
        entry["per_phase_margin"] = [
            {"phase": r["phase"], "margin": r["acc"], "ci": r["ci"], "n": r["n"]}
            for r in m["per_phase"]
        ]
        patterns, pads, rows = _margin_patterns(samples)
        entry["phase_lock_rate"] = {
            str(s): _none_if_nan(phase_lock_rate(patterns, s)) for s in divisors(modulus)[1:]
        }
        entry["phase_lock_rate_flipping"] = {
            str(s): _none_if_nan(phase_lock_rate(patterns, s, require_flip=True))
            for s in divisors(modulus)[1:]
        }
        entry["n_patterns"] = int(len(patterns))
        entry["margin_by_pad"] = {"pad_tokens": pads, "patterns": rows}
    return entry


def _num(value: Any) -> float:
    if value is None:
        return float("nan")
    if isinstance(value, list | tuple):  # some lm-eval versions log [value]
        value = value[0] if value else None
        return _num(value)
    return float(value)


def _pairing_units(samples: list[dict], modulus: int) -> list[Any]:
    """kv/niah: the base item (rendered once at every phase). Code (docs with ``pad_tokens``):
    :func:`phasebench.stats.sweep_units` over (item, padding style) patterns."""
    docs = [s["doc"] for s in samples]
    if not any("pad_tokens" in d for d in docs):
        return [d["base_id"] for d in docs]
    patterns = [f"{d.get('item_id', d['base_id'])}/{d.get('pad_style', '')}" for d in docs]
    pads = [int(d.get("pad_tokens", 0)) for d in docs]
    return sweep_units(patterns, pads, [int(d["phase"]) for d in docs])


def _margin_patterns(samples: list[dict]) -> tuple[np.ndarray, list[int], list[dict]]:
    """Rows = (item, padding style) margin patterns over the padding lengths (sorted), for the
    phase-lock rate and the heat strip (one row per pattern, grouped by style)."""
    rows: dict[tuple, dict[int, float]] = defaultdict(dict)
    for s in samples:
        d = s["doc"]
        key = (str(d.get("pad_style", "")), str(d.get("item_id", d["base_id"])))
        rows[key][int(d.get("pad_tokens", d.get("length", 0)))] = _num(s.get("margin"))
    pads = sorted({p for r in rows.values() for p in r})
    keys = sorted(rows)
    matrix = np.array([[rows[k].get(p, np.nan) for p in pads] for k in keys])
    patterns = [
        {
            "style": style,
            "item": item,
            "margins": [_none_if_nan(float(v)) for v in matrix[i]],
        }
        for i, (style, item) in enumerate(keys)
    ]
    return matrix, pads, patterns


def _none_if_nan(x: float) -> float | None:
    return None if x != x else x


# ----------------------------------------------------------------------------- rendering


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{100 * x:5.1f}"


def _ci(ci: Sequence[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "[  n/a]"
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3g}"


def render_tables(report: dict[str, Any]) -> str:
    """Terminal tables: one block per run, task and length (numbers in points, 0..100)."""
    import pandas as pd

    blocks = []
    for run, body in report["runs"].items():
        for task, lengths in body["tasks"].items():
            for length, e in sorted(lengths.items(), key=lambda kv: int(kv[0])):
                units = "paired units" if "margin" in e else "base items"
                head = (
                    f"{task}  length {length}  ({run}; {e['n_base']} {units} x "
                    f"{e['modulus']} phases)"
                )
                verdict = "significant" if e["significant"] else "not significant"
                period = e["dominant_period"] if e["dominant_period"] is not None else "none"
                worst_i = e["worst_phase_index"]
                lines = [
                    head,
                    f"  average     {_pct(e['acc'])}  {_ci(e['acc_ci'])}",
                    f"  worst phase {_pct(e['worst_phase'])}  {_ci(e['worst_phase_ci'])}"
                    f"  (phase {worst_i})",
                    f"  best phase  {_pct(e['best_phase'])}  (phase {e['best_phase_index']})",
                    f"  gap         {_pct(e['gap'])}  {_ci(e['gap_ci'])}  p = {_p(e['p_value'])}"
                    f" ({verdict}; null gap 95% = {_pct(e['null_gap_q95']).strip()})",
                    f"  period      {period}",
                ]
                if e.get("cochran_q") is not None:
                    lines.append(f"  Cochran Q   {e['cochran_q']:.2f}  p = {_p(e['cochran_p'])}")
                table = {
                    "acc": [_pct(r["acc"]).strip() for r in e["per_phase"]],
                    "ci": [_ci(r["ci"]) for r in e["per_phase"]],
                    "n": [str(r["n"]) for r in e["per_phase"]],
                }
                if "per_phase_margin" in e:
                    m = e["per_phase_margin"]
                    table["margin"] = [
                        "n/a" if r["margin"] is None else f"{r['margin']:+.3f}" for r in m
                    ]
                    lines.append(f"  margin      {_signed(e['margin'])}")
                    rates = ", ".join(
                        f"S={s}: {_pct(v).strip()}" for s, v in e["phase_lock_rate"].items()
                    )
                    lines.append(f"  phase-lock  {rates}  ({e['n_patterns']} patterns)")
                frame = pd.DataFrame(table, index=[f"p{r['phase']}" for r in e["per_phase"]]).T
                lines.append(_indent(frame.to_string()))
                blocks.append("\n".join(lines))
    if len(report["runs"]) > 1:
        blocks.append("comparison\n" + _indent(comparison_frame(report).to_string(index=False)))
    return "\n\n".join(blocks) + "\n"


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def comparison_frame(report: dict[str, Any]):
    """One row per (task, length, run): average, worst, gap, p-value, period (points)."""
    import pandas as pd

    rows = []
    for run, body in report["runs"].items():
        for task, lengths in body["tasks"].items():
            for length, e in lengths.items():
                rows.append(
                    {
                        "task": task,
                        "length": int(length),
                        "run": run,
                        "average": _pct(e["acc"]).strip(),
                        "worst": _pct(e["worst_phase"]).strip(),
                        "gap": _pct(e["gap"]).strip(),
                        "gap CI": _ci(e["gap_ci"]),
                        "p": _p(e["p_value"]),
                        "period": e["dominant_period"] or "none",
                    }
                )
    frame = pd.DataFrame(rows)
    return frame.sort_values(["task", "length", "run"], kind="stable")


def write_json(report: dict[str, Any], path: str | Path) -> Path:
    """Write the report atomically (temp file in the same folder, then rename)."""
    text = json.dumps(report, indent=2, sort_keys=True, allow_nan=False) + "\n"
    return _atomic_write(Path(path), text.encode("utf-8"))


def _atomic_write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_plots(report: dict[str, Any], folder: str | Path) -> list[Path]:
    """Phase-profile plots (and code heat strips) as PNG and SVG, byte-identical per report."""
    from phasebench.plots import plot_report

    return plot_report(report, Path(folder))


# ----------------------------------------------------------------------------- CLI


def register(subparsers: argparse._SubParsersAction) -> None:
    rep = subparsers.add_parser(
        "report",
        help="phase statistics, tables and plots from lm-eval outputs",
        description="Read lm-eval output folders (run with --log_samples) or phasebench report "
        "JSON files; print average, worst phase, gap with intervals, p-value and period.",
    )
    rep.add_argument("paths", nargs="+", metavar="PATH")
    rep.add_argument("--json", dest="json_out", default=None, metavar="FILE")
    rep.add_argument("--plots", default=None, metavar="DIR")
    rep.add_argument("--n-boot", type=int, default=1000)
    rep.add_argument("--n-perm", type=int, default=1000)
    rep.add_argument("--seed", type=int, default=0)
    rep.set_defaults(func=_report_command)

    pw = subparsers.add_parser(
        "power",
        help="base items needed to detect a phase gap",
        description="Base items per split needed so the permutation gap test detects GAP at "
        "average accuracy ACC (simulation; conservative, see phasebench.stats.power_n_base).",
    )
    pw.add_argument("--acc", type=float, required=True, help="average accuracy, e.g. 0.9")
    pw.add_argument("--gap", type=float, required=True, help="best - worst, e.g. 0.06")
    pw.add_argument("--modulus", type=int, default=8)
    pw.add_argument("--alpha", type=float, default=0.05)
    pw.add_argument("--power", type=float, default=0.8)
    pw.set_defaults(func=_power_command)


def _report_command(args: argparse.Namespace) -> int:
    runs, reports = load_runs(args.paths)
    report = merge_reports(
        [build_report(runs, n_boot=args.n_boot, n_perm=args.n_perm, seed=args.seed)]
        if runs
        else [],
        reports,
    )
    print(render_tables(report), end="")
    if args.json_out:
        write_json(report, args.json_out)
    if args.plots:
        for path in write_plots(report, args.plots):
            print(f"wrote {path}")
    return 0


def merge_reports(
    computed: Iterable[dict[str, Any]], loaded: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    """One report holding the runs of several (computed now or read back from JSON)."""
    merged: dict[str, Any] | None = None
    for rep in [*computed, *loaded]:
        if merged is None:
            merged = {**rep, "runs": dict(rep["runs"])}
            continue
        for name, body in rep["runs"].items():
            key, i = name, 1
            while key in merged["runs"]:
                i += 1
                key = f"{name} ({i})"
            merged["runs"][key] = body
    if merged is None:
        raise PhasebenchError("nothing to report; pass an lm-eval output folder")
    return merged


def _power_command(args: argparse.Namespace) -> int:
    n = power_n_base(args.acc, args.gap, args.modulus, args.alpha, args.power)
    print(
        f"{n} base items ({n * args.modulus} prompts at modulus {args.modulus}) detect a gap of "
        f"{100 * args.gap:.1f} points at average accuracy {100 * args.acc:.1f} with "
        f"{100 * args.power:.0f}% power (alpha {args.alpha}; simulated, conservative: one best "
        "and one worst phase, items independent across phases)"
    )
    return 0
