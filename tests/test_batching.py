"""Generation requests carry a stop sequence naming their prompt's length, so that lm-eval's
own batching (grouping by generation arguments) never puts prompts of two lengths into one
batch, and the answers are cut exactly where they were before. That lm-eval's backends batch so
is checked on their own ``generate_until`` in ``tests/test_lmeval_contract.py``."""

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
