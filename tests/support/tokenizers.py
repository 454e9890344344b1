"""Tokenizers of other families than DeepSeek-V4's byte-level BPE, trained in the tests.

``build_unigram``: SentencePiece-style, a Unigram model over Metaspace pre-tokens (``▁`` marks
a space), digit runs and newline runs isolated, and a BOS token that the default encoding
prepends, so the prefix handling (positions counted with the BOS) is exercised. Saved as
``tokenizer.json`` plus ``tokenizer_config.json``, the way a Hub model folder ships it.

``build_wordpiece``: BERT-style WordPiece with special tokens on both sides.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors, trainers

from phasebench.families import code, niah
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
