"""Run one function on JSON data in a child process with a memory and a time limit.

The leaderboard validates every submission this way (:func:`run_isolated`), so a submission that
exhausts memory or time, or crashes its process, refuses only itself: the parent gets its
answer back as JSON text through a pipe, or learns which limit ended it.

Children are forked from a ``multiprocessing`` fork server that has imported the heavy libraries
once (:data:`PRELOAD`), so a child starts in milliseconds with a clean, single-threaded copy of
them and shares nothing with the parent but the data it is sent. Each child:

* takes the parent's environment and working folder as they are at the call (the fork server
  may have been started earlier);
* limits its address space (``RLIMIT_AS``) to what it holds when it starts plus
  :attr:`Limits.memory`, so an allocation past the budget raises ``MemoryError`` in the child;
* limits its CPU time (``RLIMIT_CPU``) to :attr:`Limits.seconds`; the parent also kills it when
  the same number of wall-clock seconds have passed without an answer.
"""

from __future__ import annotations

import importlib
import json
import math
import multiprocessing
import os
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["PRELOAD", "Limits", "run_isolated"]

#: Imported once by the fork server, so that children do not pay for them.
PRELOAD = (
    "numpy",
    "pandas",
    "pyarrow.parquet",
    "jsonschema",
    "transformers.models.auto.tokenization_auto",
    "phasebench.leaderboard.validate",
    "phasebench.lmeval.tasks",
)


@dataclass(frozen=True)
class Limits:
    """Budget of one child: ``memory`` bytes of address space on top of what it holds when it
    starts (the preloaded libraries), and ``seconds`` of wall-clock (and CPU) time."""

    memory: int = 4 << 30
    seconds: float = 600.0

    def describe_memory(self) -> str:
        return f"{self.memory >> 20} MiB"


_CONTEXT: Any = None


def _context() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(PRELOAD))
        _CONTEXT = ctx
    return _CONTEXT


def run_isolated(target: str, payload: Any, limits: Limits) -> dict[str, Any]:
    """``module:function`` called on ``payload`` in a child process under ``limits``.

    Returns ``{"result": <what the function returned>}``, or ``{"limit": "memory" | "time" |
    "crash", "detail": str}`` when the child ran out of memory, out of time, or ended without
    an answer. The function's return value must be JSON-serialisable (no NaN)."""
    ctx = _context()
    request = json.dumps(
        {
            "target": target,
            "payload": payload,
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "memory": int(limits.memory),
            "seconds": float(limits.seconds),
        }
    )
    reader, writer = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(writer, request), daemon=True)
    start = time.monotonic()
    child.start()
    writer.close()
    answer: bytes | None = None
    timed_out = False
    try:
        remaining = limits.seconds - (time.monotonic() - start)
        if remaining > 0 and reader.poll(remaining):
            try:
                answer = reader.recv_bytes()
            except EOFError:  # the child ended without sending anything
                answer = None
        else:
            timed_out = True
    finally:
        if timed_out or answer is None:
            child.join(0.2 if timed_out else 5.0)
            if child.is_alive():
                child.kill()
        child.join()
        reader.close()
    if timed_out:
        return {"limit": "time", "detail": f"no answer within {limits.seconds:g} s"}
    if answer is None:
        code = child.exitcode
        if code is not None and code < 0 and -code in (_signal("SIGXCPU"), _signal("SIGKILL")):
            return {"limit": "time", "detail": f"stopped by signal {-code}"}
        return {"limit": "crash", "detail": f"exit code {code}"}
    return json.loads(answer.decode("utf-8"))


def _signal(name: str) -> int | None:
    import signal

    value = getattr(signal, name, None)
    return int(value) if value is not None else None


def _child(conn: Any, request_text: str) -> None:
    """The child's whole life: adopt the parent's environment, set the limits, run, answer."""
    request = json.loads(request_text)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    _set_limits(request["memory"], request["seconds"])
    result: Any = None
    try:
        module, _, name = request["target"].partition(":")
        function = getattr(importlib.import_module(module), name)
        result = {"result": function(request["payload"])}
        text = json.dumps(result, allow_nan=False)
    except MemoryError:
        text = None
    if text is None:  # the exception and what it held are gone: there is room to answer
        result = None
        text = json.dumps({"limit": "memory", "detail": "MemoryError"})
    conn.send_bytes(text.encode("utf-8"))
    conn.close()


def _set_limits(memory: int, seconds: float) -> None:
    import resource

    try:
        page = os.sysconf("SC_PAGE_SIZE")
        with open("/proc/self/statm") as handle:
            in_use = int(handle.read().split()[0]) * page
    except (OSError, ValueError):
        in_use = 0
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = in_use + memory
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (ValueError, OSError):  # a platform without RLIMIT_AS: the wall-clock limit remains
        pass
    try:
        cpu = max(1, math.ceil(seconds)) + 1
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard == resource.RLIM_INFINITY or cpu < hard:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, hard))
    except (ValueError, OSError):
        pass
