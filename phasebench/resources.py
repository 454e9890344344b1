"""Where the shipped folders (``tasks/``, ``generators/``, ``data_cards/``, reference weights)
are.

In a source checkout they are the top-level folders next to ``pyproject.toml``; in an installed
wheel they are resource packages (``phasebench._tasks`` ...), see ``pyproject.toml``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def _is_checkout() -> bool:
    pyproject = _ROOT / "pyproject.toml"
    return pyproject.exists() and 'name = "phasebench"' in pyproject.read_text(encoding="utf-8")


def resource_dir(name: str) -> Path:
    """The folder ``name`` (``tasks``, ``generators`` or ``data_cards``)."""
    if _is_checkout() and (_ROOT / name).is_dir():
        return _ROOT / name
    return Path(str(resources.files(f"phasebench._{name}")))


def reference_weights_dir() -> Path:
    """The committed reference models, one folder per variant, and ``tokenizer/`` (the
    ``phasebench-ref`` alias); inside the package in a checkout and in a wheel alike."""
    return Path(__file__).resolve().parent / "reference" / "weights"
