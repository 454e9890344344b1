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

``baseline`` is ``repeat`` plus a third, salted read of every prompt, a second cold read: the
cold baseline (:func:`phasebench.stats.cold_baseline`) flags a cache that flips answers both
ways, which McNemar cannot see, and does not flag a server that is merely non-deterministic.
"""

from __future__ import annotations

import json

import pytest

from phasebench.errors import SpecError
from phasebench.lmeval.data import prefix_cache_arm, repeated
from phasebench.stats import ReadPair, ThreeReads, cold_baseline, paired_agreement

MODULUS = 4
N_BASE = 8
LENGTH = 256
#: The baseline arm's split: 64 prompts, so that a fault on a fifth of them (about 13) can
#: reach p < 0.01 (at least 7 prompts one way and none the other).
N_BASE_WIDE = 16


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


def test_cold_baseline_against_hand_computed_cases():
    # 4 prompts whose warm read differs while the colds agree (two right->wrong, two
    # wrong->right: McNemar sees nothing), none the other way: p = (1/2)^4, one-sided
    flips = [ThreeReads(0, None, 1.0, 0.0, 1.0)] * 2 + [ThreeReads(0, None, 0.0, 1.0, 0.0)] * 2
    same = [ThreeReads(1, None, 1.0, 1.0, 1.0)] * 4
    out = cold_baseline(flips + same)
    assert (out["n"], out["cold_agree"], out["warm_agree"]) == (8, 8, 4)
    assert (out["warm_only"], out["cold_only"]) == (4, 0)
    assert out["p"] == pytest.approx(1 / 16) and out["salted_acc"] == 0.75
    pairs = [ReadPair(r.phase, None, r.cold, r.warm) for r in flips + same]
    assert paired_agreement(pairs, 2)["p"] == 1.0
    # the colds disagree as often as warm does: no excess; all three alike: p = 1
    noisy = [ThreeReads(0, None, 1.0, 0.0, 1.0), ThreeReads(0, None, 1.0, 1.0, 0.0)]
    assert cold_baseline(noisy)["p"] == pytest.approx(0.75)
    assert cold_baseline(same)["p"] == 1.0
    # the warm read disagreeing where the colds disagree too is no evidence either way
    both = cold_baseline([ThreeReads(0, None, 1.0, 0.0, 0.0)] * 5)
    assert (both["warm_only"], both["cold_only"], both["p"]) == (0, 0, 1.0)


def test_the_knob_takes_three_arms_and_refuses_concurrent_repeats():
    assert prefix_cache_arm({}) is None and prefix_cache_arm({"prefix_cache": "salted"})
    assert prefix_cache_arm({"prefix_cache": "baseline"}) == "baseline"
    with pytest.raises(SpecError, match="must be one of 'repeat', 'salted', 'baseline'"):
        prefix_cache_arm({"prefix_cache": "twice"})
    for arm in ("repeat", "baseline"):
        with pytest.raises(SpecError, match=f'"{arm}" .* num_concurrent=4 would send both'):
            prefix_cache_arm({"prefix_cache": arm, "num_concurrent": "4"})
    rows = repeated([{"id": "a", "length": 8}, {"id": "b", "length": 8}])
    assert [(r["id"], r["read"]) for r in rows] == [
        ("a", "cold"), ("a", "warm"), ("b", "cold"), ("b", "warm"),
    ]  # fmt: skip
    # baseline: a third, salted read after the warm one; every read has every field (lm-eval's
    # dataset takes its columns from the first row), the plain reads their config length
    salted = [{"id": i, "length": 16, "config_length": 8, "salt_tokens": 8} for i in "ab"]
    rows = repeated([{"id": "a", "length": 8}, {"id": "b", "length": 8}], salted)
    assert [(r["id"], r["read"], r["length"]) for r in rows] == [
        ("a", "cold", 8), ("a", "warm", 8), ("a", "salted", 16),
        ("b", "cold", 8), ("b", "warm", 8), ("b", "salted", 16),
    ]  # fmt: skip
    assert all(r["config_length"] == 8 and len(r) == len(rows[0]) for r in rows)


def _make_split(tmp_path_factory, n_base: int) -> dict:
    from phasebench.build import generate, iter_rows
    from phasebench.resources import reference_weights_dir
    from phasebench.salting import salt_row
    from phasebench.specs import SplitSpec
    from phasebench.tokenization import load_tokenizer

    folder = str(reference_weights_dir() / "tokenizer")
    tok = load_tokenizer(folder)
    out = tmp_path_factory.mktemp("prefix-cache") / "splits"
    spec = SplitSpec(family="kv", length=LENGTH, modulus=MODULUS, n_base=n_base, tokenizer=folder)
    generate([spec], out, progress=False)
    rows = list(iter_rows(out / spec.config_name))
    salted = [salt_row(r, tok) for r in rows]
    answers = {r["prompt"]: r["answer"] for r in rows + salted}
    ids = {r["prompt"]: r["id"] for r in rows + salted}
    return {"folder": folder, "out": out, "tok": tok, "rows": rows, "salted": salted,
            "answers": answers, "ids": ids}  # fmt: skip


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """A kv split for the reference models' tokenizer (a real tokenizer folder), its rows, and
    the gold answer and row id of every prompt, plain and salted, for the loopback server."""
    return _make_split(tmp_path_factory, N_BASE)


@pytest.fixture(scope="module")
def wide_split(tmp_path_factory):
    """The same at :data:`N_BASE_WIDE` base items (64 prompts), for the baseline arm."""
    return _make_split(tmp_path_factory, N_BASE_WIDE)


def _run(split, work, *, fault: str | None, arm: str | None, seed: int = 0, props=None):
    """``phasebench eval`` on the split through the loopback server, then ``phasebench report
    --json``; returns (report JSON, the server's arrivals, the process output)."""
    from support.cache_fault_server import cache_fault_server
    from support.lmeval import lm_eval, phasebench

    metadata = {"dataset_path": str(split["out"]), "max_seq_lengths": [LENGTH]}
    if arm:
        metadata["prefix_cache"] = arm
    count = lambda text: len(split["tok"].encode(text))  # noqa: E731
    served = cache_fault_server(split["answers"], count, fault=fault, rows=split["ids"], seed=seed,
                                props=props)  # fmt: skip
    with served as (url, server):
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

    entry, arrived, output = _run(split, tmp_path, fault="errs", arm="repeat")
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

    entry, arrived, _ = _run(split, tmp_path, fault=None, arm="repeat")
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

    _, plain_arrived, _ = _run(split, tmp_path / "plain", fault="errs", arm=None)
    _, salted_arrived, _ = _run(split, tmp_path / "salted", fault="errs", arm="salted")
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


def _three_reads_of(split, fault: str | None, seed: int = 0) -> tuple[dict, dict]:
    """Every prompt of ``split`` read as a ``baseline`` run sends it, straight to the loopback
    server's fault model (no HTTP, no lm-eval: the end-to-end run is below): each cold read then
    its warm twin, the salted reads after them (a group of their own). Returns the cold baseline
    and the McNemar comparison of warm against cold."""
    from support.cache_fault_server import CacheFaultServer

    count = lambda text: 0  # noqa: E731 (no witness here)
    server = CacheFaultServer(split["answers"], count, fault, split["ids"], seed)

    def right(prompt: str, gold: str) -> float:
        return float(server.complete(prompt)["choices"][0]["text"] == gold)

    cold, warm = {}, {}
    for r in split["rows"]:
        cold[r["id"]] = right(r["prompt"], r["answer"])
        warm[r["id"]] = right(r["prompt"], r["answer"])
    salted = {s["id"]: right(s["prompt"], s["answer"]) for s in split["salted"]}
    rows = split["rows"]
    reads = [ThreeReads(r["phase"], None, cold[r["id"]], warm[r["id"]], salted[r["id"]])
             for r in rows]  # fmt: skip
    pairs = [ReadPair(t.phase, None, t.cold, t.warm) for t in reads]
    return cold_baseline(reads), paired_agreement(pairs, MODULUS)


def test_cold_baseline_flags_flips_and_not_a_non_deterministic_server(wide_split):
    """The done-when of the cold baseline, on the loopback server's fault models: a cache that
    flips answers both ways on a fifth of the prompts is flagged at p < 0.01 (McNemar, warm
    against cold, is not); a server non-deterministic on a fifth of the prompts with a correct
    cache is not flagged (p > 0.05) in 10 of 10 seeds; today's fault (warm reads worse) is."""
    from support.cache_fault_server import FRACTION, chosen

    ids = [r["id"] for r in wide_split["rows"]]
    flips, mcnemar = _three_reads_of(wide_split, "flips")
    flipped = sum(chosen(i, "flip") for i in ids)
    assert 7 <= flipped and abs(flipped / len(ids) - FRACTION) < 0.1  # about a fifth
    assert (flips["warm_only"], flips["cold_only"], flips["cold_agree"]) == (flipped, 0, 64)
    assert flips["p"] < 0.01 and flips["p"] == pytest.approx(2.0**-flipped)
    assert mcnemar["first_only"] > 0 and mcnemar["second_only"] > 0  # both ways
    assert mcnemar["p"] > 0.05  # what McNemar alone reads as noise

    noisy = sum(chosen(i, "noisy") for i in ids)
    assert abs(noisy / len(ids) - FRACTION) < 0.1
    found = [_three_reads_of(wide_split, "nondeterministic", seed) for seed in range(10)]
    assert all(base["p"] > 0.05 for base, _ in found), [b for b, _ in found]
    assert all(base["cold_agree"] < 64 for base, _ in found[:3])  # the noise is there

    errs, mcnemar = _three_reads_of(wide_split, "errs")
    assert errs["p"] < 0.01 and mcnemar["p"] < 0.01 and errs["cold_only"] == 0

    correct, mcnemar = _three_reads_of(wide_split, None)
    assert correct["p"] == mcnemar["p"] == 1.0 and correct["warm_agree"] == 64


@pytest.mark.slow
def test_baseline_run_flags_a_cache_that_flips_answers_both_ways(wide_split, tmp_path):
    """End to end through ``phasebench eval`` and ``phasebench report``: the baseline arm sends
    each warm read right after its cold twin and each salted read once, never as a hit, and the
    report's cold-baseline line flags the flipping cache that McNemar reads as noise."""
    from support.cache_fault_server import chosen

    props = {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1}
    entry, arrived, output = _run(wide_split, tmp_path, fault="flips", arm="baseline", props=props)
    n = N_BASE_WIDE * MODULUS
    assert len(arrived) == 3 * n
    salted = {s["prompt"] for s in wide_split["salted"]}
    plain = [p for p in arrived if p not in salted]
    assert plain[0::2] == plain[1::2] and len(set(plain)) == n  # warm right after its cold twin
    assert len([p for p in arrived if p in salted]) == len(salted) == n  # each salted read once
    for i, prompt in enumerate(arrived[1:], 1):  # a cold read is followed by its warm twin
        if prompt in salted:
            assert arrived[i - 1] in salted or arrived[i - 1] == arrived[i - 2]
    cache = entry["prefix_cache"]
    assert cache["arm"] == "baseline" and cache["n"] == n
    base = cache["baseline"]
    flipped = sum(chosen(r["id"], "flip") for r in wide_split["rows"])
    assert (base["n"], base["cold_agree"], base["warm_only"], base["cold_only"]) == (
        n, n, flipped, 0)  # fmt: skip
    assert base["p"] < 0.01 and cache["p"] > 0.05
    assert entry["n_samples"] == n  # the phase statistics are the cold reads' alone
    assert f"cold vs cold: {n}/{n} agree" in output and f"warm alone disagrees {flipped}" in output
    # what the server reported of its settings, recorded in the task metadata of the results
    from support.lmeval import outputs

    results, samples = outputs(tmp_path / "out")
    assert results["configs"]["phasebench_kv"]["metadata"]["served_settings"] == {
        "context_tokens": 2048, "parallel_requests": 1,
        "source": {"context_tokens": "/props n_ctx", "parallel_requests": "/props total_slots"},
    }  # fmt: skip
    reads = [s["doc"]["read"] for s in samples["phasebench_kv"]]
    assert sorted(reads) == sorted(["cold", "warm", "salted"] * n)
    assert results["results"]["phasebench_kv"]["acc_salted,none"] == base["salted_acc"]
