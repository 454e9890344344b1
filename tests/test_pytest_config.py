"""The test suite's own configuration: a mistyped marker is an error, not a quick test; the slow
threshold is enforced from the measured call times; tests are filed in folders that mirror the
package."""

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


PACKAGE = ROOT / "phasebench"
#: Test files at the top of ``tests/`` that guard the whole project, not one module.
PROJECT_GUARDS = {
    "test_docs.py", "test_exported_members.py", "test_install.py", "test_layers.py",
    "test_one_number.py", "test_pytest_config.py", "test_vocabulary.py",
}  # fmt: skip
#: Top-level test files of one subject that spans top-level modules: the modules they test.
SUBJECTS = {"test_prefix_cache.py": ("salting", "cache_reads")}
#: Words of a file filed by when it was written (a review round) rather than by what it tests.
ROUND_WORDS = ("hostile", "round", "review", "regression")


def _misfiled(tests: Path, package: Path) -> list[str]:
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        if rel.parts[0] == "support":
            continue
        if any(word in path.stem for word in ROUND_WORDS):
            found.append(f"{rel}: named after when, not what")
        if len(rel.parts) > 2 or (len(rel.parts) == 2 and not (package / rel.parts[0]).is_dir()):
            found.append(f"{rel}: no package folder phasebench/{rel.parts[0]}/")
        elif len(rel.parts) == 1 and path.name not in PROJECT_GUARDS:
            modules = SUBJECTS.get(path.name) or (path.stem.removeprefix("test_"),)
            if not all((package / f"{m}.py").is_file() for m in modules):
                found.append(f"{rel}: no top-level module phasebench/{modules[0]}.py")
    return found


def test_tests_sit_in_folders_that_mirror_the_package():
    """``tests/<subpackage>/`` holds the tests of ``phasebench/<subpackage>/``; a file at the
    top of ``tests/`` is the test of one top-level module (``test_build.py`` of
    ``phasebench/build.py``) or a project guard; none is named after a review round."""
    assert _misfiled(ROOT / "tests", PACKAGE) == []


def test_the_filing_check_sees_a_misfiled_test(tmp_path):
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    (package / "stats").mkdir(parents=True)
    (package / "build.py").write_text("")
    for name in ("stats/test_x.py", "test_build.py", "nowhere/test_y.py", "test_gone.py",
                 "stats/test_hostile_z.py"):  # fmt: skip
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("")
    assert _misfiled(tests, package) == [
        "nowhere/test_y.py: no package folder phasebench/nowhere/",
        "stats/test_hostile_z.py: named after when, not what",
        "test_gone.py: no top-level module phasebench/gone.py",
    ]


def test_the_kvpress_environment_starts_building_once_and_is_reused(tmp_path):
    """The background build of the kvpress environment (tests/support/kvpress_env.py, started by
    tests/conftest.py) starts once per session, and a finished build is taken as it is."""
    from support import kvpress_env

    folder = kvpress_env.session_folder(tmp_path)
    assert folder.parent == (tmp_path.parent if os.environ.get("PYTEST_XDIST_WORKER") else tmp_path)
    folder.mkdir()
    (folder / "started").touch()  # another process of the session started it
    assert kvpress_env.start_building(folder) is None
    (folder / "python.txt").write_text("/built/bin/python")
    assert kvpress_env.build(folder) == "/built/bin/python"  # no second build
