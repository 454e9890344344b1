"""The old import paths of modules that moved to another layer, kept for one release.

A module imported by its old path warns once (:class:`DeprecationWarning`, pointing at the
importing line) and *is* the module at its new path, the same object, so every attribute,
private ones and monkeypatches included, behaves as before. Package code imports only the new
paths (``tests/test_layers.py`` fails otherwise, and leaves the old paths out of the package's
import graph); the old paths work through release :data:`LAST_RELEASE` and go after it.
"""

from __future__ import annotations

import importlib
import sys
import warnings

#: The last release in which the old paths work.
LAST_RELEASE = "0.2"

#: Old module path -> the module it moved to (the layer it belongs to: docs/architecture.md).
MOVED = {
    "phasebench.lmeval.compat": "phasebench.lmeval_compat",
    "phasebench.stats.settings": "phasebench.design.settings",
    "phasebench.stats.power": "phasebench.design.power",
}


def alias(old: str) -> None:
    """Make the module being imported as ``old`` the module it moved to, with a warning."""
    new = MOVED[old]
    warnings.warn(
        f"{old} has moved to {new}; import {new} (the old path goes after phasebench "
        f"{LAST_RELEASE})",
        DeprecationWarning,
        stacklevel=3,  # the line that imports the old path (the import machinery skipped)
    )
    sys.modules[old] = importlib.import_module(new)
