"""The few exceptions phasebench raises on purpose.

Every error a user can cause by bad input is a :class:`PhasebenchError`; the CLI prints its
message as one line and exits with code 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class PhasebenchError(Exception):
    """Bad input or an unmet precondition, with a message that says how to fix the call."""

    exit_code = 2


class SpecError(PhasebenchError):
    """A split spec field is missing, unknown or out of range."""


class TokenizerError(PhasebenchError):
    """A tokenizer cannot be loaded, or a split was built for another tokenizer."""


class AssemblyError(PhasebenchError):
    """A prompt cannot be assembled exactly (length too short, pieces that merge, ...)."""


class VerificationError(PhasebenchError):
    """A built split does not satisfy one of its claims."""

    exit_code = 1
