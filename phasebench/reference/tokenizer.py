"""The reference models' own tokenizer: a word-level vocabulary shaped for the ``kv`` family.

A ``kv`` record ``abc123: 45678\n`` encodes to four tokens ``abc | 123 | ": 456" | 78\n``, the
stride of the compressed models (4). Records much longer than the stride would let every
compressed window hold a whole record at every phase and hide the effect (the pilot's finding),
so the vocabulary gives letter triples and digit groups one token each. The value's head carries
the ``": "`` (or, in an answer, the space) before it, so the token right after a key's digits is
already the value: with the models' 2-token convolution, the value's first token sees the key's
digits (and the question's last token ``" is"`` sees them too), which makes retrieval learnable in
a CPU budget. Answers are ``" 456" | 78\n``.

Pieces come from one regular expression (a ``Split`` pre-tokenizer), and each piece is one
vocabulary entry, so no token can merge across a piece boundary: phasebench's fast path (sums of
piece counts) is exact on this tokenizer, and ``check_seams`` proves it for every split built.

Every token also has a short list of *components* (letters or digits by slot, key digits and
value digits apart, a newline or lead flag, or the word itself). The model embeds a token as the
sum of its components' embeddings, so the 17,576 letter triples cost 78 embedding rows instead of
17,576.
"""

from __future__ import annotations

import itertools
import json
import string
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from phasebench import templates

PAD, UNK, EOS = "[PAD]", "[UNK]", "[EOS]"
SPECIALS = (PAD, UNK, EOS)
#: Key letters before digits, words, digit groups (a two-digit group may carry the newline that
#: ends a record), ": ", other punctuation with an optional space, newline, a lone space.
PATTERN = r"[a-z]{3}(?=\d)| ?[A-Za-z]+\b|(?:: | )?\d{3}|\d{2}\n|\d{1,2}|: | ?[^\sA-Za-z\d]|\n| "
#: Components per token (slots in the component table; unused slots hold 0).
MAX_COMPONENTS = 4


def _template_words() -> list[str]:
    """Word and punctuation pieces of the kv header and question templates and the fillers."""
    text = templates.render("kv/header.j2") + templates.render("kv/question.j2", key="abc123")
    text += " . pad x the - a\n"
    pieces = pre_tokenizers.Split(Regex(PATTERN), behavior="isolated").pre_tokenize_str(text)
    words = [p for p, _ in pieces if not any(ch.isdigit() for ch in p)]
    words += list(string.ascii_letters) + [" " + c for c in string.ascii_letters]
    words += list(string.punctuation) + [" " + c for c in string.punctuation]
    return list(dict.fromkeys(words))


def vocabulary() -> list[str]:
    """All tokens in id order: specials, letter triples, digit groups, then words."""
    letters, digits = string.ascii_lowercase, string.digits
    triples = ["".join(t) for t in itertools.product(letters, repeat=3)]
    three = ["".join(t) for t in itertools.product(digits, repeat=3)]
    two = ["".join(t) for t in itertools.product(digits, repeat=2)]
    heads = [": " + t for t in three] + [" " + t for t in three]
    groups = three + heads + [t + "\n" for t in two] + two + list(digits)
    tokens = list(SPECIALS) + triples + groups + [" ", "\n", ": "]
    seen = set(tokens)
    tokens += [w for w in _template_words() if w not in seen and (seen.add(w) or True)]
    return tokens


def components(token: str) -> list[str]:
    """Names of the components a token's embedding sums (see module docstring). Key digits and
    value digits have components of their own, slot by slot: a value digit group is never
    confused with a key's digit group."""
    body = token.removeprefix(": ").removeprefix(" ").removesuffix("\n")
    if body.isdigit() and len(body) == 3 and token != body:  # ": 456" or " 456": value head
        return [f"v{i}:{c}" for i, c in enumerate(body)] + [f"lead:{token[: -len(body)]}"]
    if body.isdigit() and len(body) == 2 and token.endswith("\n"):  # "78\n": value tail
        return [f"v{i + 3}:{c}" for i, c in enumerate(body)] + ["nl"]
    if body.isdigit() and len(body) == 3:  # "042": key digits
        return [f"k{i}:{c}" for i, c in enumerate(body)]
    if token.isdigit():
        return [f"d{i}:{c}" for i, c in enumerate(token)]
    if len(token) == 3 and token.isalpha() and token.islower():
        return [f"l{i}:{c}" for i, c in enumerate(token)]
    return [f"w:{token}"]


def component_table(tokens: list[str]) -> tuple[list[list[int]], int]:
    """Per token, the ids (>= 1) of its components padded with 0; and the number of ids + 1."""
    names: dict[str, int] = {}
    table = []
    for tok in tokens:
        ids = [names.setdefault(n, len(names) + 1) for n in components(tok)]
        table.append(ids + [0] * (MAX_COMPONENTS - len(ids)))
    return table, len(names) + 1


def _build_tokenizer() -> Tokenizer:
    """The Rust tokenizer (deterministic: same vocabulary, same ids, same JSON)."""
    vocab = {tok: i for i, tok in enumerate(vocabulary())}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()  # pieces carry their own spaces and newlines
    tok.add_special_tokens(list(SPECIALS))
    return tok


def save_tokenizer(folder: Path) -> Path:
    """Write ``tokenizer.json`` and ``tokenizer_config.json`` into ``folder`` (no BOS/EOS added
    around text, so a prompt's token positions are exactly its pieces' positions)."""
    from phasebench.atomic import atomic_write_text

    folder = Path(folder)
    atomic_write_text(folder / "tokenizer.json", _build_tokenizer().to_str(pretty=True))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "pad_token": PAD,
        "unk_token": UNK,
        "eos_token": EOS,
        "model_max_length": 4096,
        "clean_up_tokenization_spaces": False,
    }
    atomic_write_text(folder / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
    return folder
