"""Writing a report: its JSON file and its plots, each whole or absent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from phasebench.atomic import FileSet, atomic_files, atomic_write_text


def write_json(report: dict[str, Any], path: str | Path, files: FileSet | None = None) -> Path:
    """Write the report atomically (temp file in the same folder, then rename), or as one file
    of the set ``files`` (:func:`phasebench.atomic.atomic_files`)."""
    text = json.dumps(report, indent=2, sort_keys=True, allow_nan=False) + "\n"
    if files is not None:
        return files.add_text(Path(path), text)
    return atomic_write_text(Path(path), text)


def write_plots(
    report: dict[str, Any], folder: str | Path, files: FileSet | None = None
) -> list[Path]:
    """Phase-profile plots (and code heat strips) as PNG and SVG, byte-identical per report:
    all of them or none (a full disk leaves no partial set), with ``files`` as part of that
    larger set."""
    from phasebench.plots import plot_report

    if files is not None:
        return plot_report(report, Path(folder), files)
    with atomic_files() as own:
        return plot_report(report, Path(folder), own)
