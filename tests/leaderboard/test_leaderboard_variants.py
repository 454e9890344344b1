"""Submission variants: several configurations of the same weights (KV-cache presses) live in
``<org>__<model>/<revision>+<variant>/`` and are scored side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from phasebench.leaderboard.render import board_page, build_site
from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all
from support.submissions import REVISION, TASKS, make_submission


def _variant(
    root: Path, submission_rows, name: str | None, folder: str | None = None, **meta
) -> Path:
    extra = {"backend": "phasebench-kvpress", "kv_cache": f"kvpress {name}", **meta}
    if name is not None:
        extra["variant"] = name
    made = make_submission(
        root, submission_rows, model="acme/m", meta=extra, accuracy=[0.5] * 8, seed=1
    )
    target = made.parent / (folder or (f"{REVISION}+{name}" if name else REVISION))
    if target != made:
        made.rename(target)
    return target


@pytest.mark.slow
def test_two_variants_of_one_revision_are_both_scored(tmp_path, submission_rows, regen_cache):
    _variant(tmp_path, submission_rows, "kvpress-snapkv-r0.25")
    _variant(tmp_path, submission_rows, "kvpress-knorm-r0.25")
    _variant(tmp_path, submission_rows, None, kv_cache="none (full attention)", backend="hf")
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    assert not outcome.refused, outcome.report_lines()
    assert sorted(s.name for s in outcome.accepted) == [
        f"acme__m/{REVISION}",
        f"acme__m/{REVISION}+kvpress-knorm-r0.25",
        f"acme__m/{REVISION}+kvpress-snapkv-r0.25",
    ]
    board = score(outcome)
    assert sorted(r["kv_cache"] for r in board["rows"]) == [
        "kvpress kvpress-knorm-r0.25",
        "kvpress kvpress-snapkv-r0.25",
        "none (full attention)",
    ]
    assert len({r["page"] for r in board["rows"]}) == 3
    build_site(board, tmp_path / "site")
    index = (tmp_path / "site" / board_page(board["rows"][0]["board"])).read_text()
    assert 'class="c-kv" data-v="kvpress kvpress-snapkv-r0.25"' in index
    assert 'class="c-kv" data-v="kvpress kvpress-knorm-r0.25"' in index


def test_folder_and_variant_must_agree(tmp_path, submission_rows, regen_cache):
    _variant(tmp_path, submission_rows, "kvpress-a", folder=REVISION)
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    (problem,) = outcome.refused[0][1]
    assert problem.rule == "path" and f"{REVISION}+kvpress-a/" in problem.message


def test_a_suffix_without_variant_is_refused(tmp_path, submission_rows, regen_cache):
    _variant(tmp_path, submission_rows, None, folder=f"{REVISION}+kvpress-a")
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    (problem,) = outcome.refused[0][1]
    assert problem.rule == "path" and problem.message.endswith(f"acme__m/{REVISION}/")


@pytest.mark.parametrize("folder", [f"{REVISION}+Upper", f"{REVISION}+", f"{REVISION}+a/b"])
def test_odd_variant_folders_are_listed(tmp_path, submission_rows, regen_cache, folder):
    base = tmp_path / "acme__m"
    (base / folder).mkdir(parents=True)
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    assert [p[0].rule for _, p in outcome.refused] == ["path"]


def test_schema_refuses_a_bad_variant(tmp_path, submission_rows, regen_cache):
    folder = _variant(tmp_path, submission_rows, "ok")
    meta = yaml.safe_load((folder / "submission.yaml").read_text())
    meta["variant"] = "Bad Variant"
    (folder / "submission.yaml").write_text(yaml.safe_dump(meta))
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    assert outcome.refused[0][1][0].rule == "schema"


@pytest.mark.slow
def test_supersedes_replaces_the_same_variant_only(tmp_path, submission_rows, regen_cache):
    _variant(tmp_path, submission_rows, "kvpress-a")
    _variant(tmp_path, submission_rows, "kvpress-b")
    newer = "f" * 40
    made = make_submission(
        tmp_path,
        submission_rows,
        model="acme/m",
        revision=newer,
        meta={"variant": "kvpress-a", "supersedes": REVISION, "kv_cache": "kvpress a"},
    )
    path = next(made.glob("results_*.json"))  # a later run of the same submitter replaces it
    path.write_text(path.read_text().replace('"date": 1795000000.0', '"date": 1795086400.0'))
    made.rename(made.parent / f"{newer}+kvpress-a")
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    assert sorted(s.name for s in outcome.accepted) == [
        f"acme__m/{REVISION}+kvpress-b",
        f"acme__m/{newer}+kvpress-a",
    ]
    assert outcome.superseded == [(f"acme__m/{REVISION}+kvpress-a", f"acme__m/{newer}+kvpress-a")]


@pytest.mark.slow
def test_one_model_on_two_serving_stacks_is_two_rows(tmp_path, submission_rows, regen_cache):
    from phasebench.leaderboard.render import board_page
    from phasebench.leaderboard.tables import flat_table, write_tables

    vllm = {"engine": "vllm", "version": "0.28.0", "flags": ["prefix-caching", "chunked-prefill"],
            "settings": {"kv_block_tokens": 16, "prefill_chunk_tokens": 8192,
                         "prefix_cache": True, "batch_invariant": False}}  # fmt: skip
    sglang = {"engine": "sglang", "version": "0.5.2",
              "settings": {"kv_block_tokens": 1, "prefix_cache": True}}  # fmt: skip
    for name, serving in (("vllm", vllm), ("sglang", sglang)):
        _variant(tmp_path, submission_rows, name, backend="local-completions",
                 kv_cache="CSA window 8 stride 4", serving=serving)  # fmt: skip
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    assert not outcome.refused, outcome.report_lines()
    board = score(outcome)
    labels = ["sglang 0.5.2", "vllm 0.28.0; prefix-caching, chunked-prefill"]
    assert sorted(r["serving"] for r in board["rows"]) == labels
    assert sorted(flat_table(board)["serving"]) == labels
    write_tables(board, tmp_path / "out")
    assert labels[1] in (tmp_path / "out" / "leaderboard.csv").read_text()
    build_site(board, tmp_path / "site")
    page = (tmp_path / "site" / board_page(board["rows"][0]["board"])).read_text()
    assert f"served by {labels[1]}" in page and f"served by {labels[0]}" in page
    # the declared serving settings: in leaderboard.json's rows and model entries, in the CSV,
    # on each model page, and what differs between the two stacks of one model
    exported = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    cells = {r["serving"]: r["serving_settings"] for r in exported["rows"]}
    assert cells[labels[1]] == (
        "kv_block_tokens=16; prefill_chunk_tokens=8192; prefix_cache=on; batch_invariant=off"
    )
    assert cells[labels[0]] == "kv_block_tokens=1; prefix_cache=on"
    assert cells[labels[0]] in (tmp_path / "out" / "leaderboard.csv").read_text()
    models = {d["meta"]["serving"]["engine"]: d for d in exported["models"].values()}
    assert models["vllm"]["meta"]["serving"]["settings"] == vllm["settings"]
    (other,) = models["vllm"]["other_stacks"]
    assert other["serving"] == labels[0]
    assert [d["setting"] for d in other["differ"]] == [
        "kv_block_tokens", "prefill_chunk_tokens", "batch_invariant"]  # fmt: skip
    row = next(r for r in board["rows"] if r["serving"] == labels[1])
    page = (tmp_path / "site" / row["page"]).read_text()
    assert "kv_block_tokens: 16 tokens" in page and "batch_invariant: off" in page
    assert "prefill_chunk_tokens 8192 tokens here, not declared there" in page
    assert "kv_block_tokens 16 tokens here, 1 tokens there" in page


def test_a_serving_field_is_checked_by_the_schema(tmp_path, submission_rows, regen_cache):
    _variant(tmp_path, submission_rows, "vllm", serving={"engine": "vLLM <b>", "version": "1"})
    outcome = validate_all(tmp_path, tasks=TASKS, cache=regen_cache)
    (problem,) = outcome.refused[0][1]
    assert problem.rule == "schema" and "serving" in problem.message
