"""The order lm-eval's ``hf`` backend sends a split's prompts in, read from the backend itself
(every batch it encodes is recorded), and what an ideal prefix cache saves in that order.

lm-eval sorts generation requests by descending token length, ties by the prompt text. On the
needle axis every prompt of a config has the same length, so the order is the text order, which
keeps the renderings of a base item (one long shared prefix) together. On the length axis the
renderings of an item have P different lengths, so the sort sends them in P different groups."""

from __future__ import annotations

import pytest

from phasebench import prefill
from phasebench.prefill import adjacent_renderings, prefill_tokens, shared_prefix

pytest.importorskip("torch")

LENGTH = 256
N_BASE = 16


def test_prefill_counts_tokens_after_the_shared_prefix():
    assert shared_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and shared_prefix([], [1]) == 0
    out = prefill_tokens([[1, 2, 3, 4], [1, 2, 3, 5], [9, 2, 3, 5]])
    assert out["prefill_tokens"] == 12 and out["prefill_tokens_prefix_cache"] == 4 + 1 + 4
    assert adjacent_renderings([0, 0, 1, 1, 2]) and not adjacent_renderings([0, 1, 0])


def _send_order(tmp_path, monkeypatch, length_phases):
    """Prompts in the order lm-eval's hf backend encodes them, for the reference model on a kv
    split of the reference tokenizer."""
    from lm_eval.models.huggingface import HFLM

    from phasebench import lmeval_compat as compat
    from phasebench.build import generate, iter_rows, read_manifest
    from phasebench.reference import weights_dir
    from phasebench.reference.model import register_auto_classes
    from phasebench.resources import resource_dir
    from phasebench.specs import SplitSpec

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    register_auto_classes()
    spec = SplitSpec(family="kv", length=LENGTH, n_base=N_BASE, tokenizer="phasebench-ref",
                     length_phases=length_phases)  # fmt: skip
    generate([spec], tmp_path / "splits", overwrite=True, progress=False)
    rows = list(iter_rows(tmp_path / "splits" / spec.config_name))
    sent: list[str] = []
    original = HFLM.tok_batch_encode

    def recording(self, strings, *args, **kwargs):
        sent.extend(strings)
        return original(self, strings, *args, **kwargs)

    monkeypatch.setattr(HFLM, "tok_batch_encode", recording)
    compat.evaluate_and_save(
        model="hf",
        model_args={
            "pretrained": str(weights_dir() / "full"),
            "backend": "causal",
            "dtype": "float32",
            "device": "cpu",
        },  # fmt: skip
        tasks=["phasebench_kv"],
        include_path=str(resource_dir("tasks")),
        metadata={"dataset_path": str(tmp_path / "splits"), "max_seq_lengths": [LENGTH]},
        output_path=tmp_path / "out",
        model_name="order",
        batch_size=8,
        gen_kwargs={"max_gen_toks": 1},
    )
    by_prompt = {r["prompt"]: r for r in rows}
    assert len(sent) == len(rows) and set(sent) == set(by_prompt)
    # the order the manifest's lm_eval_order figures assume is the order lm-eval sent
    position = {r["prompt"]: i for i, r in enumerate(rows)}

    def before(i, j):
        a, b = rows[i]["prompt"], rows[j]["prompt"]
        return (a > b) - (a < b)

    expected = compat.send_order([r["length"] for r in rows], before)
    assert [position[p] for p in sent] == expected
    manifest = read_manifest(tmp_path / "splits" / spec.config_name)
    return rows, [by_prompt[p] for p in sent], manifest[prefill.MANIFEST_KEY]


@pytest.mark.slow
def test_needle_axis_keeps_an_items_renderings_together(tmp_path, monkeypatch):
    from phasebench.tokenization import load_tokenizer

    rows, sent, stated = _send_order(tmp_path, monkeypatch, None)
    assert adjacent_renderings([r["base_id"] for r in rows])  # stored order
    assert adjacent_renderings([r["base_id"] for r in sent])  # lm-eval's order
    tok = load_tokenizer("phasebench-ref")
    stored = prefill_tokens(tok.encode(r["prompt"]) for r in rows)
    served = prefill_tokens(tok.encode(r["prompt"]) for r in sent)
    assert stored["prefill_tokens"] == served["prefill_tokens"] == len(rows) * LENGTH
    assert served["prefix_cache_saving"] > 0.3, served
    _states(stated, stored, served)


def _states(stated, stored, served):
    """The manifest states the figures of both orders, the lm-eval one as lm-eval sent them."""
    assert stated["prefill_tokens"] == served["prefill_tokens"]
    for key, found in (("stored_order", stored), ("lm_eval_order", served)):
        for name in ("prefill_tokens_prefix_cache", "prefix_cache_saving"):
            assert stated[key][name] == found[name], (key, name)


@pytest.mark.slow
def test_length_axis_sends_an_items_renderings_in_length_groups(tmp_path, monkeypatch):
    from phasebench.tokenization import load_tokenizer

    rows, sent, stated = _send_order(tmp_path, monkeypatch, "only")
    tok = load_tokenizer("phasebench-ref")
    stored = prefill_tokens(tok.encode(r["prompt"]) for r in rows)
    served = prefill_tokens(tok.encode(r["prompt"]) for r in sent)
    _states(stated, stored, served)
    assert served["prefix_cache_saving"] < stored["prefix_cache_saving"] / 2, (served, stored)
    assert adjacent_renderings([r["base_id"] for r in rows])  # stored order keeps them together
    lengths = [r["length"] for r in sent]
    # lm-eval sends one length's prompts together (each length is a batch group of its own,
    # phasebench/lmeval/batching.py), so an item's renderings are P groups apart
    runs = [n for i, n in enumerate(lengths) if i == 0 or lengths[i - 1] != n]
    assert sorted(runs) == sorted(set(lengths)), runs
    assert not adjacent_renderings([r["base_id"] for r in sent])
    groups = [[r["base_id"] for r in sent if r["length"] == n] for n in sorted(set(lengths))]
    assert all(sorted(g) == list(range(N_BASE)) for g in groups)  # one rendering per group
