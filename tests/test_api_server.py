"""phasebench through lm-eval's API backends against a real OpenAI-compatible server:
llama-cpp-python's server on the SmolLM2 GGUF, bound to 127.0.0.1, started and stopped here
(``tests/support/openai_server.py`` says where its interpreter comes from and what it costs).

The claim under test: phasebench labels phases for exactly the token ids the server feeds the
model. A pass-through proxy records what lm-eval sends and what the server answers; for every
logged prompt the server's own tokenizer (``/extras/tokenize``, the same call its completion
path makes) must give phasebench's ids, the server must report that many prompt tokens, and the
token at the logged ``anchor_index`` must hold the needle's first character. With
``local-chat-completions`` the server applies the GGUF's chat template itself; the logged
``anchor_index`` must then be the anchor's index in the templated sequence.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from phasebench.lmeval.harness import API_BACKENDS, model_max_length
from phasebench.tokenization import load_tokenizer
from support.lmeval import lm_eval, outputs
from support.models import SMOLLM2_GGUF, smollm2_folder
from support.openai_server import llama_server, post, recording_proxy, server_python

MODULUS = 4
METADATA = {"max_seq_lengths": [256], "n_base": 8, "phase_modulus": MODULUS}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    """SmolLM2's tokenizer as transformers reads it from the GGUF, saved as a folder: lm-eval's
    API backends load ``tokenizer=`` with ``AutoTokenizer.from_pretrained`` and no gguf_file."""
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("smollm2-tokenizer")
    AutoTokenizer.from_pretrained(smollm2_folder(), gguf_file=SMOLLM2_GGUF).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    model = Path(smollm2_folder()) / SMOLLM2_GGUF
    with llama_server(server_python(), model, log) as base, recording_proxy(base) as (url, rec):
        yield base, url, rec


def _tokenize(base: str, text: str) -> list[int]:
    return post(f"{base}/extras/tokenize", {"input": text})["tokens"]


def _covers(base: str, ids: list[int], index: int, char: int) -> bool:
    """Whether token ``index`` of ``ids`` spans character ``char`` of their detokenized text."""
    before = post(f"{base}/extras/detokenize", {"tokens": ids[:index]})["text"]
    through = post(f"{base}/extras/detokenize", {"tokens": ids[: index + 1]})["text"]
    return len(before) <= char < len(through)


def _run(work: Path, url: str, backend: str, task: str, tokenizer_dir: Path, *extra: str):
    path = "chat/completions" if "chat" in backend else "completions"
    args = f"model=smollm2,base_url={url}/v1/{path},tokenizer={tokenizer_dir},max_length=2048"
    if backend == "local-completions":
        # llama-cpp-python's server takes the prompt as text (it refuses token-id lists), so
        # lm-eval sends strings and the server tokenizes them: the ids checked below
        args += ",tokenizer_backend=huggingface,tokenized_requests=False"
    proc = lm_eval(work, args, task, METADATA, wrapper=True, model=backend, batch_size=1,
                   extra=["--gen_kwargs", "max_gen_toks=8", *extra], timeout=1800)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "phasebench summary of this run" in proc.stdout
    return outputs(work / "out")


@pytest.mark.slow
@pytest.mark.parametrize("family", ["kv", "niah"])
def test_completions_server_feeds_the_ids_phasebench_labelled(
    server, tokenizer_dir, tmp_path, family
):
    base, url, recorder = server
    task = f"phasebench_{family}"
    seen = len(recorder.on("/v1/completions"))
    results, samples = _run(tmp_path, url, "local-completions", task, tokenizer_dir)
    sent = recorder.on("/v1/completions")[seen:]
    logged = samples[task]
    assert len(logged) == len(sent) == 8 * MODULUS
    by_prompt = {}
    for exchange in sent:
        prompt = exchange.request["prompt"]
        by_prompt[prompt[0] if isinstance(prompt, list) else prompt] = exchange.response
    tok = load_tokenizer(str(tokenizer_dir))
    for sample in logged:
        doc = sample["doc"]
        response = by_prompt[doc["prompt"]]  # lm-eval sent the split's prompt text unchanged
        ids = _tokenize(base, doc["prompt"])
        assert ids == tok.encode(doc["prompt"]), doc["id"]  # the server's ids are phasebench's
        assert response["usage"]["prompt_tokens"] == len(ids) == doc["length"], doc["id"]
        assert _covers(base, ids, doc["anchor_index"], doc["key_char"]), doc["id"]
        assert doc["phase"] == doc["anchor_index"] % MODULUS
    table = results["results"][task]
    assert 0.0 <= table["acc_worst_phase,none"] <= table["acc,none"] <= 1.0


@pytest.mark.slow
def test_chat_completions_relabel_by_the_server_template(server, tokenizer_dir, tmp_path):
    base, url, recorder = server
    seen = len(recorder.on("/v1/chat/completions"))
    results, samples = _run(tmp_path, url, "local-chat-completions", "phasebench_niah",
                            tokenizer_dir, "--apply_chat_template")  # fmt: skip
    sent = recorder.on("/v1/chat/completions")[seen:]
    logged = samples["phasebench_niah"]
    assert len(logged) == len(sent) == 8 * MODULUS
    by_prompt = {}
    for exchange in sent:
        (message,) = exchange.request["messages"]  # no system prompt was given
        assert message["role"] == "user"
        by_prompt[message["content"]] = exchange.response
    tok = load_tokenizer(str(tokenizer_dir))
    offsets = set()
    for sample in logged:
        doc = sample["doc"]
        response = by_prompt[doc["prompt"]]
        templated = tok.hf.apply_chat_template(
            [{"role": "user", "content": doc["prompt"]}], tokenize=False, add_generation_prompt=True
        )
        ids = _tokenize(base, templated)
        enc = tok.hf(templated, add_special_tokens=False, return_offsets_mapping=True)
        assert ids == enc["input_ids"], doc["id"]
        # the server fed the model as many tokens as its tokenizer gives the templated text
        assert response["usage"]["prompt_tokens"] == len(ids), doc["id"]
        anchor_char = templated.index(doc["prompt"]) + doc["key_char"]
        start, end = enc["offset_mapping"][doc["anchor_index"]]
        assert start <= anchor_char < end, doc["id"]
        assert doc["phase"] == doc["anchor_index"] % MODULUS
        assert doc["split_phase"] == (doc["anchor_index"] - doc["anchor_offset"]) % MODULUS
        offsets.add(doc["anchor_offset"])
    assert len(offsets) == 1 and offsets.pop() > 0  # a constant template prefix, measured
    assert results["results"]["phasebench_niah"]["acc,none"] >= 0.0


def test_api_backends_take_the_context_from_max_length():
    """lm-eval's API backends keep one token of ``max_length`` (default 2048) back."""
    for backend in API_BACKENDS:
        assert model_max_length({"max_length": "4096"}, backend) == 4095
        assert model_max_length({}, backend) == 2047
