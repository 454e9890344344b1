"""phasebench-kvpress in its own environment, built for the tests: kvpress pins transformers<5.3,
so it cannot share the main environment (transformers 5.24, pandas 3).

The environment is a virtual environment in the session's temporary folder with torch (the
version the main environment runs) and this project with its ``kvpress`` extra from a copy of the
source tree, pinned by constraints-kvpress.txt (pip may reach the package index; nothing
downloads a model), built by ``tests/support/kvpress_env.py``: in the background from the moment
the session has collected these tests, the suite's slowest setup running beside the other tests.
The tests run tests/kvpress/kvpress_checks.py there: a handful of real phasebench kv
prompts through the backend with a tiny random 2-layer Llama (the cache shrinks, labels do
not move, ragged presses run), then
``phasebench eval --model phasebench-kvpress`` end to end. Back in the main environment, the
run is packed as a leaderboard submission with a variant and validated like any other.

``PHASEBENCH_KVPRESS_PYTHON=/path/to/python`` reuses an environment built before (with the
``kvpress`` extra installed) instead of building one.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from phasebench.leaderboard.pack import pack
from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all
from support import kvpress_env
from support.lmeval import ROOT
from support.lmeval import offline_env as env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kvpress_python(tmp_path_factory) -> str:
    """The kvpress environment's python: the one the session started building in the background
    when it collected these tests (``tests/conftest.py``), waited for, or built here."""
    reuse = os.environ.get("PHASEBENCH_KVPRESS_PYTHON")
    if reuse:
        assert Path(reuse).exists(), f"PHASEBENCH_KVPRESS_PYTHON={reuse} does not exist"
        return reuse
    return kvpress_env.build(kvpress_env.session_folder(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="module")
def checked(kvpress_python, tmp_path_factory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("kvpress-run")
    run_env = env(work / "cache")  # the checkout, and tests/ for the shared builders
    run_env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), run_env["PYTHONPATH"]])
    proc = subprocess.run(
        [kvpress_python, str(Path(__file__).with_name("kvpress_checks.py")), str(work)],
        cwd=work,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return work, json.loads(proc.stdout.strip().splitlines()[-1])


def test_backend_in_the_kvpress_environment(checked):
    """The checks ran there (each asserts); what they saw is what the design says."""
    work, summary = checked
    assert summary["versions"]["kvpress"] == "0.5.5"
    assert summary["versions"]["transformers"].startswith("5.2.")
    assert summary["kept"] and summary["ragged_kept"][0] < summary["ragged_kept"][1]
    assert "must match" in summary["one_pass_error"]
    assert summary["eval_rc"] == 0, (work / "out.log").read_text()[-3000:]
    assert summary["code_rc"] == 2 and "generate_until" in summary["code_error"][0]
    assert summary["batched_kept"]["chunkkv"] != summary["batched_kept"]["none"]


def test_batched_run_answers_as_one_prompt_at_a_time(checked):
    """``--batch_size 8`` logs the same responses, per doc, as ``--batch_size 1``."""
    from support.lmeval import outputs

    work, summary = checked
    assert summary["batched_rc"] == 0, (work / "batched.log").read_text()[-3000:]
    _, one = outputs(work / "out")
    _, eight = outputs(work / "batched")

    def responses(samples):
        return {s["doc"]["id"]: s["resps"] for s in samples["phasebench_kv"]}

    assert len(responses(one)) == 128 and responses(one) == responses(eight)


def test_a_press_run_validates_as_a_leaderboard_submission(checked, tmp_path):
    """The lm-eval output of ``--model phasebench-kvpress`` (made under transformers 5.2) packs
    and validates here (transformers 5.24): same tokenizer fingerprint, every doc equal to the
    regenerated split (phase labels included), metrics recomputed from the responses."""
    work, _ = checked
    weights = (work / "tiny-llama" / "model.safetensors").read_bytes()
    revision = hashlib.sha256(weights).hexdigest()[:40]
    meta = {
        "model": "phasebench/tiny-random-llama-2l",
        "revision": revision,
        "variant": "kvpress-snapkv-r0.5",
        "precision": "float32",
        "backend": "phasebench-kvpress",
        "kv_cache": "kvpress 0.5.5 SnapKVPress(compression_ratio=0.5, window_size=16)",
        "chat_template": False,
        "license": "apache-2.0",
        "contact": "test",
        "tokenizer": {"name": "deepseek-v4"},
    }
    (tmp_path / "submission.yaml").write_text(yaml.safe_dump(meta))
    target = (
        tmp_path / "subs" / "phasebench__tiny-random-llama-2l" / f"{revision}+{meta['variant']}"
    )
    pack(work / "out", target, tmp_path / "submission.yaml")
    outcome = validate_all(tmp_path / "subs", cache=tmp_path / "regen")
    assert not outcome.refused, outcome.report_lines()
    (sub,) = outcome.accepted
    assert len(sub.samples) == 128 and set(sub.samples["phase"]) == set(range(8))
    (row,) = score(outcome)["rows"]
    assert row["backend"] == "phasebench-kvpress" and row["kv_cache"] == meta["kv_cache"]
