"""One computation per number: the same sample logs give the same figures in lm-eval's results,
in ``phasebench report`` and on the leaderboard, for kv, niah and code.

The logs are the committed SmolLM2-135M-Instruct example submission: real lm-eval runs (kv and
niah at 512 tokens, modulus 4; code at modulus 8), whose results files hold the aggregates lm-eval
computed when the runs were made. ``phasebench report`` reads the same (packed) sample files; the
leaderboard validates the submission, re-scores every response and scores it."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from phasebench.cli import main
from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all

ROOT = Path(__file__).resolve().parent.parent
#: The plain SmolLM2 run (kv, niah and code); the ``+kvpress-*`` variants hold niah only.
SUBMISSION = next(
    p
    for p in sorted((ROOT / "leaderboard" / "submissions").glob("HuggingFaceTB__SmolLM2*/*"))
    if "+" not in p.name
)
TASKS = {"phasebench_kv": "512", "phasebench_niah": "512", "phasebench_code": "0"}

#: lm-eval results key -> (report/leaderboard key, index into an interval or None)
FIELDS = {
    "acc": ("acc", None),
    "acc_ci_low": ("acc_ci", 0),
    "acc_ci_high": ("acc_ci", 1),
    "acc_worst_phase": ("worst_phase", None),
    "acc_best_phase": ("best_phase", None),
    "phase_gap": ("gap", None),
    "phase_gap_ci_low": ("gap_ci", 0),
    "phase_gap_ci_high": ("gap_ci", 1),
    "phase_gap_p_value": ("p_value", None),
}


@pytest.fixture(scope="module")
def three_views(tmp_path_factory):
    work = tmp_path_factory.mktemp("one-number")
    lm_eval = {}
    for path in SUBMISSION.glob("results_*.json"):
        for task, values in json.loads(path.read_text())["results"].items():
            lm_eval[task] = values
    # phasebench report over the very sample files (one model folder)
    run = work / "SmolLM2"
    run.mkdir()
    for path in SUBMISSION.glob("samples_*.jsonl.gz"):
        shutil.copy(path, run / path.name)
    assert main(["report", str(run), "--json", str(work / "report.json")]) == 0
    report = json.loads((work / "report.json").read_text())
    (body,) = report["runs"].values()
    # the leaderboard: validate (re-score, recompute) and score
    subs = work / "subs" / SUBMISSION.parent.name
    shutil.copytree(SUBMISSION, subs / SUBMISSION.name)
    outcome = validate_all(work / "subs", cache=work / "cache")
    assert len(outcome.accepted) == 1, outcome.report_lines()
    board = score(outcome)
    (detail,) = board["models"].values()
    boards = {(b["task"], str(b["length"])): b["summary"] for b in detail["boards"]}
    return lm_eval, body["tasks"], boards


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TASKS))
def test_lm_eval_report_and_leaderboard_agree(three_views, task):
    lm_eval, report, boards = three_views
    length = TASKS[task]
    entry, summary = report[task][length], boards[(task, length)]
    compared = 0
    for name, (key, index) in FIELDS.items():
        reported = lm_eval[task][f"{name}@{length},none"]
        ours = entry[key] if index is None else entry[key][index]
        site = summary[key] if index is None else summary[key][index]
        assert ours == site, (task, name, ours, site)  # report and leaderboard: the same numbers
        assert math.isclose(reported, ours, rel_tol=0, abs_tol=1e-9), (task, name, reported, ours)
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
