"""The environment the kvpress tests run in (``tests/kvpress/test_kvpress_env.py``): kvpress pins
transformers<5.3, so it cannot share the main environment. A virtual environment with torch (the
version the main environment runs) and this project with its ``kvpress`` extra from a copy of the
source tree, pinned by constraints-kvpress.txt (pip may reach the package index; nothing
downloads a model).

Building it is the suite's slowest setup (minutes of pip), so ``tests/conftest.py`` starts it
in a background process as soon as a session has collected the kvpress tests
(:func:`start_building`), and it runs while the other tests do; the tests' fixture then takes
the finished environment (:func:`build`, which waits for the background build under the same
lock, or builds it itself where none ran or it failed).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import venv
from importlib.metadata import version
from pathlib import Path

from filelock import FileLock

#: The folder, in the session's shared temporary folder, the environment is built in.
FOLDER = "kvpress-env"
#: The background build's output, in :data:`FOLDER`.
LOG = "build.log"


def _pip(python: str, *args: str) -> None:
    proc = subprocess.run(
        # nothing byte-compiled at install: the checks compile what they import, once
        [python, "-m", "pip", "install", "-q", "--no-compile", *args],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(args)} failed:\n" + proc.stderr[-4000:])


def build(folder: Path) -> str:
    """The python of the environment in ``folder``, built there unless a build finished before
    (one at a time: a caller waits for a build under way)."""
    from support.lmeval import ROOT, copy_source

    folder.mkdir(parents=True, exist_ok=True)
    ready = folder / "python.txt"
    with FileLock(str(folder / "build.lock")):
        if ready.is_file():
            return ready.read_text(encoding="utf-8")
        env, src = folder / "venv", folder / "src"
        for stale in (env, src):  # what a killed or failed build left
            shutil.rmtree(stale, ignore_errors=True)
        copy_source(src)
        venv.create(env, with_pip=True)
        python = str(env / "bin" / "python")
        pins = str(ROOT / "constraints-kvpress.txt")  # the versions the extra was tested with
        _pip(python, "-c", pins, f"torch=={version('torch').split('+')[0]}")
        _pip(python, "-c", pins, f"{src}[kvpress]")
        shutil.rmtree(src)
        ready.write_text(python, encoding="utf-8")
        return python


def session_folder(base: Path) -> Path:
    """:data:`FOLDER` in the temporary folder every process of the session shares: the
    session's own (``base``), or under pytest-xdist the controller's, above the worker's."""
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / FOLDER


def start_building(folder: Path) -> subprocess.Popen | None:
    """Start :func:`build` in ``folder`` in a background process of its own (its output in
    :data:`LOG`), unless another process of this session started it; returns the process."""
    folder.mkdir(parents=True, exist_ok=True)
    try:  # the first of the session's processes to get here starts it
        os.close(os.open(folder / "started", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return None
    with open(folder / LOG, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, __file__, str(folder)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, pip's children included
        )
    atexit.register(stop, process)  # a session that ends early leaves no pip running
    return process


def stop(process: subprocess.Popen) -> None:
    """Stop a background build that is still running, pip's processes with it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


if __name__ == "__main__":  # the background build: python tests/support/kvpress_env.py FOLDER
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    build(Path(sys.argv[1]))
