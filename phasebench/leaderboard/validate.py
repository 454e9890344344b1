"""Validate submissions: nothing is taken on faith.

Rules (each refusal names one of them and the file):

``schema``      submission.yaml matches ``submission.schema.json`` (also refuses HTML, control
                characters and path tricks in its text fields) and names its own folder;
                its ``backend`` is the one the results name (``model_source`` and
                ``config.model``; one of them at least)
``path``        folder and file names fit the layout; no symlinks
``size``/``json``/``yaml``  files are within size limits and parse; no NaN/inf
``files``       a results file and one samples file per task are present
``task``        every task is the task of a family this phasebench knows, at its version
``limit``       no ``--limit``: lm-eval's effective sample count equals the original one
``count``       every phase of every length is present, each base item at every phase, no extras
``tokenizer``   the named tokenizer loads here and has the fingerprint the samples carry
                and, where the run recorded it, encodes the probe text as the run's did
``hash``        doc, prompt and target hashes equal those of the prompts this phasebench
                generates for that spec and tokenizer (so unverifiable data is refused)
``metric``      per-sample metrics recomputed from the responses, and the aggregate metrics
                recomputed from the samples, equal the reported ones
``served``      through a server, every sample's server-reported prompt token count is a whole
                number equal to its label, and the witness is on every sample or on none
                (a ``serving`` claim without it is published as "claimed, not witnessed")
``max_length``  the model's maximum length covers the longest prompt plus the generation budget
``reproduced``  a maintainer's ``reproduced.yaml`` vouches for exactly these files
``duplicate``   one entry per canonical (model, revision, variant, precision, chat template,
                task versions); the first keeps its place (:mod:`~phasebench.leaderboard.identity`)
``supersedes``  an entry may only replace an earlier revision of its own model (and variant),
                from the same contact, with a later run
``memory``/``time``  the submission's own validating process ran out of its budget
                (:mod:`~phasebench.leaderboard.isolate`)

Every submission is validated in a process of its own (:func:`validate_folder` there, through
:func:`~phasebench.leaderboard.isolate.run_many`, as many at once as the machine has cores); its
result comes back as JSON data, so one bad submission can only refuse itself. The processes share
the folder of regenerated splits; with a cache folder, each answer a rule gave is kept there
(:mod:`~phasebench.leaderboard.reuse`) and a rebuild validates only what changed.

Only the submission's own content may refuse it. When the machine fails instead (a package this
phasebench names is missing, a library does not import, the disk is full, a validating process
crashed or was killed from outside, an exception no rule anticipated), the whole validation stops
with a :class:`~phasebench.errors.MachineError` naming the cause, and nothing is published:
one incomplete machine must never turn a public board into a list of refusals.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from phasebench.atomic import scratch_folder
from phasebench.errors import MachineError, PhasebenchError, SubmissionsError, debugging
from phasebench.families import adopt, declarations
from phasebench.leaderboard.checks import NOT_WITNESSED, WITNESSED, check_task, task_configs
from phasebench.leaderboard.collect import (
    Problem,
    RawSubmission,
    Refused,
    read_submission,
    submission_folders,
)
from phasebench.leaderboard.identity import (
    History,
    drop_superseded_and_duplicates,
    identity_key,
)
from phasebench.leaderboard.isolate import Limits, run_many
from phasebench.leaderboard.provenance import provenance, recorded_time
from phasebench.leaderboard.regenerate import Regenerator
from phasebench.leaderboard.schema import check_schema, known_tasks
from phasebench.leaderboard.summaries import board_summaries
from phasebench.samples import SERVED_KEY, ReadLimits


@dataclass
class Submission:
    """A validated submission: its metadata and one row per scored sample."""

    name: str
    meta: dict[str, Any]
    provenance: dict[str, Any]
    #: One row per scored sample: task, family, length, modulus, n_base, and the scored record
    #: (unit, phase, acc, margin, pad) the statistics are computed from.
    samples: pd.DataFrame
    task_versions: dict[str, str]
    #: lm-eval's ``date`` of the run (seconds since the epoch; the earliest results file), None
    #: when unreadable: whether a ``supersedes`` run is later (never who came first: identity).
    recorded: float | None = None
    #: A maintainer's mark (``by``, ``date``, ``note``) after re-running the model, else None.
    reproduced: dict[str, str] | None = None
    #: The statistics of each board (``task@length``) as
    #: :func:`~phasebench.leaderboard.summaries.board_summaries` computes them, when the validating
    #: process computed them (in parallel, and kept with the answer), else None.
    summaries: dict[str, Any] | None = None
    #: A few samples per phase of each board (``task@length``), for its details page
    #: (:mod:`~phasebench.leaderboard.excerpts`); None where validation kept none.
    excerpts: dict[str, list[dict[str, Any]]] | None = None

    @property
    def duplicate_key(self) -> tuple:
        """The canonical identity (:func:`~phasebench.leaderboard.identity.identity_key`)."""
        return identity_key(self)

    def to_data(self) -> dict[str, Any]:
        """JSON-ready (no NaN): what a validating process sends back."""
        rows = [
            [None if isinstance(v, float) and math.isnan(v) else v for v in row]
            for row in self.samples.astype(object).itertuples(index=False, name=None)
        ]
        return {
            "name": self.name,
            "meta": self.meta,
            "provenance": self.provenance,
            "samples": {"columns": list(self.samples.columns), "rows": rows},
            "task_versions": self.task_versions,
            "recorded": self.recorded,
            "reproduced": self.reproduced,
            "excerpts": self.excerpts,
            # JSON text of its own: the statistics keep NaN (the answer itself may not)
            "summaries": None
            if self.summaries is None
            else json.dumps(self.summaries, default=_plain, allow_nan=True, sort_keys=True),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Submission:
        frame = pd.DataFrame(data["samples"]["rows"], columns=data["samples"]["columns"])
        fields = {k: data[k] for k in ("name", "meta", "provenance", "task_versions")}
        summaries = data.get("summaries")
        return cls(**fields, samples=frame, recorded=data.get("recorded"),
                   reproduced=data.get("reproduced"), excerpts=data.get("excerpts"),
                   summaries=json.loads(summaries) if summaries is not None else None)  # fmt: skip


@dataclass
class Outcome:
    """Every submission under a folder, split into accepted and refused (with reasons)."""

    accepted: list[Submission] = field(default_factory=list)
    refused: list[tuple[str, list[Problem]]] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)

    def report_lines(self) -> list[str]:
        lines = [f"accepted: {len(self.accepted)}  refused: {len(self.refused)}"]
        for sub in self.accepted:
            lines.append(f"  ok       {sub.name}")
        for name, by in self.superseded:
            lines.append(f"  superseded {name} (by {by})")
        for name, problems in self.refused:
            lines.append(f"  REFUSED  {name}")
            lines.extend(f"           {p.line()}" for p in problems)
        return lines

    def report_json(self) -> dict[str, Any]:
        return {
            "accepted": [s.name for s in self.accepted],
            "superseded": [{"submission": n, "by": b} for n, b in self.superseded],
            "refused": [
                {
                    "submission": name,
                    "problems": [
                        {"rule": p.rule, "file": p.file, "message": p.message} for p in problems
                    ],
                }
                for name, problems in self.refused
            ],
        }


def validate_submission(
    raw: RawSubmission, tasks: Mapping[str, str], regen: Regenerator
) -> Submission:
    """Apply every rule to one parsed submission; raises :class:`Refused` at the first failure."""
    check_schema(raw)
    found = task_configs(raw, tasks)
    _check_backend(raw, found)
    extra = sorted(set(raw.samples) - set(found))
    if extra:
        raise Refused("files", raw.samples[extra[0]][0], "samples of a task missing from results")
    try:
        tok = regen.tokenizer(
            raw.meta["tokenizer"]["name"], raw.meta["tokenizer"].get("args") or {}
        )
    except MachineError:  # the machine lacks what the tokenizer needs: not the submission's
        raise
    except PhasebenchError as exc:
        raise Refused("tokenizer", raw.folder / "submission.yaml", f"cannot load: {exc}") from None
    frames, longest, staged, witnesses, excerpts = [], 0, {}, {}, {}
    for task, (path, results) in sorted(found.items()):
        frame, need, mark, witnesses[task], shown = check_task(raw, task, path, results, regen, tok)
        excerpts.update(shown)
        frames.append(frame)
        longest = max(longest, need)
        if mark is not None:  # recomputed from the samples: the board marks a staged run
            staged[f"{task}@{int(frame['length'].iloc[0])}"] = mark
    served = _served(raw, witnesses)
    max_length = raw.meta.get("max_length")
    for _, results in raw.results:
        if isinstance(results.get("max_length"), int) and not isinstance(
            results["max_length"], bool
        ):
            max_length = results["max_length"]
    if max_length is None:
        raise Refused("max_length", raw.name, "give max_length in submission.yaml")
    if max_length < longest:
        raise Refused(
            "max_length",
            raw.name,
            f"the model takes {max_length} tokens but the longest prompt plus generation "
            f"needs {longest} (lm-eval would cut the prompt from the left)",
        )
    origin = provenance(raw, found)
    origin["max_length"] = max_length
    if staged:
        origin["staged"] = staged
    origin["served"] = served
    versions = {task: tasks[task] for task in found}
    return Submission(
        raw.name,
        dict(raw.meta),
        origin,
        pd.concat(frames),
        versions,
        recorded=recorded_time(raw, found),
        reproduced=raw.reproduced,
        excerpts=excerpts,
    )


def _check_backend(raw: RawSubmission, found: Mapping[str, tuple[Path, dict]]) -> None:
    """The backend submission.yaml claims is the one lm-eval recorded, in both places it
    records it (``model_source`` and ``config.model`` of the results file; ``phasebench eval``
    runs the API backends under their witnessing names): the row shows the claim and the model
    page's reproduction command is built from it, so a claim the results do not prove (one of
    the two deleted, the other naming another backend) is refused, never taken on faith."""
    from phasebench.lmeval.witness import WITNESSED_BACKENDS

    claimed = str(raw.meta["backend"])
    for path, results in {str(p): (p, r) for p, r in found.values()}.values():
        config = results.get("config")
        recorded = {
            "model_source": results.get("model_source"),
            "config.model": config.get("model") if isinstance(config, dict) else None,
        }
        if all(source is None for source in recorded.values()):
            raise Refused(
                "schema",
                raw.folder / "submission.yaml",
                f"field backend: {ascii(claimed)} but {path.name} records no backend (neither "
                f"model_source nor config.model, which lm-eval writes); submit lm-eval's own "
                f"results file",
            )
        for key, source in recorded.items():
            if source is not None and source not in (claimed, WITNESSED_BACKENDS.get(claimed)):
                raise Refused(
                    "schema",
                    raw.folder / "submission.yaml",
                    f"field backend: {ascii(claimed)} but {path.name} was run with {key} "
                    f"{ascii(source)[:60]}; give the backend lm-eval ran",
                )


def _served(raw: RawSubmission, witnesses: Mapping[str, str | None]) -> str | None:
    """What the server's witness says of the whole submission: ``witnessed`` only when every
    task is, None when no task carries it; a witness on some tasks only is half a witness."""
    states = set(witnesses.values())
    if None in states and len(states) > 1:
        bare = sorted(task for task, state in witnesses.items() if state is None)
        raise Refused(
            "served",
            raw.name,
            f"the server's witness ({SERVED_KEY}) is missing from every sample of {bare[0]} but "
            f"logged for other tasks; a run through a server logs it on every sample",
        )
    if states == {None}:
        return None
    return WITNESSED if states == {WITNESSED} else NOT_WITNESSED


#: What each validating process runs.
WORKER = "phasebench.leaderboard.validate:validate_folder"
#: ``OSError`` numbers that say the machine ran out of something, not that a file was odd.
MACHINE_ERRNOS = frozenset(
    getattr(errno, n)
    for n in ("ENOSPC", "EDQUOT", "ENOMEM", "EMFILE", "ENFILE", "EAGAIN")
    if hasattr(errno, n)
)


def validate_folder(request: Mapping[str, Any]) -> dict[str, Any]:
    """Validate one submission folder: what each validating process runs (through
    :func:`~phasebench.leaderboard.isolate.run_isolated`). ``request`` holds ``folder``,
    ``root`` (the submissions folder, to name files in the report), ``tasks``, ``families``
    (the families registered in the parent, :func:`phasebench.families.declarations`, which
    this process imports), ``cache`` (the shared folder of regenerated splits) and
    ``read_limits``; the answer is
    ``{"accepted": Submission.to_data()}`` or ``{"refused": [problem]}``."""
    folder, root = Path(request["folder"]), Path(request["root"])
    name = f"{folder.parent.name}/{folder.name}"
    limits = ReadLimits(**request["read_limits"]) if request.get("read_limits") else None
    regen = Regenerator(Path(request["cache"]))
    adopt(request.get("families") or {})  # the parent's registered families, not a submission's
    try:
        raw = read_submission(folder, limits)
        accepted = validate_submission(raw, request["tasks"], regen).to_data()
        return {"accepted": _with_summaries(accepted)}
    except Refused as exc:
        problem = _relative(exc.problem, root)
    except MachineError:
        raise  # the validating process answers with a failure; the build stops
    except OSError as exc:
        if exc.errno in MACHINE_ERRNOS:  # a full disk, no memory or file handles left
            raise MachineError(
                f"{os.strerror(exc.errno)} while validating {name}"
                + (f" ({exc.filename})" if exc.filename else "")
            ) from None
        problem = _unexpected(name, exc)
    except (PhasebenchError, KeyError, TypeError, ValueError, IndexError, AttributeError,
            RecursionError, ArithmeticError) as exc:  # fmt: skip
        if debugging() and not isinstance(exc, PhasebenchError):
            raise  # PHASEBENCH_DEBUG=1: a bug of phasebench's keeps its traceback
        problem = _unexpected(name, exc)
    return {"refused": [dataclasses.asdict(problem)]}


def _with_summaries(data: dict[str, Any]) -> dict[str, Any]:
    """An accepted answer with its boards' statistics, computed here (in the validating
    process, so in parallel, and kept with the answer) from the samples exactly as the parent
    will read them back."""
    sub = Submission.from_data(json.loads(json.dumps(data, allow_nan=False)))
    sub.summaries = board_summaries(sub.samples)
    return sub.to_data()


def _plain(value: Any) -> Any:
    """numpy scalars (and arrays) in the statistics as JSON numbers (lists)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _unexpected(name: str, exc: Exception) -> Problem:
    """Content of a shape no rule anticipated: refuse this one."""
    detail = " ".join(str(exc).split())[:300]
    return Problem("format", name, f"unexpected content ({type(exc).__name__}: {detail})")


def validate_all(
    root: Path | str,
    *,
    tasks: Mapping[str, str] | None = None,
    cache: Path | str | None = None,
    on_progress: Callable[[str], None] | None = None,
    limits: Limits | None = None,
    read_limits: ReadLimits | None = None,
    incumbents: Iterable[str] = (),
    jobs: int | None = None,
) -> Outcome:
    """Validate every submission under ``root``, each in its own process under ``limits``
    (:class:`~phasebench.leaderboard.isolate.Limits`), ``jobs`` at a time (default: the cores
    this process may use), then keep one entry per model.

    With a ``cache`` folder, regenerated splits are kept there and so is every answer a rule
    gave (:class:`~phasebench.leaderboard.reuse.ResultStore`): a submission whose files, the
    validator, the environment and these settings are unchanged is not validated again.
    ``on_progress`` gets one line per submission (``reused NAME`` or ``validated NAME``).

    ``incumbents`` names the submissions an earlier board published: they were there first
    (:func:`~phasebench.leaderboard.identity.drop_superseded_and_duplicates`). ``read_limits``
    replaces the caps on samples files (:data:`~phasebench.leaderboard.collect.SAMPLE_LIMITS`).

    :class:`~phasebench.errors.MachineError` when the machine, not a submission, failed (see the
    module docstring); the validating processes still running are stopped first.

    The validating processes come from a ``multiprocessing`` fork server, so, as with any
    ``multiprocessing`` start method but ``fork``, a script that calls this must do so under
    ``if __name__ == "__main__":`` (the command line and pytest already do).
    """
    from phasebench.leaderboard.reuse import ResultStore, check_cache, own_folder

    root = Path(root)
    if not root.is_dir():
        raise SubmissionsError(f"{str(root)!r} is not a folder of submissions")
    if cache:
        cache = check_cache(cache, submissions=root)
        own_folder(cache / "splits", cache)  # a link there is never followed out of the cache
    tasks = dict(tasks) if tasks is not None else known_tasks()
    limits = limits or Limits()
    jobs = jobs or _default_jobs()
    outcome = Outcome()
    folders, problems = submission_folders(root)
    outcome.refused.extend((p.file, [p]) for p in problems)
    answers: dict[str, dict[str, Any]] = {}
    with scratch_folder("phasebench-lb-", reclaim=True) as scratch:
        shared = Path(cache) if cache else Path(scratch)
        requests = {}
        store = None
        if cache:
            settings = {"tasks": tasks, "read_limits": _asdict(read_limits),
                        "limits": dataclasses.asdict(limits)}  # fmt: skip
            store = ResultStore(shared / "validated", settings)
        keys: dict[str, str] = {}
        for folder in folders:
            name = f"{folder.parent.name}/{folder.name}"
            if store is not None:
                keys[name] = store.key(folder)
                stored = store.get(keys[name])
                if stored is not None and _readable(stored):
                    answers[name] = {"result": stored}
                    if on_progress:
                        on_progress(f"reused {name}")
                    continue
            requests[name] = {
                "folder": str(folder.resolve()),
                "root": str(root.resolve()),
                "tasks": tasks,
                "families": declarations(),
                "cache": str(shared.resolve()),
                "read_limits": _asdict(read_limits),
            }
        # closing: a failure stops the validating processes still running before it propagates
        shared = _shared_tokenizers([Path(r["folder"]) for r in requests.values()])
        children = run_many(WORKER, requests.items(), limits, jobs)
        with shared, contextlib.closing(children) as running:
            for name, answer in running:
                if "failure" in answer:
                    raise MachineError(
                        f"validation stopped at {name}, on this machine's account, not the "
                        f"submission's: {answer['failure']}; nothing was published"
                    )
                if store is not None and "result" in answer:
                    store.put(keys[name], answer["result"])
                answers[name] = answer
                if on_progress:
                    on_progress(f"validated {name}")
    for folder in folders:  # in folder order, whatever order the processes ended in
        name = f"{folder.parent.name}/{folder.name}"
        answer = answers[name]
        if "result" not in answer:
            outcome.refused.append((name, [_limit_problem(name, answer, limits)]))
        elif "accepted" in answer["result"]:
            outcome.accepted.append(Submission.from_data(answer["result"]["accepted"]))
        else:
            problems = [Problem(**p) for p in answer["result"]["refused"]]
            outcome.refused.append((name, problems))
    outcome.accepted, outcome.superseded, refusals = drop_superseded_and_duplicates(
        outcome.accepted, incumbents=set(incumbents), history=History(root)
    )
    outcome.refused = sorted(outcome.refused + refusals, key=lambda item: item[0])
    return outcome


@contextlib.contextmanager
def _shared_tokenizers(folders: list[Path]) -> Iterator[None]:
    """Name the tokenizers of this installation that several of ``folders`` use to the fork
    server the validating processes come from, which loads them once (:mod:`.warm`)."""
    from phasebench.leaderboard import warm

    shared = warm.shared_tokenizers(warm.submission_meta(folders)) if len(folders) > 1 else []
    before = os.environ.get(warm.ENV)
    if shared:
        os.environ[warm.ENV] = json.dumps(shared)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(warm.ENV, None)
        else:
            os.environ[warm.ENV] = before


def _default_jobs() -> int:
    """Validating processes at once: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _asdict(limits: ReadLimits | None) -> dict[str, Any] | None:
    return dataclasses.asdict(limits) if limits else None


def _readable(answer: Mapping[str, Any]) -> bool:
    """A stored answer that reads back as what a validating process sends (else revalidate)."""
    try:
        if "accepted" in answer:
            Submission.from_data(answer["accepted"])
        else:
            [Problem(**p) for p in answer["refused"]]
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return True


def _limit_problem(name: str, answer: Mapping[str, Any], limits: Limits) -> Problem:
    kind = answer["limit"]
    if kind == "memory":
        message = (
            f"validating it needed more than {limits.describe_memory()} of memory (the limit "
            f"of one submission's validating process)"
        )
    else:
        message = f"validating it took longer than {limits.seconds:g} s (the limit per submission)"
    return Problem(kind, name, message)


def _relative(problem: Problem, root: Path) -> Problem:
    """Name files relative to the submissions folder (reports are published)."""
    try:
        shown = str(Path(problem.file).relative_to(root))
    except ValueError:
        shown = problem.file
    return Problem(problem.rule, shown, problem.message)
