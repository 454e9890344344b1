"""Generation requests carry a stop sequence naming their prompt's length, so that lm-eval's
own batching (grouping by generation arguments) never puts prompts of two lengths into one
batch, and the answers are cut exactly where they were before. That lm-eval's backends batch so
is checked on their own ``generate_until`` in ``tests/test_lmeval_compat.py``."""

from __future__ import annotations

import pytest

from phasebench.lmeval.batching import batch_stop, one_length_per_batch
from phasebench.lmeval.tasks import MAX_GEN_TOKS

#: The generation arguments of the kv and niah task YAMLs.
YAML = {"until": ["\n"], "do_sample": False, "temperature": 0.0, "max_gen_toks": MAX_GEN_TOKS}


def test_the_added_stop_begins_with_the_first_and_is_added_once():
    once = one_length_per_batch(YAML, 4096)
    assert once["until"] == ["\n", "\n" + batch_stop(4096)]
    assert {k: v for k, v in once.items() if k != "until"} == {
        k: v for k, v in YAML.items() if k != "until"
    }
    assert one_length_per_batch(once, 4100)["until"] == ["\n", "\n" + batch_stop(4100)]
    assert YAML["until"] == ["\n"]  # the task's own arguments are left alone
    assert one_length_per_batch({"until": "Q:"}, 7)["until"] == ["Q:", "Q:" + batch_stop(7)]
    assert one_length_per_batch({}, 7)["until"] == [batch_stop(7)]


@pytest.mark.parametrize(
    "text", ["4821\nmore", "4821", "48\n" + batch_stop(16) + " x", "\n4821", "no stop at all"]
)
def test_answers_are_cut_where_they_were(text):
    """The added stop begins with the task's first stop, so the first match is the same one."""
    from lm_eval.models.utils import handle_stop_sequences, postprocess_generated_text

    before = postprocess_generated_text(text, stop=list(YAML["until"]), think_end_token=None)
    until = one_length_per_batch(YAML, 16)["until"]
    after = postprocess_generated_text(text, stop=until, think_end_token=None)
    assert after == before
    # with the EOS lm-eval adds, three stop sequences: under the four an OpenAI API takes
    assert len(handle_stop_sequences(until, eos="</s>")) == 3


def test_lm_evals_chat_backend_sends_only_four_stop_sequences():
    """The limit phasebench counts against is lm-eval's own: its chat backend cuts to four (and
    its completions backend sends them all, for an OpenAI-type server to refuse)."""
    from types import SimpleNamespace

    from lm_eval.models.openai_completions import LocalChatCompletion, LocalCompletionsAPI

    from phasebench.lmeval.batching import API_STOP_LIMIT

    stops = ["\n", "Q:", "###", batch_stop(7)]
    model = SimpleNamespace(model="m", _max_gen_toks=16)
    chat = LocalChatCompletion._create_payload(
        model, [{"role": "user", "content": "x"}], generate=True,
        gen_kwargs={"until": list(stops)}, eos="</s>",
    )  # fmt: skip
    assert chat["stop"] == stops[:API_STOP_LIMIT] and "</s>" not in chat["stop"]
    plain = LocalCompletionsAPI._create_payload(
        model, "x", generate=True, gen_kwargs={"until": list(stops)}, eos="</s>"
    )
    assert plain["stop"] == [*stops, "</s>"]


def test_stop_sequences_over_an_api_limit_are_refused_before_the_run(capsys):
    from phasebench.cli import main

    api = "model=deepseek-v4,base_url=http://127.0.0.1:9/v1/completions,max_length=4096"
    until = '{"until": ["\\n", "Q:", "###"]}'
    meta = '{"max_seq_lengths": [256]}'
    code = main(["eval", "--model", "local-completions", "--model_args", api, "--tasks",
                 "phasebench_kv", "--gen_kwargs", until, "--metadata", meta])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "local-completions sends at most 4" in err and "keep at most 2 (drop '###')" in err
    # two of one's own fit, and an hf run has no such limit
    from phasebench.lmeval.harness import check_stop_sequences

    check_stop_sequences(["kv"], {"until": ["\n", "Q:"]}, "local-chat-completions")
    check_stop_sequences(["kv"], {"until": ["\n", "Q:", "###"]}, "hf")
