"""kv, niah and code on the tokenizer families that need more than adding piece counts: Mistral's
SentencePiece v1 and v3, a Llama-2-style tokenizer, and one whose transformers class rewrites its
tokenizer.json. Every row is re-encoded whole, as lm-eval's hf backend encodes it."""

from __future__ import annotations

from collections import Counter

import pytest

from phasebench.build import generate, iter_rows, read_manifest
from phasebench.errors import AssemblyError
from phasebench.families import code, kv, needle
from phasebench.specs import SplitSpec
from phasebench.tokenization import NEWLINE_CONTEXT, check_seams
from phasebench.verification import verify_config

PREFIX_SPACE = ["mistral_v1", "mistral_v3", "llama2_style", "llama2_legacy"]
ALL = [*PREFIX_SPACE, "gpt2_rewritten"]
CASES = [  # (tokenizer fixture, family, length, modulus, n_base)
    *[(t, "kv", 1024, 8, 16) for t in ALL],
    *[(t, "niah", 1024, 8, 16) for t in ALL],
    *[(t, "code", 256, 8, 4) for t in ALL],
    ("mistral_v1", "kv", 2048, 4, 8),
    ("llama2_style", "niah", 512, 2, 4),
    ("mistral_v3", "code", 0, 4, 2),
]


def check_row(tok, row: dict) -> None:
    """The claims of one row, straight from the exact path."""
    ids = tok.encode(row["prompt"])
    assert ids[: tok.n_prefix] == list(tok.prefix_ids)
    if row["family"] == "code":
        assert len(ids) == row["length"] == row["anchor_index"]
        for choice in row["choices"]:
            whole = tok.encode(row["prompt"] + choice)
            assert whole[: len(ids)] == ids and len(whole) == len(ids) + 1
        return
    n, (anchor, question) = tok.token_index_at(
        row["prompt"], [row["key_char"], row["question_char"]]
    )
    assert len(ids) == n == row["length"]
    assert anchor == row["anchor_index"] and row["phase"] == anchor % row["phase_modulus"]
    assert question == row["question_index"]


@pytest.mark.parametrize("fixture,family,length,modulus,n_base", CASES)
def test_every_row_is_exact(fixture, family, length, modulus, n_base, request, tmp_path):
    tok = request.getfixturevalue(fixture)
    spec = SplitSpec(family, length, modulus=modulus, n_base=n_base, tokenizer=tok.name)
    (folder,) = generate([spec], tmp_path / "out", progress=False, tokenizer=tok)
    report = verify_config(folder, progress=False, tokenizer=tok)
    assert report.ok, report.lines()
    rows = list(iter_rows(folder))
    assert report.checked == report.rows == len(rows) > 0
    for row in rows:
        check_row(tok, row)
    per_phase = Counter(r["phase"] for r in rows)
    assert len(per_phase) == modulus and len(set(per_phase.values())) == 1
    manifest = read_manifest(folder)
    assert manifest["balance"]["max_mean_deviation"] <= 0.5
    assert manifest["tokenizer"]["piece_context"] == tok.context


@pytest.mark.parametrize("fixture", PREFIX_SPACE)
def test_prefix_space_tokenizers_count_pieces_after_a_newline(fixture, request):
    """Alone, a record gets the prefix space it never has inside a prompt; after the newline
    context it encodes as it does after the previous record."""
    tok = request.getfixturevalue(fixture)
    assert tok.context == NEWLINE_CONTEXT and tok.n_prefix == 1  # and a BOS, as on the Hub
    records = ["tkd241: 67067\n", "qmx042: 12345\n", "abc999: 10000\n"]
    alone = tok.count(records, at_start=True)
    inside = tok.count(records)
    assert list(alone) != list(inside)
    whole = tok.piece_ids(["".join(records)], at_start=True)[0]
    assert len(whole) == alone[0] + inside[1:].sum()


@pytest.mark.parametrize("fixture", ["deepseek", "smollm2", "wordpiece", "gpt2_rewritten"])
def test_additive_tokenizers_keep_counting_pieces_alone(fixture, request):
    tok = request.getfixturevalue(fixture)
    assert tok.context == "" and tok.context_ids == ()
    pieces = ["tkd241: 67067\n", " The cat sat.", "\n\ndef f(x):\n    return x"]
    assert tok.piece_ids(pieces) == tok.piece_ids(pieces, at_start=True)


@pytest.mark.parametrize("fixture", ["mistral_v1", "llama2_style"])
def test_a_seam_the_context_cannot_make_exact_is_still_refused(fixture, request):
    """A kv header ending with a space puts the prefix space before the first record: counted
    after the newline context, that record would be one token short, and the seam check says so."""
    tok = request.getfixturevalue(fixture)
    spec = SplitSpec("kv", 1024, modulus=8, n_base=16, tokenizer=tok.name)
    content = kv.content(spec)
    broken = needle.NeedleContent(**{**content.__dict__, "header": content.header + " "})
    with pytest.raises(AssemblyError, match="merges tokens across a kv seam"):
        needle.prepare(spec, tok, broken)
    # the same holds for pieces that follow each other inside a prompt
    with pytest.raises(AssemblyError, match="merges tokens across a record seam"):
        check_seams(tok, [["tkd241: 67067 ", "qmx042: 12345\n"]], "record")


def test_code_padding_opens_the_prompt_and_is_counted_there(request):
    """The padding block is the first piece of a code prompt: its table is measured at the text's
    start, where the prefix space joins its first token."""
    tok = request.getfixturevalue("mistral_v1")
    table = code.build_pad_table(tok, "docstring_eq", 8)
    steps = range(table.first, table.first + 8)
    blocks = [table.block(t) for t in steps]
    assert list(tok.count(blocks, at_start=True)) == list(steps)
    # its first token carries the prefix space, which a block inside a prompt would not have
    assert tok.piece_ids(blocks[:1], at_start=True) != tok.piece_ids(blocks[:1])
