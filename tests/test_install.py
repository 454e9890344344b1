"""A non-editable install ships the task YAMLs: ``phasebench tasks-dir`` points lm-eval at them
from any working directory, with no checkout on the path.

The wheel is built from a copy of the source tree with the build backend of the test
environment (``--no-build-isolation``: no download, and never the base interpreter's old
setuptools), installed with ``--target`` into a folder of its own, and run by this interpreter
with only that folder in front of the path, so every import of ``phasebench`` comes from the
wheel while torch, lm-eval and the rest come from the test environment."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.lmeval import ROOT, copy_source, lm_eval, offline_env, outputs


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("install")
    src = copy_source(base / "src")
    wheels, target = base / "wheels", base / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("phasebench-*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    shutil.rmtree(src)  # nothing may come from the source tree any more
    env = offline_env(base / "cache", source_on_path=False)
    env["PYTHONPATH"] = str(target)
    return base, target, env


def test_tasks_dir_is_inside_the_installed_package(installed):
    base, target, env = installed
    work = base / "elsewhere"
    work.mkdir(exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "phasebench", "tasks-dir"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    folder = proc.stdout.strip()
    assert folder.startswith(str(target)), folder
    names = {p.name for p in Path(folder).iterdir()}
    assert {
        "phasebench.yaml",
        "phasebench_kv.yaml",
        "phasebench_niah.yaml",
        "phasebench_code.yaml",
        "_phasebench_common.yaml",
        "_phasebench_answer.yaml",
        "phasebench_hooks.py",
        "README.md",
    } <= names


def test_every_package_of_the_checkout_ships(installed):
    """``pyproject.toml`` lists the packages one by one: a new subpackage (the code family's,
    say) that the list forgets is missing from the wheel."""
    _, target, _ = installed
    source = {p.parent.relative_to(ROOT) for p in (ROOT / "phasebench").rglob("__init__.py")}
    shipped = {p.parent.relative_to(target) for p in (target / "phasebench").rglob("__init__.py")}
    assert source <= shipped, sorted(map(str, source - shipped))


def test_the_wheel_declares_its_tasks_as_an_lm_eval_task_plugin(installed):
    """The ``lm_eval.tasks`` entry point (lm-eval's proposed task plugins, not yet released)
    names the package whose folder holds the task YAMLs: the folder ``tasks-dir`` prints."""
    base, target, env = installed
    code = (
        "import importlib, importlib.metadata as m, pathlib;"
        "(e,) = [e for e in m.entry_points(group='lm_eval.tasks') if e.name == 'phasebench'];"
        "print(pathlib.Path(importlib.import_module(e.value).__file__).parent)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=base, env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    folder = Path(proc.stdout.strip())
    assert str(folder).startswith(str(target)) and (folder / "phasebench_kv.yaml").is_file()


@pytest.mark.slow
def test_lm_eval_finds_the_installed_tasks(installed, tiny_llama):
    base, target, env = installed
    work = base / "run"
    work.mkdir(exist_ok=True)
    tasks_dir = subprocess.run(
        [sys.executable, "-m", "phasebench", "tasks-dir"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    metadata = {"max_seq_lengths": [256], "n_base": 8, "phase_modulus": 4}
    proc = lm_eval(work, f"pretrained={tiny_llama},dtype=float32", "phasebench_kv", metadata,
                   include_path=tasks_dir, env=env, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results, samples = outputs(work / "out")
    assert len(samples["phasebench_kv"]) == 8 * 4
    assert "phase_gap,none" in results["results"]["phasebench_kv"]
    # the task's hooks came from the installed package, not from a checkout
    config = results["configs"]["phasebench_kv"]
    assert config["metadata"]["config_source"].startswith(tasks_dir)
    assert str(ROOT) not in json.dumps(config)
