"""``phasebench report``: per-phase statistics, tables, JSON and plots from lm-eval outputs.

Compute -> JSON -> render. :func:`build_report` reads per-sample logs and computes every number
through :func:`phasebench.stats.summarize_samples` (the function the lm-eval aggregates and
the leaderboard use); the terminal tables, the JSON file and the plots are all rendered from that
one report dict, and a report JSON given back is rendered without recomputing anything.

What is read: lm-eval writes ``<output_path>/<model_name_sanitized>/results_<date>.json`` and,
with ``--log_samples``, ``samples_<task>_<date>.jsonl`` next to it (``.jsonl.gz`` once packed for
the leaderboard). Each sample keeps the split row in ``doc`` (``phase``, ``base_id``,
``phase_modulus``, ``length``; for code ``config_length``, ``item_id``, ``pad_style``,
``pad_tokens``) and the per-sample metrics (``acc``; ``margin`` for code) as top-level keys. A
folder holding several model folders is several runs; several runs give a comparison table, and
two runs of one split their paired difference in gap and worst phase (:func:`difference_report`,
``phasebench report A B --diff``).

A package by job: ``_read`` (runs and report JSONs found and read back), ``_compute`` (every
number, through :func:`phasebench.stats.summarize_samples`), ``_difference`` (two runs of one
split compared), ``_render`` (the terminal tables, the legend, the comparison frame) and
``_write`` (the JSON file and the plots). Import from ``phasebench.report``.
"""

from phasebench.report._compute import build_report, merge_reports
from phasebench.report._difference import difference_report
from phasebench.report._read import (
    REPORT_FORMAT,
    Run,
    SameRunWarning,
    load_runs,
    runs_from_files,
)
from phasebench.report._render import comparison_frame, legend, render_tables
from phasebench.report._write import write_json, write_plots

__all__ = [
    "REPORT_FORMAT",
    "Run",
    "SameRunWarning",
    "build_report",
    "comparison_frame",
    "difference_report",
    "legend",
    "load_runs",
    "merge_reports",
    "render_tables",
    "runs_from_files",
    "write_json",
    "write_plots",
]
