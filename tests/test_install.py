"""A non-editable ``pip install .`` ships the task YAMLs: ``phasebench tasks-dir`` points lm-eval
at them from any working directory, with no checkout on the path."""

from __future__ import annotations

import json
import shutil
import subprocess
import venv

import pytest
from lmeval_run import ROOT, env, make_tiny_llama, outputs

SHIPPED = ("pyproject.toml", "README.md", "phasebench", "tasks", "generators", "data_cards")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A venv (system site-packages for torch, lm-eval, ...) with phasebench built as a wheel
    from a copy of the source tree and installed into it."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    src.mkdir()
    for name in SHIPPED:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy(path, src / name)
    (src / "README.md").touch()
    # without its own pip: the venv would bundle an old setuptools that shadows the build
    # backend pyproject.toml asks for (--no-build-isolation uses whatever is importable)
    venv.create(base / "venv", system_site_packages=True, with_pip=False)
    python = str(base / "venv" / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(src)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    shutil.rmtree(src)  # nothing may come from the source tree any more
    return base, python


def _clean_env(base):
    out = env(base / "cache")
    out.pop("PYTHONPATH", None)
    return out


def test_tasks_dir_is_inside_the_installed_package(installed):
    base, python = installed
    work = base / "elsewhere"
    work.mkdir(exist_ok=True)
    proc = subprocess.run(
        [str(base / "venv" / "bin" / "phasebench"), "tasks-dir"],  # the console script
        cwd=work,
        env=_clean_env(base),
        capture_output=True,
        text=True,
        check=True,
    )
    folder = proc.stdout.strip()
    assert folder.startswith(str(base / "venv")), folder
    names = {p.name for p in __import__("pathlib").Path(folder).iterdir()}
    assert {
        "phasebench.yaml",
        "phasebench_kv.yaml",
        "phasebench_niah.yaml",
        "phasebench_code.yaml",
        "_phasebench_common.yaml",
        "phasebench_hooks.py",
    } <= names


def test_lm_eval_finds_the_installed_tasks(installed):
    base, python = installed
    work = base / "run"
    work.mkdir(exist_ok=True)
    tiny = make_tiny_llama(base / "tiny")
    clean = _clean_env(base)
    tasks_dir = subprocess.run(
        [python, "-m", "phasebench.cli", "tasks-dir"],
        cwd=work,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    metadata = {"max_seq_lengths": [256], "n_base": 8, "phase_modulus": 4}
    proc = subprocess.run(
        [
            python,
            "-m",
            "lm_eval",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny},dtype=float32",
            "--tasks",
            "phasebench_kv",
            "--include_path",
            tasks_dir,
            "--metadata",
            json.dumps(metadata),
            "--device",
            "cpu",
            "--batch_size",
            "8",
            "--log_samples",
            "--output_path",
            str(work / "out"),
        ],
        cwd=work,
        env=clean,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results, samples = outputs(work / "out")
    assert len(samples["phasebench_kv"]) == 8 * 4
    assert "phase_gap@256,none" in results["results"]["phasebench_kv"]
    # the task's hooks came from the installed package, not from a checkout
    config = results["configs"]["phasebench_kv"]
    assert config["metadata"]["config_source"].startswith(tasks_dir)
    assert str(ROOT) not in json.dumps(config)
