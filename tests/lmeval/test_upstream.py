"""The task folder is ready to live inside lm-eval: copied into an lm-eval installation's own
``lm_eval/tasks/phasebench/``, lm-eval's task discovery finds ``phasebench_niah`` with no
``--include_path``, and the run reports the compact phase metrics.

The installation is a throwaway venv made here (``venv.create``, no pip, no download): lm-eval's
package folder is copied (hard links where the file system allows) into the venv's own
site-packages, so the venv's ``lm_eval`` is that copy and its ``lm_eval/tasks/`` holds our
folder, while torch, transformers and the rest come from the test environment through a
``.pth`` that adds its site-packages after the venv's own. phasebench itself comes from the
checkout on ``PYTHONPATH``, as ``!function phasebench_hooks.X`` needs it importable (upstream,
it would be an lm-eval extra)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from phasebench.lmeval.tasks import COMPACT_METRICS
from support.lmeval import ROOT, lm_eval, offline_env, outputs


def _copy_tree(source: Path, target: Path) -> None:
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip


@pytest.fixture(scope="module")
def lm_eval_venv(tmp_path_factory) -> tuple[Path, Path]:
    """(python of a fresh venv whose lm-eval holds the phasebench folder, that folder)."""
    base = tmp_path_factory.mktemp("upstream")
    env_dir = base / "venv"
    venv.create(env_dir, with_pip=False, clear=True)
    python = env_dir / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    own_site = Path(own)
    installed = Path(importlib.util.find_spec("lm_eval").origin).parent
    _copy_tree(installed, own_site / "lm_eval")
    for info in installed.parent.glob("lm_eval-*.dist-info"):
        _copy_tree(info, own_site / info.name)
    folder = own_site / "lm_eval" / "tasks" / "phasebench"
    shutil.copytree(ROOT / "tasks", folder, ignore=shutil.ignore_patterns("__pycache__"))
    # the test environment's packages after the venv's own (addsitedir also reads their .pth)
    dirs = [d for d in site.getsitepackages() if Path(d).is_dir() and Path(d) != own_site]
    lines = [f"import site; site.addsitedir({d!r})" for d in dirs]
    (own_site / "zz_test_environment.pth").write_text("\n".join(lines) + "\n")
    return python, folder


@pytest.mark.slow
def test_lm_eval_finds_the_tasks_in_its_own_tasks_folder(lm_eval_venv, tiny_llama, tmp_path):
    python, folder = lm_eval_venv
    env = offline_env(tmp_path / "cache")  # the checkout on PYTHONPATH: phasebench importable
    probe = subprocess.run(
        [str(python), "-c", "import lm_eval; print(lm_eval.__file__)"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert probe.startswith(str(folder.parent.parent)), probe  # the venv's copy, not the original

    metadata = {"max_seq_lengths": [128], "n_base": 8, "phase_modulus": 4}
    proc = lm_eval(tmp_path, f"pretrained={tiny_llama},dtype=float32", "phasebench_niah",
                   metadata, include_path=None, python=str(python), env=env,
                   extra=["--gen_kwargs", "max_gen_toks=4"], timeout=1200)  # fmt: skip
    assert "--include_path" not in proc.args
    assert proc.returncode == 0, proc.stderr[-3000:]
    results, samples = outputs(tmp_path / "out")
    config = results["configs"]["phasebench_niah"]
    assert config["metadata"]["config_source"] == str(folder / "phasebench_niah.yaml")
    assert len(samples["phasebench_niah"]) == 8 * 4
    table = results["results"]["phasebench_niah"]
    reported = sorted(k.split(",")[0] for k in table if "," in k and "_stderr" not in k)
    assert reported == sorted(COMPACT_METRICS)


@pytest.mark.slow
def test_lm_eval_validate_and_list_see_the_group_and_tag(lm_eval_venv, tmp_path):
    """lm-eval's own ``validate`` and ``ls`` find the group, the three tasks and the tags."""
    python, _ = lm_eval_venv
    env = offline_env(tmp_path / "cache")
    names = "phasebench,phasebench_kv,phasebench_niah,phasebench_code"
    proc = subprocess.run(
        [str(python), "-m", "lm_eval", "validate", "--tasks", names],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    listed = subprocess.run(
        [str(python), "-m", "lm_eval", "ls", "tags"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "phase_sensitivity" in listed.stdout
    assert sys.executable != str(python)
