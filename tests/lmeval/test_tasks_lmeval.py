"""The real ``lm_eval`` CLI on the phasebench tasks against a tiny random Llama (CPU), and the
``phasebench eval`` wrapper with its truncation guard."""

from __future__ import annotations

import pytest

from phasebench.lmeval.batching import batch_stop
from phasebench.lmeval.harness import TASK_FAMILIES
from phasebench.lmeval.tasks import COMPACT_METRICS, metric_keys
from support.lmeval import lm_eval, outputs

LENGTHS = [128, 256]
MODULUS = 4
N_BASE = {"kv": 8, "niah": 8, "code": 2}
ROW_FIELDS = ("id", "phase", "phase_modulus", "base_id", "anchor_index", "length", "prompt")


@pytest.fixture(scope="module")
def group_run(tiny_llama, tmp_path_factory):
    """One ``lm_eval --tasks phasebench --log_samples`` run over all three tasks, full metrics."""
    work = tmp_path_factory.mktemp("lmeval")
    metadata = {"max_seq_lengths": LENGTHS, "phase_modulus": MODULUS, "n_base": N_BASE,
                "metrics": "full"}  # fmt: skip
    # code scores full-vocabulary log-probs: 129K x prompt floats per row, so small batches
    proc = lm_eval(work, f"pretrained={tiny_llama},dtype=float32", "phasebench", metadata,
                   batch_size=2)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return outputs(work / "out")


def expected_rows(family: str) -> int:
    per_unit = 4 * 16 if family == "code" else MODULUS  # code: padding styles x sweep
    return N_BASE[family] * per_unit * len(LENGTHS)


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TASK_FAMILIES))
def test_every_metric_of_the_full_set_is_reported(group_run, task):
    results, _ = group_run
    family = TASK_FAMILIES[task]
    table = results["results"][task]
    wanted = ["acc"] + (["margin"] if family == "code" else [])
    wanted += metric_keys(family, MODULUS, LENGTHS, "full")
    reported = [k.removesuffix(",none") for k in table if "," in k and "_stderr" not in k]
    assert sorted(reported) == sorted(set(wanted))
    for m in wanted:
        assert isinstance(table[f"{m},none"], float), (m, table[f"{m},none"])
    assert 0.0 <= table["acc_lowest_phase,none"] <= table["acc_best_phase,none"] <= 1.0
    assert table["phase_gap_ci_low,none"] <= table["phase_gap,none"] + 1e-9
    assert table["phase_gap,none"] <= table["phase_gap_ci_high,none"] + 1e-9
    directions = results["higher_is_better"][task]
    assert directions["phase_gap"] is False and directions["acc_lowest_phase"] is True
    assert directions["phase_gap_p_value"] is None  # no arrow: a p-value is not a score
    assert "phasebench" in results["groups"]


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TASK_FAMILIES))
def test_samples_are_all_phases_of_all_items(group_run, task):
    _, samples = group_run
    family = TASK_FAMILIES[task]
    logged = samples[task]
    assert len(logged) == expected_rows(family)
    for sample in logged:
        doc = sample["doc"]
        assert all(field in doc for field in ROW_FIELDS), sorted(doc)
        assert doc["phase"] == doc["anchor_index"] % MODULUS
        assert sample["acc"] in (0.0, 1.0)
    lengths = sorted({s["doc"].get("config_length", s["doc"]["length"]) for s in logged})
    assert lengths == LENGTHS
    phases = [s["doc"]["phase"] for s in logged]
    assert sorted(set(phases)) == list(range(MODULUS))
    assert len({phases.count(r) for r in range(MODULUS)}) == 1  # balanced
    if family == "code":
        assert all(isinstance(s["margin"], float) for s in logged)
        assert all((s["margin"] > 0) == (s["acc"] == 1.0) for s in logged)
    else:  # plain lm_eval too: each generation request names its length among its stops
        for sample in logged:
            gen_kwargs = sample["arguments"]["gen_args_0"]["arg_1"]
            assert gen_kwargs["until"] == ["\n", batch_stop(sample["doc"]["length"], "\n")]


@pytest.mark.slow
def test_wrapper_refuses_truncation(tiny_llama, tmp_path):
    metadata = {"max_seq_lengths": [512], "n_base": 8, "phase_modulus": 4}
    proc = lm_eval(tmp_path, f"pretrained={tiny_llama},max_length=300", "phasebench_kv", metadata,
                   wrapper=True)  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("phasebench: error: phasebench_kv: the longest prompt (512 tokens)")
    assert "Traceback" not in proc.stderr
    assert "16 generated tokens exceeds the model's context of 300" in lines[-1]


@pytest.mark.slow
def test_wrapper_runs_lm_eval_with_the_compact_metric_set(tiny_llama, tmp_path):
    """``phasebench eval`` passes every flag through, adds the tasks folder itself, and by
    default reports the compact set: at most 6 metric rows at one length, worst phase first.
    After lm-eval's table it prints phasebench's own summary of the samples this run logged."""
    metadata = {"max_seq_lengths": [256], "n_base": 8, "phase_modulus": 4}
    proc = lm_eval(tmp_path, f"pretrained={tiny_llama},dtype=float32", "phasebench_kv", metadata,
                   wrapper=True, extra=["--gen_kwargs", "max_gen_toks=4"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    # one bar for the work (lm-eval's requests), none for building contexts or loading weights,
    # and a line for each step before it
    assert "Loading weights" not in proc.stderr and "Running generate_until" in proc.stderr
    assert not [ln for ln in proc.stderr.replace("\r", "\n").splitlines() if ln.startswith("100%|")]
    assert "phasebench eval: phasebench_kv: the split for the model's tokenizer" in proc.stderr
    assert "phasebench eval: lm-eval: indexing the tasks, loading the model" in proc.stderr
    results, samples = outputs(tmp_path / "out")
    # a local model's run and output folder are named by its folder, not its whole path
    assert [p.name for p in (tmp_path / "out").iterdir()] == [tiny_llama.name]
    assert results["model_name"] == tiny_llama.name
    assert results["config"]["gen_kwargs"] == {"max_gen_toks": 4}
    assert len(samples["phasebench_kv"]) == 8 * 4
    table = results["results"]["phasebench_kv"]
    metrics = sorted(k.split(",")[0] for k in table if "," in k and "_stderr" not in k)
    assert metrics == sorted(COMPACT_METRICS) and len(metrics) <= 6
    # the split was generated once, into the cache, before lm-eval started
    assert len(list((tmp_path / "cache" / "splits").glob("kv_256-*"))) == 1

    # lm-eval's printed table: one row per metric, at most 6 for the task
    printed = [line for line in proc.stdout.splitlines() if line.startswith("|")]
    names = [cells[5].strip() for line in printed if len(cells := line.split("|")) > 6]
    assert sorted(n for n in names if n in metrics) == sorted(metrics), printed
    # then phasebench's summary, after lm-eval's table, from the same samples
    tail = proc.stdout[proc.stdout.index(printed[-1]) :]
    assert "phasebench summary of this run" in tail
    assert "phasebench_kv  length 256" in tail and "phasebench report out" in tail
    worst = next(line for line in tail.splitlines() if line.startswith("  worst phase"))
    assert float(worst.split()[2]) == pytest.approx(100 * table["acc_lowest_phase,none"], abs=0.05)
    gap = next(line for line in tail.splitlines() if line.startswith("  gap"))
    assert float(gap.split()[1]) == pytest.approx(100 * table["phase_gap,none"], abs=0.05)


@pytest.mark.slow
def test_wrapper_without_samples_says_how_to_get_the_summary(tiny_llama, tmp_path):
    metadata = {"max_seq_lengths": [128], "n_base": 8, "phase_modulus": 4}
    args = f"pretrained={tiny_llama},dtype=float32"
    proc = lm_eval(tmp_path, args, "phasebench_kv", metadata, wrapper=True, log_samples=False,
                   extra=["--gen_kwargs", "max_gen_toks=2"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("phasebench: per-phase summary") and "--log_samples" in last
    assert "phasebench report OUT" in last and "worst phase " not in proc.stdout
