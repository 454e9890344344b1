"""phasebench through lm-eval's API backends against a real OpenAI-compatible server started
here: ``transformers serve`` on a tiny random Llama that carries SmolLM2's tokenizer and chat
template (as transformers reads them from the GGUF), bound to 127.0.0.1, behind a proxy that
records what lm-eval sends and what the server answers. What is checked is what the server
reads, never what it answers, so the tiny model's weights stand in for SmolLM2's (with them a
run of 32 prompts took about 50 s in CI, with the tiny model about 12 s alone);
``benchmarks/check_api_server.py`` runs the same checks on SmolLM2's own weights.

The claim under test: phasebench labels phases for exactly the token ids the server feeds the
model. The checks (``tests/support/api_checks.py``) compare, for every logged prompt, the ids
the server handed to ``generate`` (recorded inside the server process by
``tests/support/transformers_serve.py``) with phasebench's ids, the prompt tokens the server
reports with them, and the token at the logged ``anchor_index`` with the needle; through
``local-chat-completions`` the server renders the chat template itself and the logged anchor
must be the anchor's index in the templated sequence.

llama-cpp-python's server runs the same checks by ``benchmarks/check_api_server.py --server
llama-cpp``, not here: it has no prebuilt CPU wheel and compiles for 29 minutes
(``tests/support/openai_server.py``).

The prefix-cache repeat arm (every prompt read twice) runs end to end once, through the loopback
server of ``tests/test_prefix_cache.py``; ``benchmarks/check_api_server.py`` runs it against
this server (``check_repeat``).
"""

from __future__ import annotations

import pytest

from phasebench.lmeval.harness import API_BACKENDS, model_max_length
from support.api_checks import (
    check_chat,
    check_completions,
    check_length_axis,
    check_witness_catches_retokenizing,
)
from support.openai_server import serve
from support.probes import NIAH_PROBE


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve("transformers", tmp_path_factory.mktemp("transformers-serve"), tiny=True) as served:
        yield served


@pytest.mark.slow
@pytest.mark.parametrize("family", ["kv", "niah"])
def test_completions_server_feeds_the_ids_phasebench_labelled(server, tmp_path, family):
    assert check_completions(server, tmp_path, family)


@pytest.mark.slow
def test_chat_completions_relabel_by_the_server_template(server, tmp_path):
    assert check_chat(server, tmp_path)


@pytest.mark.slow
def test_witness_marks_prompts_the_server_tokenized_otherwise(server, tmp_path):
    """The split labelled for the reference models' tokenizer, served by SmolLM2's: the
    server re-tokenizes every prompt, its counts disagree, and the witness says so."""
    from phasebench.resources import reference_weights_dir

    other = reference_weights_dir() / "tokenizer"
    assert check_witness_catches_retokenizing(server, tmp_path, other)


@pytest.mark.slow
def test_both_axes_through_the_server(server, tmp_path):
    assert check_length_axis(server, tmp_path)


@pytest.mark.slow
def test_probe_through_the_server(server, tmp_path, capsys):
    """``phasebench probe`` through ``local-completions`` against the same server: its
    usage.prompt_tokens must equal every checked shift's length (the witness), and the server
    read the checked text of every shift. (It ran in tests/probe/ on a server of its own; one
    server start serves both.)"""
    import json

    from phasebench.cli import main

    prompt = tmp_path / "prompt.txt"
    prompt.write_text(NIAH_PROBE, encoding="utf-8")
    args = (f"model={server.model},base_url={server.url}/v1/completions,"
            f"tokenizer={server.tokenizer},max_length=2048,tokenizer_backend=huggingface,"
            f"tokenized_requests=False")  # fmt: skip
    seen = len(server.recorder.on("/v1/completions"))
    code = main(["probe", str(prompt), "--model", "local-completions", "--model_args", args,
                 "--expect", "48213", "--modulus", "4", "--rounds", "2",
                 "--styles", "comment_hash", "--max_gen_toks", "8",
                 "--out", str(tmp_path / "out")])  # fmt: skip
    sent = server.recorder.on("/v1/completions")[seen:]
    assert code == 0, capsys.readouterr().err
    data = json.loads((tmp_path / "out" / "probe.json").read_text())
    assert len(sent) == len(data["shifts"]) == 8
    assert data["witness"] == {"kind": "usage.prompt_tokens", "agreed": 8, "disagreed": 0,
                               "missing": 0, "excluded_from_statistics": 0}  # fmt: skip
    assert [e.request["prompt"] for e in sent][0].startswith("Read the notes below")


def test_api_backends_take_the_context_from_max_length():
    """lm-eval's API backends keep one token of ``max_length`` (default 2048) back."""
    for backend in API_BACKENDS:
        assert model_max_length({"max_length": "4096"}, backend) == 4095
        assert model_max_length({}, backend) == 2047
