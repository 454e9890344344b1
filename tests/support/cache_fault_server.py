"""A loopback OpenAI-compatible completions server with a prefix cache that can be told to
break: the faulty cases of the prefix-cache axis, which no real server here shows on demand.

It answers each prompt from a table of the split's gold answers (it stands in for a model that
reads every prompt right when it reads it cold) and keeps a cache of the prompts it has read.
A prompt read again is a cache hit. ``usage.prompt_tokens`` is the real tokenizer's count, so
phasebench's witness checks the labels as against any server. Every prompt is recorded in the
order it arrived (:attr:`CacheFaultServer.arrived`). The fault models (``fault``):

- None: a correct, deterministic server;
- ``"errs"``: a hit on a prompt of the faulty half (an even digest of its text, about half the
  prompts, fixed by the text alone) is answered wrong, as a stack that read a stale cache entry
  would (warm reads worse: McNemar sees it);
- ``"flips"``: the model reads the prompts of a hard half wrong even cold, and a hit on a prompt
  of :data:`FRACTION` of the rows answers the other way than the cold read did: right answers
  turn wrong and wrong ones right, about equally often (McNemar p near 1; the cold baseline of a
  ``baseline`` run sees it);
- ``"nondeterministic"``: the cache is correct, but on :data:`FRACTION` of the rows every read,
  cold, warm or salted, is right or wrong at random (a random stream keyed by ``seed``, the row
  and the read's number): disagreement the cold baseline must not blame on the cache.

Rows are chosen by a digest of the row's id (``rows`` maps each prompt, plain or salted, to
it), so a row's plain and salted prompts share their fate. ``GET /props`` answers ``props``
where given (what llama.cpp's server reports of its settings there), 404 otherwise.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The wrong answer of a faulty cache hit (no phasebench gold starts with it).
STALE = "stale"
#: The share of rows whose warm reads flip (``"flips"``) or whose reads are random
#: (``"nondeterministic"``).
FRACTION = 0.2
FAULTS = (None, "errs", "flips", "nondeterministic")


def faulty_half(prompt: str) -> bool:
    """Whether a cache hit on ``prompt`` errs on an ``"errs"`` server (about half the prompts)."""
    return hashlib.sha256(prompt.encode()).digest()[0] % 2 == 0


def _unit(*key: object) -> float:
    """A number in [0, 1) fixed by ``key`` (a stable stream: the same key, the same number)."""
    digest = hashlib.sha256("|".join(map(str, key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def chosen(row: str, what: str, share: float = FRACTION) -> bool:
    """Whether row ``row`` is among the ``share`` of rows picked for ``what``."""
    return _unit(what, row) < share


@dataclass
class CacheFaultServer:
    answers: Mapping[str, str]
    count_tokens: Callable[[str], int]
    fault: str | None = None
    rows: Mapping[str, str] = field(default_factory=dict)
    seed: int = 0
    props: dict | None = None
    arrived: list[str] = field(default_factory=list)
    reads: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}: one of {FAULTS}")

    def answer(self, prompt: str, hit: bool, number: int) -> str:
        """What the server answers ``prompt``: read from the cache (``hit``) or not, the
        ``number``-th read of its row."""
        gold = self.answers.get(prompt, "")
        row = self.rows.get(prompt, prompt)
        if self.fault == "errs":
            return STALE if hit and faulty_half(prompt) else gold
        if self.fault == "flips":
            cold_right = not chosen(row, "hard", 0.5)
            right = cold_right != (hit and chosen(row, "flip"))
            return gold if right else STALE
        if self.fault == "nondeterministic" and chosen(row, "noisy"):
            return gold if _unit("read", self.seed, row, number) < 0.5 else STALE
        return gold

    def complete(self, prompt: str) -> dict[str, Any]:
        with self.lock:
            hit = prompt in self.arrived
            self.arrived.append(prompt)
            row = self.rows.get(prompt, prompt)
            self.reads[row] += 1
            number = self.reads[row]
        return {
            "id": f"cmpl-{len(self.arrived)}",
            "object": "text_completion",
            "model": "cache-fault",
            "choices": [
                {
                    "index": 0,
                    "text": self.answer(prompt, hit, number),
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
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
        if self.path == "/props":
            if self.state.props is None:
                self._send(404, {"error": "not found"})
            else:
                self._send(200, self.state.props)
            return
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
    answers: Mapping[str, str],
    count_tokens: Callable[[str], int],
    *,
    fault: str | None,
    rows: Mapping[str, str] | None = None,
    seed: int = 0,
    props: dict | None = None,
) -> Iterator[tuple[str, CacheFaultServer]]:
    """Serve on 127.0.0.1; yields (the completions URL, the server's state)."""
    state = CacheFaultServer(answers, count_tokens, fault, dict(rows or {}), seed, props)
    handler = functools.partial(_Handler, server_state=state)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1/completions", state
    finally:
        httpd.shutdown()
        httpd.server_close()
