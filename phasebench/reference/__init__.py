"""Small reference models with and without chunked KV compression (optional extra
``reference``: torch). They prove the benchmark detects phase sensitivity where it exists and
stays silent where it does not; see docs/reference.md."""

from __future__ import annotations

from pathlib import Path

__all__ = ["weights_dir"]


def weights_dir() -> Path:
    """Folder of the committed weights, one sub-folder per variant (``full``, ``gate-w8s4``...)."""
    return Path(__file__).parent / "weights"
