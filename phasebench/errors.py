"""Every exception phasebench raises on purpose.

A :class:`PhasebenchError` is an error with a message that says what to fix; the CLI prints it
as one line and exits with its group's ``exit_code``. Three groups, each caught in one line:
:class:`InputError`, bad input or an unmet precondition (exit 2); :class:`IntegrityError`, data
that is not what it claims (exit 2); :class:`MachineError`, the machine's failure, not the
input's (a package missing, memory or disk exhausted, a worker process that crashed; exit 3),
so that a caller can tell "fix the input" from "fix the machine". A package that is not
installed is one condition, :class:`DependencyError`, whichever package it is. Anything else is
a bug and keeps its traceback.

The tree (every class lives here; the modules that raise them import them from here)::

    PhasebenchError                 every one-line error; catch it to catch them all
    ├── InputError                  the call cannot be done as asked (exit 2)
    │   ├── SpecError               a split spec field missing, unknown or out of range
    │   ├── TokenizerError          a tokenizer that cannot be loaded, or the wrong one
    │   │   └── MissingPackageError ... because its package is not installed (a DependencyError)
    │   ├── AssemblyError           a prompt that cannot be assembled exactly
    │   ├── OutputError             an output path that cannot be written or replaced as asked
    │   ├── StatsError              a statistic asked of data it is not defined for
    │   ├── SubmissionsError        not a submissions folder
    │   ├── HubError                a dataset repository folder, or the Hub, refused
    │   ├── EvalError               an lm-eval run that cannot go ahead as asked
    │   ├── ProbeError              a probe that cannot run as asked
    │   ├── PressError              a kvpress press that cannot be built
    │   └── PromptSplitError        a prompt that cannot be cut at its question
    ├── IntegrityError              data read is not what it claims (exit 2)
    │   ├── SplitError              a split folder missing, incomplete or not phasebench's
    │   ├── SamplesError            lm-eval results or sample logs that cannot be read
    │   │   └── LogError            ... breaking a reading rule (size, json, path)
    │   └── PlainYamlError          YAML that is not plain data (also a ValueError)
    └── MachineError                the machine, not the input, failed (exit 3)
        └── DependencyError         a package that is not installed (names what to install)
            └── MissingPackageError

One more is raised on purpose and never leaves the leaderboard's validation:
``phasebench.leaderboard.collect.Refused`` stops one submission with its ``Problem`` (the
rule broken, the file, what to do), which the rejection report lists. And
:class:`TaskRefusal`, a ``SystemExit`` (not a ``PhasebenchError``): a phasebench task run by
lm-eval's own command line refuses its input with it, the one way a task there ends the run with
one line instead of a traceback.

:func:`first_line` is how a message quotes another library's exception. Where phasebench turns
an unexpected exception from hostile input into a refusal, ``PHASEBENCH_DEBUG=1``
(:func:`debugging`) makes it re-raise instead, so that a bug of phasebench's keeps its
traceback; the command line then shows the traceback of any error.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "AssemblyError",
    "DependencyError",
    "EvalError",
    "HubError",
    "InputError",
    "IntegrityError",
    "LogError",
    "MachineError",
    "MissingPackageError",
    "OutputError",
    "PhasebenchError",
    "PlainYamlError",
    "PressError",
    "ProbeError",
    "PromptSplitError",
    "SamplesError",
    "SpecError",
    "SplitError",
    "StatsError",
    "SubmissionsError",
    "TokenizerError",
    "debugging",
    "first_line",
]


class PhasebenchError(Exception):
    """Every error phasebench raises on purpose, with a message that says what to fix; raised
    as one of the three groups below."""

    exit_code = 2


class InputError(PhasebenchError):
    """The call cannot be done as asked: fix the arguments, the spec or the files named (exit 2)."""


class IntegrityError(PhasebenchError):
    """Data phasebench reads is not what it claims or breaks a reading rule (a split, lm-eval
    logs, submitted YAML): nothing of it is used (exit 2)."""


class SpecError(InputError):
    """A split spec field is missing, unknown or out of range."""


class TokenizerError(InputError):
    """A tokenizer cannot be loaded, or a split was built for another tokenizer."""


class AssemblyError(InputError):
    """A prompt cannot be assembled exactly (length too short, pieces that merge, ...)."""


class SplitError(IntegrityError):
    """A split folder is missing, incomplete or not a phasebench split."""


class OutputError(InputError):
    """An output path cannot be written or replaced as asked."""


class SamplesError(IntegrityError):
    """lm-eval results or per-sample logs cannot be read as phasebench results."""


class LogError(SamplesError):
    """An lm-eval output file breaks a reading rule (``size``, ``json`` or ``path``)."""

    def __init__(self, rule: str, path: Path | str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.rule = rule
        self.path = str(path)
        self.detail = message


class StatsError(InputError):
    """A statistic was asked of data or settings it is not defined for."""


class SubmissionsError(InputError):
    """A leaderboard command was pointed at something that is not a submissions folder."""


class PlainYamlError(IntegrityError, ValueError):
    """The text is not plain YAML data; the message (one line) says why."""


class HubError(InputError):
    """A dataset repository folder is inconsistent, or the Hub refused a request."""


class EvalError(InputError):
    """An lm-eval run cannot go ahead as asked (a truncated prompt, missing model arguments)."""


class ProbeError(InputError):
    """A probe cannot run as asked (a prompt without a marker, a shift that is not exact, ...)."""


class PressError(InputError):
    """A press name, field or value that cannot build a kvpress press."""


class PromptSplitError(InputError):
    """A prompt that cannot be cut at its question without moving a labelled token."""


class MachineError(PhasebenchError):
    """The machine cannot do the work (a package missing or broken, memory or disk exhausted, a
    worker process that crashed): the run's failure, never blamed on its input."""

    exit_code = 3


class DependencyError(MachineError):
    """A package the work needs (an extra such as lm-eval or matplotlib, a tokenizer package or
    library) is not installed or does not import: the machine is incomplete, whoever asked for
    it; the message names what to install."""


class MissingPackageError(TokenizerError, DependencyError):
    """A tokenizer's package or library is missing: a :class:`DependencyError` that the code
    loading tokenizers also sees as a :class:`TokenizerError`."""


class TaskRefusal(SystemExit):
    """A phasebench task under ``lm_eval``'s command line refusing its metadata: Python prints
    the message as one line on stderr and exits with status 1 (lm-eval's CLI leaves a task no
    other way to end the run without a traceback)."""


def first_line(exc: BaseException, limit: int = 200, empty: str | None = None) -> str:
    """The first line of ``exc``'s message (at most ``limit`` characters), or ``empty`` when the
    message is empty (default: the exception's type name): how a one-line error quotes another
    library's exception."""
    text = str(exc).strip()
    line = text.splitlines()[0].strip()[:limit] if text else ""
    return line or (type(exc).__name__ if empty is None else empty)


def debugging() -> bool:
    """``PHASEBENCH_DEBUG`` is set (to anything but ``0`` or nothing): an unexpected exception
    that phasebench would turn into a refusal or a one-line error re-raises with its traceback."""
    return os.environ.get("PHASEBENCH_DEBUG", "").strip() not in ("", "0")
