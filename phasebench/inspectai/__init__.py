"""phasebench in Inspect AI: ``inspect eval phasebench/kv`` and ``phasebench/niah``.

The ``inspect_ai`` entry point of ``pyproject.toml`` names this package, so Inspect imports it
when a task name starts with ``phasebench/``; importing it registers the tasks, their scorer and
their metrics (:mod:`phasebench.inspectai._tasks`). It needs inspect-ai (``pip install
"phasebench[inspect]"``); nothing else of phasebench imports it. How a log of these tasks is read
back: :mod:`phasebench.inspect_log`.
"""

from phasebench.inspectai._tasks import (
    MODEL_CONFIG,
    PROMPT_AS_IS,
    REPORTED,
    code,
    kv,
    model_tokenizer,
    niah,
    phase_answer,
    split_samples,
    statistic,
)

__all__ = [
    "MODEL_CONFIG",
    "PROMPT_AS_IS",
    "REPORTED",
    "code",
    "kv",
    "model_tokenizer",
    "niah",
    "phase_answer",
    "split_samples",
    "statistic",
]
