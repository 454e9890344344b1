"""A loopback OpenAI-compatible completions server with a prefix cache that can be told to
break: the faulty case of the prefix-cache axis, which no real server here shows on demand.

It answers each prompt from a table of the split's gold answers (it stands in for a model that
reads every prompt right when it reads it cold) and keeps a cache of the prompts it has read.
A prompt read again is a cache hit; with ``faulty`` set, a hit on a prompt of the faulty half
(an even digest of its text, about half the prompts, fixed by the text alone) is answered
wrong, as a stack that read a stale cache entry would. ``usage.prompt_tokens`` is the real
tokenizer's count, so phasebench's witness checks the labels as against any server. Every
prompt is recorded in the order it arrived (:attr:`CacheFaultServer.arrived`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The wrong answer of a faulty cache hit (no phasebench gold starts with it).
STALE = "stale"


def faulty_half(prompt: str) -> bool:
    """Whether a cache hit on ``prompt`` errs on a faulty server (about half the prompts)."""
    return hashlib.sha256(prompt.encode()).digest()[0] % 2 == 0


@dataclass
class CacheFaultServer:
    answers: Mapping[str, str]
    count_tokens: Callable[[str], int]
    faulty: bool
    arrived: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def complete(self, prompt: str) -> dict[str, Any]:
        with self.lock:
            hit = prompt in self.arrived
            self.arrived.append(prompt)
        text = self.answers.get(prompt, "")
        if hit and self.faulty and faulty_half(prompt):
            text = STALE
        return {
            "id": f"cmpl-{len(self.arrived)}",
            "object": "text_completion",
            "model": "cache-fault",
            "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": self.count_tokens(prompt), "completion_tokens": 1},
        }


class _Handler(http.server.BaseHTTPRequestHandler):
    def __init__(self, *args: Any, server_state: CacheFaultServer, **kwargs: Any) -> None:
        self.state = server_state
        super().__init__(*args, **kwargs)

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._send(200, {"object": "list", "data": [{"id": "cache-fault", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        prompt = body.get("prompt")
        if isinstance(prompt, list):  # lm-eval sends a batch of one as a list
            (prompt,) = prompt
        if not isinstance(prompt, str):
            self._send(400, {"error": "prompt must be a string"})
            return
        self._send(200, self.state.complete(prompt))


@contextlib.contextmanager
def cache_fault_server(
    answers: Mapping[str, str], count_tokens: Callable[[str], int], *, faulty: bool
) -> Iterator[tuple[str, CacheFaultServer]]:
    """Serve on 127.0.0.1; yields (the completions URL, the server's state)."""
    state = CacheFaultServer(answers, count_tokens, faulty)
    handler = functools.partial(_Handler, server_state=state)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1/completions", state
    finally:
        httpd.shutdown()
        httpd.server_close()
