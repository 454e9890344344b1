"""The statistics table: every declared statistic reaches lm-eval's results, the report JSON and
its tables, every leaderboard export and the site's board, model and glossary pages. Shown with a
throwaway statistic registered by a module written here (``median phase``, the median of the
per-phase accuracies), which no reader names: if any kept its own list, it would miss this one."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from phasebench import formatting, metrics
from phasebench.cli import main
from phasebench.lmeval.tasks import COMPACT_METRICS, metric_keys, phase_metric_names
from support.lmeval import lm_eval, offline_env, outputs

#: The throwaway statistic, as a module of its own (imported here and inside lm-eval's process).
THROWAWAY = """
import numpy as np
from phasebench import metrics


def median_phase(data):
    with np.errstate(invalid="ignore"):
        profile = np.nanmean(data.matrix, axis=0)
    return float(np.median(profile)), (float(np.min(profile)), float(np.max(profile)))


STATISTIC = metrics.register(metrics.Statistic(
    "median_phase", "median phase", "%", metric="acc_median_phase", metric_set="compact",
    interval="median_phase_range", compute=median_phase,
    help="the median of the per-phase accuracies (a throwaway statistic of the tests)",
))
"""


@pytest.fixture
def throwaway(tmp_path):
    """Register the throwaway statistic for one test (and write its module for subprocesses)."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "throwaway_statistic.py").write_text(THROWAWAY)
    spec = importlib.util.spec_from_file_location(
        "throwaway_statistic", folder / "throwaway_statistic.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        yield module.STATISTIC, folder
    finally:
        metrics._REGISTRY.remove(module.STATISTIC)
        sys.modules.pop("throwaway_statistic", None)


def test_declarations_are_consistent():
    declared = metrics.statistics()
    keys = [s.key for s in declared]
    assert len(keys) == len(set(keys))
    names = [s.metric for s in declared if s.metric]
    assert len(names) == len(set(names))
    for stat in declared:
        assert stat.shown_with is None or stat.shown_with in keys, stat
        assert stat.help, stat.key  # the legend and the glossary explain every statistic
    # the compact set: average, worst phase plain and cross-fitted, gap and its p-value
    assert sorted(COMPACT_METRICS) == sorted(
        ["acc", "acc_lowest_phase", "acc_worst_phase_crossfit", "phase_gap", "phase_gap_p_value"]
    )
    assert "margin_lowest_phase" in phase_metric_names("code", 8, "compact")


def test_register_refuses_a_taken_name_or_no_function():
    from phasebench.errors import StatsError

    with pytest.raises(StatsError, match="already declared"):
        metrics.register(metrics.Statistic("gap", "gap", "pp", compute=lambda d: 0.0))
    with pytest.raises(StatsError, match="compute"):
        metrics.register(metrics.Statistic("new_one", "new", "%"))
    with pytest.raises(StatsError, match="cannot rank"):
        metrics.register(
            metrics.Statistic("new_one", "new", "%", ranks=True, compute=lambda d: 0.0)
        )


def test_every_built_in_statistic_is_declared_with_its_computation():
    """Each built-in statistic names the function of phasebench.stats that computes it (or has
    its own ``compute``), that function exists, and a summary of scored samples holds a value
    for every one (a margin family's, both axes' where both ran)."""
    import inspect

    from phasebench.stats import summarize_samples

    for stat in metrics.BUILTIN:
        assert (stat.compute is None) != (stat.computed_by is None), stat.key
        function = stat.computation()
        assert callable(function), stat.key
        if stat.computed_by is not None:
            assert stat.computed_by.startswith("phasebench.stats."), stat.key
            assert inspect.getmodule(function).__name__ == stat.computed_by.rpartition(".")[0]
    rng = np.random.default_rng(0)
    right = rng.random((8, 4, 4)) < 0.5  # one 0/1 outcome per (base item, phase, length phase)
    records = [
        (512, 4, f"b{b}", pad % 4, float(right[b, pad % 4, q]), float(rng.normal()), pad, q)
        for b in range(8)
        for pad in range(8)  # a sweep of two periods: its phase-lock rate at stride 4
        for q in range(4)
    ]
    summary = summarize_samples(records, n_boot=20, n_perm=20)
    missing = [s.key for s in metrics.BUILTIN if s.value(summary) is None]
    # a period is named only for a significant gap, the weak phase is None for a flat profile
    assert set(missing) <= {"dominant_period", "length_period", "lowest_phase_index"}, missing


def test_a_registered_statistic_reaches_the_report_and_exports(
    throwaway, tmp_path, submission_rows, regen_cache
):
    from phasebench.leaderboard.render import build_site
    from phasebench.leaderboard.score import score
    from phasebench.leaderboard.validate import validate_all
    from support.submissions import TASKS, make_submission

    stat, _ = throwaway
    make_submission(tmp_path / "subs", submission_rows, accuracy=[1, 1, 0, 1] * 2)
    # phasebench report over the submission's own sample logs: JSON and terminal table
    (folder,) = (tmp_path / "subs").glob("*/*")
    report = tmp_path / "report.json"
    assert main(["report", str(folder), "--json", str(report), "--n-boot", "50",
                 "--n-perm", "50"]) == 0  # fmt: skip
    (body,) = json.loads(report.read_text())["runs"].values()
    (lengths,) = body["tasks"].values()
    (entry,) = lengths.values()
    profile = [p["acc"] for p in entry["per_phase"]]
    assert entry["median_phase"] == pytest.approx(float(np.median(profile)))
    assert entry["median_phase_range"] == [min(profile), max(profile)]
    # the leaderboard: row, JSON, CSV, parquet, site table, model page, glossary
    outcome = validate_all(tmp_path / "subs", tasks=TASKS, cache=regen_cache)
    board = score(outcome)
    (row,) = board["rows"]
    assert row["median_phase"] == entry["median_phase"]
    site = tmp_path / "site"
    build_site(board, site)
    saved = json.loads((site / "leaderboard.json").read_text())
    assert saved["rows"][0]["median_phase"] == entry["median_phase"]
    for table in (
        pd.read_csv(site / "leaderboard.csv"),
        pd.read_parquet(site / "leaderboard.parquet"),
    ):
        assert table["median_phase"].iloc[0] == pytest.approx(entry["median_phase"])
        assert table["median_phase_hi"].iloc[0] == pytest.approx(max(profile))
    # the site's pages read the same table: a column of the board, a line of the model page,
    # an entry of the glossary, each with the label, the unit-driven value and the help text
    from phasebench.leaderboard.render import board_page

    shown = formatting.format_value(stat, entry["median_phase"])
    board_html = (site / board_page(row["board"])).read_text()
    assert 'data-key="median_phase"' in board_html and f"<b>{shown}</b>" in board_html
    model_html = (site / row["page"]).read_text()
    assert 'href="../index.html#g-median_phase">median phase</a>' in model_html
    assert f"<b>{shown}</b>" in model_html
    index = (site / "index.html").read_text()
    assert 'id="g-median_phase"' in index and "a throwaway statistic of the tests" in index


def test_the_terminal_table_shows_a_registered_statistic(throwaway, tmp_path, submission_rows):
    from support.submissions import make_submission

    make_submission(tmp_path / "subs", submission_rows, accuracy=[1, 1, 0, 1] * 2)
    (folder,) = (tmp_path / "subs").glob("*/*")
    from phasebench.report import build_report, load_runs, render_tables

    runs, _ = load_runs([folder])
    text = render_tables(build_report(runs, n_boot=20, n_perm=20), full_legend=True)
    assert "  median phase" in text and "median phase: the median" in text


@pytest.mark.slow
def test_a_registered_statistic_reaches_lm_eval_results(throwaway, tiny_llama, tmp_path):
    """The real lm-eval CLI, in a process that imports the throwaway module first."""
    stat, plugin = throwaway
    env = offline_env(tmp_path / "cache")
    env["PYTHONPATH"] = f"{plugin}:{env['PYTHONPATH']}"
    launcher = tmp_path / "lm_eval_with_statistic.py"
    launcher.write_text(
        "import runpy, sys\nimport throwaway_statistic  # registers the statistic\n"
        "sys.argv[0] = 'lm_eval'\nrunpy.run_module('lm_eval', run_name='__main__')\n"
    )
    metadata = {"max_seq_lengths": [128], "phase_modulus": 4, "n_base": 8, "metrics": "full"}
    # the control, without the statistic: `phasebench eval` (lm-eval's CLI, not indexing
    # lm-eval's own task files); then the same run through the launcher
    proc = lm_eval(tmp_path, f"pretrained={tiny_llama},dtype=float32", "phasebench_kv",
                   metadata, env=env, wrapper=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run_launcher(launcher, tmp_path, tiny_llama, metadata, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results, samples = outputs(tmp_path / "with")
    table = results["results"]["phasebench_kv"]
    assert stat.metric in [k.split(",")[0] for k in table]
    keys = metric_keys("kv", 4, [128], "full")
    assert "acc_median_phase@128" in keys and "acc_median_phase_ci_low@128" in keys
    for key in ("acc_median_phase", "acc_median_phase@128", "acc_median_phase_ci_high@128"):
        assert isinstance(table[f"{key},none"], float), key
    plain, _ = outputs(tmp_path / "out")
    assert not any(k.startswith(stat.metric) for k in plain["results"]["phasebench_kv"])
    # and the number is the report's
    per_phase = {}
    for s in samples["phasebench_kv"]:
        per_phase.setdefault(s["doc"]["phase"], []).append(s["acc"])
    profile = [np.mean(per_phase[p]) for p in sorted(per_phase)]
    assert table["acc_median_phase,none"] == pytest.approx(float(np.median(profile)))


def _run_launcher(launcher: Path, work: Path, model: Path, metadata: dict, env: dict):
    import subprocess

    from support.lmeval import ROOT

    command = [sys.executable, str(launcher), "--model", "hf", "--model_args",
               f"pretrained={model},dtype=float32", "--tasks", "phasebench_kv",
               "--include_path", str(ROOT / "tasks"), "--metadata", json.dumps(metadata),
               "--device", "cpu", "--batch_size", "8", "--log_samples", "--output_path",
               "with", "--seed", "0"]  # fmt: skip
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                          timeout=1500)  # fmt: skip
