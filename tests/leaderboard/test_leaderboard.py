"""Leaderboard: every validation rule with a failing input, hostile input, a mixed build,
deterministic outputs, pack round trip, and the CLI."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from phasebench.cli import main
from phasebench.leaderboard.pack import pack
from phasebench.leaderboard.render import board_page, build_site
from phasebench.leaderboard.score import load_reported, score
from phasebench.leaderboard.validate import validate_all
from support.submissions import REVISION, TASK, TASKS, make_submission, write_lmeval

ROOT = Path(__file__).resolve().parents[2]


def _one(root: Path, regen_cache: Path):
    outcome = validate_all(root, tasks=TASKS, cache=regen_cache)
    return outcome


def _refusal(root: Path, regen_cache: Path) -> tuple[str, str, str]:
    outcome = _one(root, regen_cache)
    assert not outcome.accepted, outcome.report_lines()
    assert len(outcome.refused) == 1, outcome.report_lines()
    problem = outcome.refused[0][1][0]
    return problem.rule, problem.file, problem.message


def _records(folder: Path) -> list[dict]:
    path = next(folder.glob("samples_*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def _rewrite(folder: Path, records: list[dict], **changes) -> None:
    for path in folder.glob("samples_*"):
        path.unlink()
    for path in folder.glob("results_*"):
        path.unlink()
    write_lmeval(folder, records, **changes)


def test_valid_submission_is_accepted_with_its_scores(tmp_path, submission_rows, regen_cache):
    make_submission(tmp_path, submission_rows, accuracy=[1, 1, 0, 0] * 2)
    outcome = _one(tmp_path, regen_cache)
    assert [s.name for s in outcome.accepted] == [f"acme__phase-model/{REVISION}"]
    board = score(outcome)
    (row,) = board["rows"]
    assert row["lowest_phase"] == 0.0 and row["best_phase"] == 1.0 and row["acc"] == 0.5
    assert row["significant"] and row["dominant_period"] == 4 and row["rank_worst"] == 1


# -- one failing input per rule --------------------------------------------------------------------


def test_schema_rule(tmp_path, submission_rows, regen_cache):
    make_submission(tmp_path, submission_rows, meta={"precision": "float7"})
    rule, file, message = _refusal(tmp_path, regen_cache)
    assert rule == "schema" and file.endswith("submission.yaml") and "precision" in message


@pytest.mark.parametrize("delete", ["model_source", "both"])
def test_a_backend_claim_is_checked_against_what_the_results_record(
    tmp_path, submission_rows, regen_cache, delete
):
    """A serving claim on ``local-completions`` with ``model_source`` deleted while
    ``config.model`` says ``hf``: the row would show a backend the results do not prove; with
    both deleted, nothing proves any backend."""
    meta = {"backend": "local-completions",
            "serving": {"engine": "vllm", "version": "0.28.0", "flags": []}}  # fmt: skip
    folder = make_submission(tmp_path, submission_rows, meta=meta)
    path = next(folder.glob("results_*.json"))
    data = json.loads(path.read_text())
    del data["model_source"]
    data["config"]["model"] = "hf"
    if delete == "both":
        del data["config"]["model"]
    path.write_text(json.dumps(data))
    rule, file, message = _refusal(tmp_path, regen_cache)
    assert rule == "schema" and file.endswith("submission.yaml")
    assert ("config.model 'hf'" if delete == "model_source" else "records no backend") in message


def test_unknown_field_is_refused(tmp_path, submission_rows, regen_cache):
    make_submission(tmp_path, submission_rows, meta={"score_override": 1.0})
    assert _refusal(tmp_path, regen_cache)[0] == "schema"


def test_folder_must_match_model(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows)
    folder.parent.rename(tmp_path / "other__name")
    rule, _, message = _refusal(tmp_path, regen_cache)
    assert rule == "path" and "acme__phase-model" in message


def test_task_name_and_version_rule(tmp_path, submission_rows, regen_cache):
    make_submission(tmp_path, submission_rows)
    outcome = validate_all(tmp_path, tasks={TASK: "2.0"}, cache=regen_cache)
    problem = outcome.refused[0][1][0]
    assert problem.rule == "task" and "version" in problem.message
    outcome = validate_all(tmp_path, tasks={"phasebench_niah": "1.0"}, cache=regen_cache)
    assert outcome.refused[0][1][0].rule == "task"


def test_limit_rule(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows)
    records = _records(folder)
    _rewrite(folder, records, config={"model": "hf", "limit": 10})
    rule, _, message = _refusal(tmp_path, regen_cache)
    assert rule == "limit" and "--limit" in message


def test_truncated_samples_are_refused(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows)
    records = _records(folder)[:-8]  # one base item's phases missing, counts made consistent
    _rewrite(folder, records)
    rule, file, message = _refusal(tmp_path, regen_cache)
    assert rule == "count" and "samples_" in file and "120 of 128" in message


def test_missing_phase_is_refused(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows)
    records = [r for r in _records(folder) if r["doc"]["phase"] != 3]
    _rewrite(folder, records)
    assert _refusal(tmp_path, regen_cache)[0] == "count"


def test_doc_not_in_split_hash_rule(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows)
    records = _records(folder)
    records[5]["doc"]["prompt"] = records[5]["doc"]["prompt"].replace("records", "recordz")
    _rewrite(folder, records)
    rule, _, message = _refusal(tmp_path, regen_cache)
    assert rule == "hash" and "sample 6" in message


def test_prompt_hash_rule(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows)
    records = _records(folder)
    records[0]["prompt_hash"] = "0" * 64
    _rewrite(folder, records)
    rule, _, message = _refusal(tmp_path, regen_cache)
    assert rule == "hash" and "prompt_hash" in message


def test_other_tokenizer_is_refused(tmp_path, submission_rows, regen_cache):
    bos = {"tokenizer": {"name": "deepseek-v4", "args": {"add_bos_token": "True"}}}
    make_submission(tmp_path, submission_rows, meta=bos)
    rule, _, message = _refusal(tmp_path, regen_cache)
    assert rule == "tokenizer" and "samples were made with tokenizer" in message
    shutil.rmtree(tmp_path / "acme__phase-model")
    make_submission(tmp_path, submission_rows, meta={"tokenizer": {"name": "no-such-alias"}})
    assert _refusal(tmp_path, regen_cache)[0] == "tokenizer"


def test_tampered_sample_accuracy_is_refused(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows, accuracy=[0.5] * 8)
    records = _records(folder)
    wrong = next(r for r in records if r["acc"] == 0.0)
    wrong["acc"] = 1.0
    _rewrite(folder, records)
    rule, _, message = _refusal(tmp_path, regen_cache)
    assert rule == "metric" and "responses give 0.0" in message


def test_tampered_reported_accuracy_is_refused(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows, accuracy=[0.5] * 8)
    path = next(folder.glob("results_*.json"))
    data = json.loads(path.read_text())
    data["results"][TASK]["acc,none"] += 0.01
    path.write_text(json.dumps(data))
    rule, file, message = _refusal(tmp_path, regen_cache)
    assert rule == "metric" and file.endswith(".json") and "acc,none" in message


def test_max_length_rule(tmp_path, submission_rows, regen_cache):
    make_submission(tmp_path, submission_rows, max_length=130)  # 128-token prompts + 16 generated
    rule, _, message = _refusal(tmp_path, regen_cache)
    assert rule == "max_length" and "144" in message


@pytest.mark.slow
def test_duplicates_are_refused_and_supersedes_replaces(tmp_path, submission_rows, regen_cache):
    make_submission(tmp_path, submission_rows, model="acme/m")
    copy = make_submission(tmp_path, submission_rows, model="ACME/m")
    outcome = _one(tmp_path, regen_cache)  # same run date, no earlier board: a tie
    assert not outcome.accepted
    assert [p[0].rule for _, p in outcome.refused] == ["duplicate", "duplicate"]
    path = next(copy.glob("results_*.json"))  # the copy ran a day later: still a tie, since a
    # run date can be written at will and never decides (without git history nothing tells
    # the two apart; with it, the first-parent order does: test_submission_refusals.py)
    path.write_text(path.read_text().replace('"date": 1795000000.0', '"date": 1795086400.0'))
    outcome = _one(tmp_path, regen_cache)
    assert not outcome.accepted
    assert [p[0].rule for _, p in outcome.refused] == ["duplicate", "duplicate"]
    shutil.rmtree(tmp_path / "ACME__m")
    newer = make_submission(
        tmp_path, submission_rows, model="acme/m", revision="f" * 40, meta={"supersedes": REVISION}
    )
    path = next(newer.glob("results_*.json"))  # a later run of the same submitter replaces it
    path.write_text(path.read_text().replace('"date": 1795000000.0', '"date": 1795086400.0'))
    outcome = _one(tmp_path, regen_cache)
    assert [s.meta["revision"] for s in outcome.accepted] == ["f" * 40]
    assert outcome.superseded and not outcome.refused


# -- hostile input -------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-C",
                    str(root), *args], check=True, capture_output=True)  # fmt: skip


def test_a_case_changed_copy_loses_to_the_entry_committed_before_it(tmp_path, regen_cache):
    """A copy of the tiny example whose model id differs only in case, same revision and run
    date: both were refused as a tie. The submissions' git history tells them apart (the copy
    was added in a commit the original's commit is an ancestor of), so the original stays,
    although the copy's folder sorts first and its run date is the same."""
    example = ROOT / "leaderboard" / "submissions" / "phasebench__tiny-random-llama"
    subs = tmp_path / "subs"
    shutil.copytree(example, subs / example.name)
    _git(subs, "init", "-q")
    _git(subs, "add", ".")
    _git(subs, "commit", "-q", "-m", "the example")
    (revision,) = [p.name for p in example.iterdir()]
    copy = subs / "phasebench__Tiny-Random-Llama" / revision
    shutil.copytree(example / revision, copy)
    meta = yaml.safe_load((copy / "submission.yaml").read_text())
    meta["model"] = "phasebench/Tiny-Random-Llama"
    (copy / "submission.yaml").write_text(yaml.safe_dump(meta))
    for committed in (False, True):  # the copy in the working tree only, then committed after
        if committed:
            _git(subs, "add", ".")
            _git(subs, "commit", "-q", "-m", "a copy")
        outcome = validate_all(subs, cache=regen_cache)
        assert [s.name for s in outcome.accepted] == [f"{example.name}/{revision}"]
        ((name, (problem,)),) = outcome.refused
        assert name == f"phasebench__Tiny-Random-Llama/{revision}" and problem.rule == "duplicate"
        assert f"{example.name}/{revision}, which keeps its place (the maintainers' branch" in (
            problem.message
        )


@pytest.mark.parametrize(
    "meta",
    [
        {"kv_cache": "<script>alert(1)</script>"},
        {"contact": "x\u0000y@example.org"},
        {"model": "acme/<img src=x onerror=alert(1)>"},
        {"tokenizer": {"name": "a/../../etc"}},
        {"revision": "../../../etc/passwd"},
    ],
)
def test_hostile_text_fields_are_refused(tmp_path, submission_rows, regen_cache, meta):
    make_submission(tmp_path, submission_rows)
    folder = next(tmp_path.glob("*/*"))
    data = yaml.safe_load((folder / "submission.yaml").read_text())
    data.update(meta)
    (folder / "submission.yaml").write_text(yaml.safe_dump(data))
    rule, _, _ = _refusal(tmp_path, regen_cache)
    assert rule in {"schema", "path"}


def test_nan_and_negative_counts_and_malformed_files(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows)
    path = next(folder.glob("results_*.json"))
    text = path.read_text()
    path.write_text(text.replace('"acc,none": ', '"acc,none": NaN, "x": ', 1))
    assert _refusal(tmp_path, regen_cache)[0] == "json"
    path.write_text(text.replace('"effective": 128', '"effective": -1'))
    assert _refusal(tmp_path, regen_cache)[0] == "count"
    path.write_text(text[: len(text) // 2])
    assert _refusal(tmp_path, regen_cache)[0] == "json"
    path.write_text(text)
    samples = next(folder.glob("samples_*"))
    samples.write_bytes(b"\x1f\x8b garbage")
    assert _refusal(tmp_path, regen_cache)[0] == "json"


def test_huge_and_symlinked_files_are_refused(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path, submission_rows)
    (folder / "submission.yaml").write_text("notes: '" + "x" * 70000 + "'\n")
    assert _refusal(tmp_path, regen_cache)[0] == "size"
    shutil.rmtree(tmp_path / "acme__phase-model")
    folder = make_submission(tmp_path, submission_rows)
    secret = tmp_path.parent / f"{tmp_path.name}-secret.json"
    secret.write_text("{}")
    (folder / "results_link.json").symlink_to(secret)
    assert _refusal(tmp_path, regen_cache)[0] == "path"


def test_odd_folder_names_are_listed(tmp_path, submission_rows, regen_cache):
    (tmp_path / "no-separator").mkdir()
    (tmp_path / "a__b" / "..hidden").mkdir(parents=True)
    outcome = _one(tmp_path, regen_cache)
    assert {p[0].rule for _, p in outcome.refused} == {"path"} and len(outcome.refused) == 2


def test_mixed_build_publishes_the_good_and_reports_the_bad(
    tmp_path, submission_rows, regen_cache, monkeypatch
):
    import phasebench.leaderboard.validate as validate

    monkeypatch.setattr(validate, "known_tasks", lambda tasks_dir=None: dict(TASKS))
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/good", accuracy=[0.9] * 8)
    bad = make_submission(subs, submission_rows, model="acme/tampered", accuracy=[0.5] * 8)
    path = next(bad.glob("results_*.json"))
    data = json.loads(path.read_text())
    data["results"][TASK]["acc,none"] = 0.99
    path.write_text(json.dumps(data))
    evil = make_submission(subs, submission_rows, model="acme/evil")
    meta = yaml.safe_load((evil / "submission.yaml").read_text())
    meta["notes"] = "<script>alert('x')</script>"
    (evil / "submission.yaml").write_text(yaml.safe_dump(meta))
    site = tmp_path / "site"
    assert main(["leaderboard", "build", str(subs), "--out", str(site), "--quiet",
                 "--cache", str(regen_cache)]) == 0  # fmt: skip
    board = json.loads((site / "leaderboard.json").read_text())
    assert [r["model"] for r in board["rows"]] == ["acme/good"]
    refused = {r["submission"]: r["problems"][0]["rule"] for r in board["rejections"]["refused"]}
    assert refused == {f"acme__tampered/{REVISION}": "metric", f"acme__evil/{REVISION}": "schema"}
    html = (site / "rejections.html").read_text()
    assert "acme__tampered" in html and "<script>" not in html
    reported = (site / "reported.html").read_text()
    assert "reported, not reproduced" in reported and "DeepSeek-V4-Flash-Base" in reported
    table = pd.read_parquet(site / "leaderboard.parquet")
    assert list(table["model"]) == ["acme/good"] and "phase_7" in table.columns
    assert {"worst_phase_crossfit", "worst_phase_crossfit_lo", "evidence"} <= set(table.columns)
    per_phase = pd.read_parquet(site / "per_phase.parquet")
    assert len(per_phase) == 8 and set(per_phase["phase"]) == set(range(8))


def test_script_in_a_name_appears_escaped(tmp_path):
    outcome_report = {
        "accepted": [],
        "superseded": [],
        "refused": [
            {
                "submission": "<script>alert(1)</script>",
                "problems": [{"rule": "path", "file": "<b>x</b>", "message": "m"}],
            }
        ],
    }
    board = {"rows": [], "reported": [], "models": {}, "rejections": outcome_report}
    build_site(board, tmp_path / "site")
    html = (tmp_path / "site" / "rejections.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html


@pytest.mark.slow
def test_outputs_are_deterministic(tmp_path, submission_rows, regen_cache, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # the build date shown on every page
    make_submission(tmp_path / "subs", submission_rows, model="acme/a", accuracy=[0.9, 0.5] * 4)
    make_submission(tmp_path / "subs", submission_rows, model="acme/b", accuracy=[0.7] * 8)
    digests = []
    for name in ("one", "two"):
        board = score(
            validate_all(tmp_path / "subs", tasks=TASKS, cache=regen_cache), load_reported()
        )
        build_site(board, tmp_path / name)
        digests.append({p.relative_to(tmp_path / name): p.read_bytes()
                        for p in (tmp_path / name).rglob("*") if p.is_file()})  # fmt: skip
    assert digests[0] == digests[1]
    assert "<svg" in digests[0][Path(board_page(board["rows"][0]["board"]))].decode()


@pytest.mark.slow
def test_rank_upper_bound_ties_overlapping_models(tmp_path, submission_rows, regen_cache):
    make_submission(tmp_path, submission_rows, model="acme/strong", accuracy=[1.0] * 8)
    make_submission(tmp_path, submission_rows, model="acme/strong2", accuracy=[0.97] * 8)
    make_submission(tmp_path, submission_rows, model="acme/weak", accuracy=[1, 1, 0, 0] * 2)
    board = score(_one(tmp_path, regen_cache))
    ranks = {r["model"]: r["rank_worst"] for r in board["rows"]}
    assert ranks["acme/strong"] == ranks["acme/strong2"] == 1 and ranks["acme/weak"] == 3


def test_pack_keeps_what_validation_needs(tmp_path, submission_rows, regen_cache):
    folder = make_submission(tmp_path / "raw", submission_rows)
    packed = tmp_path / "subs" / "acme__phase-model" / REVISION
    pack(folder, packed, folder / "submission.yaml")
    sample_file = next(packed.glob("samples_*.jsonl.gz"))
    first = json.loads(gzip.decompress(sample_file.read_bytes()).splitlines()[0])
    assert first["doc"]["prompt"] is None and first["packed_fields"] == ["prompt"]
    assert "arguments" not in first and first["doc_hash"] and first["filtered_resps"]
    raw_size = next(folder.glob("samples_*.jsonl")).stat().st_size
    assert sample_file.stat().st_size * 5 < raw_size
    outcome = _one(tmp_path / "subs", regen_cache)
    assert len(outcome.accepted) == 1, outcome.report_lines()
    again = tmp_path / "again"
    pack(folder, again)
    assert (again / sample_file.name).read_bytes() == sample_file.read_bytes()


def test_cli_validate_reports_and_exits_1(
    tmp_path, submission_rows, regen_cache, capsys, monkeypatch
):
    import phasebench.leaderboard.validate as validate

    monkeypatch.setattr(validate, "known_tasks", lambda tasks_dir=None: dict(TASKS))
    make_submission(tmp_path, submission_rows, meta={"license": "<b>"})
    report = tmp_path / "report.json"
    code = main(["leaderboard", "validate", str(tmp_path), "--quiet", "--report", str(report)])
    assert code == 1
    assert "REFUSED" in capsys.readouterr().out
    assert json.loads(report.read_text())["refused"][0]["problems"][0]["rule"] == "schema"
    assert main(["leaderboard", "validate", str(tmp_path / "nope")]) == 2


def test_sample_size_caps_apply_to_decompressed_bytes(tmp_path, submission_rows, regen_cache):
    from phasebench.samples import ReadLimits

    folder = make_submission(tmp_path / "raw", submission_rows)
    packed = tmp_path / "subs" / "acme__phase-model" / REVISION
    pack(folder, packed, folder / "submission.yaml")
    size = len(gzip.decompress(next(packed.glob("samples_*.gz")).read_bytes()))

    def refusal(limits: ReadLimits):
        outcome = validate_all(
            tmp_path / "subs", tasks=TASKS, cache=regen_cache, read_limits=limits
        )
        ((_, (problem,)),) = outcome.refused
        return problem

    problem = refusal(ReadLimits(max_bytes=size - 1))
    assert problem.rule == "size" and "bytes of samples" in problem.message
    assert refusal(ReadLimits(max_bytes=size, max_line_bytes=100)).rule == "size"


def test_known_tasks_merge_every_include_of_a_task_yaml():
    # kv and niah include two shared files (a list); the version lives in the first. A reader that
    # follows only a single `include:` string reads no version and refuses every submission.
    from phasebench.leaderboard.schema import known_tasks

    versions = known_tasks()
    assert set(versions) == {"phasebench_kv", "phasebench_niah", "phasebench_code"}
    assert all(v not in ("None", "") for v in versions.values()), versions


def _rerun(folder: Path, date: str, records: list[dict]) -> None:
    """An earlier invocation of lm-eval into the same folder (a staged run's earlier look, or a
    first run before a rerun): its own results and samples files, of these samples."""
    results = json.loads(next(folder.glob("results_2026-11-30T05*.json")).read_text())
    results["n-samples"][TASK] = {"original": len(records), "effective": len(records)}
    (folder / f"results_{date}.json").write_text(json.dumps(results))
    lines = "".join(json.dumps(r) + "\n" for r in records)
    (folder / f"samples_{TASK}_{date}.jsonl").write_text(lines)


def test_pack_takes_the_run_the_report_reads(tmp_path, submission_rows, regen_cache):
    """Before, a staged run (four looks) or a rerun into the same --output_path was packed whole
    and every build refused it: "a second samples file for task ...". Now pack takes each task's
    newest samples and their results, the files ``phasebench report`` reads."""
    from phasebench.report import load_runs

    folder = make_submission(tmp_path / "raw", submission_rows)
    records = _records(folder)
    for look, date in enumerate(("2026-11-30T01-00-00.000000", "2026-11-30T02-00-00.000000"), 1):
        _rerun(folder, date, records[: 16 * look])
    packed = tmp_path / "subs" / "acme__phase-model" / REVISION
    pack(folder, packed, folder / "submission.yaml")
    last = "2026-11-30T05-00-00.000000"
    assert sorted(p.name for p in packed.iterdir()) == [
        f"results_{last}.json", f"samples_{TASK}_{last}.jsonl.gz", "submission.yaml"]  # fmt: skip
    (run,), _ = load_runs([folder])
    assert len(run.samples[TASK]) == len(records)  # the report reads that run too
    outcome = _one(tmp_path / "subs", regen_cache)
    assert len(outcome.accepted) == 1, outcome.report_lines()


def test_pack_refuses_a_run_it_cannot_take_whole_in_one_line(tmp_path, submission_rows):
    from phasebench.errors import SamplesError

    folder = make_submission(tmp_path / "raw", submission_rows)
    orphan = folder / f"samples_{TASK}_2026-12-01T00-00-00.000000.jsonl"
    shutil.copy(next(folder.glob("samples_*.jsonl")), orphan)
    with pytest.raises(SamplesError, match="has no results_2026-12-01T00-00-00.000000.json"):
        pack(folder, tmp_path / "packed")
    orphan.unlink()
    # an earlier run of kv and niah, then kv alone: the newest niah samples belong to a run
    # whose kv samples are not the newest, so no one run holds both
    earlier = "2026-11-29T00-00-00.000000"
    _rerun(folder, earlier, _records(folder)[:16])
    results = json.loads((folder / f"results_{earlier}.json").read_text())
    results["results"]["phasebench_niah"] = {}
    (folder / f"results_{earlier}.json").write_text(json.dumps(results))
    (folder / f"samples_phasebench_niah_{earlier}.jsonl").write_text("")
    with pytest.raises(SamplesError, match=f"results_{earlier}.json is one run with {TASK}, "
                       "whose newest samples come from a later run"):  # fmt: skip
        pack(folder, tmp_path / "packed")
    assert not (tmp_path / "packed").exists()


def test_build_fails_when_every_new_entry_is_refused(
    tmp_path, submission_rows, regen_cache, capsys, monkeypatch
):
    """Before, ``pack && build`` exited 0 with "accepted: 0 refused: 1". A build whose new
    entries were all refused ends with a line naming them and exit code 1 (the site is built
    all the same); an entry the earlier site accepted is not new."""
    import phasebench.leaderboard.validate as validate

    monkeypatch.setattr(validate, "known_tasks", lambda tasks_dir=None: dict(TASKS))
    subs, site = tmp_path / "subs", tmp_path / "site"
    build = ["leaderboard", "build", str(subs), "--out", str(site), "--quiet", "--no-reported",
             "--cache", str(regen_cache)]  # fmt: skip
    bad = make_submission(subs, submission_rows, model="acme/bad", meta={"license": "<b>"})
    assert main(build) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"phasebench: the only new entry, acme__bad/{REVISION}, was refused "
                       "(above); the site shows no submitted entry")  # fmt: skip
    assert (site / "leaderboard.json").is_file()
    shutil.rmtree(bad.parent)
    make_submission(subs, submission_rows, model="acme/good")
    assert main(build) == 0  # a new entry accepted
    assert main(build) == 0  # nothing new: the same board again
    make_submission(subs, submission_rows, model="acme/bad", meta={"license": "<b>"})
    assert main(build) == 1  # the earlier site's entry is not new; the one new entry refused
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "acme__bad" in last and last.endswith("the site shows the 1 other entry"), last


def test_pack_refuses_runs_of_two_models_and_a_linked_submission(tmp_path, submission_rows):
    """Run A (kv, orgA/model-x) and a later run B (niah, orgB/model-y) in one output folder:
    before, both were packed under the one submission.yaml; now pack refuses, naming both. A
    --submission that is a link is refused too (pack copied its target, /etc/hostname)."""
    from phasebench.errors import SamplesError

    folder = make_submission(tmp_path / "raw", submission_rows, model="orgA/model-x")
    first = json.loads(next(folder.glob("results_*.json")).read_text())
    first["config"]["model_args"] = "pretrained=orgA/model-x,dtype=float32"
    next(folder.glob("results_*.json")).write_text(json.dumps(first))
    later = "2026-12-01T00-00-00.000000"
    second = {**first, "results": {"phasebench_niah": {}},
              "config": {**first["config"], "model_args": "pretrained=orgB/model-y"}}  # fmt: skip
    (folder / f"results_{later}.json").write_text(json.dumps(second))
    shutil.copy(next(folder.glob("samples_*.jsonl")),
                folder / f"samples_phasebench_niah_{later}.jsonl")  # fmt: skip
    out = tmp_path / "subs" / "orgA__model-x" / REVISION
    with pytest.raises(SamplesError, match="name 2 models: orgA/model-x .*, orgB/model-y"):
        pack(folder, out, folder / "submission.yaml")
    assert not out.exists()
    for name in (f"results_{later}.json", f"samples_phasebench_niah_{later}.jsonl"):
        (folder / name).unlink()
    link = tmp_path / "submission.yaml"
    link.symlink_to(folder / "submission.yaml")
    with pytest.raises(SamplesError, match="is a link or not a file"):
        pack(folder, out, link)
    assert not out.exists()
    assert {p.name for p in pack(folder, out, folder / "submission.yaml")} >= {"submission.yaml"}
