"""A throwaway virtual environment that lacks some of this one's packages, for the tests of an
incomplete machine.

It is a real venv (``python -m venv --without-pip``, from the interpreter this one was made from)
whose ``site-packages`` holds a symbolic link to every entry of this environment's, except the
files the hidden distributions installed (as their ``RECORD`` lists them: the package folder and
its ``.dist-info``). A hidden package is then really absent there: ``import`` fails,
``importlib.util.find_spec`` finds nothing and ``importlib.metadata`` does not list it; every other
package is the very same installed copy.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path


def venv_without(dest: Path, hidden: Sequence[str]) -> Path:
    """Make the venv in ``dest`` without the distributions ``hidden``; returns its python."""
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    here = Path(sysconfig.get_paths()["purelib"])
    there = dest / here.relative_to(sys.prefix)
    left_out = set()
    for name in hidden:
        files = metadata.distribution(name).files or []
        left_out |= {Path(str(f)).parts[0] for f in files}
    assert left_out, f"nothing to hide for {hidden}"
    for entry in sorted(here.iterdir()):
        if entry.name in left_out or entry.name == "__pycache__":
            continue
        link = there / entry.name
        if not link.exists():
            link.symlink_to(entry)
    return dest / "bin" / "python"
