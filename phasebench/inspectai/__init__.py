"""phasebench in Inspect AI: ``inspect eval phasebench/kv`` and ``phasebench/niah``.

The ``inspect_ai`` entry point of ``pyproject.toml`` names :mod:`phasebench.inspectai._tasks`,
so Inspect imports it when a task name starts with ``phasebench/``; importing it registers the
tasks, their scorer and their metrics. It needs inspect-ai (``pip install
"phasebench[inspect]"``); this package's own import does not (``phasebench tasks-dir --inspect``
reads :data:`MODEL_CONFIG` without it), and nothing else of phasebench imports it. How a log of
these tasks is read back: :mod:`phasebench.inspect_log`.
"""

from pathlib import Path

#: Model arguments for Inspect's ``hf`` provider that feed a split's exact prompt, greedily:
#: ``inspect eval phasebench/kv --model hf/PATH --model-config "$(phasebench tasks-dir
#: --inspect)"``.
MODEL_CONFIG = Path(__file__).resolve().parent / "hf_prompt_as_is.yaml"

__all__ = ["MODEL_CONFIG"]
