"""The niah family on real tokenizers: every row re-encoded whole must confirm its claims."""

from __future__ import annotations

import hashlib
import re
from collections import Counter

import numpy as np
import pytest

from phasebench.build import generate, iter_rows, read_manifest
from phasebench.cli import main
from phasebench.errors import SpecError
from phasebench.families import niah
from phasebench.rng import derive_rng
from phasebench.specs import SplitSpec
from phasebench.tokenization import check_seams
from phasebench.verification import verify_config

CASES = [  # (tokenizer fixture, length, modulus, seed)
    ("deepseek", 1024, 8, 0),
    ("deepseek", 2048, 4, 1),
    ("deepseek_bos", 1024, 8, 2),
    ("unigram", 1024, 8, 0),
    ("smollm2", 1024, 4, 0),
]

NEEDLE = re.compile(r" The special magic number for ([a-z]+) is (\d{7})\.")


def build(tok, spec, out):
    (folder,) = generate([spec], out, progress=False, tokenizer=tok)
    return folder


def spec_for(fixture, tok, length, modulus, seed, **kw):
    return SplitSpec(
        "niah",
        length,
        modulus=modulus,
        n_base=kw.pop("n_base", 2 * modulus),
        seed=seed,
        tokenizer=tok.name,
        tokenizer_args=(("add_bos_token", "True"),) if fixture == "deepseek_bos" else (),
        **kw,
    )


def check_rows(tok, spec, rows):
    """The row-by-row claims, straight from the exact path."""
    P = spec.modulus
    for row in rows:
        prompt = row["prompt"]
        n, (anchor, question) = tok.token_index_at(prompt, [row["key_char"], row["question_char"]])
        assert len(tok.encode(prompt)) == n == spec.length == row["length"]
        assert anchor == row["anchor_index"] and row["phase"] == anchor % P
        assert question == row["question_index"]
        # the anchor is the token holding the key's first character, right after the needle lead
        ids, offsets = tok.encode_with_offsets(prompt)
        start, end = offsets[anchor]
        assert start <= row["key_char"] < end
        assert prompt.find(row["needle_key"]) == row["key_char"]  # the key is absent before
        (needle,) = NEEDLE.findall(prompt)
        assert needle == (row["needle_key"], row["answer"])
        assert prompt.endswith(f"The special magic number for {row['needle_key']} is")
    assert Counter(r["phase"] for r in rows) == {p: spec.n_base for p in range(P)}
    by_base: dict[int, list[dict]] = {}
    for r in rows:
        by_base.setdefault(r["base_id"], []).append(r)
    assert len(by_base) == spec.n_base
    for group in by_base.values():  # paired: one base item at every phase, nothing else moves
        assert sorted(r["phase"] for r in group) == list(range(P))
        assert len({(r["answer"], r["needle_key"], r["question_index"]) for r in group}) == 1
        anchors = sorted(r["anchor_index"] for r in group)
        assert anchors == list(range(anchors[0], anchors[0] + P))
    assert len({r["question_index"] for r in rows}) == 1


@pytest.mark.parametrize("fixture,length,modulus,seed", CASES)
def test_every_row_is_exact_balanced_and_paired(fixture, length, modulus, seed, request, tmp_path):
    tok = request.getfixturevalue(fixture)
    spec = spec_for(fixture, tok, length, modulus, seed)
    folder = build(tok, spec, tmp_path / "out")
    report = verify_config(folder, progress=False, tokenizer=tok)
    assert report.ok, report.lines()
    assert report.checked == report.rows == spec.n_base * modulus
    check_rows(tok, spec, list(iter_rows(folder)))
    manifest = read_manifest(folder)
    bal = manifest["balance"]
    assert bal["max_mean_deviation"] <= 0.5 and bal["max_std_deviation"] <= 0.5
    assert manifest["family"]["haystack"] == "procedural"


def test_the_bos_is_counted(deepseek, deepseek_bos, tmp_path):
    assert deepseek_bos.n_prefix == 1 and deepseek.n_prefix == 0
    rows = {}
    for fixture, tok in (("deepseek", deepseek), ("deepseek_bos", deepseek_bos)):
        spec = spec_for(fixture, tok, 1024, 4, 5)
        rows[fixture] = next(iter_rows(build(tok, spec, tmp_path / fixture)))
    plain, bos = rows["deepseek"], rows["deepseek_bos"]
    assert plain["length"] == bos["length"] == 1024  # the same length, one text token fewer
    assert len(deepseek_bos.encode(bos["prompt"])) == len(deepseek.encode(bos["prompt"])) + 1


def test_prose_is_varied_and_never_repeats_a_sentence(deepseek):
    pool = niah.prose_pool(derive_rng(0, "test-prose"), 4000)
    assert len(set(pool)) == 4000
    assert all(p.startswith(" ") and p.lstrip(' "')[0].isupper() and p[-1] in ".?!" for p in pool)
    assert not any(re.search(r"\ba [aeiou]", p) for p in pool)
    ids = [i for piece in deepseek.piece_ids(pool) for i in piece]
    # most token 4-grams occur once: the prose does not loop over a few patterns
    assert niah.distinct_ngram_share(ids) > 0.7
    assert len(set(ids)) > 600
    check_seams(deepseek, [pool[i : i + 64] for i in range(0, 4000, 64)], "prose")


def test_key_is_absent_from_the_haystack_and_random_per_item(deepseek):
    spec = SplitSpec("niah", 2048, modulus=4, n_base=16)
    plan = niah.prepare(spec, deepseek)
    text = plan.content.header + "".join(plan.content.pool)
    keys = [it.needle.key for it in plan.items]
    assert len(set(keys)) == len(keys)
    assert not any(k in text for k in keys)
    assert len({it.needle.answer for it in plan.items}) == len(keys)
    assert all(re.fullmatch(r"[a-z]{6,}", k) for k in keys)


def test_key_search_finds_what_the_text_holds():
    """``KeySearch`` answers ``key in text``: for keys inside words, across word and line ends,
    in capitalised words, of other characters, and for keys the text lacks."""
    text = "Velmorax met the brakai. Drouth-stone;\nquiet  Zebra tra\u00efl x"
    search = niah.KeySearch(text)
    words = re.findall(r"[A-Za-z\u00e0-\u00ff]+", text)
    probes = {w[i:j] for w in words for i in range(len(w)) for j in range(i + 1, len(w) + 1)}
    probes |= {text[i : i + n] for n in (2, 5, 9) for i in range(len(text) - n)}  # spans seams
    probes |= {"velmorax", "elmorax", "brakaid", "stonequiet", "zebra", "ebra", "", "e\nq"}
    rng = derive_rng(0, "key-search")
    probes |= {niah.key_word(rng) for _ in range(200)}
    assert any(p in text for p in probes) and any(p not in text for p in probes)
    for probe in probes:
        assert (probe in search) == (probe in text), probe


def haystack_text() -> str:
    """A user text unlike the built-in prose: paragraphs, dialogue, abbreviations, digits."""
    rng = derive_rng(0, "test-haystack")
    paragraphs = []
    for p in range(40):
        words = ["ledger", "harbour", "signal", "copper", "orchard", "lantern", "meadow"]
        sentences = [
            f"Entry {p}.{s} notes that the {words[int(rng.integers(7))]} was checked at "
            f"{int(rng.integers(1, 13))} o'clock (see p. {int(rng.integers(2, 99))})."
            for s in range(int(rng.integers(3, 7)))
        ]
        sentences.append(f'"Nothing else to report," wrote the clerk on day {p + 1}!')
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs) + "\n"


@pytest.mark.parametrize("fixture", ["deepseek", "unigram"])
def test_haystack_file_is_cut_at_additive_seams_and_recorded(fixture, request, tmp_path):
    tok = request.getfixturevalue(fixture)
    path = tmp_path / "haystack.txt"
    path.write_text(haystack_text(), encoding="utf-8")
    spec = spec_for(fixture, tok, 2048, 4, 0, haystack=str(path))
    folder = build(tok, spec, tmp_path / "out")
    report = verify_config(folder, progress=False, tokenizer=tok)
    assert report.ok, report.lines()
    rows = list(iter_rows(folder))
    check_rows(tok, spec, rows)
    info = read_manifest(folder)["family"]
    assert info["haystack"] == "file"
    assert info["haystack_sha256"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert info["haystack_repeats_in_pool"] >= 2  # the text is shorter than the prompt
    pieces = niah.merge_seams(tok, niah.cut_text(haystack_text()))
    assert "".join(pieces) == " " + haystack_text().strip()
    check_seams(tok, [pieces[i : i + 32] for i in range(0, len(pieces), 32)], "haystack")
    body = rows[0]["prompt"]
    assert "wrote the clerk on day" in body and "special magic number" in body
    # the text is read in order: consecutive entries follow each other
    entries = [tuple(map(int, m)) for m in re.findall(r"Entry (\d+)\.(\d+)", body)]
    steps = [b for a, b in zip(entries, entries[1:], strict=False) if b[0] == a[0]]
    assert steps and all(b[1] >= 1 for b in steps)


def test_haystack_errors_are_one_clear_line(tmp_path, capsys):
    with pytest.raises(SpecError, match="does not exist"):
        niah.read_haystack(str(tmp_path / "missing.txt"))
    short = tmp_path / "short.txt"
    short.write_text("Too short.")
    with pytest.raises(SpecError, match="too little text"):
        niah.read_haystack(str(short))
    code = main(
        ["generate", "niah", "--length", "1024", "--n-base", "16", "--quiet"]
        + ["--haystack", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "haystack" in err
    assert not (tmp_path / "o").exists()


def test_same_spec_gives_identical_rows(deepseek, tmp_path):
    spec = SplitSpec("niah", 1024, modulus=4, n_base=8, seed=9)
    a = build(deepseek, spec, tmp_path / "a")
    b = build(deepseek, spec, tmp_path / "b")
    files = sorted(p.name for p in a.iterdir())
    assert files == sorted(p.name for p in b.iterdir())
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_golden_content_hash(deepseek, tmp_path):
    """Silent drift guard: the rows of a tiny config, hashed (update on purpose, with a bumped
    GENERATOR_VERSION, when the generated data is meant to change)."""
    spec = SplitSpec("niah", 512, modulus=2, n_base=4, seed=0)
    manifest = read_manifest(build(deepseek, spec, tmp_path))
    assert manifest["content_hash"] == GOLDEN_NIAH_512


GOLDEN_NIAH_512 = "sha256:ab5aba1963b68aae0668acd588cc6dfeeeefa4bcbd08507bef41e3ad351756e9"


@pytest.mark.slow
def test_sharded_runs_give_the_unsharded_bytes(deepseek, tmp_path):
    spec = SplitSpec("niah", 65536, modulus=2, n_base=32, seed=4)  # 16 base items per file
    whole = build(deepseek, spec, tmp_path / "whole")
    assert len(read_manifest(whole)["files"]) == 2
    sharded = tmp_path / "sharded"
    generate([spec], sharded, shard=(1, 2), progress=False, tokenizer=deepseek)
    generate([spec], sharded, shard=(0, 2), progress=False, tokenizer=deepseek)
    for path in sorted(whole.iterdir()):
        assert (sharded / spec.config_name / path.name).read_bytes() == path.read_bytes()


@pytest.mark.slow
def test_128k_plan_is_exact_and_the_prose_stays_varied(deepseek):
    spec = SplitSpec("niah", 131072, modulus=8, n_base=16)
    plan = niah.prepare(spec, deepseek)  # seams on real pieces, one whole prompt re-encoded
    info = niah.describe(plan)
    assert info["haystack_distinct_4gram_share"] > 0.45, info
    assert 6000 <= info["body_pieces_per_prompt_mean"] <= 12000, info
    assert info["filler_tokens_per_prompt_max"] < 200
    depths = np.array([it.y for it in plan.items]) / spec.length
    assert depths.min() < 0.1 and depths.max() > 0.9


def test_cli_generate_verify_inspect(tmp_path, capsys):
    out = tmp_path / "splits"
    text = tmp_path / "text.txt"
    text.write_text(haystack_text(), encoding="utf-8")
    args = ["generate", "niah", "--length", "1024", "--n-base", "8", "--modulus", "4", "--quiet"]
    assert main([*args, "--out", str(out)]) == 0
    assert main([*args, "--haystack", str(text), "--out", str(tmp_path / "file")]) == 0
    assert main(["verify", str(out), str(tmp_path / "file"), "--quiet"]) == 0
    assert main(["inspect", str(out / "niah_1024"), "--no-color"]) == 0
    shown = capsys.readouterr().out
    assert "niah_1024: OK (32 rows, 32 re-encoded)" in shown
    assert "<< " not in shown and re.search(r"<<[a-z]+ is \d{7}\.>>", shown)
    assert "anchor_mean" in shown and "Question:" in shown
