"""``phasebench eval --staged``: run a split in looks of base items and stop when the answer is
known (the design: :mod:`phasebench.stats.sequential`, its calibration: ``docs/stats.md``).

Each look is one ordinary ``phasebench eval`` run of the same arguments with lm-eval's
``--limit`` set to the look's base items times the prompts per base item, and ``--use_cache``
on one cache file, so a prompt answered at an earlier look is read from the cache, never sent
again. ``--limit N`` takes the first N documents in the task's order
(:func:`phasebench.lmeval_compat.first_documents`), and a phasebench split stores its rows base
item after base item, every rendering of an item together: the first N documents are all the
renderings of the first N / (rows per item) base items. That is checked on the rows before the first
look, not assumed. The task metadata gains ``n_base`` (the whole design's), so the run's
results say which split the looks are prefixes of.

After each look the samples so far are summarized exactly as ``phasebench report`` does and the
design decides (:func:`phasebench.stats.sequential.decide`); ``staged.json`` in the output folder
records every look, its numbers and the decision with its reason.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phasebench.errors import DependencyError, EvalError
from phasebench.stats.sequential import Decision

#: The file beside lm-eval's output that records a staged run.
STAGED_NAME = "staged.json"
#: lm-eval's cache prefix, inside the output folder (the file it writes:
#: :func:`phasebench.lmeval_compat.cache_file`).
CACHE_NAME = "lm_eval_cache"

Events = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """What the looks are: the task, its one config, the base items at each look and the rows
    (prompts) each base item has."""

    task: str
    family: str
    length: int
    modulus: int
    n_base: int
    rows_per_base: int
    looks: tuple[int, ...]


@dataclass(frozen=True)
class StagedOutput:
    """The decision, every look's record, the samples files of the last look and where the
    record was written."""

    decision: Decision
    looks: tuple[dict[str, Any], ...]
    samples_files: tuple[Path, ...]
    record: Path
    plan: Plan


def base_order(rows: Sequence[dict]) -> int:
    """Rows per base item, after checking that the rows come base item after base item in
    ascending order, each item's renderings together and equally many (what makes a ``--limit``
    prefix a prefix of base items)."""
    if not rows:
        raise EvalError("the split has no rows")
    runs: list[tuple[int, int]] = []
    for row in rows:
        base = int(row["base_id"])
        if runs and runs[-1][0] == base:
            runs[-1] = (base, runs[-1][1] + 1)
        else:
            runs.append((base, 1))
    bases = [b for b, _ in runs]
    counts = {c for _, c in runs}
    if bases != sorted(set(bases)) or len(counts) != 1:
        raise EvalError(
            "the split's rows are not stored base item after base item (each item's renderings "
            "together, ascending, equally many), so a --limit prefix is not a prefix of base "
            "items; a staged run cannot use it"
        )
    return counts.pop()


def plan(ns: Any) -> Plan:
    """The looks of the run whose lm-eval arguments were parsed into ``ns``."""
    from phasebench.families import task_name
    from phasebench.lmeval.data import resolve_split
    from phasebench.lmeval.harness import requested_families
    from phasebench.stats.sequential import stage_sizes, staged_n_base

    if getattr(ns, "limit", None) is not None or getattr(ns, "samples", None):
        raise EvalError("--staged sets --limit itself at every look; leave out --limit/--samples")
    if not getattr(ns, "output_path", None) or not getattr(ns, "log_samples", False):
        raise EvalError("--staged reads the samples after every look: pass --output_path OUT "
                        "--log_samples")  # fmt: skip
    families = requested_families(ns.tasks or [])
    tasks = ns.tasks if isinstance(ns.tasks, list | tuple) else [ns.tasks or ""]
    named = [t.strip() for item in tasks for t in str(item).split(",") if t.strip()]
    if len(families) != 1 or len(named) != 1:
        raise EvalError(
            "--staged runs one phasebench task (lm-eval's --limit counts documents per task, "
            f"and the looks are one task's base items); got --tasks {','.join(named) or '(none)'}"
        )
    family = families[0]
    split = resolve_split(family, **(dict(ns.model_args or {}) | dict(ns.metadata or {})))
    if len(split.manifests) != 1:
        lengths = sorted(int(m["spec"]["length"]) for m in split.manifests)
        raise EvalError(
            f"--staged runs one length at a time (the split has {lengths}; lm-eval's --limit "
            "takes the first documents, which would all be the first length); pass "
            "--metadata '{\"max_seq_lengths\": [N]}'"
        )
    spec = split.manifests[0]["spec"]
    n_base, modulus = int(spec["n_base"]), int(spec["modulus"])
    per_base = base_order(split.rows)
    if per_base * n_base != len(split.rows):
        raise EvalError(
            f"the split has {len(split.rows)} rows, not {n_base} base items x {per_base}"
        )
    try:
        looks = stage_sizes(n_base, modulus)
    except Exception as exc:  # StatsError: a user's n_base that the design cannot cut
        good = staged_n_base(n_base, modulus)
        knob = (  # the knob this run set n_base with: a pre-built split's, or the task metadata
            f"generate the split again with --n-base {good}"
            if (ns.metadata or {}).get("dataset_path")
            else f"""pass --metadata '{{"n_base": {good}, ...}}'"""
        )
        raise EvalError(f"{exc}; {knob}") from None
    return Plan(task_name(family), family, int(spec["length"]), modulus, n_base, per_base, looks)


def run_staged(
    argv: Sequence[str],
    futility_gap: float | None = None,
    on_event: Events | None = None,
    *,
    reuse_model: bool = True,
) -> StagedOutput:
    """Run the looks of ``argv`` (lm-eval ``run`` arguments, as ``phasebench eval`` takes them)
    until the design stops; ``futility_gap`` (a fraction) also stops when the gap's interval
    ends below it. The model is loaded at the first look and every later look reuses it
    (:func:`phasebench.lmeval_compat.reusing_models`); ``reuse_model=False`` loads it at every
    look, as phasebench did before (``benchmarks/staged_load.py`` measures the difference)."""
    import contextlib
    import importlib.util

    from phasebench import lmeval_compat as compat
    from phasebench.atomic import atomic_write_text, make_folder
    from phasebench.lmeval.harness import output_folder
    from phasebench.stats.sequential import BOUNDARY

    if futility_gap is not None and not 0 < futility_gap < 1:
        raise EvalError(f"--futility_gap is a fraction in (0, 1), e.g. 0.3 (got {futility_gap})")
    say = on_event or (lambda line: None)
    args = list(argv)
    if args and args[0] == "run":
        args = args[1:]
    ns = compat.parse_run_args(args)
    design = plan(ns)
    if importlib.util.find_spec("sqlitedict") is None:  # lm-eval's --use_cache needs it
        raise DependencyError(
            "--staged sends each prompt once through lm-eval's --use_cache, which needs "
            "sqlitedict (a dependency of lm-eval): pip install sqlitedict"
        )
    folder = output_folder(str(ns.output_path))
    if not getattr(ns, "use_cache", None):
        make_folder(folder, "--output_path")
    cache = getattr(ns, "use_cache", None) or str(folder / CACHE_NAME)
    say(
        f"staged run of {design.task} at {design.length} tokens: looks after "
        f"{', '.join(map(str, design.looks))} of {design.n_base} base items "
        f"({design.rows_per_base} prompts each), level {BOUNDARY[0]} per look"
        + (f", futility below a gap of {100 * futility_gap:g} points" if futility_gap else "")
    )
    with contextlib.ExitStack() as stack:
        models = stack.enter_context(compat.reusing_models()) if reuse_model else None
        decision, records, files = _looks(args, design, cache, futility_gap, say)
        loads = len(models) if models is not None else len(records)
    if decision is None:  # unreachable: a design has at least one look
        raise EvalError("the staged design has no looks")
    record = {
        "format": 1,
        "task": design.task,
        "length": design.length,
        "modulus": design.modulus,
        "n_base": design.n_base,
        "looks": list(design.looks),
        "rows_per_base": design.rows_per_base,
        "boundary": list(BOUNDARY),
        "futility_gap": futility_gap,
        "prompts_sent": records[-1]["prompts"],
        "prompts_fixed": design.n_base * design.rows_per_base,
        "decision": decision.to_dict(),
        "model_loads": loads,
        "stages": records,
    }
    path = atomic_write_text(
        files[0].parent / STAGED_NAME, json.dumps(_finite(record), indent=2) + "\n"
    )
    return StagedOutput(decision, tuple(records), files, path, design)


def _looks(
    args: list[str],
    design: Plan,
    cache: str,
    futility_gap: float | None,
    say: Events,
) -> tuple[Decision | None, list[dict[str, Any]], tuple[Path, ...]]:
    """Run the looks in order until the design stops: the decision, every look's record and
    the samples files of the last look."""
    from phasebench import lmeval_compat as compat
    from phasebench.lmeval.harness import run_eval
    from phasebench.report import build_report, runs_from_files
    from phasebench.stats.sequential import BOUNDARY, decide

    records: list[dict[str, Any]] = []
    decision = None
    files: tuple[Path, ...] = ()
    for stage, n in enumerate(design.looks, 1):
        limit = n * design.rows_per_base

        def adjust(parsed: Any, limit: int = limit) -> None:
            compat.first_documents(parsed, limit)
            parsed.use_cache = cache
            parsed.metadata = dict(parsed.metadata or {}) | {"n_base": design.n_base}

        out = run_eval(args, adjust=adjust)
        files = tuple(f for f in out.samples_files if f"samples_{design.task}_" in f.name)
        if not files:
            raise EvalError(f"look {stage}: lm-eval wrote no samples of {design.task}")
        report = build_report(runs_from_files(files))
        (run,) = report["runs"].values()
        entry = run["tasks"][design.task][str(design.length)]
        if entry["n_base"] != n:
            raise EvalError(
                f"look {stage}: the samples cover {entry['n_base']} base items, not {n}"
            )
        decision = decide(entry, stage, futility_gap)
        records.append(
            {
                "stage": stage,
                "n_base": n,
                "prompts": limit,
                "p_value": entry["p_value"],
                "gap": entry["gap"],
                "gap_ci": entry["gap_ci"],
                "lowest_phase": entry["lowest_phase"],
                "level": BOUNDARY[stage - 1],
                "verdict": decision.verdict,
                "reason": decision.reason,
                "samples": [f.name for f in files],
            }
        )
        say(f"  look {stage} of {len(design.looks)}: {n} base items, {limit} prompts: "
            f"{decision.verdict} ({decision.reason})")  # fmt: skip
        if decision.stop:
            break
    return decision, records, files


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
