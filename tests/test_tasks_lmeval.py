"""The real ``lm_eval`` CLI on the phasebench tasks against a tiny random Llama (CPU), and the
``phasebench eval`` wrapper with its truncation guard."""

from __future__ import annotations

import json

import pytest
from lmeval_run import ROOT, make_tiny_llama, outputs, run

from phasebench.harness import TASK_FAMILIES
from phasebench.lmeval import SAMPLE_METRICS, phase_metric_names

LENGTHS = [256, 512]
MODULUS = 4
N_BASE = {"kv": 8, "niah": 8, "code": 2}
ROW_FIELDS = ("id", "phase", "phase_modulus", "base_id", "anchor_index", "length", "prompt")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def group_run(tiny, tmp_path_factory):
    """One ``lm_eval --tasks phasebench --log_samples`` run over all three tasks."""
    work = tmp_path_factory.mktemp("lmeval")
    metadata = {"max_seq_lengths": LENGTHS, "phase_modulus": MODULUS, "n_base": N_BASE}
    proc = run(
        [
            "lm_eval",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny},dtype=float32",
            "--tasks",
            "phasebench",
            "--include_path",
            str(ROOT / "tasks"),
            "--metadata",
            json.dumps(metadata),
            "--device",
            "cpu",
            "--batch_size",
            "16",
            "--log_samples",
            "--output_path",
            str(work / "out"),
        ],
        cache=work / "cache",
        cwd=work,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return outputs(work / "out")


def expected_rows(family: str) -> int:
    per_unit = 4 * 16 if family == "code" else MODULUS  # code: padding styles x sweep
    return N_BASE[family] * per_unit * len(LENGTHS)


@pytest.mark.parametrize("task", sorted(TASK_FAMILIES))
def test_every_metric_reported(group_run, task):
    results, _ = group_run
    family = TASK_FAMILIES[task]
    table = results["results"][task]
    names = phase_metric_names(family, MODULUS)
    wanted = ["acc"] + (["margin"] if family == "code" else [])
    wanted += [n for n in names if n not in SAMPLE_METRICS]
    wanted += [f"{n}@{length}" for n in names for length in LENGTHS]
    missing = [m for m in wanted if f"{m},none" not in table]
    assert not missing, missing
    for m in wanted:
        value = table[f"{m},none"]
        assert isinstance(value, float), (m, value)
    assert 0.0 <= table["acc_worst_phase,none"] <= table["acc_best_phase,none"] <= 1.0
    assert table["phase_gap_ci_low,none"] <= table["phase_gap,none"] + 1e-9
    assert table["phase_gap,none"] <= table["phase_gap_ci_high,none"] + 1e-9
    assert results["higher_is_better"][task]["phase_gap"] is False
    assert "phasebench" in results["groups"]


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


def test_wrapper_refuses_truncation(tiny, tmp_path):
    proc = run(
        [
            "phasebench.cli",
            "eval",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny},max_length=300",
            "--tasks",
            "phasebench_kv",
            "--metadata",
            json.dumps({"max_seq_lengths": [512], "n_base": 8, "phase_modulus": 4}),
            "--device",
            "cpu",
        ],
        cache=tmp_path / "cache",
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("phasebench: error: phasebench_kv: the longest prompt (512 tokens)")
    assert "Traceback" not in proc.stderr
    assert "16 generated tokens exceeds the model's context of 300" in lines[-1]


def test_wrapper_runs_lm_eval_with_the_tasks(tiny, tmp_path):
    """``phasebench eval`` passes every flag through and adds the tasks folder itself."""
    proc = run(
        [
            "phasebench.cli",
            "eval",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny},dtype=float32",
            "--tasks",
            "phasebench_kv",
            "--metadata",
            json.dumps({"max_seq_lengths": [256], "n_base": 8, "phase_modulus": 4}),
            "--gen_kwargs",
            "max_gen_toks=4",
            "--device",
            "cpu",
            "--batch_size",
            "8",
            "--log_samples",
            "--output_path",
            str(tmp_path / "out"),
        ],
        cache=tmp_path / "cache",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results, samples = outputs(tmp_path / "out")
    assert results["config"]["gen_kwargs"] == {"max_gen_toks": 4}
    assert len(samples["phasebench_kv"]) == 8 * 4
    assert "acc_worst_phase@256,none" in results["results"]["phasebench_kv"]
    # the split was generated once, into the cache, before lm-eval started
    assert len(list((tmp_path / "cache" / "splits").glob("kv_256-*"))) == 1
