"""phasebench: phase-balanced long-context splits that expose phase sensitivity."""

from __future__ import annotations

__version__ = "0.1.0"
#: Bumped whenever generated data changes for the same spec and tokenizer.
GENERATOR_VERSION = "1"

__all__ = ["GENERATOR_VERSION", "__version__"]
