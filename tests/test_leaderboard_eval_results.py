"""Hub Eval Results (issue 24): ``phasebench leaderboard export-eval-results`` writes, for every
accepted entry, the ``.eval_results/*.yaml`` file its model repository would carry, in the
format the Hub documents, naming a task of the published benchmark dataset."""

from __future__ import annotations

import json

import pytest
import yaml

from phasebench.cli import main
from phasebench.hub.benchmark import eval_tasks
from phasebench.leaderboard.render import build_site
from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all
from support.submissions import REVISION, TASKS, make_submission, split_rows

#: The keys the Hub documents for one result and for its ``dataset`` and ``source``.
RESULT_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes",
               "evaluation_framework"}  # fmt: skip
DATASET_KEYS = {"id", "task_id", "revision", "config", "split"}
SOURCE_KEYS = {"url", "name", "user", "org"}
SITE = "https://example.org/phasebench"


def _check_documented_format(entries) -> None:
    assert isinstance(entries, list) and entries
    for entry in entries:
        assert set(entry) <= RESULT_KEYS and {"dataset", "value"} <= set(entry)
        assert set(entry["dataset"]) <= DATASET_KEYS
        assert isinstance(entry["dataset"]["id"], str) and isinstance(
            entry["dataset"]["task_id"], str
        )
        assert isinstance(entry["value"], int | float)
        assert set(entry["source"]) <= SOURCE_KEYS and entry["source"]["url"].startswith("https")


@pytest.mark.slow
def test_every_accepted_entry_gets_its_eval_results_file(tmp_path, submission_rows, regen_cache):
    from huggingface_hub import parse_eval_result_entries

    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/a", accuracy=[0.9, 0.5] * 4)
    variant = make_submission(subs, submission_rows, model="acme/b", accuracy=[0.7] * 8,
                              meta={"variant": "kvpress-knorm-r0.25"})  # fmt: skip
    variant.rename(variant.parent / f"{REVISION}+kvpress-knorm-r0.25")
    make_submission(subs, submission_rows, model="acme/short", max_length=16)  # refused
    board = score(validate_all(subs, tasks=TASKS, cache=regen_cache))
    site = tmp_path / "site"
    build_site(board, site)

    # the benchmark dataset: the same split published; its tasks are those an eval.yaml would
    # name (none is written while the Hub does not accept lm-eval as a framework, docs/hub.md)
    repo = tmp_path / "repo"
    split_rows(tmp_path / "generated")
    assert main(["publish", str(tmp_path / "generated"), "--out", str(repo)]) == 0
    tasks = {t["id"] for t in eval_tasks(json.loads((repo / "phasebench.json").read_text()))}
    assert tasks == {"kv_128"}

    out = tmp_path / "eval-results"
    argv = ["leaderboard", "export-eval-results", str(site), "--dataset", "acme/phasebench",
            "--site-url", SITE, "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml"))
    assert files == [
        "acme__a/.eval_results/phasebench.yaml",
        "acme__b/.eval_results/phasebench_kvpress-knorm-r0.25.yaml",
    ]
    rows = {r["model"]: r for r in json.loads((site / "leaderboard.json").read_text())["rows"]}
    for model, rel in (("acme/a", files[0]), ("acme/b", files[1])):
        data = yaml.safe_load((out / rel).read_text())
        _check_documented_format(data)
        (entry,) = parse_eval_result_entries(data)  # huggingface_hub's own reader
        row = rows[model]
        assert entry.dataset_id == "acme/phasebench" and entry.task_id in tasks
        assert entry.value == round(100 * row["worst_phase_crossfit"], 2)
        assert entry.source_url == f"{SITE}/boards/phasebench-kv-128-m8.html"
        assert f"average {100 * row['acc']:.1f}%" in entry.notes
        assert f"gap (best − lowest phase) {100 * row['gap']:.1f} pp" in entry.notes
        assert entry.date == row["date"]
        assert ("variant kvpress-knorm-r0.25" in entry.notes) == (model == "acme/b")

    # the folder is replaced by a rerun, and never one it did not make
    assert main(argv) == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main([*argv[:-1], str(other)]) == 2
    assert (other / "keep.txt").read_text() == "mine"
