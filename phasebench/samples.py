"""Reading lm-eval's output, and the scored record every phase statistic is computed from.

lm-eval writes ``<output_path>/<model>/results_<date>.json`` and, with ``--log_samples``,
``samples_<task>_<date>.jsonl`` beside it (``phasebench leaderboard pack`` writes the samples as
``.jsonl.gz``). ``phasebench report`` and the leaderboard both read them here, and everything read
from outside is read with bounds: sizes, line lengths, line counts and time are capped while
streaming (a small gzip can expand a thousandfold), JSON NaN/Infinity are refused where a number
must be finite, and a failure names the file and the rule it broke.

A :class:`ScoredRecord` (length, modulus, unit, phase, acc, margin, pad, length_phase) is what
one sample contributes to the phase statistics. The lm-eval tasks build it from the doc and the
response, ``phasebench report`` from the logged doc and metrics, the leaderboard from the
regenerated row and the re-scored response; :func:`phasebench.stats.summarize_samples` turns any
set of them into numbers.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phasebench.errors import LogError, SamplesError
from phasebench.families import paired_unit
from phasebench.rows import config_length
from phasebench.stats.records import ScoredRecord

__all__ = [
    "RESULTS_NAME",
    "SAMPLES_NAME",
    "LogError",
    "ReadLimits",
    "REPEAT_READS",
    "SERVED_KEY",
    "MAX_OFF_LABEL_SHARE",
    "SERVED_STATES",
    "WARM_KEY",
    "ScoredRecord",
    "is_warm",
    "iter_samples",
    "newest_samples",
    "read_results",
    "fed_off_label",
    "scored_record",
    "served_verified_share",
    "served_label",
    "served_state",
]

RESULTS_NAME = re.compile(r"^results_(?P<date>[0-9][0-9T:._-]*)\.json$")
SAMPLES_NAME = re.compile(
    r"^samples_(?P<task>[A-Za-z0-9_]+?)_(?P<date>[0-9][0-9T:._-]*)\.jsonl(\.gz)?$"
)


def newest_samples(files: Iterable[Path]) -> dict[str, Path]:
    """Task -> its newest ``samples_<task>_<date>`` file among ``files`` (one folder's): lm-eval
    adds files of a new date at every invocation into the same ``--output_path`` (a rerun, each
    look of a staged run), so the newest of a task is its last run. What ``phasebench report``
    reads and ``phasebench leaderboard pack`` packs: one choice, so the board shows the run the
    report showed."""
    newest: dict[str, Path] = {}
    for path in sorted(files, key=lambda f: (_date(f), f.name)):
        match = SAMPLES_NAME.match(path.name)
        if match:
            newest[match["task"]] = path
    return dict(sorted(newest.items()))


def _date(path: Path) -> str:
    match = SAMPLES_NAME.match(path.name) or RESULTS_NAME.match(path.name)
    return match["date"] if match else ""


@dataclass(frozen=True)
class ReadLimits:
    """Caps checked while a samples file is streamed (decompressed bytes, one line, lines,
    seconds). ``max_lines`` None means no cap on the count; blank lines count against it, so
    a small gzip of newlines is refused after ``max_lines`` of them, not after a billion."""

    max_bytes: int = 1024 * 1024 * 1024
    max_line_bytes: int = 64 * 1024 * 1024
    #: twice the rows one config may have (:data:`phasebench.specs.MAX_ROWS`): a small gzip of
    #: a billion newlines is refused in a second, not read for minutes
    max_lines: int | None = 1 << 21
    max_seconds: float = 600.0


DEFAULT_LIMITS = ReadLimits()
MAX_RESULTS_BYTES = 32 * 1024 * 1024
_STDERR_KEY = re.compile(r"_stderr,[^.]*$")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not allowed")


def _regular_file(path: Path) -> None:
    if path.is_symlink() or not path.is_file():
        raise LogError("path", path, "not a regular file (symlinks are refused)")


def iter_samples(path: Path | str, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[dict[str, Any]]:
    """The records of a ``samples_*.jsonl`` or ``.jsonl.gz``, streamed, each a JSON object.

    Raises :class:`LogError` as soon as a cap is passed, a line is not a JSON object, a number
    is NaN or infinite, or the file cannot be read (a truncated gzip, invalid UTF-8)."""
    path = Path(path)
    _regular_file(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    total, count, start = 0, 0, time.monotonic()
    try:
        with opener(path, "rb") as handle:
            while True:
                line = handle.readline(limits.max_line_bytes + 1)
                if not line:
                    break
                total += len(line)
                count += 1  # every line, blank ones too, is a line number and counts
                if len(line) > limits.max_line_bytes:
                    raise LogError(
                        "size", path, f"line {count} is longer than {limits.max_line_bytes} bytes"
                    )
                if total > limits.max_bytes:
                    raise LogError("size", path, f"more than {limits.max_bytes} bytes of samples")
                if limits.max_lines is not None and count > limits.max_lines:
                    raise LogError(
                        "size",
                        path,
                        f"more than {limits.max_lines} lines (blank ones count too) where "
                        f"{limits.max_lines} samples are expected",
                    )
                if time.monotonic() - start > limits.max_seconds:
                    raise LogError("size", path, f"reading took over {limits.max_seconds:.0f} s")
                if not line.strip():
                    continue
                try:
                    record = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
                except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                    why = " ".join(str(exc).split())[:200]
                    raise LogError("json", path, f"line {count}: not valid JSON ({why})") from None
                if not isinstance(record, dict):
                    raise LogError("json", path, f"line {count}: a sample must be a JSON object")
                yield record
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise LogError("json", path, f"cannot read ({exc})") from None


def _finite_tree(value: Any, where: str) -> None:
    """Refuse NaN/inf anywhere except in stderr fields, which lm-eval itself may write as NaN."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            if not _STDERR_KEY.search(key):
                raise ValueError(f"non-finite number at {key}")
        elif isinstance(item, dict):
            stack.extend((f"{key}.{k}", v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{key}[{i}]", v) for i, v in enumerate(item))


def read_results(path: Path | str, max_bytes: int = MAX_RESULTS_BYTES) -> dict[str, Any]:
    """An lm-eval ``results_*.json``, size-capped, with a ``results`` mapping and finite
    numbers (stderr fields excepted)."""
    path = Path(path)
    _regular_file(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise LogError("size", path, f"file is {size} bytes; the limit is {max_bytes}")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"), parse_constant=lambda _: math.nan)
        _finite_tree(data, "results")
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise LogError("json", path, f"not valid lm-eval results JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise LogError("json", path, "no 'results' mapping: is this an lm-eval results file?")
    return data


#: lm-eval's order of the model arguments it names a run (and its output folder) after.
MODEL_NAME_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")


def _model_args(value: str | Mapping[str, Any] | None) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items() if v is not None}
    pairs = (item.partition("=") for item in str(value or "").split(","))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep and k.strip()}


def run_name(model_args: str | Mapping[str, Any] | None, logged: str | None = None) -> str | None:
    """A run's model name for tables and output folders: the name lm-eval logged (``logged``,
    else the model argument lm-eval takes it from), except that a local path is never used
    whole: a GGUF model is named by its file (``gguf_file``), any other local model by the
    path's last part. None when ``model_args`` names no model."""
    args = _model_args(model_args)
    name = logged or next((args[k] for k in MODEL_NAME_KEYS if args.get(k)), None)
    if not name:
        return None
    path = Path(name).expanduser()
    local = path.is_absolute() or name.startswith((".", "~")) or path.exists()
    if not local:
        return name
    if args.get("gguf_file") and name in (args.get("pretrained"), args.get("model")):
        return gguf_run_name(Path(args["gguf_file"]).name)
    return path.resolve().name or name


#: A GGUF file's quantization, ending its name (``.Q4_1``, ``-Q4_K_M``, ``.f16``, ``.IQ3_XS``).
_QUANT = re.compile(r"^(?P<model>.+?)[.-](?P<quant>(?:I?Q\d\w*|[BF]?F(?:16|32)|BF16))$", re.I)


def gguf_run_name(file: str) -> str:
    """A GGUF model's run name, its model and its variant (the quantization its file names),
    as llama.cpp and Ollama tag them: ``SmolLM2-135M-Instruct.Q4_1.gguf`` ->
    ``SmolLM2-135M-Instruct:Q4_1``; a file without a quantization in its name, its name
    without ``.gguf``."""
    stem = file.removesuffix(".gguf").removesuffix(".GGUF")
    found = _QUANT.match(stem)
    return f"{found['model']}:{found['quant']}" if found else stem


# -- the server's witness ----------------------------------------------------------------------

#: The per-sample key of the server's witness, ``[label, count]``: the prompt token count
#: phasebench labelled and the one the server reported (:mod:`phasebench.lmeval.witness`),
#: ``count`` null where the server reported none (the label is unverified). Absent where no
#: server was involved (``hf``, ``vllm``: phasebench's tokenizer is the backend's).
SERVED_KEY = "served_verified"
SERVED_STATES = ("agree", "disagree", "unverified")

#: The per-sample key of a warm read's score in a ``"prefix_cache": "repeat"`` run (the doc's
#: ``read`` is ``warm``): the same prompt as the cold read before it, answered again, kept apart
#: from ``acc`` so that every phase statistic stays the cold reads' (:mod:`phasebench.cache_reads`
#: pairs the two).
WARM_KEY = "acc_warm"


#: The reads of one prompt in a ``"prefix_cache": "repeat"`` run, in the order they are sent
#: (a doc's ``read``): what the lm-eval tasks log (:func:`phasebench.lmeval.data.repeated`) and
#: what ``phasebench report`` and the leaderboard check the logged order against
#: (:func:`phasebench.cache_reads.read_order_problem`).
REPEAT_READS = ("cold", "warm")


def is_warm(doc: Mapping[str, Any]) -> bool:
    """Whether ``doc`` is the warm read of a ``repeat`` run (its cold twin came first)."""
    return doc.get("read") == "warm"


def served_label(doc: Mapping[str, Any]) -> int:
    """The prompt token count a server must report for ``doc``: the row's ``length``, or under
    a chat template the templated sequence's (``served_length``, set when phases are
    relabelled)."""
    return int(doc.get("served_length", doc["length"]))


def served_state(doc: Mapping[str, Any], value: Any) -> str | None:
    """``agree``, ``disagree`` or ``unverified`` (the server reported no count) for a logged
    ``served_verified`` value of ``doc``, None when there is none (no server was involved). The
    label is taken from the doc, not from the log."""
    if value is None:
        return None
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise SamplesError(f"{SERVED_KEY} must be [label, count] (got {value!r})")
    count = value[1]
    if count is None:
        return "unverified"
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        # a count is a whole number of tokens: 256.9 is never read as 256 (and "agrees")
        raise SamplesError(f"{SERVED_KEY} count must be a whole number of tokens (got {count!r})")
    return "agree" if count == served_label(doc) else "disagree"


#: The largest share of a config's witnessed samples whose server count may disagree with the
#: label while ``phasebench report`` still reports on the rest (they are left out and counted).
#: Above it the run was not fed as labelled and is not a measurement: the report refuses it,
#: as the leaderboard's ``served`` rule refuses a submission with any such sample.
MAX_OFF_LABEL_SHARE = 0.05


def fed_off_label(agree: int, disagree: int, unverified: int = 0) -> bool:
    """Whether more than :data:`MAX_OFF_LABEL_SHARE` of a config's witnessed samples (counts by
    :func:`served_state`) were not fed as labelled: the one rule that says a run through a
    server is not a measurement (every sample disagreeing among them)."""
    total = agree + disagree + unverified
    return disagree > 0 and disagree > MAX_OFF_LABEL_SHARE * total


def served_verified_share(items: Sequence[Any]) -> float:
    """lm-eval's aggregate of ``served_verified``: the share of the API samples whose server
    count was reported and equals their label (1.0: every label verified; a server that
    reports no count gives 0.0, and ``phasebench report`` says which of the two it was)."""
    pairs = [v for v in items if isinstance(v, list | tuple) and len(v) == 2]
    if not pairs:
        return 0.0
    return sum(c is not None and int(c) == int(label) for label, c in pairs) / len(pairs)


# -- scored records ------------------------------------------------------------------------------


def scored_record(doc: Mapping[str, Any], acc: float, margin: float | None) -> ScoredRecord:
    """What one sample contributes to the phase statistics (see :class:`ScoredRecord`)."""
    length_phase = doc.get("length_phase")
    return ScoredRecord(
        config_length(doc),
        int(doc["phase_modulus"]),
        paired_unit(doc),
        int(doc["phase"]),
        float(acc),
        None if margin is None else float(margin),
        int(doc.get("pad_tokens", 0)),
        None if length_phase is None else int(length_phase),
    )
