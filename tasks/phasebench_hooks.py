"""Entry points for ``!function phasebench_hooks.X`` in this folder's YAMLs.

lm-eval resolves ``!function module.name`` to ``module.py`` next to the YAML file, so this shim
re-exports the real implementations from :mod:`phasebench.lmeval`.
"""

from phasebench.lmeval import PhaseTask, load_split, process_results

__all__ = ["PhaseTask", "load_split", "process_results"]
