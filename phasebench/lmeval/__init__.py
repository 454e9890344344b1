"""phasebench inside lm-evaluation-harness.

- :mod:`phasebench.lmeval.tasks`: what the task YAMLs call (split loading, scoring, aggregates);
- :mod:`phasebench.lmeval.harness`: ``phasebench eval`` and ``phasebench tasks-dir``;

Every use of lm-eval's internals, and every assumption about how it behaves, is
:mod:`phasebench.lmeval_compat`, a module of its own on the ground floor (the core reads it too).

Importing this package does not import lm-eval.
"""
