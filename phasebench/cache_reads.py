"""The prefix-cache axis in ``phasebench report``: each prompt's two reads, found in the logged
samples and paired, then compared by :func:`phasebench.stats.paired_agreement`.

Two ways to read a prompt twice (docs/serving.md):

- a ``"prefix_cache": "repeat"`` run logs every prompt twice, its cold read (doc ``read``
  ``cold``, scored as ``acc``) and, right after it, its warm read (``read`` ``warm``, scored as
  :data:`~phasebench.samples.WARM_KEY`): :func:`repeat_comparison`, warm against cold;
- a plain run and a ``"prefix_cache": "salted"`` run of one split (doc ``prefix_cache``
  ``salted``; the salt keeps each row's id): :func:`arms_comparison`, salted against plain,
  with ``phasebench report PLAIN SALTED --diff``.

Samples are paired by the doc's ``id`` within a task and config length; a prompt with only one
read (a filtered or failed request) is left out and counted as ``unpaired``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phasebench.errors import SamplesError
from phasebench.formatting import TERMINAL, format_exact_p, format_value
from phasebench.metrics import ALPHA
from phasebench.rows import config_length
from phasebench.samples import REPEAT_READS, WARM_KEY, is_warm
from phasebench.stats.cache import ReadPair

__all__ = [
    "arm_of",
    "arms_comparison",
    "cache_lines",
    "one_at_a_time_problem",
    "read_order_problem",
    "repeat_comparison",
]

#: One outcome of one prompt: (needle phase, length phase or None, acc).
Outcome = tuple[int, int | None, float]


def _outcome(doc: Mapping[str, Any], value: Any, where: str) -> Outcome:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise SamplesError(f"{where}: a read's score must be a number in 0..1 (got {value!r})")
    length_phase = doc.get("length_phase")
    return int(doc["phase"]), None if length_phase is None else int(length_phase), float(value)


def _is_phasebench(doc: Any) -> bool:
    return isinstance(doc, dict) and "phase" in doc and "id" in doc and "phase_modulus" in doc


def _reads(
    task: str, samples: Sequence[Mapping[str, Any]], warm: bool
) -> dict[int, dict[str, Outcome]]:
    """Per config length, each prompt's outcome by doc id: the warm reads' (``warm``) or every
    other sample's (a plain or salted run's, a repeat run's cold reads)."""
    out: dict[int, dict[str, Outcome]] = {}
    for number, s in enumerate(samples, 1):
        doc = s.get("doc")
        if not _is_phasebench(doc) or is_warm(doc) != warm:
            continue
        key = WARM_KEY if warm else "acc"
        if key not in s:  # a sample the witness left out
            continue
        where = f"{task} sample {number}"
        out.setdefault(config_length(doc), {})[str(doc["id"])] = _outcome(doc, s[key], where)
    return out


def _modulus(samples: Sequence[Mapping[str, Any]]) -> int:
    return next(int(s["doc"]["phase_modulus"]) for s in samples if _is_phasebench(s.get("doc")))


def _pairs(
    first: Mapping[str, Outcome], second: Mapping[str, Outcome]
) -> tuple[list[ReadPair], int]:
    shared = sorted(set(first) & set(second))
    pairs = [ReadPair(first[i][0], first[i][1], first[i][2], second[i][2]) for i in shared]
    return pairs, len(set(first) ^ set(second))


def read_order_problem(
    samples: Sequence[Mapping[str, Any]], reads: Sequence[str] = REPEAT_READS
) -> str | None:
    """Where a repeat run's log breaks the order its arm sends the reads in, else None: each
    prompt's reads, in the order lm-eval numbered them (``doc_id``, the order the arm lays
    them out and, one request at a time, sends them in; the line's place where no ``doc_id``
    is logged), are ``reads`` exactly, at consecutive numbers: each cold read right before its
    warm twin. A log of all cold reads then all warm ones, or a warm read before its cold
    twin, measures no prefix cache: the warm read did not follow the read that filled it."""
    found: dict[tuple[int, str], list[tuple[int, str]]] = {}
    for number, s in enumerate(samples):
        doc = s.get("doc")
        if not _is_phasebench(doc) or "read" not in doc:
            continue
        at = s.get("doc_id")
        at = at if isinstance(at, int) and not isinstance(at, bool) else number
        found.setdefault((config_length(doc), str(doc["id"])), []).append((at, str(doc["read"])))
    for (_, name), logged in sorted(found.items(), key=lambda item: min(item[1])):
        logged.sort()
        order = [read for _, read in logged]
        places = [at for at, _ in logged]
        if order != list(reads) or places != list(range(places[0], places[0] + len(reads))):
            shown = ", ".join(f"{read} at {at}" for at, read in logged)
            return (
                f"prompt {ascii(name)[1:-1][:80]} is read as {shown}; a repeat run reads each "
                f"prompt {', then '.join(reads)}, one right after the other (doc_id order)"
            )
    return None


def one_at_a_time_problem(config: Mapping[str, Any]) -> str | None:
    """What in a repeat run's logged lm-eval ``config`` sent more than one request at a time
    (``batch_size`` above 1, in the config or the model arguments, or ``num_concurrent`` above
    1), else None: a prompt's reads would go out side by side, neither from the other's
    cache (``phasebench eval`` refuses both)."""
    args = config.get("model_args")
    if isinstance(args, str):
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    if not isinstance(args, Mapping):
        args = {}
    logged = [
        ("config", "batch_size", config.get("batch_size")),
        ("model_args", "batch_size", args.get("batch_size")),
        ("model_args", "num_concurrent", args.get("num_concurrent")),
    ]
    for where, key, value in logged:
        if value is not None and str(value).strip() not in ("1", ""):
            return (
                f"its {where} logs {key}={ascii(str(value))[1:-1][:20]}; a repeat run sends one "
                f"request at a time (batch size 1, no concurrency), each warm read right after "
                f"its cold one"
            )
    return None


def repeat_comparison(task: str, samples: Sequence[Mapping[str, Any]]) -> dict[int, dict]:
    """Per config length of a ``repeat`` run, the warm reads against the cold ones
    (``first``: cold, ``second``: warm); empty when the run has no warm reads."""
    from phasebench.stats import paired_agreement

    warm = _reads(task, samples, warm=True)
    if not warm:
        return {}
    cold = _reads(task, samples, warm=False)
    modulus = _modulus(samples)
    out = {}
    for length in sorted(warm):
        pairs, unpaired = _pairs(cold.get(length, {}), warm[length])
        out[length] = {
            "arm": "repeat",
            "first": "cold",
            "second": "warm",
            "unpaired": unpaired,
            **paired_agreement(pairs, modulus),
        }
    return out


def arm_of(samples: Sequence[Mapping[str, Any]]) -> str | None:
    """The prefix-cache arm of a task's samples: ``repeat``, ``salted`` or None (plain)."""
    for s in samples:
        doc = s.get("doc")
        if _is_phasebench(doc):
            if "read" in doc:
                return "repeat"
            return doc.get("prefix_cache")
    return None


def arms_comparison(
    task: str, plain: Sequence[Mapping[str, Any]], salted: Sequence[Mapping[str, Any]]
) -> dict[int, dict]:
    """Per config length both ran, the salted run's reads against the plain run's (``first``:
    plain, ``second``: salted), paired by doc id."""
    from phasebench.stats import paired_agreement

    a, b = _reads(task, plain, warm=False), _reads(task, salted, warm=False)
    modulus = _modulus(plain)
    out = {}
    for length in sorted(set(a) & set(b)):
        pairs, unpaired = _pairs(a[length], b[length])
        if not pairs:
            raise SamplesError(
                f"{task} length {length}: the plain and the salted run share no prompt id; "
                "compare two runs of one split"
            )
        out[length] = {
            "arm": "salted",
            "first": "plain",
            "second": "salted",
            "unpaired": unpaired,
            **paired_agreement(pairs, modulus),
        }
    return out


def cache_lines(entry: Mapping[str, Any]) -> list[str]:
    """Terminal lines of one comparison: the overall line, then the phases (needle, length)
    whose own test is below :data:`~phasebench.metrics.ALPHA`, or a line saying none is."""
    first, second = entry["first"], entry["second"]
    agreement, first_acc, second_acc = (
        format_value("%", entry[key], style=TERMINAL).strip()
        for key in ("agreement", "first_acc", "second_acc")
    )
    lines = [
        f"  prefix cache  {second} vs {first}: {entry['agree']}/{entry['n']} agree "
        f"({agreement}%), right only {first} {entry['first_only']}, only "
        f"{second} {entry['second_only']}, McNemar p {format_exact_p(entry['p'])} "
        f"(acc {first} {first_acc}, {second} {second_acc})"
    ]
    if entry.get("unpaired"):
        lines.append(f"                {entry['unpaired']} prompts read only once, left out")
    for axis, key in (("needle phase", "per_phase"), ("length phase", "per_length_phase")):
        cells = entry.get(key) or []
        flagged = [
            f"{r} ({c['first_only']}/{c['second_only']}, p {format_exact_p(c['p'])})"
            for r, c in enumerate(cells)
            if c["p"] < ALPHA
        ]
        if flagged:
            lines.append(f"                by {axis}: {'; '.join(flagged)}")
        elif cells:
            lines.append(f"                by {axis}: no phase with p < {ALPHA}")
    return lines
