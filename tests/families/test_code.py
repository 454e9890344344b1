"""The code family on real tokenizers: every row re-encoded whole must confirm its claims."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from phasebench.build import generate, iter_rows, read_manifest
from phasebench.cli import main
from phasebench.errors import SpecError
from phasebench.families import code
from phasebench.specs import SplitSpec
from phasebench.verification import verify_config

CASES = [  # (tokenizer fixture, length, modulus, n_base)
    ("deepseek", 0, 8, 8),
    pytest.param("deepseek", 1024, 4, 4, marks=pytest.mark.slow),  # 5 to 7.5 s in CI
    pytest.param("deepseek_bos", 0, 16, 16, marks=pytest.mark.slow),
    ("unigram", 0, 8, 8),
    pytest.param("smollm2", 0, 8, 4, marks=pytest.mark.slow),
]


def build(tok, spec, out):
    (folder,) = generate([spec], out, progress=False, tokenizer=tok)
    return folder


def spec_for(fixture, tok, length, modulus, n_base, seed=0):
    return SplitSpec(
        "code",
        length,
        modulus=modulus,
        n_base=n_base,
        seed=seed,
        tokenizer=tok.name,
        tokenizer_args=(("add_bos_token", "True"),) if fixture == "deepseek_bos" else (),
    )


def single_token(tok, prompt, ids, choice):
    whole = tok.encode(prompt + choice)  # what lm-eval encodes: context + continuation
    return len(whole) == len(ids) + 1 and whole[: len(ids)] == ids


@pytest.mark.parametrize("fixture,length,modulus,n_base", CASES)
def test_every_row_is_exact_and_every_unit_sweeps_one_token_per_step(
    fixture, length, modulus, n_base, request, tmp_path
):
    tok = request.getfixturevalue(fixture)
    spec = spec_for(fixture, tok, length, modulus, n_base)
    folder = build(tok, spec, tmp_path / "out")
    report = verify_config(folder, progress=False, tokenizer=tok)
    assert report.ok, report.lines()
    rows = list(iter_rows(folder))
    assert report.checked == len(rows) == n_base * len(code.STYLE_NAMES) * code.SWEEP

    units = defaultdict(list)
    for row in rows:  # straight from the exact path
        prompt = row["prompt"]
        ids = tok.encode(prompt)
        assert len(ids) == row["length"] == row["anchor_index"]
        assert row["phase"] == row["anchor_index"] % modulus
        assert ids[: tok.n_prefix] == list(tok.prefix_ids)
        assert row["choices"][0] == row["answer"] != row["choices"][1]
        assert all(single_token(tok, prompt, ids, c) for c in row["choices"])
        assert prompt == prompt.rstrip() and row["config_length"] == length
        assert (row["question_index"], row["needle_key"], row["key_char"]) == (-1, "", -1)
        units[row["base_id"], row["pad_style"]].append(row)
    assert len(units) == n_base * len(code.STYLE_NAMES)
    for (_, style), unit in units.items():
        unit.sort(key=lambda r: r["pad_tokens"])
        lengths = [r["length"] for r in unit]
        assert lengths == list(range(lengths[0], lengths[0] + code.SWEEP))
        assert [r["pad_tokens"] for r in unit] == [
            unit[0]["pad_tokens"] + k for k in range(code.SWEEP)
        ]
        # only the padding block moves: the rest of the file is the same text
        table = code.build_pad_table(tok, style, unit[-1]["pad_tokens"] + 1)
        rests = set()
        for r in unit:
            block = table.block(r["pad_tokens"])
            assert r["prompt"].startswith(block)
            assert len(tok.encode(block)) - tok.n_special == r["pad_tokens"]
            rests.add(r["prompt"][len(block) :])
        assert len(rests) == 1
        assert Counter(r["phase"] for r in unit) == {
            p: code.SWEEP // modulus for p in range(modulus)
        }
    assert Counter(r["phase"] for r in rows) == {p: len(rows) // modulus for p in range(modulus)}
    bal = read_manifest(folder)["balance"]
    assert bal["max_mean_deviation"] <= 0.5 and bal["max_std_deviation"] <= 0.5


def test_default_items_are_distinct_and_cover_four_item_templates(deepseek):
    spec = SplitSpec("code", 0, n_base=64)  # the CLI default for code: 64 items
    items, reasons = code.draw_items(spec, deepseek)
    assert len(items) == 64 and len({i.defs + i.use for i in items}) == 64
    assert Counter(i.template for i in items) == {t: 16 for t in code.TEMPLATES}
    assert len({i.use.split("def ")[1].split("(")[0] for i in items}) > 20  # names vary
    assert all(i.use.endswith(("T.Cast(FP", "=")) for i in items)  # a completion point
    for item in items:
        assert str(item.right) in item.defs  # the answer is defined earlier in the file
        assert code.single_token_continuation(deepseek, item.use, item.right)
        assert code.single_token_continuation(deepseek, item.use, item.distractor)
    assert ("8", "32") in {(i.right, i.distractor) for i in items}  # the published pair
    assert sum(i.attempts - 1 for i in items) == sum(reasons.values())


def test_failing_items_are_replaced_and_counted(request):
    for name in ("unigram", "smollm2"):  # both split some numbers into several tokens
        tok = request.getfixturevalue(name)
        spec = SplitSpec("code", 0, n_base=16)
        plan = code.plan(spec, tok)
        info = code.describe(plan)
        assert info["replacements"] > 0
        assert info["replacements"] == sum(it.attempts - 1 for it in plan.items)
        assert all(
            code.single_token_continuation(tok, it.use, it.right)
            and code.single_token_continuation(tok, it.use, it.distractor)
            for it in plan.items
        )
        again = code.plan(spec, tok)  # replacement is deterministic
        assert [i.defs + i.use for i in again.items] == [i.defs + i.use for i in plan.items]


def test_padding_grows_one_token_per_step_although_characters_do_not(deepseek):
    for style in code.STYLE_NAMES:
        table = code.build_pad_table(deepseek, style, 24)
        blocks = [table.block(table.first + k) for k in range(24)]
        counts = deepseek.count(blocks)
        assert counts.tolist() == list(range(table.first, table.first + 24))
        assert list(table.chars) == sorted(set(table.chars))  # longer every step
        steps = {b - a for a, b in zip(table.chars, table.chars[1:], strict=False)}
        assert steps != {1}  # a character is not a token
    assert len(deepseek.encode("=" * 64)) == 1


def test_long_context_puts_unrelated_code_between_definition_and_use(deepseek):
    spec = SplitSpec("code", 4096, modulus=4, n_base=4)
    plan = code.prepare(spec, deepseek)
    row = next(plan.render([0]))
    item = plan.items[0]
    body = row["prompt"]
    gap = body.index(item.use) - (body.index(item.defs) + len(item.defs))
    assert gap > 10000  # characters of unrelated code
    filler_tokens = code.describe(plan)["unrelated_code_tokens_mean"]
    assert 4096 - 200 < filler_tokens <= 4096
    assert 4096 < row["length"] < 4096 + 400


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"modulus": 3}, "must divide 16"),
        ({"modulus": 24}, "must divide 16"),
        ({"modulus": 16, "n_base": 2}, "n_base"),
        ({"modulus": 8, "n_base": 3}, "n_base"),
        ({"haystack": "x.txt"}, "niah family only"),
    ],
)
def test_bad_specs_are_refused(deepseek, kwargs, message):
    with pytest.raises(SpecError, match=message):
        code.prepare(SplitSpec("code", 0, **{"n_base": 64, **kwargs}), deepseek)


def test_cli_rejects_a_modulus_with_one_line(tmp_path, capsys):
    rc = main(["generate", "code", "--modulus", "24", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "modulus" in err
    assert not (tmp_path / "o").exists()


def test_same_spec_gives_identical_bytes(deepseek, tmp_path):
    spec = SplitSpec("code", 0, modulus=4, n_base=4, seed=3)
    a, b = build(deepseek, spec, tmp_path / "a"), build(deepseek, spec, tmp_path / "b")
    for path in sorted(a.iterdir()):
        assert (b / path.name).read_bytes() == path.read_bytes()


def test_golden_content_hash(deepseek, tmp_path):
    """Silent drift guard (update on purpose, with a bumped GENERATOR_VERSION)."""
    spec = SplitSpec("code", 0, modulus=4, n_base=4, seed=0)
    assert read_manifest(build(deepseek, spec, tmp_path))["content_hash"] == GOLDEN_CODE_0


GOLDEN_CODE_0 = "sha256:b225955c6cda145163aae6f96a8f58ba04db09147085b62d4a0aab2abd57ea55"


@pytest.mark.slow
def test_sharded_runs_give_the_unsharded_bytes(deepseek, tmp_path):
    spec = SplitSpec("code", 65536, modulus=4, n_base=2, seed=1)  # 4 units per file: 2 files
    whole = build(deepseek, spec, tmp_path / "whole")
    assert len(read_manifest(whole)["files"]) == 2
    report = verify_config(whole, sample=8, progress=False, tokenizer=deepseek)
    assert report.ok, report.lines()
    sharded = tmp_path / "sharded"
    generate([spec], sharded, shard=(1, 2), progress=False, tokenizer=deepseek)
    generate([spec], sharded, shard=(0, 2), progress=False, tokenizer=deepseek)
    for path in sorted(whole.iterdir()):
        assert (sharded / spec.config_name / path.name).read_bytes() == path.read_bytes()


def test_cli_generate_verify_inspect(tmp_path, capsys):
    out = tmp_path / "splits"
    args = ["generate", "code", "--n-base", "4", "--modulus", "4", "--quiet", "--out", str(out)]
    assert main([*args, "--length", "0", "--length", "1024"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["code_0", "code_1024"]
    assert main(["verify", str(out), "--sample", "8", "--quiet"]) == 0
    assert main(["inspect", str(out / "code_0"), "--no-color"]) == 0
    shown = capsys.readouterr().out
    assert "code_0: OK (256 rows, 8 re-encoded)" in shown
    assert "code_1024: OK (256 rows, 8 re-encoded)" in shown
    assert re.search(r"\(FP<<\d+>>|=<<\d+>>", shown) and "anchor_mean" in shown


def test_a_tokenizer_that_appends_tokens_is_refused(wordpiece):
    assert wordpiece.suffix_ids  # [SEP] after every encoding: no prompt can end at the answer
    with pytest.raises(SpecError, match="appends special tokens"):
        code.prepare(SplitSpec("code", 0, n_base=64, tokenizer=wordpiece.name), wordpiece)
