"""The real ``inspect eval phasebench/kv`` on a real model: the tiny random Llama through
Inspect's Hugging Face provider, against lm-eval's ``hf`` backend on the same split.

What is compared: the two frameworks feed the same token sequences (Inspect's provider reports
the width of the tensor it fed, which equals every prompt's labelled length: no chat frame, no
pad), the model answers each prompt alike (greedy decoding of the same ids; the response up to
the stop sequence, which lm-eval cuts at and Inspect's provider stops after), so every sample
scores alike, and ``phasebench report`` on the Inspect log equals, number for number, its report
on lm-eval's output. The tiny model cannot retrieve, so its scores are all 0: the numbers
agree trivially here, which is why the per-sample answers are compared as well; a non-flat
profile read both ways is ``test_inspectai.py``.
"""

from __future__ import annotations

import pytest

from support.inspect_runs import inspect_cli
from support.lmeval import lm_eval
from support.models import make_tiny_llama

LENGTH, MODULUS, N_BASE = 128, 2, 4


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory):
    """The same split on the tiny model, run by ``inspect eval`` and by lm-eval."""
    from phasebench.inspectai import MODEL_CONFIG

    work = tmp_path_factory.mktemp("inspect-cli")
    make_tiny_llama(work / "tiny-llama")
    log = inspect_cli(work, [
        "phasebench/kv", "--model", "hf/tiny-llama", "--model-config", str(MODEL_CONFIG),
        "-M", "device=cpu", "-T", f"length={LENGTH}", "-T", f"modulus={MODULUS}",
        "-T", f"n_base={N_BASE}",
    ])  # fmt: skip
    knobs = {"max_seq_lengths": [LENGTH], "phase_modulus": MODULUS, "n_base": N_BASE}
    # through `phasebench eval`, lm-eval's CLI without indexing lm-eval's own task files
    proc = lm_eval(work, "pretrained=tiny-llama,dtype=float32", "phasebench_kv", knobs,
                   wrapper=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return log, work / "out"


@pytest.mark.slow
def test_inspect_eval_report_equals_lm_eval_report(both_runs):
    from phasebench.inspect_log import read_inspect_log
    from phasebench.report import build_report, load_runs

    log, lm_out = both_runs
    inspect_run = read_inspect_log(log)
    (lm_run,) = load_runs([lm_out])[0]
    lm_samples = {s["doc"]["id"]: s for s in lm_run.samples["phasebench_kv"]}
    assert len(inspect_run.samples) == len(lm_samples) == N_BASE * MODULUS
    for sample in inspect_run.samples:
        doc = sample["doc"]
        twin = lm_samples[doc["id"]]
        # the same row (doc hash), the same prompt, the same tokens fed
        assert (
            sample["doc_hash"] == twin["doc_hash"] and sample["prompt_hash"] == twin["prompt_hash"]
        )
        assert sample["served_verified"] == [doc["length"], doc["length"]]
        assert sample["filtered_resps"][0].split("\n")[0] == twin["filtered_resps"][0]
        assert sample["acc"] == twin["acc"]

    inspect_report = build_report(load_runs([log])[0])
    lm_report = build_report([lm_run])
    (a,) = inspect_report["runs"].values()
    (b,) = lm_report["runs"].values()
    entry_a = a["tasks"]["phasebench_kv"][str(LENGTH)]
    entry_b = b["tasks"]["phasebench_kv"][str(LENGTH)]
    assert entry_a.pop("served") == {"agree": N_BASE * MODULUS, "disagree": 0,
                                      "unverified": 0, "first": None}  # fmt: skip
    assert entry_b.pop("served") is None  # lm-eval's hf backend logs no count
    assert a["tasks"] == b["tasks"]


@pytest.mark.slow
def test_inspect_eval_refuses_a_model_without_a_tokenizer(tmp_path):
    """An API provider names no tokenizer: the task is refused in one line saying to pass
    ``-T tokenizer=``, before any model is called."""
    with pytest.raises(RuntimeError) as failed:
        inspect_cli(tmp_path, ["phasebench/kv", "--model", "mockllm/model", "-T", "length=128"],
                    timeout=300)  # fmt: skip
    text = " ".join(str(failed.value).split())  # Inspect wraps the line to its console
    assert "names none; pass -T tokenizer=" in text and "Traceback" not in text
