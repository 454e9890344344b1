"""phasebench-kvpress, the parts that run in the main environment (no kvpress here: it pins
transformers<5.3): the cut at the question on real tokenizers and real splits, the model type's
registration with lm-eval, and the audit's naming. The backend itself runs in its own
environment: tests/kvpress/test_kvpress_env.py."""

from __future__ import annotations

import pytest

from phasebench.kvpress import MODEL_TYPE, register_model_type
from phasebench.kvpress.audit import model_args_text, press_args, variant
from phasebench.kvpress.presses import canonical
from phasebench.kvpress.prompt import PromptSplitError, check_cut, question_offset
from phasebench.lmeval.data import resolve_split


def _cut(tok, text: str, at: int) -> tuple[list[int], list[int], list[int]]:
    """Whole, head and tail ids as the backend encodes them (the tokenizer's default special
    tokens on the whole and the head, none on the tail)."""
    whole = list(tok.hf(text)["input_ids"])
    head = list(tok.hf(text[:at])["input_ids"])
    tail = list(tok.hf(text[at:], add_special_tokens=False)["input_ids"])
    return whole, head, tail


def _rows(tok_name: str, tok_args: dict, family: str, length: int, tmp_path, monkeypatch):
    monkeypatch.setenv("PHASEBENCH_CACHE", str(tmp_path))
    args = {"pretrained": tok_name, **tok_args, "max_seq_lengths": [length], "n_base": 16}
    return resolve_split(family, **args).rows


@pytest.mark.parametrize("family", ["niah", "kv"])
@pytest.mark.parametrize("which", ["smollm2", "deepseek_bos"])
def test_cut_at_the_question_is_exact_on_every_row(which, family, request, tmp_path, monkeypatch):
    """Every prompt of a real split cuts into context + question whose ids are the whole
    prompt's, and the context ends exactly where the split labels the question (BOS counted
    when the tokenizer adds one)."""
    tok = request.getfixturevalue(which)
    args = {"add_bos_token": "True"} if which == "deepseek_bos" else {}
    if which == "smollm2":
        args = {"gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
        name = tok.name
    else:
        name = "deepseek-v4"
    rows = _rows(name, args, family, 512, tmp_path, monkeypatch)
    assert len(rows) == 128
    for row in rows:
        at = question_offset(row["prompt"], row)
        whole, head, tail = _cut(tok, row["prompt"], at)
        assert check_cut(whole, head, tail, row) == row["question_index"]
        assert len(whole) == row["length"]
        assert head[: tok.n_prefix] == list(tok.prefix_ids)
        assert row["anchor_index"] < len(head)  # the needle is in what the press compresses


def test_a_cut_off_the_question_is_refused(smollm2, tmp_path, monkeypatch):
    """One character late, the context no longer ends where the split says: refused."""
    (row, *_) = _rows(
        smollm2.name, {"gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}, "niah", 512, tmp_path,
        monkeypatch,
    )  # fmt: skip
    text = row["prompt"]
    at = question_offset(text, row)
    whole, head, tail = _cut(smollm2, text, at + 1)
    with pytest.raises(PromptSplitError):
        check_cut(whole, head, tail, row)


def test_a_tokenizer_with_a_suffix_token_is_refused(wordpiece):
    """[CLS] ... [SEP] around every encoding: the context's [SEP] is not in the whole prompt."""
    text = "Below is a list. Question: what is the value of the key abc123?"
    at = text.index("Question")
    whole, head, tail = _cut(wordpiece, text, at)
    with pytest.raises(PromptSplitError, match="differently apart"):
        check_cut(whole, head, tail, {"id": "x"})


def test_question_offset_inside_a_chat_template():
    doc = {"id": "r", "prompt": "context. Question?", "question_char": 9}
    assert question_offset("<user>context. Question?</user>", doc) == 6 + 9
    with pytest.raises(PromptSplitError, match="exactly once"):
        question_offset("context. Question? context. Question?", doc)
    with pytest.raises(PromptSplitError, match="kv and niah"):
        question_offset("x", {"prompt": "x"})


def test_public_names_are_pinned():
    import phasebench.kvpress

    assert sorted(phasebench.kvpress.__all__) == ["MODEL_TYPE", "register_model_type"]


def test_model_type_is_registered_with_lm_eval():
    from lm_eval.api.registry import get_model
    from lm_eval.models.huggingface import HFLM

    register_model_type()
    register_model_type()  # idempotent
    cls = get_model(MODEL_TYPE)
    assert cls.__name__ == "KVPressLM" and issubclass(cls, HFLM)
    assert get_model("hf") is HFLM  # lm-eval's own models stay registered


def test_press_names_and_audit_variants():
    assert canonical("ChunkKVPress") == canonical("chunk_kv") == canonical("chunkkv") == "chunkkv"
    assert canonical("StreamingLLMPress") == "streamingllm"
    assert press_args("chunkkv8", 0.25) == {
        "press": "chunkkv",
        "inner": "knorm",
        "chunk_length": 8,
        "compression_ratio": 0.25,
    }
    assert press_args("none", 0.25) == {"press": None}
    assert variant("chunkkv8", 0.25) == "kvpress-chunkkv8-r0.25"
    assert variant("none", 0.5) == "kvpress-none"
    assert model_args_text({"pretrained": "m", "press": None}) == "pretrained=m,press=none"


def test_the_audit_table_reads_a_committed_submission_when_the_run_folder_is_gone(tmp_path):
    """A sweep's scratch output (``WORK/<variant>/out``) is not committed; its table is rebuilt
    from the packed submission the record names, with the figures ``phasebench report`` gives."""
    from pathlib import Path

    from phasebench.errors import PhasebenchError
    from phasebench.kvpress.audit import audit_table

    root = Path(__file__).resolve().parents[2] / "leaderboard" / "submissions"
    (submission,) = root.glob("HuggingFaceTB__SmolLM2*/*+kvpress-chunk8-r0.1-niah512-m8")
    record = {"variant": "kvpress-chunk8-r0.1-niah512-m8", "submission": str(submission)}
    (row,) = audit_table(tmp_path, [record])
    summary = row["summary"]
    assert len(summary["per_phase"]) == 8 and summary["dominant_period"] == 8
    assert summary["p_value"] < 0.01 and 0.5 < summary["gap"] <= 1.0
    with pytest.raises(PhasebenchError, match="no lm-eval output"):
        audit_table(tmp_path, [{"variant": "gone", "submission": str(tmp_path / "gone")}])
