"""phasebench: phase-balanced long-context splits that expose phase sensitivity.

The public API is small; each name is imported from its module on first use, so ``import
phasebench`` stays cheap (lm-eval imports the task hooks at start-up).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
#: Bumped whenever generated data changes for the same spec and tokenizer.
GENERATOR_VERSION = "1"

_LAZY = {
    "PhasebenchError": "phasebench.errors",
    "SplitSpec": "phasebench.specs",
    "load_tokenizer": "phasebench.tokenization",
    "generate": "phasebench.build",
    "read_manifest": "phasebench.build",
    "iter_rows": "phasebench.build",
    "verify": "phasebench.verify",
    "summarize": "phasebench.stats",
}

__all__ = ["GENERATOR_VERSION", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'phasebench' has no attribute {name!r}")
