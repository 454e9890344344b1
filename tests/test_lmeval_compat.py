"""The contract with lm-eval: every assumption ``phasebench.lmeval_compat`` states about how
lm-eval behaves, checked on the pinned lm-eval's own code, so an upgrade that changes one fails
one of these tests by name.

- generation batches never mix generation arguments: the ``hf`` backend's and an API backend's
  real ``generate_until`` (what ``phasebench.lmeval.batching`` rests on);
- the order the ``hf`` backend sends generation requests in (``compat.send_order``);
- a task YAML's ``include`` merge (``compat.task_yaml``, lm-eval's own loader);
- ``--limit N`` answers the first N documents, and ``--use_cache PREFIX`` keeps its answers in
  ``compat.cache_file(PREFIX)`` (what ``phasebench eval --staged`` rests on);
- the two warnings ``phasebench eval`` drops or explains are logged by the loggers and in the
  words ``compat.METADATA_HINT`` and ``compat.CHAT_TEMPLATE_WARNING`` name."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from phasebench import lmeval_compat as compat
from phasebench.lmeval.batching import one_length_per_batch

#: The generation arguments of the kv and niah task YAMLs, one token answered (quick).
YAML = {"until": ["\n"], "do_sample": False, "temperature": 0.0, "max_gen_toks": 1}
#: Prompt sizes (in words) that differ by one: four prompt token counts, several items each;
#: shortest first, so that lm-eval's groups (in the order of their first prompt) are not sent
#: longest first, as one sort of every prompt by length would send them.
WORDS = (40, 41, 42, 43)
ITEMS = 12


def _prompts() -> list[str]:
    """Item after item, each item's renderings together (as a split stores them)."""
    return [f"item {chr(97 + i)}:" + " x" * n for i in range(ITEMS) for n in WORDS]


def _requests(texts, lengths, with_stop: bool) -> list:
    return [
        compat.request(
            "generate_until",
            {"i": i},
            (text, one_length_per_batch(YAML, n) if with_stop else dict(YAML)),
            idx=0,
        )
        for i, (text, n) in enumerate(zip(texts, lengths, strict=True))
    ]


@pytest.fixture(scope="module")
def hflm(tiny_llama):
    """lm-eval's ``hf`` backend on a tiny random Llama (one layer), answering one token."""
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=str(tiny_llama), backend="causal", dtype="float32", device="cpu",
                batch_size=1)  # fmt: skip


def _hf_batches(hflm, monkeypatch, size: int, with_stop: bool) -> tuple[list[list[str]], list]:
    """Every batch of prompts the ``hf`` backend's own ``generate_until`` encodes, in order."""
    from lm_eval.models.huggingface import HFLM

    texts = _prompts()
    lengths = [len(hflm.tok_encode(t)) for t in texts]
    seen: list[list[str]] = []
    original = HFLM.tok_batch_encode

    def recording(self, strings, *args, **kwargs):
        seen.append(list(strings))
        return original(self, strings, *args, **kwargs)

    monkeypatch.setattr(HFLM, "tok_batch_encode", recording)
    monkeypatch.setattr(hflm, "batch_size_per_gpu", size)
    hflm.generate_until(_requests(texts, lengths, with_stop), disable_tqdm=True)
    return seen, lengths


@pytest.mark.parametrize("size", [5, 7, 48])
def test_hf_generation_batches_hold_one_generation_arguments_each(hflm, monkeypatch, size):
    """``GENERATION_GROUPED_BY``: the ``hf`` backend batches only requests of equal
    ``gen_kwargs``, so with phasebench's added stop every batch holds one prompt token count
    (no row padded on the left), whatever the batch size. Without it, batches straddle."""
    assert compat.GENERATION_GROUPED_BY == "gen_kwargs"
    texts = _prompts()
    for with_stop in (True, False):
        batches, lengths = _hf_batches(hflm, monkeypatch, size, with_stop)
        count = dict(zip(texts, lengths, strict=True))
        assert sorted(t for b in batches for t in b) == sorted(texts)  # every prompt, once
        assert len(set(lengths)) == len(WORDS)  # four token counts, ITEMS prompts each
        mixed = [b for b in batches if len({count[t] for t in b}) > 1]
        assert (not mixed) if with_stop else mixed, (with_stop, size)


def test_hf_sends_generation_requests_in_send_order(hflm, monkeypatch):
    """``compat.send_order`` is the order the ``hf`` backend encodes prompts in: one group per
    prompt token count in the order of its first prompt, each sorted by descending token count,
    ties by the prompt text."""
    texts = _prompts()
    batches, lengths = _hf_batches(hflm, monkeypatch, 5, True)

    def before(i: int, j: int) -> int:
        return (texts[i] > texts[j]) - (texts[i] < texts[j])

    expected = [texts[i] for i in compat.send_order(lengths, before)]
    assert [t for b in batches for t in b] == expected
    # the test can tell: neither the stored order nor one sort of every prompt by length is it
    longest_first = sorted(range(len(texts)), key=lambda i: (-lengths[i], texts[i]))
    assert expected != texts and expected != [texts[i] for i in longest_first]


class _Completions(BaseHTTPRequestHandler):
    """An OpenAI-compatible ``/v1/completions`` endpoint on 127.0.0.1 that records the prompts of
    every request and answers each with one fixed token."""

    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        self.server.seen.append(prompts)  # type: ignore[attr-defined]
        answer = {"choices": [{"index": i, "text": "4"} for i in range(len(prompts))]}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def completions_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Completions)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("size", [5, 7])
def test_api_generation_batches_hold_one_generation_arguments_each(completions_server, size):
    """``GENERATION_GROUPED_BY`` for the API backends: ``local-completions``' own
    ``generate_until`` sends one request per batch, and a batch never mixes generation
    arguments, so each request the server gets holds prompts of one token count."""
    port = completions_server.server_address[1]
    texts = _prompts()
    lengths = [len(t.split()) for t in texts]  # a stand-in count: one per prompt size
    count = dict(zip(texts, lengths, strict=True))
    for with_stop in (True, False):
        completions_server.seen.clear()
        lm = compat.create_model(
            "local-completions",
            f"model=tiny,base_url=http://127.0.0.1:{port}/v1/completions,"
            f"tokenizer_backend=None,tokenized_requests=False,max_retries=1",
            batch_size=size,
        )
        answers = lm.generate_until(_requests(texts, lengths, with_stop), disable_tqdm=True)
        assert answers == ["4"] * len(texts)
        sent = completions_server.seen
        assert sorted(t for batch in sent for t in batch) == sorted(texts)
        mixed = [b for b in sent if len({count[t] for t in b}) > 1]
        assert (not mixed) if with_stop else mixed, (with_stop, size)


def test_task_yaml_merges_includes_as_lm_eval_does(tmp_path):
    """``compat.task_yaml`` is lm-eval's own loader: includes in order, a later file's keys over
    an earlier one's, the file's own over all; ``!function`` kept as text (nothing imported)."""
    (tmp_path / "a.yaml").write_text("metadata: {version: 1.0}\nx: a\ny: a\n")
    (tmp_path / "b.yaml").write_text("x: b\nprocess_results: !function nowhere.hook\n")
    (tmp_path / "t.yaml").write_text("include: [a.yaml, b.yaml]\ntask: t\ny: t\n")
    (tmp_path / "s.yaml").write_text("include: a.yaml\ntask: s\n")
    (tmp_path / "l.yaml").write_text("- not a mapping\n")
    data = compat.task_yaml(tmp_path / "t.yaml")
    assert {k: data[k] for k in ("task", "x", "y", "metadata")} == {
        "task": "t", "x": "b", "y": "t", "metadata": {"version": 1.0},
    }  # fmt: skip
    assert "include" not in data and str(data["process_results"]).endswith("nowhere.hook")
    assert compat.task_yaml(tmp_path / "s.yaml")["metadata"] == {"version": 1.0}
    assert compat.task_yaml(tmp_path / "l.yaml") == {}
    # the shipped tasks: each names its task and reads its version through its includes
    from phasebench.resources import resource_dir

    kv = compat.task_yaml(resource_dir("tasks") / "phasebench_kv.yaml")
    assert kv["task"] == "phasebench_kv" and kv["metadata"]["version"] is not None


def test_limit_takes_the_first_documents_and_use_cache_writes_cache_file(tmp_path, monkeypatch):
    """``compat.first_documents``: a run with ``--limit N`` answers the first N rows of the
    split, in order; ``compat.cache_file``: ``--use_cache PREFIX`` keeps the answers in that
    file. A real ``simple_evaluate`` of ``phasebench_kv`` with a model that answers nothing."""
    from types import SimpleNamespace

    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    from phasebench.build import generate, iter_rows
    from phasebench.resources import resource_dir
    from phasebench.specs import SplitSpec

    spec = SplitSpec(family="kv", length=256, n_base=8, modulus=2, tokenizer="phasebench-ref")
    (folder,) = generate([spec], tmp_path / "splits", progress=False)
    rows = list(iter_rows(folder))
    asked: list[str] = []

    class Silent(LM):
        """An lm-eval model that records the prompts it is asked and answers nothing."""

        def generate_until(self, requests, disable_tqdm: bool = False):
            asked.extend(r.args[0] for r in requests)
            return [""] * len(requests)

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

    namespace = SimpleNamespace(limit=None)
    compat.first_documents(namespace, 6)
    prefix = tmp_path / "cache" / "lm_eval_cache"
    simple_evaluate(
        model=Silent(),
        tasks=["phasebench_kv"],
        task_manager=TaskManager(
            include_path=str(resource_dir("tasks")),
            include_defaults=False,
            metadata={
                "tokenizer": "phasebench-ref",
                "dataset_path": str(tmp_path / "splits"),
                "max_seq_lengths": [256],
            },
        ),
        limit=namespace.limit,
        use_cache=str(prefix),
        log_samples=False,
    )
    assert len(rows) > 6 and sorted(asked) == sorted(r["prompt"] for r in rows[:6])
    assert compat.cache_file(prefix).is_file()
    assert sorted(p.name for p in prefix.parent.iterdir()) == [compat.cache_file(prefix).name]


@pytest.mark.parametrize("which", ["METADATA_HINT", "CHAT_TEMPLATE_WARNING"])
def test_the_warnings_phasebench_explains_are_lm_evals(which, caplog):
    """The pinned lm-eval logs each warning from the module its logger is named after, in the
    words matched (its source, whitespace folded as lm-eval wraps it); inside
    ``explained_warnings`` the metadata hint (printed even when --metadata was passed) is
    dropped and the chat-template warning gets phasebench's line after it."""
    import importlib
    import inspect
    import logging

    name, text = getattr(compat, which)
    source = " ".join(inspect.getsource(importlib.import_module(name)).split())
    assert text in source, f"{name} no longer logs {text!r}"
    logger = logging.getLogger(name)
    note = None if which == "METADATA_HINT" else "phasebench: a note"
    with caplog.at_level(logging.WARNING), compat.explained_warnings({(name, text): note}):
        logger.warning("x: " + text.replace(" ", "\n  ", 1) + " (more)")
        logger.warning("another warning")
    logger.warning("after: " + text)
    messages = [r.getMessage() for r in caplog.records]
    if note is None:
        assert messages == ["another warning", f"after: {text}"], messages
    else:
        assert messages[0].endswith("\nphasebench: a note") and len(messages) == 3, messages
        assert messages[1:] == ["another warning", f"after: {text}"], messages
