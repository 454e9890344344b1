"""A submission's serving claim: shown as claimed unless a witness backs it, half a witness or a
fractional count refused, a backend its own results contradict refused, a declared serving
setting the server reported otherwise refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all
from support.submissions import TASK, TASKS, make_submission, write_lmeval

SITE = "https://example.org/phasebench"


SERVING = {"engine": "vllm", "version": "0.28.0", "flags": ["prefix-caching"]}


_DROP = object()


def _served(root: Path, rows: list[dict], witness, model: str = "acme/served") -> Path:
    """A submission run through a server (``serving`` declared) whose samples carry
    ``witness(i, doc)`` as their ``served_verified`` value (``_DROP``: no key), with every hash
    and aggregate recomputed."""
    meta = {"backend": "local-completions", "serving": SERVING}
    folder = make_submission(root, rows, model=model, accuracy=[1.0] * 8, meta=meta)
    samples = next(folder.glob("samples_*"))
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    for i, rec in enumerate(records):
        value = witness(i, rec["doc"])
        if value is not _DROP:
            rec["served_verified"] = value
    for path in [*folder.glob("samples_*"), *folder.glob("results_*")]:
        path.unlink()
    write_lmeval(folder, records, backend=meta["backend"])
    present = [r["served_verified"] for r in records if "served_verified" in r]
    if present:
        share = sum(c is not None and c == label for label, c in present) / len(present)
        path = next(folder.glob("results_*"))
        data = json.loads(path.read_text())
        data["results"][TASK]["served_verified,none"] = share
        path.write_text(json.dumps(data))
    return folder


def test_a_serving_claim_without_a_witness_is_shown_as_claimed_not_witnessed(
    tmp_path, submission_rows, regen_cache
):
    """``serving`` declared, no ``served_verified`` on any sample: accepted (the run may have
    gone through lm-eval's own API backend), but every place that shows the stack says it is
    claimed, not witnessed; a witnessed run says witnessed."""
    from phasebench.leaderboard.eval_results import entry_results
    from phasebench.leaderboard.render import board_page, build_site

    subs = tmp_path / "subs"
    _served(subs, submission_rows, lambda i, doc: _DROP, model="acme/claimed")
    _served(subs, submission_rows, lambda i, doc: [doc["length"], doc["length"]],
            model="acme/witnessed")  # fmt: skip
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.refused, outcome.report_lines()
    board = score(outcome)
    states = {r["model"]: r["serving_witness"] for r in board["rows"]}
    assert states == {"acme/claimed": "claimed, not witnessed", "acme/witnessed": "witnessed"}
    pages = {d["model"]: d["serving_witness"] for d in board["models"].values()}
    assert pages == states
    site = tmp_path / "site"
    build_site(board, site)
    row = next(r for r in board["rows"] if r["model"] == "acme/claimed")
    assert "claimed, not witnessed" in (site / board_page(row["board"])).read_text()
    assert "claimed, not witnessed" in (site / row["page"]).read_text()
    assert "claimed, not witnessed" in (site / "leaderboard.csv").read_text()
    notes = entry_results(board, "acme/phasebench", SITE)[row["page"]]
    assert "claimed, not witnessed" in notes[0]["notes"]


@pytest.mark.parametrize(
    ("witness", "words"),
    [
        (lambda i, doc: [doc["length"], doc["length"]] if i % 2 else _DROP, "every sample"),
        (lambda i, doc: [doc["length"], doc["length"] + 0.9], "whole number"),
    ],
    ids=["half a witness", "a count of 256.9"],
)
def test_half_a_witness_or_a_fractional_count_is_refused(
    tmp_path, submission_rows, regen_cache, witness, words
):
    subs = tmp_path / "subs"
    _served(subs, submission_rows, witness)
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.accepted
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "served" and words in problem.message, problem


def test_a_witness_without_counts_is_not_shown_as_verified(tmp_path, submission_rows, regen_cache):
    """``served_verified: [256, null]`` on every sample: the server reported no count, so the
    claim is not witnessed."""
    subs = tmp_path / "subs"
    _served(subs, submission_rows, lambda i, doc: [doc["length"], None])
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.refused, outcome.report_lines()
    board = score(outcome)
    assert {r["serving_witness"] for r in board["rows"]} == {"claimed, not witnessed"}


def test_a_backend_the_results_contradict_is_refused(tmp_path, submission_rows, regen_cache):
    """``backend: local-completions`` in submission.yaml, ``model_source: hf`` in the results:
    the model page would print a reproduction command for a run that never happened."""
    subs = tmp_path / "subs"
    folder = make_submission(subs, submission_rows, model="acme/claims",
                             meta={"backend": "local-completions"})  # fmt: skip
    path = next(folder.glob("results_*.json"))
    data = json.loads(path.read_text())
    data["model_source"] = "hf"
    path.write_text(json.dumps(data))
    honest = make_submission(subs, submission_rows, model="acme/honest",
                             meta={"backend": "local-completions"})  # fmt: skip
    path = next(honest.glob("results_*.json"))
    data = json.loads(path.read_text())
    data["model_source"] = "phasebench-local-completions"  # phasebench eval's witnessing name
    path.write_text(json.dumps(data))
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/honest"]
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "schema" and "model_source" in problem.message, problem


def test_a_serving_setting_the_server_reported_otherwise_is_refused(
    tmp_path, submission_rows, regen_cache
):
    """``serving.settings`` against ``served_settings``, what ``phasebench eval`` read from the
    server (llama.cpp's /props) into the task metadata: agreeing, accepted; a setting declared
    otherwise, refused in one line naming it, both values and where the server said it."""
    from phasebench.leaderboard.schema import submission_schema
    from phasebench.lmeval.served_settings import SETTINGS

    schema = submission_schema()["properties"]["serving"]["properties"]["settings"]
    assert list(schema["properties"]) == list(SETTINGS)  # one list of settings
    reported = {"context_tokens": 2048, "source": {"context_tokens": "/props n_ctx"}}
    for context, accepted in ((2048, True), (4096, False)):
        subs = tmp_path / str(context)
        folder = _served(subs, submission_rows, lambda i, doc: [doc["length"], doc["length"]])
        meta = yaml.safe_load((folder / "submission.yaml").read_text())
        meta["serving"] = {**SERVING, "settings": {"context_tokens": context, "ubatch_tokens": 64}}
        (folder / "submission.yaml").write_text(yaml.safe_dump(meta))
        path = next(folder.glob("results_*"))
        data = json.loads(path.read_text())
        data["configs"][TASK]["metadata"]["served_settings"] = reported
        path.write_text(json.dumps(data))
        outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
        assert bool(outcome.accepted) == accepted, outcome.report_lines()
    (problem,) = outcome.refused[0][1]
    assert problem.rule == "served"
    assert problem.message == (
        f"{TASK}: serving setting context_tokens: declared 4096 tokens, the server reports "
        "2048 tokens (/props n_ctx)"
    )
