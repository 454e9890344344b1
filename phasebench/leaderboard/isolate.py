"""Run a function on JSON data in child processes, each with a memory and a time limit.

The leaderboard validates every submission this way (:func:`run_many`, several at once), so a
submission that exhausts its memory or time refuses only itself: the parent gets each answer back
as JSON text through a pipe, or learns which limit ended the child. What is not the submission's
doing is told apart and reported as a failure of the run: a child that crashed or was killed from
outside (the machine's out-of-memory killer), an exception the function did not expect (a missing
package, a bug), a child that could not be started at all
(:class:`~phasebench.errors.MachineError`).

Children are forked from a ``multiprocessing`` fork server that has imported the heavy libraries
once (:data:`PRELOAD`), so a child starts in milliseconds with a clean, single-threaded copy of
them and shares nothing with the parent but the data it is sent. Each child:

* takes the parent's environment, import path and working folder as they are at the call (the
  fork server may have been started earlier), so it can import what the parent could (a
  family the parent registered from a module of its own, :func:`phasebench.families.adopt`);
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
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from phasebench.errors import MachineError

__all__ = ["PRELOAD", "Limits", "run_isolated", "run_many"]

K = TypeVar("K")

#: Imported once by the fork server, so that children do not pay for them.
PRELOAD = (
    "numpy",
    "pandas",
    "pyarrow.parquet",
    "jsonschema",
    "transformers.models.auto.tokenization_auto",
    "phasebench.leaderboard.validate",
    "phasebench.lmeval.tasks",
    "phasebench.leaderboard.warm",  # the tokenizers several submissions share, loaded once
)


@dataclass(frozen=True)
class Limits:
    """Budget of one child: ``memory`` bytes of address space on top of what it holds when it
    starts (the preloaded libraries), and ``seconds`` of wall-clock (and CPU) time."""

    memory: int = 4 << 30
    seconds: float = 600.0

    def describe_memory(self) -> str:
        return f"{self.memory >> 20} MiB"


#: What the preloaded :mod:`phasebench.leaderboard.warm` reads when the fork server starts: a
#: JSON list of the tokenizers to load. A process has one fork server; a call that names a
#: tokenizer the running server did not load stops it, and the call's first child starts a new one
#: from the environment as it is then (before, only a process's first validation found its shared
#: tokenizers loaded).
WARM_ENV = "PHASEBENCH_WARM_TOKENIZERS"

_CONTEXT: Any = None
#: The tokenizers (:data:`WARM_ENV` items) the running fork server loaded (None: none started).
_SERVED: frozenset[str] | None = None


def _context() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(PRELOAD))
        _CONTEXT = ctx
    return _CONTEXT


def _warm_items(env: dict[str, str]) -> frozenset[str]:
    """The tokenizers :data:`WARM_ENV` names in ``env`` (none where it is not a JSON list, which
    the warm module ignores too)."""
    try:
        value = json.loads(env.get(WARM_ENV) or "[]")
    except ValueError:
        value = None
    if not isinstance(value, list):
        return frozenset()
    return frozenset(json.dumps(item, sort_keys=True) for item in value)


def _serve(env: dict[str, str]) -> None:
    """Stop a running fork server that lacks a tokenizer ``env`` (the call's environment) names,
    so that the next child starts one that loads it."""
    global _SERVED
    wanted = _warm_items(env)
    if _SERVED is not None and wanted <= _SERVED:
        return
    if _SERVED is not None:
        from multiprocessing import forkserver

        forkserver._forkserver._stop()  # the standard library's own way to stop it (its tests')
    _SERVED = wanted


def run_isolated(target: str, payload: Any, limits: Limits) -> dict[str, Any]:
    """``module:function`` called on ``payload`` in a child process under ``limits``: the
    answer :func:`run_many` gives for one payload."""
    ((_, answer),) = run_many(target, [(None, payload)], limits)
    return answer


def run_many(
    target: str, items: Iterable[tuple[K, Any]], limits: Limits, jobs: int = 1
) -> Iterator[tuple[K, dict[str, Any]]]:
    """``module:function`` called on each ``(key, payload)`` of ``items``, each in a child
    process of its own under ``limits``, at most ``jobs`` at a time; yields ``(key, answer)`` as
    each child ends (in that order, not the order of ``items``).

    An answer is ``{"result": <what the function returned>}``; ``{"limit": "memory" | "time",
    "detail": str}`` when the child ran out of its own budget; or ``{"failure": str}``, one line,
    when it ended for another reason: an exception the function let escape, a crash, a signal
    from outside. The function's return value must be JSON-serialisable (no NaN). Closing the
    iterator early (or an exception in the loop that consumes it) kills the children still
    running. :class:`~phasebench.errors.MachineError` if a child cannot be started."""
    from multiprocessing.connection import wait

    ctx = _context()
    env, cwd, path = dict(os.environ), os.getcwd(), list(sys.path)
    _serve(env)
    pending = iter(items)
    running: dict[Any, _Child[K]] = {}
    try:
        while True:
            while len(running) < max(1, jobs):
                item = next(pending, None)
                if item is None:
                    break
                child = _Child.start(ctx, item[0], target, item[1], env, cwd, path, limits)
                running[child.reader] = child
            if not running:
                return
            soonest = min(c.deadline for c in running.values())
            ready = wait(list(running), max(0.0, soonest - time.monotonic()))
            now = time.monotonic()
            for reader in list(running):
                child = running[reader]
                if reader in ready:
                    del running[reader]
                    yield child.key, child.finish()
                elif child.deadline <= now:
                    del running[reader]
                    child.kill()
                    yield child.key, {"limit": "time", "detail": f"no answer within "
                                      f"{limits.seconds:g} s"}  # fmt: skip
    finally:
        for child in running.values():
            child.kill()


class _Child(Generic[K]):
    """One running child: its process, the end of the pipe its answer comes through, and the
    moment the parent stops waiting for it."""

    def __init__(self, key: K, process: Any, reader: Any, deadline: float) -> None:
        self.key, self.process, self.reader, self.deadline = key, process, reader, deadline

    @classmethod
    def start(cls, ctx: Any, key: K, target: str, payload: Any, env: dict[str, str], cwd: str,
              path: list[str], limits: Limits) -> _Child[K]:  # fmt: skip
        request = json.dumps(
            {
                "target": target,
                "payload": payload,
                "env": env,
                "cwd": cwd,
                "path": path,
                "memory": int(limits.memory),
                "seconds": float(limits.seconds),
            }
        )
        reader, writer = ctx.Pipe(duplex=False)
        process = ctx.Process(target=_child, args=(writer, request), daemon=True)
        try:
            process.start()
        except OSError as exc:  # no memory or processes left to fork, a fork server that died
            reader.close()
            writer.close()
            raise MachineError(
                f"cannot start a validating process ({exc.strerror or exc}); the machine is out "
                f"of memory or processes"
            ) from None
        writer.close()
        return cls(key, process, reader, time.monotonic() + limits.seconds)

    def finish(self) -> dict[str, Any]:
        """The answer of a child whose pipe is readable (an answer, or the end of the pipe)."""
        try:
            answer: bytes | None = self.reader.recv_bytes()
        except (EOFError, OSError):  # the child ended without sending anything
            answer = None
        self.reader.close()
        self.process.join(None if answer is None else 5.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        if answer is not None:
            return json.loads(answer.decode("utf-8"))
        code = self.process.exitcode
        if code is not None and code < 0 and -code == _signal("SIGXCPU"):
            return {"limit": "time", "detail": "CPU time limit (SIGXCPU)"}
        if code is not None and code < 0 and -code == _signal("SIGKILL"):
            return {"failure": "a validating process was killed from outside (signal 9, most "
                    "likely the machine's out-of-memory killer)"}  # fmt: skip
        return {"failure": f"a validating process ended without an answer (exit code {code})"}

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.reader.close()


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
    sys.path[:] = request["path"]
    _set_limits(request["memory"], request["seconds"])
    result: Any = None
    try:
        module, _, name = request["target"].partition(":")
        function = getattr(importlib.import_module(module), name)
        result = {"result": function(request["payload"])}
        text = json.dumps(result, allow_nan=False)
    except MemoryError:
        text = None
    except Exception as exc:  # not the submission's limits: the parent fails the run with this
        detail = " ".join(str(exc).split())[:300]
        if not isinstance(exc, MachineError):  # a bug or a broken library: say which exception
            detail = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        text = json.dumps({"failure": detail})
    if text is None:  # the exception and what it held are gone: there is room to answer
        result = None
        text = json.dumps({"limit": "memory", "detail": "MemoryError"})
    try:
        conn.send_bytes(text.encode("utf-8"))
        conn.close()
    except OSError:  # the parent is gone (a killed build): nobody to answer, nothing to print
        pass


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
