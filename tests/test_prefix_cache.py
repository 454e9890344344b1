"""The prefix-cache axis (``"prefix_cache"`` in ``--metadata``; docs/serving.md).

``repeat`` reads every prompt twice in a row, cold then warm; ``phasebench report`` pairs the
two reads and tests them with an exact McNemar test. Checked end to end through ``phasebench
eval`` (the real lm-eval, its ``local-completions`` backend) against a loopback server whose
prefix cache can be told to break (:mod:`support.cache_fault_server`): a server whose warm
reads err on half the prompts gives p < 0.01, a correct one does not; the server's record of
arrivals shows lm-eval sent each warm read right after its cold twin. The clean case against a
real server (``transformers serve``) is in ``tests/lmeval/test_api_server.py``.

``salted`` opens every prompt with a salt of a multiple of P tokens: ``phasebench verify
--prefix-cache salted`` re-checks every label on the salted sequences, and a salted run against
a plain one of the same split is compared arm against arm by ``phasebench report --diff``.
"""

from __future__ import annotations

import json

import pytest

from phasebench.errors import SpecError
from phasebench.lmeval.data import prefix_cache_arm, repeated
from phasebench.stats import ReadPair, paired_agreement

MODULUS = 4
N_BASE = 8
LENGTH = 256


def test_mcnemar_against_hand_computed_cases():
    # 3 prompts right cold and wrong warm, none the other way: p = 2 * (1/2)^3
    pairs = [ReadPair(0, None, 1.0, 0.0)] * 3 + [ReadPair(1, None, 1.0, 1.0)] * 5
    out = paired_agreement(pairs, 2)
    assert (out["n"], out["agree"], out["first_only"], out["second_only"]) == (8, 5, 3, 0)
    assert out["p"] == pytest.approx(0.25)
    assert out["per_phase"][0]["first_only"] == 3 and out["per_phase"][1]["p"] == 1.0
    assert "per_length_phase" not in out
    # discordant both ways, equally: no evidence of a difference
    even = [ReadPair(0, 1, 1.0, 0.0), ReadPair(0, 1, 0.0, 1.0)]
    assert paired_agreement(even, 2)["p"] == 1.0
    assert paired_agreement(even, 2)["per_length_phase"][1]["n"] == 2
    # 20 one way, 0 the other: p = 2 / 2^20
    assert paired_agreement([ReadPair(0, None, 0.0, 1.0)] * 20, 1)["p"] == pytest.approx(2**-19)


def test_the_knob_takes_two_arms_and_refuses_concurrent_repeats():
    assert prefix_cache_arm({}) is None and prefix_cache_arm({"prefix_cache": "salted"})
    with pytest.raises(SpecError, match="must be one of 'repeat', 'salted'"):
        prefix_cache_arm({"prefix_cache": "twice"})
    with pytest.raises(SpecError, match="num_concurrent=4 would send both reads at once"):
        prefix_cache_arm({"prefix_cache": "repeat", "num_concurrent": "4"})
    rows = repeated([{"id": "a"}, {"id": "b"}])
    assert [(r["id"], r["read"]) for r in rows] == [
        ("a", "cold"), ("a", "warm"), ("b", "cold"), ("b", "warm"),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """A kv split for the reference models' tokenizer (a real tokenizer folder), its rows, and
    the gold answer of every prompt, plain and salted, for the loopback server."""
    from phasebench.build import generate, iter_rows
    from phasebench.resources import reference_weights_dir
    from phasebench.salting import salt_row
    from phasebench.specs import SplitSpec
    from phasebench.tokenization import load_tokenizer

    folder = str(reference_weights_dir() / "tokenizer")
    tok = load_tokenizer(folder)
    out = tmp_path_factory.mktemp("prefix-cache") / "splits"
    spec = SplitSpec(family="kv", length=LENGTH, modulus=MODULUS, n_base=N_BASE, tokenizer=folder)
    generate([spec], out, progress=False)
    rows = list(iter_rows(out / spec.config_name))
    answers = {r["prompt"]: r["answer"] for r in rows}
    answers |= {salt_row(r, tok)["prompt"]: r["answer"] for r in rows}
    return {"folder": folder, "out": out, "tok": tok, "rows": rows, "answers": answers}


def _run(split, work, *, faulty: bool, arm: str | None):
    """``phasebench eval`` on the split through the loopback server, then ``phasebench report
    --json``; returns (report JSON, the server's arrivals, the process output)."""
    from support.cache_fault_server import cache_fault_server
    from support.lmeval import lm_eval, phasebench

    metadata = {"dataset_path": str(split["out"]), "max_seq_lengths": [LENGTH]}
    if arm:
        metadata["prefix_cache"] = arm
    count = lambda text: len(split["tok"].encode(text))  # noqa: E731
    with cache_fault_server(split["answers"], count, faulty=faulty) as (url, server):
        args = (
            f"model=cache-fault,base_url={url},tokenizer={split['folder']},"
            "tokenizer_backend=huggingface,tokenized_requests=False,max_length=2048"
        )
        work.mkdir(parents=True, exist_ok=True)
        proc = lm_eval(work, args, "phasebench_kv", metadata, wrapper=True,
                       model="local-completions", batch_size=1, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = phasebench(work, "report", "out", "--json", "report.json", "--n-boot", "50",
                     "--n-perm", "50")  # fmt: skip
    assert rep.returncode == 0, rep.stderr[-3000:]
    report = json.loads((work / "report.json").read_text())
    (entry,) = [
        e for body in report["runs"].values() for e in body["tasks"]["phasebench_kv"].values()
    ]
    return entry, server.arrived, proc.stdout + rep.stdout


@pytest.mark.slow
def test_repeat_catches_warm_reads_that_err(split, tmp_path):
    from support.cache_fault_server import faulty_half

    entry, arrived, output = _run(split, tmp_path, faulty=True, arm="repeat")
    n = N_BASE * MODULUS
    assert len(arrived) == 2 * n
    # lm-eval sent every prompt twice in a row: the warm read right after its cold twin
    assert arrived[0::2] == arrived[1::2] and len(set(arrived)) == n
    cache = entry["prefix_cache"]
    errs = sum(faulty_half(r["prompt"]) for r in split["rows"])
    assert (cache["n"], cache["first_only"], cache["second_only"]) == (n, errs, 0)
    assert cache["first_acc"] == 1.0 and cache["p"] < 0.01
    # the phase statistics are the cold reads': every prompt right, no gap
    assert entry["acc"] == 1.0 and entry["gap"] == 0.0 and entry["n_samples"] == n
    assert "prefix cache  warm vs cold" in output and "only warm 0" in output


@pytest.mark.slow
def test_repeat_against_a_correct_cache_is_not_significant(split, tmp_path):
    """The clean case of the repeat arm: every prompt read twice in a row, logged as its cold
    and its warm read, the two agree and warm vs cold is not significant. (The suite's one run
    of this path: it ran through ``transformers serve`` as well, a second end-to-end run of the
    same arm, until the CI time was cut; docs/development.md.)"""
    from support.lmeval import outputs

    entry, arrived, _ = _run(split, tmp_path, faulty=False, arm="repeat")
    cache = entry["prefix_cache"]
    n = N_BASE * MODULUS
    assert len(arrived) == 2 * cache["n"] == 2 * n
    assert arrived[0::2] == arrived[1::2]  # the warm read right after its cold twin
    _, samples = outputs(tmp_path / "out")
    reads = [s["doc"]["read"] for s in samples["phasebench_kv"]]
    assert sorted(reads) == ["cold"] * n + ["warm"] * n
    assert cache["agreement"] == 1.0 and cache["p"] == 1.0


def test_salted_split_verifies_with_every_label_intact(split):
    from phasebench.salting import salt_problems, salt_row
    from phasebench.verification import verify

    (report,) = verify([split["out"]], progress=False, salted=True)
    assert report.ok and any("salted arm: 32 rows salted" in n for n in report.notes)
    salted = [salt_row(r, split["tok"]) for r in split["rows"]]
    assert all(s["salt_tokens"] % MODULUS == 0 and s["phase"] == r["phase"]
               for s, r in zip(salted, split["rows"], strict=True))  # fmt: skip
    # a label the salt would break is found: a row whose anchor is moved by one token
    broken = dict(split["rows"][0], anchor_index=split["rows"][0]["anchor_index"] + 1)
    assert any("does not hold the anchor" in p for p in salt_problems([broken], split["tok"]))


@pytest.mark.slow
def test_salted_and_plain_runs_compared_arm_against_arm(split, tmp_path):
    from support.lmeval import phasebench

    _, plain_arrived, _ = _run(split, tmp_path / "plain", faulty=True, arm=None)
    _, salted_arrived, _ = _run(split, tmp_path / "salted", faulty=True, arm="salted")
    assert len(salted_arrived) == len(set(salted_arrived)) == N_BASE * MODULUS
    assert not set(plain_arrived) & set(salted_arrived)  # every salted prompt is new
    proc = phasebench(tmp_path, "report", "plain/out", "salted/out", "--diff", "--json",
                      "diff.json", "--n-boot", "50", "--n-perm", "50")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    diff = json.loads((tmp_path / "diff.json").read_text())["difference"]
    cache = diff["tasks"]["phasebench_kv"][str(LENGTH)]["prefix_cache"]
    assert (cache["first"], cache["second"], cache["n"]) == ("plain", "salted", 32)
    assert cache["agreement"] == 1.0 and cache["p"] == 1.0
    assert "prefix cache  salted vs plain: 32/32 agree" in proc.stdout


def test_leaderboard_accepts_a_repeat_run_and_shows_warm_against_cold(
    tmp_path, submission_rows, regen_cache
):
    """A repeat run's samples (every prompt cold, then warm) pass validation; its warm reads
    are re-scored like any sample, and the model page shows the warm-vs-cold line."""
    from phasebench.leaderboard.render import build_site
    from phasebench.leaderboard.score import score
    from phasebench.leaderboard.validate import validate_all
    from support.submissions import TASK, TASKS, make_submission, sample_record, write_lmeval

    folder = make_submission(tmp_path / "subs", submission_rows, accuracy=[1.0] * 8)
    records = []
    for i, row in enumerate(submission_rows):
        cold = sample_record(2 * i, {**row, "read": "cold"}, " " + row["answer"])
        wrong = i % 2 == 0  # the warm read errs on every other prompt
        warm = sample_record(
            2 * i + 1, {**row, "read": "warm"}, " 0" if wrong else cold["resps"][0][0]
        )
        warm["acc_warm"], warm["metrics"] = warm.pop("acc"), ["acc_warm"]
        records += [cold, warm]
    for path in [*folder.glob("samples_*"), *folder.glob("results_*")]:
        path.unlink()
    n = len(submission_rows)
    table = {"alias": TASK, "acc,none": 1.0, "acc_stderr,none": "N/A",
             "acc_warm,none": (n // 2) / n}  # fmt: skip
    write_lmeval(folder, records, results={TASK: table})
    outcome = validate_all(tmp_path / "subs", tasks=TASKS, cache=regen_cache)
    assert len(outcome.accepted) == 1, outcome.report_lines()
    board = score(outcome)
    (detail,) = board["models"].values()
    cache = detail["boards"][0]["summary"]["prefix_cache"]
    assert (cache["n"], cache["first_only"], cache["second_only"]) == (n, n // 2, 0)
    assert cache["p"] < 0.01
    build_site(board, tmp_path / "site")
    pages = "".join(p.read_text() for p in (tmp_path / "site").rglob("*.html"))
    assert f"{n // 2} of {n} agree; right only cold {n // 2}, right only warm 0" in pages

    # a warm read whose logged score is not what its response gives is refused
    records[1]["acc_warm"] = 1.0
    for path in [*folder.glob("samples_*"), *folder.glob("results_*")]:
        path.unlink()
    write_lmeval(folder, records, results={TASK: table})
    outcome = validate_all(tmp_path / "subs", tasks=TASKS, cache=regen_cache)
    assert not outcome.accepted and "acc_warm is 1.0" in " ".join(outcome.report_lines())
