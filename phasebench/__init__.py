"""phasebench: phase-balanced long-context splits that expose phase sensitivity.

The public API is small and flat (``from phasebench import generate, verify, summarize``). Each
name is imported from its module on first use, so ``import phasebench`` stays cheap (lm-eval
imports the task hooks at start-up). No submodule is named like a public name, so importing a
submodule can never replace one of these attributes (a test checks identity).
"""

from __future__ import annotations

import importlib
from typing import Any

from phasebench._version import GENERATOR_VERSION, __version__

_LAZY = {
    "PhasebenchError": "phasebench.errors",
    "SplitSpec": "phasebench.specs",
    "load_tokenizer": "phasebench.tokenization",
    "generate": "phasebench.build",
    "read_manifest": "phasebench.build",
    "iter_rows": "phasebench.build",
    "verify": "phasebench.verification",
    "summarize": "phasebench.stats",
}

__all__ = ["GENERATOR_VERSION", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'phasebench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
