"""Tokenizers of other families than DeepSeek-V4's byte-level BPE, trained in the tests.

``build_unigram``: SentencePiece-style, a Unigram model over Metaspace pre-tokens (``▁`` marks
a space), digit runs and newline runs isolated, and a BOS token that the default encoding
prepends, so the prefix handling (positions counted with the BOS) is exercised. Saved as
``tokenizer.json`` plus ``tokenizer_config.json``, the way a Hub model folder ships it.

``build_wordpiece``: BERT-style WordPiece with special tokens on both sides.

Tokenizers of the families that need more than adding piece counts (``build_mistral``,
``build_llama2_style``, ``build_llama2_legacy``, ``build_gpt2_rewritten``):

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

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from phasebench import templates
from phasebench.families import code, kv, niah
from phasebench.rng import derive_rng


def corpus() -> list[str]:
    """Prose from the niah lexicon, code items and filler code, padding runs and numbers."""
    rng = derive_rng(0, "test-tokenizer")
    lines = niah.prose_pool(rng, 3000)
    for i in range(64):
        family = code.TEMPLATES[i % len(code.TEMPLATES)]
        values = code._DRAW[family](derive_rng(1, "corpus", i), i % 3 == 0)
        lines += list(code.render_item(family, values))
    lines += code.filler_pool(rng, 300)
    lines += [char * n for char in "=-#*" for n in (1, 2, 3, 4, 6, 8, 12, 16)] * 20
    lines += [" ".join(str(n) for n in (1, 2, 4, 8, 16, 32, 64, 128, 256))] * 50
    lines += [" * * * * The special magic number for velmorax is 1234567."] * 20
    return lines


def build_unigram(folder: Path) -> Path:
    """Train the Unigram tokenizer and save it under ``folder``; returns the folder."""
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\n+"), behavior="isolated"),
            pre_tokenizers.Digits(individual_digits=False),
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True),
        ]
    )
    trainer = trainers.UnigramTrainer(
        vocab_size=4000,
        special_tokens=["<unk>", "<s>", "</s>"],
        unk_token="<unk>",
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": 1 << 20,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return folder


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


def build_wordpiece(folder: Path) -> Path:
    """A BERT-style WordPiece tokenizer with [CLS] before and [SEP] after every encoding:
    another tokenizer family, and special tokens on both sides. Saved under ``folder``."""
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
    PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
    ).save_pretrained(folder)
    return folder


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
