"""Hub Eval Results (issue 24): ``phasebench leaderboard export-eval-results`` writes, for every
accepted entry, the ``.eval_results/*.yaml`` file its model repository would carry, in the
format the Hub documents, naming a task of the published benchmark dataset."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from phasebench.cli import main
from phasebench.hub.benchmark import eval_tasks
from phasebench.leaderboard.render import board_page, build_site
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
def test_every_accepted_entry_gets_its_eval_results_file(
    tmp_path, submission_rows, regen_cache, capsys
):
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

    # the benchmark dataset: the same split published; its tasks are those its eval.yaml names
    repo = tmp_path / "repo"
    split_rows(tmp_path / "generated")
    assert main(["publish", str(tmp_path / "generated"), "--out", str(repo)]) == 0
    tasks = {t["id"] for t in eval_tasks(json.loads((repo / "phasebench.json").read_text()))}
    assert tasks == {"kv_128_m8"}
    assert {t["id"] for t in yaml.safe_load((repo / "eval.yaml").read_text())["tasks"]} == tasks

    out = tmp_path / "eval-results"
    argv = ["leaderboard", "export-eval-results", str(site), "--dataset", "acme/phasebench",
            "--site-url", SITE, "--out", str(out)]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml"))
    assert files == [
        "acme__a/.eval_results/phasebench.yaml",
        "acme__b/.eval_results/phasebench_kvpress-knorm-r0.25.yaml",
    ]
    # it says what it wrote (the README's command)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"wrote {out / f}" for f in files] + [
        f"2 eval-results file(s) under {out}: copy each ORG__MODEL folder's .eval_results/ "
        "into that model's Hub repository"
    ], printed
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


@pytest.mark.slow
def test_shipped_site_exports_one_task_per_board(tmp_path, shipped_outcome):
    """``export-eval-results`` on the shipped example site: exit 0; one Hub task per board
    (niah @ 512 at modulus 4, 8 and 12 are three tasks); every entry but the random test
    fixture exported, the fixture named on stderr; preliminary entries say so in their notes.
    A row that cannot be exported is skipped with its reason and its entry's other rows are
    still written."""
    import subprocess
    import sys

    from huggingface_hub import parse_eval_result_entries

    from phasebench.leaderboard.score import load_reported

    root = Path(__file__).resolve().parents[2]
    outcome = shipped_outcome()
    assert not outcome.refused, outcome.report_lines()
    board = score(outcome, load_reported())
    site = tmp_path / "site"
    build_site(board, site)

    def export(folder):
        out = tmp_path / f"eval-results-{folder.name}"
        argv = ["leaderboard", "export-eval-results", str(folder), "--dataset",
                "acme/phasebench", "--site-url", SITE, "--out", str(out)]  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "phasebench", *argv], capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(root)})  # fmt: skip
        entries = {}
        for path in out.rglob("*.yaml"):
            for entry in parse_eval_result_entries(yaml.safe_load(path.read_text())):
                entries.setdefault(entry.task_id, []).append((path, entry))
        return done, out, entries

    done, out, entries = export(site)
    assert done.returncode == 0, done.stderr
    rows = [r for r in json.loads((site / "leaderboard.json").read_text())["rows"]
            if not r.get("reported")]  # fmt: skip
    # neither the fixture nor a code board (no task of the benchmark: docs/inspect.md)
    exported = [r for r in rows if not r["fixture"] and r["task"] != "phasebench_code"]
    by_board = {}
    for row in exported:
        by_board.setdefault(row["board"], []).append(row)
    # one task per board: a board's task holds exactly its rows' values, and no other board's
    assert len(entries) == len(by_board) >= 6
    for name, members in by_board.items():
        url = f"{SITE}/{board_page(name)}"
        (task,) = {tid for tid, got in entries.items() if any(e.source_url == url for _, e in got)}
        assert sorted(e.value for _, e in entries[task]) == sorted(
            round(100 * r["worst_phase_crossfit"], 2) for r in members
        )
        assert task.endswith(f"_m{members[0]['modulus']}"), task
    niah512 = {tid for tid in entries if tid.startswith("niah_512_")}
    assert niah512 == {"niah_512_m4", "niah_512_m8", "niah_512_m12"}
    # every entry but the fixture has its file; the fixture is named on stderr
    assert len(list(out.rglob("*.yaml"))) == len({r["page"] for r in exported})
    assert {p.parts[len(out.parts)] for p in out.rglob("*.yaml")} == {
        "HuggingFaceTB__SmolLM2-135M-Instruct"
    }
    assert "phasebench_kv@256/m8" in done.stderr and "test fixture" in done.stderr
    assert "phasebench_code@" in done.stderr and "not a task of the benchmark" in done.stderr
    # preliminary entries are marked, the others are not
    notes = {(e.source_url, e.value): e.notes for got in entries.values() for _, e in got}
    for row in exported:
        key = (f"{SITE}/{board_page(row['board'])}", round(100 * row["worst_phase_crossfit"], 2))
        assert notes[key].startswith("preliminary") == bool(row["preliminary"]), notes[key]
    assert any(r["preliminary"] for r in exported)

    # one row that cannot be exported: skipped with its reason, its entry's other rows written
    data = json.loads((site / "leaderboard.json").read_text())
    base = [r for r in data["rows"] if not r.get("reported") and r["variant"] is None
            and not r["fixture"]]  # fmt: skip
    assert {r["task"] for r in base} == {"phasebench_code", "phasebench_kv", "phasebench_niah"}
    (broken_row,) = [r for r in base if r["task"] == "phasebench_kv"]
    broken_row["worst_phase_crossfit"] = "high"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "leaderboard.json").write_text(json.dumps(data))
    done, out, entries = export(broken)
    assert done.returncode == 0, done.stderr
    assert (
        f"{broken_row['board']}' not exported: worst_phase_crossfit is not a number" in done.stderr
    )
    (path,) = out.glob("HuggingFaceTB__SmolLM2-135M-Instruct/.eval_results/phasebench.yaml")
    written = parse_eval_result_entries(yaml.safe_load(path.read_text()))
    assert sorted(e.task_id for e in written) == ["niah_512_m4"]
