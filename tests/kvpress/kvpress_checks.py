"""Checks of phasebench-kvpress that need kvpress, run by tests/kvpress/test_kvpress_env.py with the
Python of the kvpress environment (transformers<5.3), as ``python kvpress_checks.py WORK``.

A tiny randomly initialised 2-layer Llama with the DeepSeek-V4 tokenizer, saved with
``save_pretrained`` (``support.models.make_tiny_llama`` with one layer more, so that per-layer
cache lengths can differ), answers real phasebench kv prompts. Each check raises AssertionError on
failure; the last line printed is a JSON summary the test reads.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

from support.models import make_tiny_llama

GEN_KWARGS = {"until": ["\n"], "do_sample": False, "temperature": 0.0, "max_gen_toks": 16}
LENGTH = 256


def check_backend(model: Path) -> dict:
    """A handful of prompts through the backend: the cache shrinks, labels do not move, the
    question token by token answers as in one pass, ragged presses run and kvpress's one-pass
    question fails on their cache."""
    import torch
    from transformers import DynamicCache

    from phasebench.errors import PhasebenchError
    from phasebench.kvpress.backend import KVPressLM
    from phasebench.lmeval.data import resolve_split

    args = {"pretrained": str(model), "dtype": "float32", "device": "cpu"}
    rows = resolve_split("kv", **args, max_seq_lengths=[LENGTH], n_base=16).rows[:6]
    before = copy.deepcopy(rows)
    lm = KVPressLM(**args, press="knorm", compression_ratio=0.5)
    answers = [lm.answer(r["prompt"], dict(GEN_KWARGS), r) for r in rows]
    assert rows == before, "the backend changed a row"
    for stats, row in zip(lm.stats, rows, strict=True):
        assert stats.context_tokens == row["question_index"] > row["anchor_index"]
        assert stats.kept_max == stats.kept_min == int(stats.context_tokens * 0.5), stats
        assert stats.question_tokens == row["length"] - row["question_index"]

    lm.stats, lm.token_by_token = [], True
    again = [lm.answer(r["prompt"], dict(GEN_KWARGS), r) for r in rows]
    assert again == answers, (again, answers)

    lm.press, lm.token_by_token, lm.stats = None, False, []
    plain = [lm.answer(r["prompt"], dict(GEN_KWARGS), r) for r in rows]
    assert all(s.kept_max == s.context_tokens for s in lm.stats)

    ragged = KVPressLM(**args, press="pyramidkv", compression_ratio=0.5, window_size=8)
    ragged.answer(rows[0]["prompt"], dict(GEN_KWARGS), rows[0])
    (stats,) = ragged.stats
    assert stats.ragged and stats.kept_min < stats.kept_max, stats

    # what kvpress's pipeline does on that cache: the whole question in one pass
    head = ragged.tok_batch_encode([rows[0]["prompt"]])[0][0][: stats.context_tokens]
    tail = ragged.tok_batch_encode([rows[0]["prompt"]])[0][0][stats.context_tokens :]
    cache = DynamicCache()
    with torch.no_grad(), ragged.press(ragged.model):
        ragged.model.model(input_ids=head.unsqueeze(0), past_key_values=cache)
    positions = torch.arange(len(head), len(head) + len(tail)).unsqueeze(0)
    try:
        with torch.no_grad():
            ragged.model(input_ids=tail.unsqueeze(0), past_key_values=cache, position_ids=positions)
        one_pass = "ran"
    except RuntimeError as exc:
        one_pass = str(exc).splitlines()[0]
    assert "must match" in one_pass, one_pass

    refusals = {}
    for bad in (
        {"press": "snap"},
        {"press": "chunkkv"},
        {"press": "decoding", "inner": "knorm"},
        {"press": "knorm", "compresion_ratio": 0.5},  # a typo must not run uncompressed
    ):
        try:
            KVPressLM(**args, **bad)
        except PhasebenchError as exc:
            refusals[bad["press"]] = str(exc)
    assert set(refusals) == {"snap", "chunkkv", "decoding", "knorm"}, refusals
    assert "snapkv" in refusals["snap"] and "inner=" in refusals["chunkkv"]
    assert "compresion_ratio" in refusals["knorm"] and "compression_ratio" in refusals["knorm"]
    return {
        "answers": answers,
        "plain": plain,
        "kept": [s.kept_max for s in lm.stats],
        "ragged_kept": [stats.kept_min, stats.kept_max],
        "one_pass_error": one_pass,
        "refusals": refusals,
    }


#: Presses the batched path is checked on: token-level, per-chunk, whole-chunk (whose kvpress
#: compression of a batch keeps the first row's chunks for every row), attention-based, ragged.
BATCHED_PRESSES = (
    {"press": None},
    {"press": "knorm", "compression_ratio": 0.5},
    {"press": "chunk", "inner": "knorm", "compression_ratio": 0.25, "chunk_length": 6},
    {"press": "chunkkv", "inner": "knorm", "compression_ratio": 0.25, "chunk_length": 6},
    {"press": "snapkv", "compression_ratio": 0.5, "window_size": 8},
    {"press": "pyramidkv", "compression_ratio": 0.5, "window_size": 8},
)


def check_batched(model: Path) -> dict:
    """Prompts answered together give each prompt the cache and the answer it gets alone: the
    kept keys and values of every layer agree, and so do the answers."""
    import torch

    from phasebench.kvpress.backend import KVPressLM
    from phasebench.lmeval.data import resolve_split

    args = {"pretrained": str(model), "dtype": "float32", "device": "cpu"}
    rows = resolve_split("kv", **args, max_seq_lengths=[LENGTH], n_base=16).rows[:5]
    seen = {}
    for press in BATCHED_PRESSES:
        lm = KVPressLM(**args, **press)
        prepared = [lm.prepare(r["prompt"], dict(GEN_KWARGS), r) for r in rows]
        # the renderings of one base item: their common beginning is prefilled once
        assert 0 < lm._shared_prefix(torch.tensor([p.head for p in prepared])) < LENGTH
        with torch.no_grad():
            alone = [lm._prefill(torch.tensor([p.head]))[0] for p in prepared]
            together = lm._prefill(torch.tensor([p.head for p in prepared]))
        for a, b in zip(alone, together, strict=True):
            for la, lb in zip(a.layers, b.layers, strict=True):
                assert la.keys.shape == lb.keys.shape, (press, la.keys.shape, lb.keys.shape)
                assert torch.allclose(la.keys, lb.keys, atol=1e-5), press
                assert torch.allclose(la.values, lb.values, atol=1e-5), press
        single = [lm.answer_prepared([p])[0] for p in prepared]
        batched = lm.answer_prepared(prepared)
        assert single == batched, (press, single, batched)
        assert {s.batch for s in lm.stats[-len(rows) :]} == {len(rows)}
        seen[press["press"] or "none"] = sorted(
            {len(layer.keys[0, 0]) for layer in alone[0].layers}
        )
    return {"batched_kept": seen}


def run_eval(
    model: Path, work: Path, model_args: str, task: str, out: str, batch_size: int = 1
) -> int:
    """``phasebench eval --model phasebench-kvpress`` as a user types it; returns the exit code."""
    metadata = json.dumps({"max_seq_lengths": [LENGTH], "n_base": 16})
    command = [
        sys.executable, "-m", "phasebench", "eval", "--model", "phasebench-kvpress",
        "--model_args", f"pretrained={model},dtype=float32,{model_args}", "--tasks", task,
        "--device", "cpu", "--batch_size", str(batch_size), "--metadata", metadata, "--log_samples",
        "--output_path", str(work / out), "--lm_eval_seed", "0",
    ]  # fmt: skip
    with open(work / f"{out}.log", "w") as log:
        return subprocess.run(command, cwd=work, stdout=log, stderr=subprocess.STDOUT).returncode


def main() -> None:
    work = Path(sys.argv[1])
    model = work / "tiny-llama"
    make_tiny_llama(model, layers=2, hidden=32)
    summary = check_backend(model)
    summary["eval_rc"] = run_eval(
        model, work, "press=snapkv,compression_ratio=0.5,window_size=16", "phasebench_kv", "out"
    )
    summary |= check_batched(model)
    summary["batched_rc"] = run_eval(
        model,
        work,
        "press=snapkv,compression_ratio=0.5,window_size=16",
        "phasebench_kv",
        "batched",
        batch_size=8,
    )
    summary["code_rc"] = run_eval(model, work, "press=knorm", "phasebench_code", "code")
    summary["code_error"] = [
        line for line in (work / "code.log").read_text().splitlines() if "phasebench: error" in line
    ]
    from importlib.metadata import version

    summary["versions"] = {name: version(name) for name in ("kvpress", "transformers", "lm_eval")}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
