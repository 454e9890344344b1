"""The group-sequential gap test (``phasebench.stats.sequential``): the fast test the
calibration simulates against the project's own, the looks, the decisions; the staged run's
command-line refusals; staged submissions on the leaderboard (design recomputed, not trusted)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from phasebench.cli import main
from phasebench.errors import EvalError, StatsError
from phasebench.lmeval.staged import base_order
from phasebench.stats import summarize
from phasebench.stats.sequential import (
    BOUNDARY,
    decide,
    fast_gap_p,
    fast_gap_upper,
    run_design,
    stage_sizes,
)

CASES = [
    (32, [0.7, 0.6, 0.3, 0.5] * 2),  # a V4-Flash-like period-4 profile, few items
    (64, [0.5] * 8),  # no phase effect
    (48, [0.9, 0.9, 0.9, 0.6] * 2),  # one weak phase in four, near the ceiling
]


@pytest.mark.parametrize("n,profile", CASES)
def test_fast_p_value_is_the_summarize_permutation_test(n, profile):
    """Same null and statistic, another random stream: the two p-values agree up to the Monte
    Carlo error of 4,000 permutations each."""
    m = (np.random.default_rng(n).random((n, 8)) < np.array(profile)).astype(float)
    own = summarize(m, n_perm=4000, n_boot=0).p_value
    fast = float(fast_gap_p(m[None], np.random.default_rng(1), n_perm=4000)[0])
    se = math.sqrt(max(own * (1 - own), 1e-4) / 4000)
    assert abs(own - fast) <= 5 * math.sqrt(2) * se + 1e-3


@pytest.mark.parametrize("n,profile", CASES)
def test_fast_upper_bound_is_the_summarize_gap_interval(n, profile):
    m = (np.random.default_rng(n).random((n, 8)) < np.array(profile)).astype(float)
    own = summarize(m, n_perm=4000, n_boot=0).gap_ci[1]
    fast = float(fast_gap_upper(m[None], np.random.default_rng(1), n_perm=4000)[0])
    assert abs(own - fast) <= 0.03


def test_fast_test_handles_rows_all_right_or_all_wrong():
    m = np.zeros((2, 16, 8))
    m[1, :8] = 1.0  # items all right or all wrong: no discordant row, no evidence
    assert fast_gap_p(m, np.random.default_rng(0)).tolist() == [1.0, 1.0]


def test_looks_are_eighths_of_the_split_in_whole_groups_of_the_modulus():
    assert stage_sizes(256, 8) == (32, 64, 128, 256)
    assert stage_sizes(128, 4) == (16, 32, 64, 128)
    with pytest.raises(StatsError, match="multiple of 64"):
        stage_sizes(96, 8)


def test_decisions_say_why():
    hit = decide({"p_value": 0.001, "gap_ci": [0.1, 0.6]}, 1)
    assert hit.verdict == "significant" and hit.stop and f"{BOUNDARY[0]}" in hit.reason
    go_on = decide({"p_value": 0.2, "gap_ci": [0.0, 0.5]}, 2, futility_gap=0.3)
    assert go_on.verdict == "continue" and not go_on.stop
    futile = decide({"p_value": 0.2, "gap_ci": [0.0, 0.25]}, 2, futility_gap=0.3)
    assert futile.verdict == "futile" and "25.0 points" in futile.reason
    last = decide({"p_value": 0.02, "gap_ci": [0.0, 0.5]}, 4)
    assert last.verdict == "not significant" and last.stop
    replayed = run_design([{"p_value": 0.3, "gap_ci": [0, 1]}, {"p_value": 0.01, "gap_ci": [0, 1]}])
    assert (replayed.stage, replayed.verdict) == (2, "significant")
    with pytest.raises(StatsError):
        decide({"p_value": 0.01}, 5)


def test_rows_out_of_base_item_order_cannot_be_staged():
    rows = [{"base_id": b} for b in (0, 0, 1, 1, 2, 2)]
    assert base_order(rows) == 2
    with pytest.raises(EvalError, match="base item after base item"):
        base_order([{"base_id": b} for b in (0, 1, 0, 1)])
    with pytest.raises(EvalError):
        base_order([{"base_id": b} for b in (0, 0, 1)])


@pytest.mark.parametrize(
    "args,logged,message",
    [
        (["--futility_gap", "0.3", "--tasks", "phasebench_kv"], True, "add --staged"),
        (["--staged", "--tasks", "phasebench_kv,phasebench_niah"], True, "one phasebench task"),
        (["--staged", "--tasks", "phasebench_kv"], False, "--output_path OUT --log_samples"),
        (["--staged", "--tasks", "phasebench_kv", "--limit", "8"], True, "leave out --limit"),
    ],
)
def test_staged_eval_refuses_bad_calls_in_one_line(args, logged, message, tmp_path, capsys):
    out = ["--output_path", str(tmp_path / "out"), "--log_samples"] if logged else []
    rc = main(["eval", "--model", "hf", "--model_args", "pretrained=none", *args, *out])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1, err


# -- staged submissions on the leaderboard ---------------------------------------------------------

N_BASE = 64  # looks after 8, 16, 32 and 64 base items


@pytest.fixture(scope="module")
def staged_rows(tmp_path_factory) -> list[dict]:
    from support.submissions import split_rows

    return split_rows(tmp_path_factory.mktemp("split64"), n_base=N_BASE)


def _staged_submission(root: Path, rows: list[dict], accuracy: list[float], limit: int) -> Path:
    """A submission of ``rows`` as a run with ``--limit limit`` over the 64-item split."""
    from support.submissions import TASK, make_submission

    folder = make_submission(root, rows, accuracy=accuracy)
    (path,) = folder.glob("results_*.json")
    results = json.loads(path.read_text())
    results["configs"][TASK]["metadata"]["n_base"] = N_BASE
    results["config"]["limit"] = float(limit)
    results["n-samples"][TASK] = {"original": N_BASE * 8, "effective": len(rows)}
    path.write_text(json.dumps(results, indent=2))
    return folder


@pytest.mark.slow
def test_a_staged_run_that_stopped_significant_is_accepted_and_marked(
    tmp_path, staged_rows, regen_cache
):
    from phasebench.leaderboard.score import score
    from phasebench.leaderboard.validate import validate_all
    from support.submissions import TASKS

    _staged_submission(tmp_path, staged_rows[:64], [1, 1, 0, 0] * 2, limit=64)
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    assert len(outcome.accepted) == 1, outcome.report_lines()
    (row,) = score(outcome)["rows"]
    assert row["staged"]["look"] == 1 and row["staged"]["n_base"] == 8
    assert row["staged"]["n_base_design"] == N_BASE and row["staged"]["verdict"] == "significant"
    assert row["note"].startswith("staged run: stopped at look 1 of 4") and row["n_base"] == 8
    # a stop on a significant gap is a reading at the design's strength (64 base items), not at
    # the 8 it sent; the model page shows the same mark as the row
    from phasebench.metrics import PRELIMINARY_GAP
    from phasebench.stats import detectable_gap

    assert row["detectable_gap"] == detectable_gap(N_BASE, 8) < detectable_gap(8, 8)
    assert row["preliminary"] is (detectable_gap(N_BASE, 8) > PRELIMINARY_GAP)
    (model,) = score(outcome)["models"].values()
    (board,) = model["boards"]
    assert board["summary"]["preliminary"] is row["preliminary"]
    assert board["summary"]["detectable_gap"] == row["detectable_gap"]


def test_a_staged_stop_reads_at_its_designs_strength_and_nothing_else_does():
    from phasebench.leaderboard.staged import reading
    from phasebench.stats import detectable_gap

    summary = {"per_phase": [{"acc": 1.0}] * 8, "detectable_gap": 1.0, "preliminary": True}
    mark = {"look": 1, "looks": 4, "n_base": 24, "n_base_design": 192, "verdict": "significant"}
    read = reading(summary, mark)
    assert read["detectable_gap"] == detectable_gap(192, 8) <= 0.2 and read["preliminary"] is False
    assert summary["preliminary"] is True  # the validated summary itself is left alone
    assert reading(summary, None) is summary
    assert reading(summary, dict(mark, verdict="futile")) is summary


@pytest.mark.slow
@pytest.mark.parametrize(
    "take,accuracy,limit,message",
    [
        (slice(0, 96), [1, 1, 0, 0] * 2, 96, "not a look of the staged design"),
        (slice(0, 64), [0.9] * 8, 64, "does not stop at 8 base items"),
        (slice(0, 128), [1, 1, 0, 0] * 2, 128, "stops at look 1"),
        (slice(64, 128), [1, 1, 0, 0] * 2, 64, "not every rendering of the first 8"),
        (slice(0, 64), [1, 1, 0, 0] * 2, 72, "64 of 512 samples evaluated"),
    ],
)
def test_a_staged_run_is_checked_against_the_design_it_claims(
    tmp_path, staged_rows, regen_cache, take, accuracy, limit, message
):
    from phasebench.leaderboard.validate import validate_all
    from support.submissions import TASKS

    _staged_submission(tmp_path, staged_rows[take], accuracy, limit=limit)
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    assert not outcome.accepted, outcome.report_lines()
    problem = outcome.refused[0][1][0]
    assert problem.rule == "limit" and message in problem.message, problem.message
