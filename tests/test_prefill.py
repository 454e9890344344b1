"""The manifest's prefill figures: prefill tokens without a cache and with an ideal prefix cache
of the previous prompt, in the stored order and in lm-eval's send order. The build counts them
from the plans' pieces (the fast path); these tests re-derive them from the exact token ids of
every whole prompt on real tokenizers, and check that ``verify`` refuses a changed figure."""

from __future__ import annotations

import json

import pytest

from phasebench import prefill
from phasebench.build import generate, iter_rows, read_manifest
from phasebench.errors import SplitError
from phasebench.families import get_family
from phasebench.specs import SplitSpec
from phasebench.verification import verify_config

CONFIGS = [
    ("kv", 1024, None),
    ("niah", 1024, "crossed"),
    ("kv", 1024, "only"),
    ("code", 0, None),
]


def _build(tmp_path, tok, family, length, axes, n_base=16):
    spec = SplitSpec(family=family, length=length, n_base=n_base, tokenizer=tok.name,
                     length_phases=axes)  # fmt: skip
    (folder,) = generate([spec], tmp_path, progress=False, tokenizer=tok)
    return spec, folder


def _exact(tok, folder, family):
    rows = list(iter_rows(folder))
    texts = (
        [r["prompt"] for r in rows] if get_family(family).output_type == "generate_until" else None
    )
    ids = [tok.encode(r["prompt"]) for r in rows]
    return prefill.exact_figures(ids, texts, [r["base_id"] for r in rows]), rows


@pytest.mark.parametrize(("family", "length", "axes"), CONFIGS)
def test_manifest_figures_are_the_exact_ones(tmp_path, deepseek, family, length, axes):
    _, folder = _build(tmp_path, deepseek, family, length, axes)
    stated = read_manifest(folder)[prefill.MANIFEST_KEY]
    exact, rows = _exact(deepseek, folder, family)
    assert stated == exact
    assert stated["prefill_tokens"] == sum(r["length"] for r in rows)
    assert stated["stored_order"]["items_together"]
    assert stated["stored_order"]["prefill_tokens_prefix_cache"] < stated["prefill_tokens"]


@pytest.mark.parametrize("name", ["deepseek_bos", "unigram", "wordpiece"])
def test_figures_are_exact_with_special_tokens_and_piece_context(tmp_path, request, name):
    # a BOS before every prompt; a Unigram tokenizer whose pieces are counted in context; a
    # WordPiece one with [CLS] and [SEP] around every prompt (the suffix ends each id stream)
    tok = request.getfixturevalue(name)
    _, folder = _build(tmp_path, tok, "kv", 1024, "crossed")
    assert read_manifest(folder)[prefill.MANIFEST_KEY] == _exact(tok, folder, "kv")[0]


@pytest.mark.parametrize(("family", "length", "axes"), CONFIGS)
def test_pieces_join_to_the_rows_prompts(deepseek, family, length, axes):
    spec = SplitSpec(family=family, length=length, n_base=16, tokenizer="deepseek-v4",
                     length_phases=axes)  # fmt: skip
    plan = get_family(spec).prepare(spec, deepseek)
    pieces = plan.prompt_pieces()
    rows = list(plan.render(range(plan.n_units)))
    assert len(pieces.base_ids) == len(rows)
    for i, row in enumerate(rows):
        assert "".join(pieces.texts[k] for k in pieces.row(i)) == row["prompt"]
        assert pieces.base_ids[i] == row["base_id"]


def test_the_length_axis_saves_little_in_lm_evals_order(tmp_path, deepseek):
    # lm-eval sends one prompt length at a time, so an item's renderings are P groups apart and
    # an ideal one-prompt cache keeps only what different items share (the header)
    _, folder = _build(tmp_path, deepseek, "kv", 1024, "only")
    stated = read_manifest(folder)[prefill.MANIFEST_KEY]
    assert not stated["lm_eval_order"]["items_together"]
    assert stated["lm_eval_order"]["prefix_cache_saving"] < 0.1
    assert stated["stored_order"]["prefix_cache_saving"] > 0.4


def test_code_states_no_lm_eval_order(tmp_path, deepseek):
    _, folder = _build(tmp_path, deepseek, "code", 0, None)
    assert read_manifest(folder)[prefill.MANIFEST_KEY]["lm_eval_order"] is None


def _tamper(folder, change):
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


@pytest.mark.slow
@pytest.mark.parametrize("order", prefill.ORDERS)
def test_verify_refuses_a_changed_figure(tmp_path, deepseek, order):
    _, folder = _build(tmp_path, deepseek, "kv", 1024, "crossed")
    assert verify_config(folder, progress=False, tokenizer=deepseek).ok

    def change(m):
        m["prefill"][order]["prefill_tokens_prefix_cache"] -= 1

    _tamper(folder, change)
    report = verify_config(folder, progress=False, tokenizer=deepseek, num_proc=2)
    assert not report.ok
    assert [p for p in report.problems if f"prefill {order}" in p], report.problems


def test_verify_above_the_order_bound_checks_the_stored_order(tmp_path, deepseek, monkeypatch):
    from phasebench import verification

    _, folder = _build(tmp_path, deepseek, "kv", 1024, None)
    monkeypatch.setattr(verification, "MAX_ORDER_TOKENS", 1000)
    report = verify_config(folder, progress=False, tokenizer=deepseek)
    assert report.ok and any("lm_eval_order not re-derived" in n for n in report.notes)

    def change(m):
        m["prefill"]["stored_order"]["prefill_tokens_prefix_cache"] += 7

    _tamper(folder, change)
    assert not verify_config(folder, progress=False, tokenizer=deepseek).ok


def test_a_manifest_without_figures_still_loads_and_verifies(tmp_path, deepseek):
    # manifests written before the figures existed: the key is optional on read
    _, folder = _build(tmp_path, deepseek, "kv", 1024, None)
    _tamper(folder, lambda m: m.pop("prefill"))
    assert prefill.MANIFEST_KEY not in read_manifest(folder)
    assert len(list(iter_rows(folder, check=True))) == 128
    report = verify_config(folder, progress=False, tokenizer=deepseek)
    assert report.ok and any("no prefill figures" in n for n in report.notes)


@pytest.mark.parametrize(
    "bad",
    [[], {"prompts": -1, "prefill_tokens": 3}, {"prompts": 1, "prefill_tokens": 3},
     {"prompts": 1, "prefill_tokens": 3, "stored_order": {"prefill_tokens_prefix_cache": 2,
      "prefix_cache_saving": 2.0, "items_together": True}}],
)  # fmt: skip
def test_read_manifest_refuses_a_malformed_entry(tmp_path, deepseek, bad):
    _, folder = _build(tmp_path, deepseek, "kv", 1024, None)
    _tamper(folder, lambda m: m.update(prefill=bad))
    with pytest.raises(SplitError, match="prefill"):
        read_manifest(folder)


def test_the_figures_do_not_change_the_data(tmp_path, deepseek):
    # the figures are manifest keys only: the content hash is the hash of the data files'
    # hashes, which hold the rows alone
    _, folder = _build(tmp_path, deepseek, "kv", 1024, None)
    manifest = read_manifest(folder)
    _tamper(folder, lambda m: m.pop("prefill"))
    assert read_manifest(folder)["content_hash"] == manifest["content_hash"]


def test_send_order_groups_lengths_then_sorts_by_text():
    lengths = [10, 11, 10, 11, 10]
    texts = ["c", "b", "a", "a", "b"]

    def before(i, j):
        return (texts[i] > texts[j]) - (texts[i] < texts[j])

    # groups in the order of their first row; inside a group, descending length then text
    assert prefill.send_order(lengths, before) == [2, 4, 0, 3, 1]


def test_power_states_the_recommended_designs_prefill(tmp_path, deepseek, capsys):
    from phasebench.cli import main
    from phasebench.stats import power_n_base

    n = power_n_base(0.9, 0.1, 8)
    assert main(["power", "--acc", "0.9", "--gap", "0.1"]) == 0
    assert f"prefill: {n * 8} prompts x their length in tokens" in capsys.readouterr().out
    specs = [SplitSpec(family="kv", length=1024, n_base=16, tokenizer="deepseek-v4",
                       length_phases=axes) for axes in (None, "only")]  # fmt: skip
    generate(specs, tmp_path, progress=False, tokenizer=deepseek)
    assert main(["power", "--acc", "0.9", "--gap", "0.1", "--split", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("kv_1024", "kv_1024_length"):
        f = prefill.for_base_items(read_manifest(tmp_path / name), n, 8)
        stored, served = f["stored_order"], f["lm_eval_order"]
        assert (
            f"  {name}: {f['prompts']:,} prompts, {f['prefill_tokens']:,} tokens without a prefix "
            f"cache; {stored['prefill_tokens_prefix_cache']:,} with an ideal prefix cache in the "
            f"stored order ({100 * stored['prefix_cache_saving']:.1f}% saved); "
            f"{served['prefill_tokens_prefix_cache']:,} with an ideal prefix cache in lm-eval's "
            f"order ({100 * served['prefix_cache_saving']:.1f}% saved)\n"
        ) in out
    assert main(["power", "--acc", "0.9", "--gap", "0.1", "--split", str(tmp_path)]) == 0
    assert capsys.readouterr().out == out  # the same answer every time


def test_scaling_to_the_built_base_items_gives_the_manifests_figures(tmp_path, deepseek):
    _, folder = _build(tmp_path, deepseek, "niah", 1024, "crossed")
    manifest = read_manifest(folder)
    f, stated = prefill.for_base_items(manifest, 16, 8), manifest["prefill"]
    assert (f["prompts"], f["prefill_tokens"]) == (stated["prompts"], stated["prefill_tokens"])
    for order in prefill.ORDERS:
        for key in ("prefill_tokens_prefix_cache", "prefix_cache_saving"):
            assert f[order][key] == stated[order][key]
    assert prefill.for_base_items(manifest, 32, 8)["prefill_tokens"] == 2 * stated["prefill_tokens"]


def test_power_refuses_a_split_of_another_modulus_in_one_line(tmp_path, deepseek, capsys):
    from phasebench.cli import main

    spec = SplitSpec(family="kv", length=1024, n_base=16, modulus=4, tokenizer="deepseek-v4")
    generate([spec], tmp_path, progress=False, tokenizer=deepseek)
    code = main(["power", "--acc", "0.9", "--gap", "0.1", "--split", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and "modulus 4, not 8" in captured.err
    _tamper(tmp_path / spec.config_name, lambda m: m.pop("prefill"))
    code = main(["power", "--acc", "0.9", "--gap", "0.1", "--modulus", "4", "--split",
                 str(tmp_path)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2 and "states no prefill figures" in captured.err and captured.out == ""
