"""phasebench's Inspect AI tasks, run by Inspect itself.

A scripted model (Inspect's own ``mockllm`` provider, answering each prompt by the same
responder the leaderboard tests use: right with a probability set per phase) makes one run
whose phase profile is not flat; it is read three ways and must agree number for number:
Inspect's own metrics in its log, ``phasebench report`` on the log, and ``phasebench report``
on lm-eval's output for the same answers (records as lm-eval's evaluator logs them, scored by
the lm-eval task's ``process_results``). The run then packs, validates by recomputation and
appears on a board built from the shipped submissions, marked as run in Inspect AI. The real
``inspect eval`` command on a real model is ``test_inspect_eval_cli.py``.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from support.inspect_runs import mock_run, response
from support.submissions import sample_record, split_rows, write_lmeval

#: The shipped tiny model's board (kv, 256 tokens, modulus 8, 16 base items): the Inspect run
#: joins it.
LENGTH, N_BASE, MODULUS = 256, 16, 8
MODEL = "acme/inspect-model"


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """One Inspect run of ``phasebench/kv`` on the scripted model; returns (log, rows, work)."""
    work = tmp_path_factory.mktemp("inspect-mock")
    log = mock_run(work, LENGTH, N_BASE, MODULUS, MODEL)
    rows = split_rows(work / "splits", length=LENGTH, n_base=N_BASE, modulus=MODULUS)
    return log, rows, work


def _numbers(report: dict) -> dict:
    """A report's numbers by task and length, without where they came from."""
    (run,) = report["runs"].values()
    return run["tasks"]


@pytest.mark.slow
def test_inspect_metrics_equal_phasebench_report_and_lm_eval_on_the_same_answers(scripted):
    from inspect_ai.log import read_eval_log

    from phasebench import metrics
    from phasebench.inspect_log import REPORTED
    from phasebench.report import build_report, load_runs

    log_path, rows, work = scripted
    log = read_eval_log(str(log_path))
    # every sample carries its phase, base item and (absent on this axis) length phase
    sample = log.samples[0]
    assert {"phase", "base_id", "phase_modulus", "length"} <= set(sample.metadata)
    assert "prompt" not in sample.metadata and sample.input == rows_by_id(rows)[sample.id]["prompt"]

    report = build_report(load_runs([log_path])[0])
    summary = _numbers(report)["phasebench_kv"][str(LENGTH)]
    logged = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    assert set(logged) == {name for name, _, _ in REPORTED}
    for name, key, part in REPORTED:
        stat = metrics.get(key)
        if part == "value":
            expected = stat.value(summary)
            expected = 0 if expected is None and stat.unit == "tokens" else expected
        else:
            expected = stat.interval_of(summary)[0 if part == "low" else 1]
        assert logged[name] == pytest.approx(expected, abs=1e-12), name
    # the profile is not flat: the weak phases show, and the gap is found
    assert summary["gap"] > 0.3 and summary["p_value"] < 0.05
    assert summary["lowest_phase_index"] in (3, 7)

    # lm-eval's output for the same answers, scored by the lm-eval task's own process_results
    from phasebench.lmeval.tasks import process_results

    lm = work / "lmeval" / "model"
    lm.mkdir(parents=True)
    records = []
    for i, row in enumerate(rows):
        record = sample_record(i, row, response(row, MODEL))
        scored = process_results(row, [response(row, MODEL)])
        record.update({k: (list(v) if isinstance(v, tuple) else v) for k, v in scored.items()})
        records.append(record)
    write_lmeval(lm, records)
    lm_numbers, inspect_numbers = _numbers(build_report(load_runs([lm])[0])), _numbers(report)
    # the one difference: the scripted model reported the tokens it read (the witness), which
    # lm-eval's hf backend does not log
    served = inspect_numbers["phasebench_kv"][str(LENGTH)].pop("served")
    assert served == {"agree": len(rows), "disagree": 0, "unverified": 0, "first": None}
    assert lm_numbers["phasebench_kv"][str(LENGTH)].pop("served") is None
    assert lm_numbers == inspect_numbers


def rows_by_id(rows: list[dict]) -> dict[str, dict]:
    return {row["id"]: row for row in rows}


@pytest.mark.slow
def test_an_inspect_run_packs_validates_and_appears_on_the_board(
    scripted, tmp_path, shipped_outcome
):
    """``pack`` turns the log into lm-eval's files; the leaderboard validates them by
    regenerating the split and recomputing every number (Inspect's metrics among them), the
    board built with the shipped submissions lists the entry as run in Inspect AI, and its
    Eval Results file names the task id the benchmark's ``eval.yaml`` lists for that board."""
    from huggingface_hub import parse_eval_result_entries

    from phasebench.hub.benchmark import eval_tasks, task_id
    from phasebench.leaderboard.eval_results import export_eval_results
    from phasebench.leaderboard.pack import pack
    from phasebench.leaderboard.render import build_site
    from phasebench.leaderboard.score import load_reported, score
    from phasebench.leaderboard.validate import validate_all
    from support.lmeval import ROOT

    log_path, rows, work = scripted
    subs = tmp_path / "subs"
    shutil.copytree(ROOT / "leaderboard" / "submissions", subs)
    meta = {
        "model": MODEL, "revision": "1" * 40, "precision": "bfloat16", "backend": "mockllm",
        "kv_cache": "none (full attention)", "chat_template": False, "license": "apache-2.0",
        "contact": "maintainers@example.org", "tokenizer": {"name": "deepseek-v4"},
        "max_length": 4096,
    }  # fmt: skip
    (work / "submission.yaml").write_text(yaml.safe_dump(meta))
    target = subs / "acme__inspect-model" / meta["revision"]
    written = pack(log_path, target, work / "submission.yaml")
    assert sorted(p.name.split("_")[0] for p in written) == [
        "results",
        "samples",
        "submission.yaml",
    ]
    results = json.loads(next(target.glob("results_*.json")).read_text())
    assert results["framework"] == "inspect_ai" and results["model_source"] == "mockllm"
    assert "phase_gap,none" in results["results"]["phasebench_kv"]  # Inspect's, recomputed

    outcome = shipped_outcome(subs)
    accepted = {sub.meta["model"] for sub in outcome.accepted}
    # this entry and the shipped entry of its board (the others are the shipped tests' concern)
    assert {MODEL, "phasebench/tiny-random-llama"} <= accepted, outcome.report_lines()
    board = score(outcome, load_reported())
    site = tmp_path / "site"
    build_site(board, site, submissions=subs)
    row = next(r for r in board["rows"] if r["model"] == MODEL)
    tiny = next(r for r in board["rows"] if r["model"] == "phasebench/tiny-random-llama")
    assert row["board"] == tiny["board"] and row["framework"].startswith("Inspect AI 0.3.")
    shipped = [r for r in board["rows"] if r["model"] != MODEL]
    assert all(r["framework"].startswith("lm-eval 0.4") for r in shipped)
    from phasebench.leaderboard.render import board_page

    assert "· Inspect AI" in (site / board_page(row["board"])).read_text()
    page = (site / row["page"]).read_text()
    assert "Inspect AI 0.3." in page and "inspect eval phasebench/kv" in page

    # the Eval Results file names the board's task id, the one eval.yaml lists for its config
    export_eval_results(board, tmp_path / "exported", dataset_id="acme/pb",
                        site_url="https://example.org/pb")  # fmt: skip
    (card,) = (tmp_path / "exported").glob("acme__inspect-model/.eval_results/*.yaml")
    (entry,) = parse_eval_result_entries(yaml.safe_load(card.read_text()))
    expected = task_id("kv", LENGTH, MODULUS)
    index = {"configs": [{"name": "kv_256_deepseek_v4", "family": "kv", "length": LENGTH,
                          "modulus": MODULUS, "tokenizer": "deepseek-v4"}],
             "default_config": "kv_256_deepseek_v4", "split": "test"}  # fmt: skip
    assert entry.task_id == expected == eval_tasks(index)[0]["id"]

    # Inspect's logged gap, altered in the packed results, is refused by recomputation
    bad_root = tmp_path / "bad"
    bad = bad_root / "acme__inspect-model" / ("2" * 40)
    shutil.copytree(target, bad)
    (bad / "submission.yaml").write_text(yaml.safe_dump({**meta, "revision": "2" * 40}))
    path = next(bad.glob("results_*.json"))
    data = json.loads(path.read_text())
    data["results"]["phasebench_kv"]["phase_gap,none"] += 0.01
    path.write_text(json.dumps(data))
    ((name, (problem,)),) = validate_all(bad_root, cache=tmp_path / "cache").refused
    assert problem.rule == "metric" and "phase_gap" in problem.message


def test_reading_a_log_imports_nothing_it_names(scripted, tmp_path):
    """A log names its solver, scorer, model and task file; reading it (as ``pack`` and
    ``phasebench report`` do) imports none of them: a log naming a module of its own is read
    with that module never imported."""
    import sys

    from inspect_ai.log import read_eval_log, write_eval_log

    from phasebench.inspect_log import read_inspect_log

    log_path, rows, _ = scripted
    log = read_eval_log(str(log_path))
    module = tmp_path / "evil_pkg_58.py"
    module.write_text("raise SystemExit('imported')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        log.eval.solver = "evil_pkg_58/solver"
        log.eval.task_file = str(module)
        log.eval.model = "evil_pkg_58/model"
        log.plan.steps[0].solver = "evil_pkg_58/solver"
        log.results.scores[0].scorer = "evil_pkg_58/scorer"
        hostile = tmp_path / "hostile.eval"
        write_eval_log(log, str(hostile))
        run = read_inspect_log(hostile)
        assert "evil_pkg_58" not in sys.modules
        assert run.model == "evil_pkg_58/model" and len(run.samples) == len(rows)
    finally:
        sys.path.remove(str(tmp_path))
