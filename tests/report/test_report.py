"""phasebench report / power: reading lm-eval sample logs (a real lm_eval run with a tiny random
model, and simulated logs with known ground truth), the --json contract, deterministic plots,
comparison of runs, and one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from phasebench.cli import main
from phasebench.stats import power_n_base
from support.lmeval import lm_eval

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_KEYS = {
    "acc",
    "acc_ci",
    "lowest_phase",
    "lowest_phase_ci",
    "lowest_phase_index",
    "worst_phase_crossfit",
    "worst_phase_crossfit_ci",
    "best_phase",
    "gap",
    "gap_ci",
    "p_value",
    "dominant_period",
    "per_phase",
}
CODE_KEYS = {"margin", "per_phase_margin", "margin_lowest_phase", "margin_sweeps"}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("simulated")
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "simulate_samples.py"), str(out)],
        check=True,
        env=_env(),
        capture_output=True,
    )
    return out


@pytest.fixture(scope="module")
def simulated_report(simulated, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    args = ["report", str(simulated), "--json", str(out / "r.json"), "--plots", str(out / "p")]
    args += ["--n-boot", "300", "--n-perm", "300"]
    assert main(args) == 0
    return out, json.loads((out / "r.json").read_text())


def _direct_per_phase(samples_file: Path, metric: str = "acc") -> dict[int, tuple[float, int]]:
    """Per-phase mean of a metric straight from the jsonl, for kv rows (one per phase/base)."""
    values = defaultdict(list)
    for line in samples_file.read_text().splitlines():
        sample = json.loads(line)
        values[sample["doc"]["phase"]].append(sample[metric])
    return {p: (sum(v) / len(v), len(v)) for p, v in values.items()}


def _assert_per_phase(rows: list[dict], direct: dict[int, tuple[float, int]]) -> None:
    assert sorted(r["phase"] for r in rows) == sorted(direct)
    for r in rows:
        assert (r["acc"], r["n"]) == pytest.approx(direct[r["phase"]])


def test_json_has_the_contract_keys_per_task_and_length(simulated_report):
    _, report = simulated_report
    assert set(report["runs"]) == {"SIMULATED-flat", "SIMULATED-stride4"}
    for body in report["runs"].values():
        assert set(body["tasks"]) == {"phasebench_kv", "phasebench_code"}
        kv = body["tasks"]["phasebench_kv"]["4096"]
        code = body["tasks"]["phasebench_code"]["2048"]  # grouped by config_length
        assert CONTRACT_KEYS <= set(kv) and not CODE_KEYS & set(kv)
        assert CONTRACT_KEYS | CODE_KEYS <= set(code)
        assert set(kv["per_phase"][0]) == {"phase", "acc", "ci", "n"}
        assert len(kv["acc_ci"]) == 2 and len(kv["gap_ci"]) == 2


def test_per_phase_numbers_match_the_sample_log(simulated, simulated_report):
    _, report = simulated_report
    for run in ("SIMULATED-flat", "SIMULATED-stride4"):
        (log,) = (simulated / run).glob("samples_phasebench_kv_*.jsonl")
        direct = _direct_per_phase(log)
        rows = report["runs"][run]["tasks"]["phasebench_kv"]["4096"]["per_phase"]
        _assert_per_phase(rows, direct)


def test_simulated_ground_truth_is_recovered(simulated_report):
    _, report = simulated_report
    sens = report["runs"]["SIMULATED-stride4"]["tasks"]
    flat = report["runs"]["SIMULATED-flat"]["tasks"]
    kv = sens["phasebench_kv"]["4096"]
    # True profile: 90% except 55% at phases 3 and 7 (true gap 35 points, period 4).
    assert kv["p_value"] < 0.01 and kv["dominant_period"] == 4
    assert kv["lowest_phase_index"] in (3, 7)
    assert kv["gap_ci"][0] <= 0.35 <= kv["gap_ci"][1]
    assert flat["phasebench_kv"]["4096"]["dominant_period"] is None
    assert flat["phasebench_kv"]["4096"]["p_value"] > 0.05
    # Code: margins flip sign at one padding length in four.
    code = sens["phasebench_code"]["2048"]
    assert code["margin_sweeps"]["phase_lock_rate"] == {"2": 0.0, "4": 1.0, "8": 1.0}
    assert code["dominant_period"] == 4
    assert [r["margin"] < 0 for r in code["per_phase_margin"]] == [p % 4 == 3 for p in range(8)]
    flat_code = flat["phasebench_code"]["2048"]
    assert (
        flat_code["margin_sweeps"]["phase_lock_rate_flipping"]["4"] == 0.0
    )  # always right: no flips
    assert flat_code["margin"] > 0


def test_terminal_table_and_comparison(simulated, capsys):
    assert main(["report", str(simulated), "--n-boot", "100", "--n-perm", "100"]) == 0
    out = capsys.readouterr().out
    assert "phasebench_kv  length 4096  (SIMULATED-stride4; 64 base items x 8 phases)" in out
    assert "worst phase" in out and "gap" in out and "period      4" in out
    assert "phase-lock  S=2: 0.0, S=4: 100.0, S=8: 100.0" in out
    # several runs: first one table per task and length, ranked, its finding first
    kv = next(b for b in out.split("\n\n") if b.startswith("phasebench_kv  length 4096  (2 runs"))
    head, finding, columns, first, second = kv.splitlines()
    assert head == "phasebench_kv  length 4096  (2 runs, ranked by worst phase)", head
    assert finding.startswith("  finding: SIMULATED-stride4, gap 40.6 [") and (
        finding.endswith(", p = 0.0099, period 4")  # the floor of 100 permutations
    ), finding
    assert columns.split() == ["run", "average", "worst", "phase", "gap", "[95%", "CI]", "p",
                               "period", "phase", "effect"]  # fmt: skip
    assert first.split()[0] == "SIMULATED-flat" and first.split()[-1] == "no", first
    assert second.split()[0] == "SIMULATED-stride4" and second.split()[-1] == "finding", second
    # no line of the report is wider than 100 columns (before: the comparison, 236)
    assert max(map(len, out.splitlines())) <= 100, max(out.splitlines(), key=len)


def test_runs_keep_the_order_given_and_the_comparison_ranks_them(simulated, capsys):
    """Before, runs were sorted by name. The blocks keep the order the runs were read in; the
    comparison ranks them by the ranking statistic (the flat run first: its worst phase is
    higher), whatever order they came in."""
    from phasebench.report import build_report, load_runs, render_tables

    runs, _ = load_runs([str(simulated)])
    texts = []
    for order in (runs, runs[::-1]):
        report = build_report(order, n_boot=50, n_perm=50)
        text = render_tables(report)
        blocks = [b.splitlines()[0] for b in text.split("\n\n") if "(SIMULATED-" in b]
        names = [b.split("(")[1].split(";")[0] for b in blocks]
        given = [r.name for r in order]
        assert list(dict.fromkeys(names)) == given, (names, given)
        kv = next(b for b in text.split("\n\n") if b.startswith("phasebench_kv  length 4096  (2"))
        texts.append(kv.splitlines()[2:])
    assert texts[0] == texts[1] and texts[0][1].split()[0] == "SIMULATED-flat", texts


def test_the_legend_explains_the_marks_the_tables_print(simulated_report, capsys):
    """The legend's words against the table's marks: each mark it explains (quoted) is one the
    tables print, in the same words; it never speaks of a mark they do not print (before: gaps
    "marked *", none was; "—" for no period, the table printed "none"). Short by default,
    every statistic defined with ``--legend full``."""
    import re

    from phasebench import metrics

    demo = str(ROOT / "docs" / "figures" / "demo-report.json")  # rendered, not recomputed
    assert main(["report", demo]) == 0
    short = capsys.readouterr().out
    assert main(["report", demo, "--legend", "full"]) == 0
    full = capsys.readouterr().out
    assert main(["report", str(simulated_report[0] / "r.json")]) == 0  # 300 permutations
    other = capsys.readouterr().out
    assert "p < 0.001" not in other.rpartition("\nlegend: ")[0]
    assert '"p < 0.001"' not in other.rpartition("\nlegend: ")[2]  # not printed: not explained
    for out in (short, full):
        tables, _, legend = out.rpartition("\nlegend: ")
        marks = re.findall(r'"([^"]+)"', legend)
        assert {"p < 0.001", "significant", "not significant", "none", "phase effect",
                "finding"} <= set(marks), marks  # fmt: skip
        for mark in marks:
            assert mark in tables, f"the legend explains {mark!r}, which no table prints"
        for symbol in ("—", "*"):
            assert symbol not in legend or symbol in tables, symbol
        assert "marked *" not in legend, legend
    assert len(short.rpartition("\nlegend: ")[2].splitlines()) <= 8
    for stat in metrics.statistics():
        if stat.terminal and stat.help and stat.label in ("worst phase", "period", "Cochran Q"):
            assert f"  {stat.label}: " in full and f"  {stat.label}: " not in short, stat.key
    assert "--legend full" in short


def test_plot_titles_write_p_as_the_tables_do(simulated_report):
    """Before, a plot's title said "p = 0.000999" where the table said "p < 0.001": both come
    from phasebench.formatting now."""
    from phasebench import plots
    from phasebench.report import render_tables

    _, report = simulated_report
    text = render_tables(report)
    for run, body in report["runs"].items():
        for task, lengths in body["tasks"].items():
            for length, e in lengths.items():
                title = plots._profile_figure(run, task, length, e)._suptitle.get_text()
                p = title.split("pts (")[1].split(")")[0]
                assert p.startswith("p ") and f"; {p};" in text, (title, p)


def test_report_json_renders_back_without_recomputing(simulated_report, capsys):
    out, report = simulated_report
    assert main(["report", str(out / "r.json")]) == 0
    again = capsys.readouterr().out
    from phasebench.report import render_tables

    assert again == render_tables(report)


def test_a_format_1_report_still_renders(simulated_report, tmp_path, capsys):
    """Format 1 filed the margin sweeps under the code family's name; read back, such a file
    renders as the current one does."""
    _, report = simulated_report
    old = json.loads(json.dumps(report))
    old["format"] = "phasebench-report/1"
    for body in old["runs"].values():
        entry = body["tasks"]["phasebench_code"]["2048"]
        entry["code"] = entry.pop("margin_sweeps")
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert main(["report", str(tmp_path / "old.json")]) == 0
    from phasebench.report import render_tables

    assert capsys.readouterr().out == render_tables(report)
    assert "phase-lock" in render_tables(report)


def test_a_format_2_report_reads_with_todays_names(simulated_report, tmp_path, capsys):
    """Format 2 filed the lowest phase (the plain minimum) as ``worst_phase``; read back, such a
    file renders as the current one does, the plain minimum under its name of today."""
    from phasebench import metrics

    _, report = simulated_report
    old = json.loads(json.dumps(report))
    old["format"] = "phasebench-report/2"
    for body in old["runs"].values():
        for by_length in body["tasks"].values():
            for entry in by_length.values():
                for new_key, old_key in [(n, o) for o, n in metrics.RENAMED_SINCE_FORMAT_2.items()]:
                    if new_key in entry:
                        entry[old_key] = entry.pop(new_key)
    assert "worst_phase" in json.dumps(old) and '"lowest_phase"' not in json.dumps(old)
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert main(["report", str(tmp_path / "old.json")]) == 0
    from phasebench.report import render_tables

    assert capsys.readouterr().out == render_tables(report)
    assert "lowest phase" in render_tables(report)


def test_plots_are_png_and_svg_and_byte_identical(simulated, simulated_report, tmp_path):
    out, _ = simulated_report
    first = sorted(p.name for p in (out / "p").iterdir())
    assert "SIMULATED-stride4__phasebench_kv__4096.profile.png" in first
    assert "SIMULATED-stride4__phasebench_code__2048.margin.svg" in first
    assert len(first) == 12  # 2 runs x (kv profile + code profile + code strip) x 2 formats
    args = ["report", str(simulated), "--plots", str(tmp_path), "--n-boot", "300"]
    assert main([*args, "--n-perm", "300"]) == 0
    for name in first:
        assert (tmp_path / name).read_bytes() == (out / "p" / name).read_bytes(), name
    assert (out / "p" / first[0]).read_bytes()[:4] == b"\x89PNG"


def test_plots_without_matplotlib_are_one_line_and_write_nothing(simulated, tmp_path):
    """matplotlib is an extra: where it cannot be imported (``sys.modules[...] = None`` makes
    every import of it fail, as on a machine without it), ``report --plots`` says which extra to
    install in one line (exit 3: the machine lacks a package), and neither the JSON nor a plot
    is written."""
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from phasebench.cli import main\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    args = ["report", str(simulated), "--json", str(tmp_path / "r.json"), "--plots",
            str(tmp_path / "p"), "--n-boot", "0", "--n-perm", "0"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=_env(), capture_output=True, text=True
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "phasebench[plots]" in proc.stderr
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "p").exists()


def test_power_command_prints_the_library_answer(capsys):
    assert main(["power", "--acc", "0.9", "--gap", "0.06", "--modulus", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{power_n_base(0.9, 0.06, 8)} base items")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["report", "/nonexistent/folder"], "does not exist"),
        (["power", "--acc", "0.9", "--gap", "0.3", "--modulus", "8"], "leaves 0..1"),
        (["power", "--acc", "0.9", "--gap", "0.05", "--modulus", "1"], "modulus"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("phasebench: error:")


def test_folder_without_samples_and_foreign_json_are_refused(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "--log_samples" in capsys.readouterr().err
    foreign = tmp_path / "other.json"
    foreign.write_text('{"a": 1}')
    assert main(["report", str(foreign)]) == 2
    assert "phasebench report" in capsys.readouterr().err


def test_newest_samples_file_per_task_wins(simulated, tmp_path, capsys):
    run = tmp_path / "model"
    shutil.copytree(simulated / "SIMULATED-flat", run)
    (old,) = run.glob("samples_phasebench_kv_*.jsonl")
    stale = run / "samples_phasebench_kv_2020-01-01T00-00-00.000000.jsonl"
    stale.write_text(old.read_text().replace('"acc": 1.0', '"acc": 0.0'))
    args = ["report", str(run), "--json", str(tmp_path / "r.json"), "--n-boot", "0"]
    assert main([*args, "--n-perm", "0"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["runs"]["SIMULATED-flat"]["tasks"]["phasebench_kv"]["4096"]["acc"] > 0.5


# ----------------------------------------------------------------------------- real lm-eval


TASK_YAML = """\
task: phasebench_report_probe
dataset_path: parquet
dataset_kwargs:
  data_files:
    test: {parquet}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 2
  do_sample: false
process_results: !function probe_metric.process_results
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""

# A random model never answers a kv question; this probe metric (is the generated text's
# length even?) varies from prompt to prompt, so the report gets non-degenerate phase data
# through lm-eval's real per-sample logging.
PROBE_METRIC = """\
def process_results(doc, results):
    return {"acc": float(len(results[0]) % 2 == 0)}
"""


@pytest.mark.slow
def test_report_reads_a_real_lm_eval_run(tmp_path, capsys, tiny_llama):
    split = tmp_path / "split"
    gen = ["generate", "kv", "--length", "1024", "--n-base", "16", "--out", str(split)]
    assert main([*gen, "--quiet"]) == 0
    capsys.readouterr()
    (parquet,) = (split / "kv_1024").glob("*.parquet")
    model = tiny_llama

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "probe.yaml").write_text(TASK_YAML.format(parquet=parquet))
    (tasks / "probe_metric.py").write_text(PROBE_METRIC)
    done = lm_eval(tmp_path, f"pretrained={model},dtype=float32", "phasebench_report_probe", {},
                   include_path=str(tasks), out="lmeval", batch_size=16)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "lmeval"

    (log,) = out.rglob("samples_phasebench_report_probe_*.jsonl")
    assert main(["report", str(out), "--json", str(tmp_path / "r.json"), "--n-boot", "200"]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    (run,) = report["runs"]
    # lm-eval's model_name from results_<date>.json, a local path named by its last part
    assert run == model.name
    entry = report["runs"][run]["tasks"]["phasebench_report_probe"]["1024"]
    assert entry["n_base"] == 16 and entry["modulus"] == 8
    direct = _direct_per_phase(log)
    _assert_per_phase(entry["per_phase"], direct)
    assert all(n == 16 for _, n in direct.values())
    assert "phasebench_report_probe  length 1024" in printed


def test_a_results_file_or_a_samples_file_selects_that_run(simulated, tmp_path):
    from phasebench.report import load_runs

    (results,) = (simulated / "SIMULATED-flat").glob("results_*.json")
    (kv_log,) = (simulated / "SIMULATED-flat").glob("samples_phasebench_kv_*.jsonl")
    runs, reports = load_runs([results])
    assert [r.name for r in runs] == ["SIMULATED-flat"] and not reports
    assert sorted(runs[0].samples) == ["phasebench_code", "phasebench_kv"]
    runs, _ = load_runs([kv_log])
    assert sorted(runs[0].samples) == ["phasebench_kv"]
    assert len(runs[0].samples["phasebench_kv"]) == 64 * 8


def test_a_margin_interval_is_printed_in_its_own_unit():
    """A margin is in nats and so is its interval (once printed in points: +0.393 [36.1, 42.5])."""
    from phasebench import metrics
    from phasebench.formatting import TERMINAL, format_interval

    by_key = {s.key: s for s in metrics.statistics()}
    assert format_interval(by_key["margin"], [0.361, 0.425], style=TERMINAL) == "[+0.361, +0.425]"
    assert format_interval(by_key["acc"], [0.5, 0.75], style=TERMINAL) == "[50.0, 75.0]"


@pytest.mark.parametrize("off", [2, 127])
def test_a_run_fed_off_its_labels_is_not_a_measurement(tmp_path, capsys, submission_rows, off):
    """The server's witness disagrees with the label for ``off`` of 128 prompts: two are left
    out and counted (a small share), 127 leave no measurement: the report says so first and
    exits non-zero instead of printing statistics on the one that agrees."""
    from support.submissions import make_submission, write_lmeval

    rows = submission_rows[:128]
    folder = make_submission(tmp_path / "run", rows, accuracy=[1.0] * 8)
    samples = next(folder.glob("samples_*"))
    records = [json.loads(line) for line in samples.read_text().splitlines()][: len(rows)]
    assert len(records) == 128
    for i, rec in enumerate(records):
        label = rec["doc"]["length"]
        rec["served_verified"] = [label, label + 1 if i < off else label]
    for path in [*folder.glob("samples_*"), *folder.glob("results_*")]:
        path.unlink()
    write_lmeval(folder, records)
    code = main(["report", str(folder), "--n-boot", "20", "--n-perm", "20"])
    out, err = capsys.readouterr()
    if off == 2:
        assert code == 0 and "126/128 agree with the label; 2 disagree and are left out" in out
        return
    assert code != 0 and out == ""
    first = err.splitlines()[0]
    assert first.startswith("phasebench: error: not a measurement:"), err
    assert "disagrees with the label for 127 of 128" in first


def test_a_run_and_its_packed_submission_are_read_once(tmp_path, submission_rows, capsys):
    """``phasebench report`` on the demo's folder read each model twice (its lm-eval run and
    its packed submission) and listed it twice, without a word; the same samples are now read
    once, with a warning naming both folders. Another model's run is still its own."""
    from phasebench.leaderboard.pack import pack
    from support.submissions import make_submission

    run = make_submission(tmp_path / "lm_eval", submission_rows, model="acme/m")
    pack(run, tmp_path / "submissions" / "acme__m" / "rev")
    make_submission(tmp_path / "lm_eval", submission_rows, model="acme/other", seed=1,
                    accuracy=[0.5] * 8)  # fmt: skip
    from phasebench.report import SameRunWarning

    with pytest.warns(SameRunWarning) as caught:
        assert main(["report", str(tmp_path), "--n-boot", "20", "--n-perm", "20"]) == 0
    out = capsys.readouterr().out
    # a block per run, after the comparison of the two
    assert out.count("phasebench_kv  length 128  (") == 3, out
    assert out.count("phasebench_kv  length 128  (2 runs, ranked by worst phase)") == 1, out
    (warning,) = [str(w.message) for w in caught]
    assert "submissions/acme__m/rev holds a packed copy of the samples in" in warning, warning
    assert "lm_eval/acme__m" in warning, warning


@pytest.mark.parametrize(
    "saved", ["docs/figures/demo-report.json", "benchmarks/results/demo-diff.json"]
)
def test_no_report_line_is_wider_than_100_columns(saved, capsys):
    """The README's reports, rendered again: before, the comparison's lines reached 236
    columns, the per-phase tables 118 and the difference's heading 176."""
    for legend in ("short", "full"):
        assert main(["report", str(ROOT / saved), "--legend", legend]) == 0
        out = capsys.readouterr().out
        assert max(map(len, out.splitlines())) <= 100, max(out.splitlines(), key=len)
