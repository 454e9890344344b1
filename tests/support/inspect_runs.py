"""Inspect AI runs of phasebench's tasks for the tests: the real ``inspect eval`` command, and a
scripted model (Inspect's own ``mockllm`` provider) through ``inspect_ai.eval``.

Each runs in a subprocess, in a folder of its own, with the installed phasebench: Inspect names a
third-party task ``PACKAGE/TASK`` only when it finds the package installed (its
``direct_url.json``), and a process started in the checkout would find the checkout's build
metadata first; from the checkout, ``phasebench/kv`` would also be read as a path into its
``phasebench/`` folder. Offline, as every test: nothing is downloaded.

    python -m support.inspect_runs mock WORK LENGTH N_BASE MODULUS MODEL
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from support.lmeval import ROOT, offline_env

#: The scripted model's accuracy per phase: phases 3 and 7 weak.
ACCURACY = (0.95, 0.9, 0.95, 0.35, 0.9, 0.95, 0.9, 0.3)


def response(row: dict, model: str) -> str:
    """The scripted model's answer to ``row``: right with its phase's :data:`ACCURACY`, drawn
    from a stream keyed by the model and the row (the leaderboard tests' responder)."""
    from phasebench.rng import derive_rng

    right = derive_rng(0, "responder", model, row["id"]).random() < ACCURACY[row["phase"]]
    return " " + row["answer"] if right else " 00000"


def _env(work: Path) -> dict[str, str]:
    env = offline_env(work / "cache", source_on_path=False)
    env["PYTHONPATH"] = str(ROOT / "tests")
    return env


def _newest_log(logs: Path) -> Path:
    found = sorted(logs.glob("*.eval"))
    if not found:
        raise RuntimeError(f"no Inspect log under {logs}")
    return found[-1]


def inspect_cli(work: Path, args: Sequence[str], timeout: int = 600) -> Path:
    """``inspect eval ARGS`` in ``work`` (logs in ``work/logs``); returns the log."""
    inspect = shutil.which("inspect", path=str(Path(sys.executable).parent))
    # --display plain: a refusal's one line is printed (none would print nothing)
    command = [inspect or "inspect", "eval", *args, "--log-dir", str(work / "logs"),
               "--display", "plain"]  # fmt: skip
    proc = subprocess.run(command, cwd=work, env=_env(work), capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"inspect eval failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return _newest_log(work / "logs")


def mock_run(work: Path, length: int, n_base: int, modulus: int, model: str) -> Path:
    """``phasebench/kv`` on the scripted model (:func:`response`), for the DeepSeek-V4
    tokenizer; returns the log."""
    work.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "support.inspect_runs", "mock", str(work), str(length),
               str(n_base), str(modulus), model]  # fmt: skip
    proc = subprocess.run(command, cwd=work, env=_env(work), capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"the Inspect run failed:\n{proc.stderr[-3000:]}")
    return _newest_log(work / "logs")


def _mock_main(work: Path, length: int, n_base: int, modulus: int, model: str) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage

    from support.submissions import split_rows

    rows = split_rows(work / "splits", length=length, n_base=n_base, modulus=modulus)
    by_prompt = {row["prompt"]: row for row in rows}

    def answer(messages, tools, tool_choice, config):
        row = by_prompt[messages[-1].text]
        output = ModelOutput.from_content("mockllm/model", response(row, model))
        # the tokens it read, as a provider reports them (the scorer's witness)
        output.usage = ModelUsage(input_tokens=row["length"], output_tokens=1,
                                  total_tokens=row["length"] + 1)  # fmt: skip
        return output

    (log,) = inspect_eval(
        "phasebench/kv",
        model="mockllm/model",
        model_args={"custom_outputs": answer},
        task_args={"length": length, "n_base": n_base, "modulus": modulus,
                   "tokenizer": "deepseek-v4"},
        log_dir=str(work / "logs"),
        display="none",
    )  # fmt: skip
    if log.status != "success":
        raise SystemExit(f"run failed: {log.error.message if log.error else log.status}")


if __name__ == "__main__":
    if sys.argv[1] == "mock":
        _mock_main(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
                   sys.argv[6])  # fmt: skip
