"""The kv family on real tokenizers: every row re-encoded whole must confirm its claims."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from phasebench.build import generate, iter_rows, read_manifest
from phasebench.families import kv
from phasebench.specs import SplitSpec
from phasebench.verification import verify_config

CASES = [  # (tokenizer fixture, length, modulus, seed)
    ("deepseek", 512, 8, 0),
    ("deepseek", 2048, 4, 1),
    ("deepseek", 1024, 8, 2),
    ("deepseek_bos", 1024, 8, 0),
    ("wordpiece", 512, 4, 0),
    ("wordpiece", 1024, 8, 3),
    ("smollm2", 1024, 8, 0),
]


@pytest.mark.parametrize("fixture,length,modulus,seed", CASES)
def test_every_row_is_exact_balanced_and_paired(fixture, length, modulus, seed, request, tmp_path):
    tok = request.getfixturevalue(fixture)
    spec = SplitSpec(
        "kv",
        length,
        modulus=modulus,
        n_base=2 * modulus,
        seed=seed,
        tokenizer=tok.name,
        tokenizer_args=(("add_bos_token", "True"),) if fixture == "deepseek_bos" else (),
    )
    (folder,) = generate([spec], tmp_path / "out", progress=False, tokenizer=tok)
    report = verify_config(folder, progress=False, tokenizer=tok)
    assert report.ok, report.lines()
    assert report.checked == report.rows == spec.n_base * modulus

    rows = list(iter_rows(folder))
    for row in rows:  # re-check the core claims here too, straight from the exact path
        ids = tok.encode(row["prompt"])
        n, (anchor,) = tok.token_index_at(row["prompt"], [row["key_char"]])
        assert len(ids) == n == length
        assert anchor == row["anchor_index"] and row["phase"] == anchor % modulus
        assert row["prompt"].find(row["needle_key"]) == row["key_char"]
        assert re.fullmatch(r"[a-z]{3}\d{3}", row["needle_key"])
        assert row["answer"].isdigit()
    assert Counter(r["phase"] for r in rows) == {p: spec.n_base for p in range(modulus)}
    by_base = {}
    for r in rows:
        by_base.setdefault(r["base_id"], []).append(r)
    for group in by_base.values():
        assert sorted(r["phase"] for r in group) == list(range(modulus))
        assert len({(r["answer"], r["question_index"], r["length"]) for r in group}) == 1
        anchors = sorted(r["anchor_index"] for r in group)
        assert anchors == list(range(anchors[0], anchors[0] + modulus))  # moved one token at a time
    bal = read_manifest(folder)["balance"]
    assert bal["max_mean_deviation"] <= 0.5 and bal["max_std_deviation"] <= 0.5
    assert len({r["question_index"] for r in rows}) == 1


def test_anchors_spread_over_the_context_depth(deepseek, tmp_path):
    spec = SplitSpec("kv", 2048, modulus=4, n_base=32)
    plan = kv.prepare(spec, deepseek)
    depths = np.array([it.y for it in plan.items]) / spec.length
    counts, _ = np.histogram(depths, bins=4, range=(0, 1))
    assert counts.min() >= 5, counts  # stratified: every quarter of the context holds needles
    assert depths.min() < 0.15 and depths.max() > 0.85


def test_records_per_128k_prompt_follow_the_tokenizer(deepseek):
    plan = kv.prepare(SplitSpec("kv", 131072, modulus=8, n_base=16), deepseek)
    info = kv.describe(plan)
    assert 15000 <= info["records_per_prompt_mean"] <= 17500, info
    keys = [plan.content.pool[i].split(":")[0] for i in plan.items[0].body]
    assert len(keys) == len(set(keys))  # keys unique within a prompt


def test_same_spec_gives_identical_rows(deepseek):
    spec = SplitSpec("kv", 1024, modulus=8, n_base=16, seed=5)
    a = list(kv.prepare(spec, deepseek).render(range(16)))
    b = list(kv.prepare(spec, deepseek).render(range(16)))
    assert a == b
    c = list(kv.prepare(spec.replace(seed=6), deepseek).render(range(16)))
    assert [r["prompt"] for r in c] != [r["prompt"] for r in a]


def test_golden_content_hash(deepseek, tmp_path):
    """Silent drift guard, as for niah and code: the rows of a tiny config, hashed (update on
    purpose, with a bumped GENERATOR_VERSION, when the generated data is meant to change)."""
    spec = SplitSpec("kv", 512, modulus=2, n_base=4, seed=0)
    (folder,) = generate([spec], tmp_path, progress=False, tokenizer=deepseek)
    assert read_manifest(folder)["content_hash"] == GOLDEN_KV_512


GOLDEN_KV_512 = "sha256:1fb8c0c779a926748b1fd95884578b2651fd5b181353f31a63dd49e8316796ca"


def test_short_length_is_refused_with_the_minimum(deepseek):
    from phasebench.errors import SpecError

    with pytest.raises(SpecError, match="too short for the kv template"):
        kv.prepare(SplitSpec("kv", 100, modulus=8, n_base=16), deepseek)


def test_a_header_whose_blank_line_would_merge_is_refused(smollm2):
    """GPT-2-style pre-tokenization keeps a trailing blank line as one token on its own but splits
    it before a letter: the seam check must catch that instead of trusting piece counts."""
    from phasebench.errors import AssemblyError
    from phasebench.families import needle

    spec = SplitSpec("kv", 1024, modulus=8, n_base=16, tokenizer=smollm2.name)
    content = kv.content(spec)
    broken = needle.NeedleContent(**{**content.__dict__, "header": content.header + "\n"})
    with pytest.raises(AssemblyError, match="merges tokens across a kv seam"):
        needle.prepare(spec, smollm2, broken)
