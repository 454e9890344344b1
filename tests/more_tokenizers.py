"""Tokenizers of the families that need more than adding piece counts, obtained offline.

* **Mistral SentencePiece v1 and v3**: the ``.model`` files that the ``mistral-common`` wheel
  ships as package data (a test extra), in a folder with a ``LlamaTokenizer``
  ``tokenizer_config.json`` as Mistral's Hub repositories have it (``add_bos_token``), loaded
  with ``AutoTokenizer`` like any model folder: transformers converts the ``.model`` to its
  Rust backend (BPE with byte fallback, Metaspace with a prefix space, BOS).
* **A Llama-2-style tokenizer** trained here: BPE over whitespace-split words with single digits,
  newlines left to byte-fallback tokens, and at run time Llama 2's pipeline (Metaspace with a
  prefix space at the start of the text, no split, a BOS), saved with a ``LlamaTokenizer`` config;
  and the same vocabulary in the older shape of Llama 2's own ``tokenizer.json`` (a normalizer
  that prepends ``▁`` and replaces spaces, no pre-tokenizer), loaded as that file.
* **A tokenizer whose transformers class rewrites its file**: a byte-level BPE whose
  ``tokenizer.json`` splits digits one at a time before GPT-2's byte-level rules, with a
  ``tokenizer_config.json`` naming ``GPT2Tokenizer``; transformers 5 rebuilds it with GPT-2's
  pre-tokenizer and drops the digit rule, so the loaded tokenizer encodes numbers differently
  from the file.

Every folder is built once per test session and loaded through
:func:`phasebench.tokenization.load_tokenizer`, the path every phasebench command takes.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from unigram_tokenizer import corpus

from phasebench import templates
from phasebench.families import kv
from phasebench.rng import derive_rng
from phasebench.tokenization import PhaseTokenizer, load_tokenizer

#: (fixture, file in mistral_common/data, tokenizer_config ``legacy``): v1 as Mistral 7B v0.1's
#: repository configures it (legacy, Metaspace prepends always), v3 with the non-legacy scheme.
MISTRAL = {
    "mistral_v1": ("tokenizer.model.v1", True),
    "mistral_v3": ("mistral_instruct_tokenizer_240323.model.v3", False),
}


def mistral_data() -> Path:
    """The data folder of the installed ``mistral-common`` (found without importing it)."""
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "mistral-common is not installed; `pip install -e .[test]` installs it (its package "
            "data holds the Mistral SentencePiece models these tests load)"
        )
    return Path(spec.submodule_search_locations[0]) / "data"


def build_mistral(folder: Path, fixture: str) -> Path:
    filename, legacy = MISTRAL[fixture]
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mistral_data() / filename, folder / "tokenizer.model")
    config = {
        "tokenizer_class": "LlamaTokenizer",
        "add_bos_token": True,
        "add_eos_token": False,
        "legacy": legacy,
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": 1 << 20,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return folder


def training_text() -> list[str]:
    """The shared corpus plus kv records and the kv and niah templates."""
    rng = derive_rng(0, "test-tokenizer", "kv")
    codes = rng.choice(kv.KEY_SPACE, size=2000, replace=False)
    values = rng.integers(10_000, 100_000, size=2000)
    records = [kv.record(kv.key_text(c), str(v)) for c, v in zip(codes, values, strict=True)]
    texts = [
        templates.render("kv/header.j2"),
        templates.render("kv/question.j2", key="abc123"),
        templates.render("niah/header.j2"),
        templates.render("niah/question.j2", key="velmorax"),
    ]
    return corpus() + records + texts * 20


def build_llama2_style(folder: Path) -> Path:
    """Train the Llama-2-style tokenizer and save it under ``folder``."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence(  # for training only: words, single digits
        [
            pre_tokenizers.Split("\n", behavior="removed"),
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=3000, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False
    )
    tok.train_from_iterator(training_text(), trainer=trainer)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    for byte in range(256):  # byte-fallback tokens, as in Llama 2's vocabulary
        vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    data["model"]["byte_fallback"] = True
    data["normalizer"] = None
    data["pre_tokenizer"] = {
        "type": "Metaspace",
        "replacement": "▁",
        "prepend_scheme": "first",
        "split": False,
    }
    tok = Tokenizer.from_str(json.dumps(data))
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "LlamaTokenizer",
        "add_bos_token": True,
        "add_eos_token": False,
        "legacy": False,
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": 1 << 20,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return folder


def build_llama2_legacy(folder: Path, trained: Path) -> Path:
    """``trained``'s tokenizer.json with Llama 2's legacy normalizer instead of Metaspace."""
    data = json.loads((trained / "tokenizer.json").read_text(encoding="utf-8"))
    data["normalizer"] = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        ],
    }
    data["pre_tokenizer"] = None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def build_gpt2_rewritten(folder: Path) -> Path:
    """Train a byte-level BPE with GPT-2's rules (so its merges join digits), then save it with
    its own rule of single digits first and a config naming ``GPT2Tokenizer``."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=3000,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_text(), trainer=trainer)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "GPT2Tokenizer",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>",
        "model_max_length": 1 << 20,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return folder


BUILDERS = {
    "mistral_v1": lambda folder: build_mistral(folder, "mistral_v1"),
    "mistral_v3": lambda folder: build_mistral(folder, "mistral_v3"),
    "llama2_style": build_llama2_style,
    "gpt2_rewritten": build_gpt2_rewritten,
}
_FOLDERS: dict[str, Path] = {}  # built once per test session, whichever module asks first


def folder_of(name: str, tmp_path_factory) -> Path:
    if name not in _FOLDERS:
        folder = tmp_path_factory.mktemp(name) / "tok"
        if name == "llama2_legacy":
            _FOLDERS[name] = build_llama2_legacy(
                folder, folder_of("llama2_style", tmp_path_factory)
            )
        else:
            _FOLDERS[name] = BUILDERS[name](folder)
    return _FOLDERS[name]


@pytest.fixture(scope="session")
def mistral_v1(tmp_path_factory) -> PhaseTokenizer:
    return load_tokenizer(str(folder_of("mistral_v1", tmp_path_factory)))


@pytest.fixture(scope="session")
def mistral_v3(tmp_path_factory) -> PhaseTokenizer:
    return load_tokenizer(str(folder_of("mistral_v3", tmp_path_factory)))


@pytest.fixture(scope="session")
def llama2_style(tmp_path_factory) -> PhaseTokenizer:
    return load_tokenizer(str(folder_of("llama2_style", tmp_path_factory)))


@pytest.fixture(scope="session")
def llama2_legacy(tmp_path_factory) -> PhaseTokenizer:
    """Loaded as its bare tokenizer.json, the way a folder without a config is loaded."""
    return load_tokenizer(str(folder_of("llama2_legacy", tmp_path_factory) / "tokenizer.json"))


@pytest.fixture(scope="session")
def gpt2_rewritten(tmp_path_factory) -> PhaseTokenizer:
    return load_tokenizer(str(folder_of("gpt2_rewritten", tmp_path_factory)))
