"""Real OpenAI-compatible servers for end-to-end tests, on SmolLM2-135M-Instruct from the GGUF
file, bound to 127.0.0.1, started and stopped by the caller, each behind a pass-through proxy
that records every request and response, so a test sees exactly what lm-eval sent and what the
server answered. :func:`serve` starts either one and yields a :class:`Served`.

``transformers`` (what CI runs): ``transformers serve`` from ``transformers[serving]`` (pure-Python
wheels, in the ``test`` extra), run by ``transformers_serve.py`` in the test interpreter. It reads
a model folder, not the GGUF (:func:`support.models.save_smollm2_folder` says why), and has no
tokenize endpoint, no ``echo`` and no logprobs; the witness of what it fed the model is the
launcher's record of the ids handed to ``generate`` (see that file), one per request, in order.
Its completions endpoint takes only a text prompt, tokenized with the folder's tokenizer and its
special-token settings; its chat endpoint renders the folder's chat template and tokenizes that.

``llama-cpp``: llama-cpp-python's server on the GGUF file itself, with ``/extras/tokenize`` and
``/extras/detokenize`` as its witness. It has no prebuilt CPU wheel on PyPI: ``pip install``
compiles llama.cpp, 29 minutes on two busy cores for the build below (47 for a native one), too
long for CI, so it is checked by ``benchmarks/check_api_server.py --server llama-cpp``, not by
the test suite. It must be built with :data:`LLAMA_CPP_CMAKE_ARGS`: a native build uses the
CPU's AMX tile instructions for quantized weights, which this CPU advertises but the sandbox
refuses (SIGILL on ``tilezero`` in ``ggml_backend_amx_mul_mat`` at the first completion). The
server's interpreter is, in this order: ``$PHASEBENCH_LLAMA_SERVER_PYTHON``; the running
interpreter if it has ``llama_cpp.server``; else a venv made once under
``$PHASEBENCH_TEST_CACHE`` (default ``~/.cache/phasebench-tests``) with
:data:`LLAMA_CPP_REQUIREMENT` built and installed into it.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import venv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LLAMA_CPP_REQUIREMENT = "llama-cpp-python[server]==0.3.36"
#: A portable AVX2 build without AMX (see the module docstring).
LLAMA_CPP_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
)
STARTUP_SECONDS = 180
REQUEST_SECONDS = 600


def test_cache() -> Path:
    default = Path.home() / ".cache" / "phasebench-tests"
    return Path(os.environ.get("PHASEBENCH_TEST_CACHE") or default)


def server_python() -> str:
    """An interpreter that can run ``python -m llama_cpp.server`` (see the module docstring)."""
    given = os.environ.get("PHASEBENCH_LLAMA_SERVER_PYTHON")
    if given:
        return given
    if importlib.util.find_spec("llama_cpp") is not None:
        return sys.executable
    env_dir = test_cache() / "llama-cpp-python-0.3.36-avx2"
    python = env_dir / "bin" / "python"
    probe = [str(python), "-c", "import llama_cpp.server"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return str(python)
    venv.create(env_dir, with_pip=True, clear=True)
    subprocess.run(
        # --no-cache-dir: pip's wheel cache is keyed by the sdist, not by CMAKE_ARGS, and could
        # hand back a native (AMX) build made elsewhere
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
         "--no-cache-dir", LLAMA_CPP_REQUIREMENT],
        check=True, timeout=3 * 3600,
        env={**os.environ, "CMAKE_ARGS": LLAMA_CPP_CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": "2"},
    )  # fmt: skip
    return str(python)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, payload: dict, timeout: float = REQUEST_SECONDS) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


@contextlib.contextmanager
def _running(name: str, command: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
    """Start ``command`` (a server listening on the port ``command`` names at 127.0.0.1, output
    to ``log``); yield its base URL once ``/v1/models`` answers; stop it (terminate, then kill)
    when the block ends."""
    port = command[command.index("--port") + 1]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited: {log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/v1/models", timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    tail = log.read_text()[-3000:]
                    raise RuntimeError(f"{name} did not start: {tail}") from None
                time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


def _server_env() -> dict[str, str]:
    """The caller's environment, offline, one thread, without the checkout on ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return env | {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@contextlib.contextmanager
def llama_server(
    python: str, model: Path, log: Path, *, n_ctx: int = 2048, extra: Sequence[str] = ()
) -> Iterator[str]:
    """``python -m llama_cpp.server`` on the GGUF file ``model`` (alias ``smollm2``, one
    thread, ``extra`` arguments after the others, e.g. ``--cache True``); yields its base URL
    once it answers."""
    command = [
        python, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(_free_port()), "--n_ctx", str(n_ctx),
        "--n_threads", "1", "--n_threads_batch", "1", "--seed", "0", *extra,
    ]  # fmt: skip
    with _running("llama_cpp.server", command, _server_env(), log) as base:
        yield base


@contextlib.contextmanager
def transformers_server(folder: Path, log: Path, fed: Path) -> Iterator[str]:
    """``transformers serve`` pinned to the model folder ``folder`` (loaded before it answers,
    never unloaded; lm-eval must send ``model=<folder>``), on the CPU in float32, through the
    launcher that records the ids fed to ``generate`` in ``fed``; yields its base URL."""
    launcher = Path(__file__).with_name("transformers_serve.py")
    # -P: the launcher's folder must not go first on sys.path, where support/tokenizers.py would
    # hide the tokenizers package
    command = [
        sys.executable, "-P", str(launcher), str(fed), "serve", str(folder),
        "--host", "127.0.0.1", "--port", str(_free_port()), "--device", "cpu", "--dtype", "float32",
    ]  # fmt: skip
    with _running("transformers serve", command, _server_env(), log) as base:
        yield base


@dataclass
class Exchange:
    path: str
    request: Any
    response: Any


@dataclass
class Recorder:
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on(self, path: str) -> list[Exchange]:
        with self.lock:
            return [e for e in self.exchanges if e.path == path]


class _Proxy(http.server.BaseHTTPRequestHandler):
    """Forwards each request to the server unchanged and records the JSON both ways."""

    def __init__(self, *args: Any, target: str, recorder: Recorder, **kwargs: Any) -> None:
        self.target = target
        self.recorder = recorder
        super().__init__(*args, **kwargs)

    def log_message(self, *args: Any) -> None:
        pass

    def _forward(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        request = urllib.request.Request(f"{self.target}{self.path}", data=body, method=method)
        for name in ("Content-Type", "Authorization"):
            if self.headers.get(name):
                request.add_header(name, self.headers[name])
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_SECONDS) as response:
                status, data = response.status, response.read()
                kind = response.headers.get("Content-Type", "application/json")
        except urllib.error.HTTPError as error:
            status, data = error.code, error.read()
            kind = error.headers.get("Content-Type", "application/json")
        try:
            recorded = (json.loads(body) if body else None, json.loads(data))
        except ValueError:
            recorded = (body, data)
        with self.recorder.lock:
            self.recorder.exchanges.append(Exchange(self.path, *recorded))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._forward("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._forward("POST")


@contextlib.contextmanager
def recording_proxy(target: str) -> Iterator[tuple[str, Recorder]]:
    """A pass-through HTTP proxy to ``target`` on 127.0.0.1; yields (its URL, the recorder)."""
    recorder = Recorder()
    handler = functools.partial(_Proxy, target=target, recorder=recorder)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", recorder
    finally:
        httpd.shutdown()
        httpd.server_close()


SERVERS = ("transformers", "llama-cpp")


@dataclass
class Served:
    """A running server on SmolLM2 behind the recording proxy: lm-eval talks to ``url`` and
    names ``model``; ``tokenizer`` is the folder to pass as ``tokenizer=`` (the served model's
    own tokenizer); ``fed`` is the transformers launcher's record of the ids fed to the model."""

    kind: str
    base: str
    url: str
    model: str
    tokenizer: Path
    recorder: Recorder
    fed: Path | None = None

    @property
    def witness(self) -> str:
        """Where :meth:`ids_fed` comes from, for reports."""
        if self.fed is None:
            return "the server's /extras/tokenize"
        return "ids handed to generate in the server"

    def fed_count(self) -> int:
        """How many sequences the server has fed the model so far (transformers only)."""
        if self.fed is None or not self.fed.exists():
            return 0
        return len(self.fed.read_text(encoding="utf-8").splitlines())

    def ids_fed(self, since: int, texts: list[str]) -> list[list[int]]:
        """The ids the server fed the model for each of the exchanges that asked it to read
        ``texts`` (one each, in the order served), ``since`` being :meth:`fed_count` before them.

        transformers: the launcher's record, exactly what ``generate`` received. llama-cpp: the
        server's ``/extras/tokenize`` of each text, the tokenizer its completion path calls."""
        if self.fed is None:
            return [post(f"{self.base}/extras/tokenize", {"input": t})["tokens"] for t in texts]
        lines = self.fed.read_text(encoding="utf-8").splitlines()[since:]
        return [json.loads(line) for line in lines]


@contextlib.contextmanager
def serve(kind: str, work: Path, *, tiny: bool = False) -> Iterator[Served]:
    """Start ``kind`` (one of :data:`SERVERS`) on SmolLM2 behind a recording proxy, with its
    files (model folder, tokenizer, logs) under ``work``; stop both when the block ends.
    ``tiny`` (transformers only): the server runs a tiny random Llama with SmolLM2's tokenizer
    and chat template (:func:`support.models.save_tiny_smollm2_folder`) instead of SmolLM2's
    weights, for checks of what the server reads, not of what it answers."""
    from support.models import (
        SMOLLM2_GGUF,
        save_smollm2_folder,
        save_tiny_smollm2_folder,
        smollm2_folder,
    )

    work.mkdir(parents=True, exist_ok=True)
    log = work / f"{kind}-server.log"
    if kind == "transformers":
        save = save_tiny_smollm2_folder if tiny else save_smollm2_folder
        folder = save(work / "smollm2")
        fed = work / "fed.jsonl"
        with transformers_server(folder, log, fed) as base, recording_proxy(base) as (url, rec):
            yield Served(kind, base, url, str(folder), folder, rec, fed)
    elif kind == "llama-cpp":
        from transformers import AutoTokenizer

        # lm-eval's API backends load tokenizer= with AutoTokenizer.from_pretrained and no
        # gguf_file: the GGUF's tokenizer as transformers reads it, saved as a folder
        tokenizer = work / "tokenizer"
        source = smollm2_folder()
        AutoTokenizer.from_pretrained(source, gguf_file=SMOLLM2_GGUF).save_pretrained(tokenizer)
        model = Path(source) / SMOLLM2_GGUF
        with llama_server(server_python(), model, log) as base, recording_proxy(base) as (url, rec):
            yield Served(kind, base, url, "smollm2", tokenizer, rec)
    else:
        raise ValueError(f"unknown server {kind!r}: expected one of {', '.join(SERVERS)}")
