"""Scoring, metric keys, phase aggregation and split loading behind the lm-eval tasks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from phasebench.errors import PhasebenchError, TokenizerError
from phasebench.lmeval import data
from phasebench.lmeval import tasks as lmeval


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("PHASEBENCH_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize(
    ("response", "answer", "expected"),
    [
        (" 12345", "12345", True),  # leading space stripped
        ("\n12345 and more", "12345", True),  # answer is a prefix of a longer response
        ("12345", "12345", True),
        ("1234", "12345", False),  # response shorter than gold
        ("x 12345", "12345", False),  # gold not at the start
        ("", "12345", False),  # empty response
        ("12345", "", False),  # an empty gold never matches
    ],
)
def test_answer_prefix_match(response, answer, expected):
    assert lmeval.answer_matches(response, answer) is expected


def test_metric_key_round_trip():
    assert lmeval.metric_key("phase_gap", None) == "phase_gap"
    assert lmeval.metric_key("phase_gap", 4096) == "phase_gap@4096"
    assert lmeval.parse_metric_key("acc_phase_3@131072") == ("acc_phase_3", 131072)
    assert lmeval.parse_metric_key("acc_lowest_phase") == ("acc_lowest_phase", None)


def _doc(family="kv", phase=3, base_id=5, length=1024, **extra):
    doc = {
        "family": family,
        "length": length,
        "phase_modulus": 8,
        "phase": phase,
        "base_id": base_id,
        "answer": "8" if family == "code" else "12345",
        "choices": ["8", "32"] if family == "code" else [],
    }
    return doc | extra


def test_process_results_generate():
    out = lmeval.process_results(_doc(), [" 12345\n"])
    assert out["acc"] == 1.0
    # pooled and per-length keys, never a placeholder for another length
    assert "phase_gap" in out and "phase_gap@1024" in out
    assert not any(k.endswith("@4096") for k in out)
    assert {f"acc_phase_{r}@1024" for r in range(8)} <= set(out)
    # no length phase: the length axis did not run
    assert out["phase_gap@1024"] == (1024, 8, "1024/5", 3, 1.0, None, 0, None)
    assert "margin" not in out and "acc@1024" in out
    assert lmeval.process_results(_doc(), ["54321"])["acc"] == 0.0


def test_process_results_code_margin():
    doc = _doc(
        "code", config_length=0, length=37, item_id="cast-0001", pad_style="eq", pad_tokens=9
    )
    out = lmeval.process_results(doc, [(-1.5, False), (-0.25, True)])
    assert out["margin"] == pytest.approx(-1.25)
    assert out["acc"] == 0.0
    assert "margin_lowest_phase@0" in out and "phase_lock_rate" in out
    out = lmeval.process_results(doc, [(-0.1, True), (-2.0, False)])
    assert out["margin"] == pytest.approx(1.9) and out["acc"] == 1.0


def _records(acc_by_phase, n_base=16, length=1024, modulus=8):
    return [
        (length, modulus, f"{length}/{b}", r, float(acc_by_phase[r][b]), None, 0)
        for b in range(n_base)
        for r in range(modulus)
    ]


def test_aggregate_hand_computed():
    # phase 2 is blind, phase 5 perfect, the rest right on the first half of the items
    table = {r: [1] * 8 + [0] * 8 for r in range(8)}
    table[2] = [0] * 16
    table[5] = [1] * 16
    items = _records(table)
    assert lmeval.aggregate(items, name="acc_lowest_phase") == 0.0
    assert lmeval.aggregate(items, name="acc_best_phase") == 1.0
    assert lmeval.aggregate(items, name="phase_gap") == 1.0
    assert lmeval.aggregate(items, name="acc_phase_2") == 0.0
    assert lmeval.aggregate(items, name="acc") == pytest.approx((6 * 0.5 + 1) / 8)
    low, high = (lmeval.aggregate(items, name=f"phase_gap_ci_{s}") for s in ("low", "high"))
    assert low <= 1.0 <= high


def test_aggregate_pools_lengths_as_separate_units():
    flat = {r: [1] * 8 + [0] * 8 for r in range(8)}
    blind = {r: [0] * 16 for r in range(8)}
    items = _records(flat, length=512) + _records(blind, length=1024)
    assert lmeval.aggregate(items, name="acc") == pytest.approx(0.25)
    assert lmeval.aggregate(items, name="phase_gap") == pytest.approx(0.0)


def test_split_specs_from_metadata():
    specs = data.split_specs(
        "kv",
        {
            "pretrained": "deepseek-v4",
            "max_seq_lengths": [1024, 2048, 1024],
            "n_base": 16,
            "phase_modulus": 4,
            "add_bos_token": True,
            "dtype": "float32",  # model args that do not touch the tokenizer are ignored
        },
    )
    assert [s.length for s in specs] == [1024, 2048]
    assert {(s.modulus, s.n_base, s.seed) for s in specs} == {(4, 16, 0)}
    assert specs[0].tokenizer_args == (("add_bos_token", "True"),)
    assert data.split_specs("niah", {"pretrained": "deepseek-v4"})[0].length == 4096
    with pytest.raises(PhasebenchError, match="pretrained=MODEL"):
        data.split_specs("kv", {"max_seq_lengths": [1024]})
    # API backends name the served model with model= (local-completions, openai-completions)
    assert data.split_specs("kv", {"model": "deepseek-v4"})[0].tokenizer == "deepseek-v4"
    with pytest.raises(PhasebenchError, match="max_seq_lengths"):
        data.split_specs("kv", {"pretrained": "deepseek-v4", "max_seq_lengths": ["x"]})


def test_task_dataset_generates_once_and_caches(tmp_path):
    kwargs = {"pretrained": "deepseek-v4", "max_seq_lengths": [256], "n_base": 16}
    first = data.resolve_split("kv", **kwargs)
    assert len(first.rows) == 16 * 8
    assert {r["phase"] for r in first.rows} == set(range(8))
    (folder,) = first.folders
    stamp = (folder / "manifest.json").stat().st_mtime_ns
    second = data.resolve_split("kv", **kwargs, version=1.0)  # lm-eval adds task metadata
    assert second.folders == first.folders
    assert (folder / "manifest.json").stat().st_mtime_ns == stamp  # not regenerated
    assert second.rows == first.rows
    leftovers = [p.name for p in folder.parent.parent.iterdir() if p.name.startswith(".tmp")]
    assert leftovers == []
    dataset = lmeval.task_dataset("kv", **kwargs)
    assert dataset["test"].num_rows == 16 * 8
    assert dataset["test"][0]["id"] == first.rows[0]["id"]


def test_prebuilt_split_checked_against_the_model_tokenizer(tmp_path):
    from phasebench.build import generate
    from phasebench.specs import SplitSpec

    out = tmp_path / "split"
    generate([SplitSpec("kv", 256, n_base=16)], out, progress=False)
    ok = data.resolve_split("kv", pretrained="deepseek-v4", dataset_path=str(out))
    assert len(ok.rows) == 128
    with pytest.raises(TokenizerError, match="was built for tokenizer"):
        data.resolve_split(
            "kv", pretrained="deepseek-v4", add_bos_token=False, dataset_path=str(out)
        )
    with pytest.raises(PhasebenchError, match="holds no config niah"):
        data.resolve_split("niah", pretrained="deepseek-v4", dataset_path=str(out))
    with pytest.raises(PhasebenchError, match="neither a folder nor a Hub dataset id"):
        data.resolve_split("kv", pretrained="deepseek-v4", dataset_path=str(tmp_path / "no"))


def test_prebuilt_folder_with_several_tokenizers_takes_the_models(tmp_path):
    """A published repository holds kv_256 for several tokenizers; the model's is chosen."""
    from phasebench.build import generate
    from phasebench.specs import SplitSpec

    repo = tmp_path / "repo"
    for slug, args in (("plain", ()), ("nobos", (("add_bos_token", "False"),))):
        out = tmp_path / slug
        generate([SplitSpec("kv", 256, n_base=16, tokenizer_args=args)], out, progress=False)
        repo.mkdir(exist_ok=True)
        (out / "kv_256").rename(repo / f"kv_256_{slug}")
    nobos = data.resolve_split(
        "kv", pretrained="deepseek-v4", add_bos_token=False, dataset_path=str(repo)
    )
    assert [f.name for f in nobos.folders] == ["kv_256_nobos"]
    plain = data.resolve_split("kv", pretrained="deepseek-v4", dataset_path=str(repo))
    assert [f.name for f in plain.folders] == ["kv_256_plain"]
    with pytest.raises(TokenizerError, match="was built for tokenizer"):
        data.resolve_split(
            "kv", pretrained="deepseek-v4", add_bos_token=True, dataset_path=str(repo)
        )


def test_relabel_shifts_phase_cyclically():
    row = {"anchor_index": 101, "phase": 5, "phase_modulus": 8, "family": "kv"}
    out = data.relabel(row, 6)
    assert (out["anchor_index"], out["phase"], out["split_phase"], out["anchor_offset"]) == (
        107,
        3,
        5,
        6,
    )
    assert row["phase"] == 5  # the input row is untouched


def test_records_are_json_round_trippable():
    out = lmeval.process_results(_doc(), [" 12345"])
    items = [json.loads(json.dumps(out["phase_gap"]))] * 8
    items = [[*it[:3], r, *it[4:]] for r, it in enumerate(items)]
    assert lmeval.aggregate(items, name="phase_gap") == 0.0
    assert np.isfinite(lmeval.aggregate(items, name="acc_lowest_phase"))


def test_chat_template_offset_relabels_phases(smollm2):
    """With lm-eval's --apply_chat_template the model sees the template's prefix first; the
    relabelled anchor must be the token that holds the key in the whole templated sequence."""
    folder = smollm2.name
    kwargs = {
        "pretrained": folder,
        "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "max_seq_lengths": [256],
        "n_base": 8,
        "phase_modulus": 4,
    }
    plain = data.resolve_split("kv", **kwargs)
    chat = data.resolve_split("kv", **kwargs, apply_chat_template=True)
    assert plain.anchor_offset == 0 and chat.anchor_offset > 10
    tmpl = smollm2.hf.apply_chat_template(
        [{"role": "user", "content": "\x00"}], tokenize=False, add_generation_prompt=True
    )
    before, after = tmpl.split("\x00")
    for row in chat.rows[:4]:
        ids = smollm2.hf.encode(before + row["prompt"] + after, add_special_tokens=False)
        token = smollm2.hf.decode([ids[row["anchor_index"]]]).strip()
        assert token and row["needle_key"].startswith(token), (token, row["needle_key"])
        assert row["phase"] == row["anchor_index"] % 4
        assert row["split_phase"] == (row["anchor_index"] - chat.anchor_offset) % 4
    # a constant offset only relabels: each base item still has every phase exactly once
    for b in {r["base_id"] for r in chat.rows}:
        assert sorted(r["phase"] for r in chat.rows if r["base_id"] == b) == [0, 1, 2, 3]
