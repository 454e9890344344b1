"""The test suite's own configuration: a mistyped marker is an error, not a quick test."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_a_mistyped_marker_fails_collection(tmp_path):
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n\n@pytest.mark.slwo\ndef test_x():\n    pass\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "-p",
         "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_typo.py")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "'slwo' not found in `markers`" in proc.stdout + proc.stderr


def _run_with_the_suites_conftest(tmp_path: Path, *options: str):
    """pytest with the suite's conftest on two tests that sleep 0.4 s, one marked slow."""
    sleeps = "    time.sleep(0.4)\n"
    (tmp_path / "test_timed.py").write_text(
        "import time\n\nimport pytest\n\n\ndef test_unmarked():\n"
        + sleeps
        + "\n\n@pytest.mark.slow\ndef test_marked():\n"
        + sleeps
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "-p",
         "no:cacheprovider", "-p", "conftest", "--rootdir", str(tmp_path), *options,
         str(tmp_path / "test_timed.py")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests")},
    )  # fmt: skip


@pytest.mark.slow
def test_an_unmarked_test_over_the_slow_threshold_fails_the_run(tmp_path):
    """The slow threshold is enforced from the call times pytest measures (what
    ``--durations`` prints): at a threshold of 0.1 s the unmarked test of 0.4 s is over three
    times it and fails the run; at 0.3 s it is named, and the run passes; the marked one is
    never named."""
    proc = _run_with_the_suites_conftest(tmp_path, "-o", "slow_seconds=0.1")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "test_timed.py::test_unmarked (fails the run)" in proc.stdout, proc.stdout[-2000:]
    assert "test_marked" not in proc.stdout.split("took their time")[1]
    named = _run_with_the_suites_conftest(tmp_path, "-o", "slow_seconds=0.3")
    assert named.returncode == 0, named.stdout[-2000:]
    assert "test_timed.py::test_unmarked\n" in named.stdout, named.stdout[-2000:]
