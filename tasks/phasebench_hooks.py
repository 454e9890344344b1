"""Entry points for ``!function phasebench_hooks.X`` in this folder's YAMLs.

lm-eval resolves ``!function module.name`` to ``module.py`` next to the YAML file, so this shim
re-exports the real implementations from :mod:`phasebench.lmeval.tasks`.
"""

from phasebench.lmeval.tasks import PhaseTask, process_results, task_dataset

__all__ = ["PhaseTask", "process_results", "task_dataset"]
