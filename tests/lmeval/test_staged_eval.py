"""``phasebench eval --staged`` end to end: a reference model through lm-eval's real ``hf``
backend, ``--limit`` and ``--use_cache``; the looks are prefixes of base items in the order
lm-eval takes documents, and no prompt is sent twice."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("sqlitedict")  # lm-eval's --use_cache

N_BASE = 64  # looks after 8, 16, 32 and 64 base items
LENGTH = 256


def _argv(splits: Path, variant: str, out: Path) -> list[str]:
    from phasebench.reference import weights_dir

    meta = json.dumps({"dataset_path": str(splits), "max_seq_lengths": [LENGTH]})
    return ["--model", "hf", "--model_args",
            f"pretrained={weights_dir() / variant},backend=causal,dtype=float32",
            "--device", "cpu", "--batch_size", "32", "--tasks", "phasebench_kv",
            "--metadata", meta, "--output_path", str(out), "--log_samples",
            "--gen_kwargs", "max_gen_toks=3"]  # fmt: skip


@pytest.mark.slow
def test_staged_run_sends_each_prompt_once_in_prefixes_of_base_items(tmp_path, monkeypatch):
    from phasebench.build import iter_rows
    from phasebench.demo import generate_split
    from phasebench.lmeval.staged import CACHE_NAME, run_staged
    from phasebench.reference.model import register_auto_classes
    from phasebench.samples import iter_samples

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    register_auto_classes()
    splits = generate_split(tmp_path / "splits", LENGTH, N_BASE)
    rows = list(iter_rows(next(splits.iterdir())))
    # the full-attention control has no phase gap to find: the run goes through every look
    out = run_staged(_argv(splits, "full", tmp_path / "out"))
    assert out.plan.looks == (8, 16, 32, 64) and out.plan.rows_per_base == 8
    assert [look["stage"] for look in out.looks] == list(range(1, out.decision.stage + 1))
    assert out.decision.stage == 4 and out.decision.verdict == "not significant"
    # lm-eval's --limit took the first documents: every rendering of the first base items
    for look in out.looks:
        (name,) = look["samples"]
        ids = [s["doc"]["id"] for s in iter_samples(out.samples_files[0].parent / name)]
        assert sorted(ids) == sorted(r["id"] for r in rows[: look["prompts"]])
    # each prompt answered once: the cache holds exactly the prompts of the last look
    (db,) = (tmp_path / "out").glob(f"{CACHE_NAME}_rank*.db")
    with sqlite3.connect(db) as con:
        (n,) = con.execute("select count(*) from unnamed").fetchone()
    assert n == out.looks[-1]["prompts"] == N_BASE * 8
    record = json.loads(out.record.read_text())
    assert record["decision"]["verdict"] == "not significant" and record["prompts_sent"] == 512
    # four looks, one model: every look after the first reused the model the first one loaded
    assert record["model_loads"] == 1
    assert os.path.basename(out.record) == "staged.json"


@pytest.mark.parametrize("prebuilt", [False, True])
def test_an_n_base_a_staged_run_cannot_cut_names_the_knob_the_run_used(
    tmp_path, monkeypatch, capsys, prebuilt
):
    """Before, a run whose split came from ``--metadata`` was told to "generate the split with
    --n-base 64"; the refusal names the metadata knob, and ``--n-base`` only for a split built
    by ``phasebench generate`` (``dataset_path``)."""
    from phasebench.cli import main
    from phasebench.demo import generate_split
    from phasebench.reference import weights_dir

    monkeypatch.setenv("PHASEBENCH_CACHE", str(tmp_path / "cache"))
    metadata = {"max_seq_lengths": [LENGTH], "n_base": 24}
    if prebuilt:
        splits = generate_split(tmp_path / "splits", LENGTH, 24)
        metadata = {"max_seq_lengths": [LENGTH], "dataset_path": str(splits)}
    code = main(["eval", "--staged", "--model", "hf", "--model_args",
                 f"pretrained={weights_dir() / 'mean-w8s4'}", "--tasks", "phasebench_kv",
                 "--metadata", json.dumps(metadata), "--output_path", str(tmp_path / "out"),
                 "--log_samples"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "multiple of 64" in err[-1], err
    if prebuilt:
        assert err[-1].endswith("generate the split again with --n-base 64"), err
    else:
        assert err[-1].endswith("""pass --metadata '{"n_base": 64, ...}'"""), err


@pytest.mark.parametrize("arm", ["repeat", "baseline"])
def test_a_staged_run_refuses_an_arm_that_reads_a_prompt_twice(tmp_path, capsys, arm):
    """lm-eval's --use_cache, which a staged run needs, would answer an earlier look's warm
    read with its cold read's cached answer: refused in one line before any split is built."""
    from phasebench.cli import main

    metadata = {"max_seq_lengths": [LENGTH], "prefix_cache": arm}
    code = main(["eval", "--staged", "--model", "local-completions", "--model_args",
                 "model=m,base_url=http://127.0.0.1:9/v1/completions", "--tasks",
                 "phasebench_kv", "--metadata", json.dumps(metadata), "--output_path",
                 str(tmp_path / "out"), "--log_samples"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f'run the "{arm}" arm without --staged' in err[0]
    assert not (tmp_path / "out").exists()
