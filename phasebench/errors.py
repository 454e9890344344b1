"""Every exception phasebench raises on purpose.

A :class:`PhasebenchError` is bad input or an unmet precondition, with a message that says how
to fix the call; the CLI prints it as one line and exits with its ``exit_code`` (2). A
:class:`MachineError` is the machine's failure, not the input's (a package missing, memory or
disk exhausted, a worker process that crashed): one line too, exit code 3, so that a caller can
tell "fix the input" from "fix the machine". Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = [
    "AssemblyError",
    "DependencyError",
    "EvalError",
    "HubError",
    "MachineError",
    "MissingPackageError",
    "OutputError",
    "PhasebenchError",
    "SamplesError",
    "SpecError",
    "SplitError",
    "StatsError",
    "SubmissionsError",
    "TokenizerError",
]


class PhasebenchError(Exception):
    """Bad input or an unmet precondition, with a message that says how to fix the call."""

    exit_code = 2


class SpecError(PhasebenchError):
    """A split spec field is missing, unknown or out of range."""


class TokenizerError(PhasebenchError):
    """A tokenizer cannot be loaded, or a split was built for another tokenizer."""


class AssemblyError(PhasebenchError):
    """A prompt cannot be assembled exactly (length too short, pieces that merge, ...)."""


class SplitError(PhasebenchError):
    """A split folder is missing, incomplete or not a phasebench split."""


class OutputError(PhasebenchError):
    """An output path cannot be written or replaced as asked."""


class SamplesError(PhasebenchError):
    """lm-eval results or per-sample logs cannot be read as phasebench results."""


class StatsError(PhasebenchError):
    """A statistic was asked of data or settings it is not defined for."""


class SubmissionsError(PhasebenchError):
    """A leaderboard command was pointed at something that is not a submissions folder."""


class HubError(PhasebenchError):
    """A dataset repository folder is inconsistent, or the Hub refused a request."""


class EvalError(PhasebenchError):
    """An lm-eval run cannot go ahead as asked (a truncated prompt, missing model arguments)."""


class DependencyError(PhasebenchError):
    """An optional dependency is missing; the message names the extra to install."""


class MachineError(PhasebenchError):
    """The machine cannot do the work (a package missing or broken, memory or disk exhausted, a
    worker process that crashed): the run's failure, never blamed on its input."""

    exit_code = 3


class MissingPackageError(TokenizerError, MachineError):
    """A package phasebench itself names (a tokenizer package, a tokenizer library) is not
    installed or does not import: the machine is incomplete, whoever asked for it."""
