"""A small tokenizer of another family than DeepSeek-V4's byte-level BPE, trained in the tests.

SentencePiece-style: a Unigram model over Metaspace pre-tokens (``▁`` marks a space), digit runs
and newline runs isolated, and a BOS token that the default encoding prepends, so that the prefix
handling (positions counted with the BOS) is exercised. Saved as ``tokenizer.json`` plus
``tokenizer_config.json``, the way a Hub model folder ships it, and loaded through the same
:func:`phasebench.tokenization.load_tokenizer` path as any local folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors, trainers

from phasebench.families import code, niah
from phasebench.rng import derive_rng
from phasebench.specs import SplitSpec


def corpus() -> list[str]:
    """Prose from the niah lexicon, code items and filler code, padding runs and numbers."""
    rng = derive_rng(0, "test-tokenizer")
    lines = niah.prose_pool(rng, 3000)
    spec = SplitSpec(family="code", length=0, n_base=64)
    for i in range(64):
        family = code.FAMILIES[i % len(code.FAMILIES)]
        values = code._DRAW[family](derive_rng(1, "corpus", i), i % 3 == 0)
        lines += list(code.render_item(family, values))
    lines += code.filler_pool(rng, 300)
    lines += [char * n for char in "=-#*" for n in (1, 2, 3, 4, 6, 8, 12, 16)] * 20
    lines += [" ".join(str(n) for n in (1, 2, 4, 8, 16, 32, 64, 128, 256))] * 50
    lines += [" * * * * The special magic number for velmorax is 1234567."] * 20
    del spec
    return lines


def build(folder: Path) -> Path:
    """Train the tokenizer and save it under ``folder``; returns the folder."""
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
