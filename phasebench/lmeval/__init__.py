"""phasebench inside lm-evaluation-harness.

- :mod:`phasebench.lmeval.tasks`: what the task YAMLs call (split loading, scoring, aggregates);
- :mod:`phasebench.lmeval.harness`: ``phasebench eval`` and ``phasebench tasks-dir``;
- :mod:`phasebench.lmeval.compat`: every use of lm-eval internals, with the supported versions.

Importing this package does not import lm-eval.
"""
