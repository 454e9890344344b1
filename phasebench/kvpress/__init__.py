"""KV-cache compression through NVIDIA's ``kvpress`` as an lm-eval model type.

``phasebench-kvpress`` is lm-eval's ``hf`` backend with one change to how a prompt is answered:
the context (everything before the question) is prefilled with a kvpress "press" active, which
compresses the KV cache as the prefill runs, and the question and the answer then run on that
cache without compression. Which press, and its settings, come from ``--model_args``::

    phasebench eval --model phasebench-kvpress --tasks phasebench_niah \\
        --model_args pretrained=M,press=chunkkv,inner=knorm,compression_ratio=0.25,chunk_length=8 \\
        --metadata '{"max_seq_lengths": [1024]}'

The split and its phase labels are the same as for ``--model hf`` (built for the same tokenizer):
the press changes what the model remembers, never where a token sits.

kvpress pins ``transformers<5.3``, so it lives in its own environment (the ``kvpress`` extra).
Nothing in this module imports it, torch or lm-eval: :func:`register_model_type` only tells
lm-eval's registry where the model class is, and the class is imported when a run asks for it.
"""

from __future__ import annotations

MODEL_TYPE = "phasebench-kvpress"
_TARGET = "phasebench.kvpress.backend:KVPressLM"

__all__ = ["MODEL_TYPE", "register_model_type"]


def register_model_type() -> None:
    """Make ``--model phasebench-kvpress`` known to lm-eval's model registry (idempotent); the
    class is imported on first use."""
    from phasebench.lmeval_compat import register_model

    register_model(MODEL_TYPE, _TARGET)
