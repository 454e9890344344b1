"""Functions the isolation tests run in validating processes (``support.workers:NAME``): each
does for real what a machine or a worker can do wrong, so the tests see real crashes, kills and
import errors, never a stand-in for them."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any


def rendezvous(payload: dict[str, Any]) -> str:
    """Leave a mark, then wait (at most ``wait`` seconds) for the other process's mark:
    ``met`` proves the two ran at the same time, whatever the machine's speed."""
    Path(payload["mine"]).touch()
    deadline = time.monotonic() + payload["wait"]
    while time.monotonic() < deadline:
        if Path(payload["other"]).exists():
            return "met"
        time.sleep(0.01)
    return "alone"


def killed(payload: Any) -> None:
    """Die of SIGKILL, as a process does when the kernel's out-of-memory killer picks it."""
    os.kill(os.getpid(), signal.SIGKILL)


def exits(payload: Any) -> None:
    """End the process at once with exit code 3, without an answer."""
    os._exit(3)


def imports_a_missing_module(payload: Any) -> None:
    """Import a module that is not installed (as validation would on an incomplete machine)."""
    import phasebench_no_such_module  # noqa: F401


def never_answers(payload: Any) -> None:
    """Wait without end and without using the CPU: a validation that outlasts any time limit,
    whatever the machine's speed."""
    while True:
        time.sleep(60)


def encodes_with_a_shared_tokenizer(payload: dict[str, Any]) -> dict[str, Any]:
    """Encode a batch (in parallel where the environment allows) with a tokenizer the fork
    server loaded (:mod:`phasebench.leaderboard.warm`); say whether it came loaded."""
    from phasebench import tokenization
    from phasebench.leaderboard.regenerate import validation_tokenizer

    loaded = tokenization._load_cached.cache_info().currsize
    tok = validation_tokenizer(payload["name"], payload["args"])
    encoded = tok.backend.encode_batch(["key: value\n" * 200] * 256)
    return {"loaded_before": loaded, "encoded": len(encoded)}


def answers_late(payload: Any) -> dict[str, Any]:
    """Leave a mark in ``$PHASEBENCH_TEST_MARKS``, wait 3 s (long enough for the test to kill
    the parent), then answer as a refusal: the answer goes to a parent that may be gone."""
    Path(os.environ["PHASEBENCH_TEST_MARKS"], f"started-{os.getpid()}").touch()
    time.sleep(3)
    return {"refused": [{"rule": "format", "file": "x", "message": "late"}]}
