"""One computation per number: the same sample logs give the same figures in lm-eval's results,
in ``phasebench report`` and on the leaderboard, for kv, niah and code.

The logs are the committed SmolLM2-135M-Instruct example submission: real lm-eval runs (kv and
niah at 512 tokens, modulus 4; code at modulus 8), whose results files hold the aggregates lm-eval
computed when the runs were made. ``phasebench report`` reads the same (packed) sample files; the
leaderboard validates the submission, re-scores every response and scores it.

One statistic, one name: the plain minimum is ``lowest_phase`` (lm-eval ``acc_lowest_phase``) and
the cross-fitted value ``worst_phase_crossfit`` (lm-eval ``acc_worst_phase_crossfit``) in the
terminal, the report JSON, every export and the site; the committed results files, written when
lm-eval called the plain minimum ``acc_worst_phase``, are read through the rename; they also
predate the gap's interval from its permutation test, so their gap p-value and interval are
compared with the earlier rule's (``earlier_gap_rule``, as the leaderboard's check does), every
other number with today's."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from phasebench import formatting, metrics
from phasebench.cli import main
from phasebench.leaderboard.render import build_site
from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all
from phasebench.stats.summary import earlier_gap_rule

ROOT = Path(__file__).resolve().parent.parent
#: The plain SmolLM2 run (kv, niah and code); the ``+kvpress-*`` variants hold niah only.
SUBMISSION = next(
    p
    for p in sorted((ROOT / "leaderboard" / "submissions").glob("HuggingFaceTB__SmolLM2*/*"))
    if "+" not in p.name
)
TASKS = {"phasebench_kv": "512", "phasebench_niah": "512", "phasebench_code": "0"}

#: lm-eval metric name -> (report/leaderboard key, index into an interval or None)
FIELDS = {
    "acc": ("acc", None),
    "acc_ci_low": ("acc_ci", 0),
    "acc_ci_high": ("acc_ci", 1),
    "acc_lowest_phase": ("lowest_phase", None),
    "acc_best_phase": ("best_phase", None),
    "phase_gap": ("gap", None),
    "phase_gap_ci_low": ("gap_ci", 0),
    "phase_gap_ci_high": ("gap_ci", 1),
    "phase_gap_p_value": ("p_value", None),
}
#: The names the committed results hold by the earlier rule (the gap's p-value and interval).
EARLIER = {"phase_gap_ci_low", "phase_gap_ci_high", "phase_gap_p_value"}


@pytest.fixture(scope="module")
def three_views(tmp_path_factory):
    work = tmp_path_factory.mktemp("one-number")
    lm_eval = {}
    for path in SUBMISSION.glob("results_*.json"):
        for task, values in json.loads(path.read_text())["results"].items():
            # the committed runs predate the rename: each name read as it is called now
            lm_eval[task] = {
                metrics.current_metric(k.partition("@")[0]) + "@" + k.partition("@")[2]
                if "@" in k
                else k: v
                for k, v in values.items()
            }
    # phasebench report over the very sample files (one model folder)
    run = work / "SmolLM2"
    run.mkdir()
    for path in SUBMISSION.glob("samples_*.jsonl.gz"):
        shutil.copy(path, run / path.name)
    assert main(["report", str(run), "--json", str(work / "report.json")]) == 0
    report = json.loads((work / "report.json").read_text())
    with earlier_gap_rule():
        assert main(["report", str(run), "--json", str(work / "earlier.json")]) == 0
    (earlier,) = json.loads((work / "earlier.json").read_text())["runs"].values()
    THREE_VIEWS_WORK.append(work)
    (body,) = report["runs"].values()
    # the leaderboard: validate (re-score, recompute) and score
    subs = work / "subs" / SUBMISSION.parent.name
    shutil.copytree(SUBMISSION, subs / SUBMISSION.name)
    outcome = validate_all(work / "subs", cache=work / "cache")
    assert len(outcome.accepted) == 1, outcome.report_lines()
    board = score(outcome)
    build_site(board, work / "site")
    (detail,) = board["models"].values()
    boards = {(b["task"], str(b["length"])): b["summary"] for b in detail["boards"]}
    return lm_eval, body["tasks"], boards, earlier["tasks"]


#: The scratch folder of :func:`three_views` (the report JSON and the site live there).
THREE_VIEWS_WORK: list[Path] = []


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TASKS))
def test_lm_eval_report_and_leaderboard_agree(three_views, task):
    lm_eval, report, boards, earlier = three_views
    length = TASKS[task]
    entry, summary = report[task][length], boards[(task, length)]
    then = earlier[task][length]
    compared = 0
    for name, (key, index) in FIELDS.items():
        reported = lm_eval[task][f"{name}@{length},none"]
        ours = entry[key] if index is None else entry[key][index]
        site = summary[key] if index is None else summary[key][index]
        assert ours == site, (task, name, ours, site)  # report and leaderboard: the same numbers
        written = (then[key] if index is None else then[key][index]) if name in EARLIER else ours
        assert math.isclose(reported, written, rel_tol=0, abs_tol=1e-9), (task, name, reported)
        compared += 1
    # per phase, the period and the cross-fitted worst phase agree between report and site
    assert [p["acc"] for p in entry["per_phase"]] == [p["acc"] for p in summary["per_phase"]]
    assert entry["dominant_period"] == summary["dominant_period"]
    assert entry["worst_phase_crossfit_ci"] == summary["worst_phase_crossfit_ci"]
    for r, p in enumerate(entry["per_phase"]):
        assert math.isclose(lm_eval[task][f"acc_phase_{r}@{length},none"], p["acc"], abs_tol=1e-9)
    if task == "phasebench_code":
        assert math.isclose(lm_eval[task][f"margin@{length},none"], entry["margin"], abs_tol=1e-9)
        assert (
            entry["margin_sweeps"]["phase_lock_rate"] == summary["margin_sweeps"]["phase_lock_rate"]
        )
    assert compared == len(FIELDS)


#: Each statistic of the rename, by the one name it has everywhere: (summary / row / export key,
#: lm-eval metric, label on the site and in the terminal).
ONE_NAME = {
    "lowest_phase": ("acc_lowest_phase", "lowest phase"),
    "worst_phase_crossfit": ("acc_worst_phase_crossfit", "worst phase"),
}


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(ONE_NAME))
def test_one_statistic_has_one_name_everywhere(three_views, key, capsys):
    """The niah board's value of one statistic, read by its one name in lm-eval's results, the
    terminal, the report JSON, ``rows[]``, ``models[].boards[].summary``, the CSV, the Parquet
    and the site's board page; no surface carries a ``worst_phase`` that is the plain minimum,
    and integers are integers in the exports."""
    import pandas as pd

    lm_eval, report, boards, _ = three_views
    (work,) = THREE_VIEWS_WORK
    metric, label = ONE_NAME[key]
    stat = metrics.get(key)
    assert (stat.key, stat.metric, stat.label, stat.column) == (key, metric, label, key)
    task, length = "phasebench_niah", "512"
    value = report[task][length][key]
    # lm-eval: a task reports the metric of that name; the committed runs (which predate the
    # cross-fitted metric) hold the lowest phase, read through the rename
    from phasebench.lmeval.tasks import phase_metric_names

    assert metric in phase_metric_names("niah", 4, "compact")
    if f"{metric}@{length},none" in lm_eval[task] or key == "lowest_phase":
        assert math.isclose(lm_eval[task][f"{metric}@{length},none"], value, abs_tol=1e-9)
    # JSON: the report's entry and the leaderboard's summary and row
    assert boards[(task, length)][key] == value
    site = work / "site"
    data = json.loads((site / "leaderboard.json").read_text())
    (row,) = [r for r in data["rows"] if r["task"] == task]
    assert row[key] == value
    # the exports: CSV and Parquet columns of that name, whole numbers typed as integers
    csv = pd.read_csv(site / "leaderboard.csv")
    parquet = pd.read_parquet(site / "leaderboard.parquet")
    for frame in (csv, parquet):
        (line,) = frame[frame["task"] == task].to_dict("records")
        assert math.isclose(line[key], value, abs_tol=1e-12)
        assert "worst_phase" not in frame.columns and "worst_phase_index" not in frame.columns
    assert str(parquet["rank_worst"].dtype) == "Int64"
    assert str(parquet["lowest_phase_index"].dtype) == "Int64"
    header, *lines = (site / "leaderboard.csv").read_text().splitlines()
    columns = header.split(",")
    for column in ("rank_worst", "length", "modulus", "n_base"):
        cells = [ln.split(",")[columns.index(column)] for ln in lines]
        assert all(c.isdigit() for c in cells if c), (column, cells)
    # the site: the niah board's cell of that statistic, under its label
    page = (site / "boards" / "phasebench-niah-512-m4.html").read_text()
    assert f'data-label="{label}" class="s-{key}"' in page
    assert formatting.format_value(stat, value) in page
    # the terminal: the label heads a column, and the plain minimum is never "worst phase"
    assert main(["report", str(work / "report.json")]) == 0
    printed = capsys.readouterr().out
    assert label in printed and formatting.format_value(stat, value).rstrip("%") in printed
    for summary in (report[task][length], boards[(task, length)], row):
        assert "worst_phase" not in summary and "worst_phase_index" not in summary


#: Package files that may spell the ranking statistic's key: its declaration and the summary
#: that computes it (the ``PhaseSummary`` field), and one to spare.
MAX_FILES_SPELLING_THE_RANKING = 3


def test_the_ranking_statistic_is_spelled_where_it_is_declared_only():
    """Every reader of the ranking (scoring, rank intervals, the two-run comparison, charts,
    badges, cards, the site's templates) asks :data:`phasebench.metrics.RANKING`, so renaming
    the statistic boards rank by is one edit, not sixteen. Templates count as package files."""
    package = Path(metrics.__file__).parent
    spelled = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*")
        if path.is_file()
        and path.suffix in (".py", ".j2", ".js", ".css", ".yaml")
        and metrics.RANKING.key in path.read_text(encoding="utf-8")
    )
    assert "metrics.py" in spelled  # the check itself reads the files it should
    assert len(spelled) <= MAX_FILES_SPELLING_THE_RANKING, spelled
    ranking = [s for s in metrics.statistics() if s.ranks]
    assert ranking == [metrics.RANKING] and metrics.RANKING.interval
