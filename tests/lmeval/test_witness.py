"""The witness of what a server saw: lm-eval's own API backend classes, subclassed to carry
``usage.prompt_tokens``; the per-sample ``served_verified`` log; samples whose count disagrees
left out of the statistics and counted by ``phasebench report``; the leaderboard's ``served``
rule; and ``phasebench eval``'s refusal of prompts longer than the stated API context.

The real server (transformers serve) runs these end to end in
``tests/lmeval/test_api_server.py``."""

from __future__ import annotations

import json

import pytest

from phasebench.errors import EvalError, SamplesError
from phasebench.lmeval import harness
from phasebench.lmeval.tasks import process_results
from phasebench.lmeval.witness import (
    WITNESSED_BACKENDS,
    ServedText,
    register_witnessed_backends,
    served_counts,
)
from phasebench.report import Run, build_report, render_tables
from support.submissions import REVISION, make_submission, write_lmeval


def _completion(text: str, prompt_tokens: int | None, n: int = 1) -> dict:
    out = {"choices": [{"index": i, "text": text} for i in range(n)]}
    if prompt_tokens is not None:
        out["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": 2}
    return out


def test_witnessed_backends_are_lm_evals_own_with_the_servers_count():
    from lm_eval.api.registry import get_model

    register_witnessed_backends()
    for backend, name in WITNESSED_BACKENDS.items():
        assert issubclass(get_model(name), get_model(backend))
    url = "http://127.0.0.1:9/v1"  # never contacted: only the response parsing runs
    completions = get_model("phasebench-local-completions")(
        base_url=f"{url}/completions", model="m", tokenizer_backend=None
    )
    (text,) = completions.parse_generations(outputs=_completion(" 42", 256))
    assert isinstance(text, ServedText) and text == " 42" and text.prompt_tokens == 256
    # one response answering two prompts reports one total: not attributable to either
    both = completions.parse_generations(outputs=_completion(" 1", 512, n=2))
    assert [t.prompt_tokens for t in both] == [None, None]
    (silent,) = completions.parse_generations(outputs=_completion(" 1", None))
    assert silent.prompt_tokens is None
    chat = get_model("phasebench-local-chat-completions")(
        base_url=f"{url}/chat/completions", model="m", tokenizer_backend=None
    )
    reply = {"choices": [{"index": 0, "message": {"content": " 7"}}], "usage": {"prompt_tokens": 9}}
    (text,) = chat.parse_generations(outputs=reply)
    assert text == " 7" and text.prompt_tokens == 9
    assert served_counts([_completion("a", 3), _completion("b", True)]) == [3, None]


def test_process_results_logs_the_count_and_drops_a_disagreeing_sample(submission_rows):
    row = submission_rows[0]
    length, right = row["length"], " " + row["answer"]
    agree = process_results(row, [ServedText(right, length)])
    assert agree["served_verified"] == [length, length] and agree["acc"] == 1.0
    assert "acc_lowest_phase" in agree
    short = process_results(row, [ServedText(right, length - 1)])
    assert short == {"served_verified": [length, length - 1]}  # in no statistic
    unverified = process_results(row, [ServedText(right, None)])
    assert unverified["served_verified"] == [length, None] and unverified["acc"] == 1.0
    assert "served_verified" not in process_results(row, [right])  # no server: nothing to say


def _logged(rows: list[dict], counts: dict[str, int | None]) -> list[dict]:
    """Sample-log lines as lm-eval writes them from process_results, the server having
    reported ``counts[id]`` (the row's own length where not given) for every prompt."""
    lines = []
    for i, row in enumerate(rows):
        right = " " + row["answer"] if row["phase"] % 4 != 3 else " 0"
        count = counts.get(row["id"], row["length"])
        metrics = process_results(row, [ServedText(right, count)])
        lines.append({"doc_id": i, "doc": row, "filter": "none", **json.loads(json.dumps(metrics))})
    return lines


def test_report_counts_the_witness_and_leaves_disagreeing_samples_out(submission_rows):
    rows = submission_rows
    cut = {rows[3]["id"]: rows[3]["length"] - 5, rows[20]["id"]: rows[20]["length"] + 1}
    silent = {rows[7]["id"]: None}
    report = build_report([Run("api", "here", {"phasebench_kv": _logged(rows, cut | silent)})],
                          n_boot=50, n_perm=50)  # fmt: skip
    (entry,) = report["runs"]["api"]["tasks"]["phasebench_kv"].values()
    served = entry["served"]
    assert (served["agree"], served["disagree"], served["unverified"]) == (len(rows) - 3, 2, 1)
    assert served["first"] == {"id": rows[3]["id"], "label": rows[3]["length"],
                               "count": rows[3]["length"] - 5}  # fmt: skip
    assert entry["n_samples"] == len(rows) - 2
    text = render_tables(report)
    assert f"{len(rows) - 3}/{len(rows)} agree with the label; 2 disagree and are left out" in text
    # no count anywhere: the run says its labels are unverified
    none = {r["id"]: None for r in rows}
    quiet = build_report([Run("api", "here", {"phasebench_kv": _logged(rows, none)})],
                         n_boot=50, n_perm=50)  # fmt: skip
    assert "labels unverified: the server reported no prompt token count" in render_tables(quiet)
    # a local run (no server) says nothing about a server
    plain = [{k: v for k, v in s.items() if k != "served_verified"} for s in _logged(rows, {})]
    local = build_report([Run("hf", "here", {"phasebench_kv": plain})], n_boot=50, n_perm=50)
    assert "server" not in render_tables(local).split("\n", 1)[1]


def test_report_refuses_a_run_whose_every_count_disagrees(submission_rows):
    off = {r["id"]: r["length"] + 1 for r in submission_rows}
    run = Run("api", "here", {"phasebench_kv": _logged(submission_rows, off)})
    with pytest.raises(SamplesError, match="not a measurement: here: phasebench_kv length 128"):
        build_report([run], n_boot=50, n_perm=50)


def _witnessed_submission(root, rows, counts):
    folder = make_submission(root, rows, accuracy=[1.0] * 8)
    records = [json.loads(line) for line in next(folder.glob("samples_*")).read_text().splitlines()]
    for rec in records:
        rec["served_verified"] = [rec["doc"]["length"], counts.get(rec["doc"]["id"])]
    for path in [*folder.glob("samples_*"), *folder.glob("results_*")]:
        path.unlink()
    share = sum(r["served_verified"][1] == r["served_verified"][0] for r in records) / len(records)
    write_lmeval(folder, records)
    path = next(folder.glob("results_*"))
    data = json.loads(path.read_text())
    data["results"]["phasebench_kv"]["served_verified,none"] = share
    path.write_text(json.dumps(data))
    return folder


def test_leaderboard_refuses_a_sample_the_server_counted_otherwise(
    tmp_path, submission_rows, regen_cache
):
    from phasebench.leaderboard.validate import validate_all

    counts = {r["id"]: r["length"] for r in submission_rows}
    _witnessed_submission(tmp_path / "ok", submission_rows, counts)
    outcome = validate_all(tmp_path / "ok", tasks={"phasebench_kv": "1.0"}, cache=regen_cache)
    assert [s.name for s in outcome.accepted] == [f"acme__phase-model/{REVISION}"]
    victim = submission_rows[5]
    _witnessed_submission(tmp_path / "bad", submission_rows, counts | {victim["id"]: 100})
    outcome = validate_all(tmp_path / "bad", tasks={"phasebench_kv": "1.0"}, cache=regen_cache)
    assert not outcome.accepted
    (problem,) = outcome.refused[0][1]
    assert problem.rule == "served"
    assert "sample 6: the server counted 100 prompt tokens where the labelled prompt has" in (
        problem.message
    )


def test_eval_refuses_a_prompt_longer_than_the_stated_api_context():
    harness.check_fits("kv", 2031, 16, 2047, "local-completions")  # exactly full is fine
    with pytest.raises(EvalError, match=r"stated context of 2048 \(max_length in --model_args"):
        harness.check_fits("kv", 2032, 16, 2047, "local-completions")
