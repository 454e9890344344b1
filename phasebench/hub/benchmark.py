"""The dataset repository as a Hub *benchmark*: its ``eval.yaml``.

The Hub marks a dataset repository holding an ``eval.yaml`` at its root as a benchmark: the file
names the benchmark, says which evaluation framework runs it, and lists its tasks, each an ``id``
with the ``config`` and ``split`` of the data it runs on (Hub documentation, "Evaluation
Results"). Model repositories then publish scores for a task as ``.eval_results/*.yaml`` files
(:mod:`phasebench.leaderboard.eval_results`), which the Hub gathers into a leaderboard per task.

Here a task is one board of phasebench's own leaderboard: a family at one length and modulus,
with the phase axis when it is not the needle's and the number of phases when a run covered a
subset of the residues: ``kv_4096_m8``, ``niah_512_m12``, ``kv_4096_m8_length``,
``kv_131072_m128_16of128`` (:func:`task_id`). Scores at modulus 4 and 12 measure different
things, so they never share a Hub task. It points at the repository's config of that design
and its ``test`` split. A repository may hold that split for several tokenizers; the
task names the default config's tokenizer when it is one of them, else the first. That is no
loss: a model's score on ``kv_4096_m8`` is computed on the same spec regenerated for the model's own
tokenizer (phasebench's lm-eval tasks do so), so one task serves every tokenizer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phasebench.errors import HubError, first_line

EVAL_FILE = "eval.yaml"
#: The framework ``eval.yaml`` names: Inspect AI, where phasebench's tasks are registered as
#: ``phasebench/kv`` and ``phasebench/niah`` (:mod:`phasebench.inspectai`). lm-evaluation-harness,
#: which runs them too, is not a framework the Hub accepts (:data:`HUB_FRAMEWORKS`).
EVALUATION_FRAMEWORK = "inspect-ai"
#: The ``evaluation_framework`` values the Hub accepts in ``eval.yaml`` (huggingface.js,
#: ``packages/tasks/src/eval.ts``, ``EVALUATION_FRAMEWORKS``, as read in December 2026). The
#: Hub refuses a push whose ``eval.yaml`` names another; phasebench writes no ``eval.yaml``
#: naming a framework outside it (:func:`writes_eval_yaml`).
HUB_FRAMEWORKS = (
    "exgentic", "inspect-ai", "math-arena", "mteb", "olmocr-bench", "harbor", "archipelago",
    "apex-evals", "screenspot-pro", "swe-bench", "swe-bench-pro", "nemo-evaluator", "yc-bench",
    "open-asr-leaderboard", "mdpbench", "parsebench", "video-mme-v2", "claw-eval",
    "wildclawbench",
)  # fmt: skip


def writes_eval_yaml(index: Mapping[str, Any] | None = None) -> bool:
    """Whether a repository folder (of ``index``, where given) gets an ``eval.yaml``: only when
    the Hub accepts the framework it would name and the repository holds a task that framework
    runs (never a file the Hub refuses at push)."""
    if EVALUATION_FRAMEWORK not in HUB_FRAMEWORKS:
        return False
    return index is None or bool(eval_tasks(index))


DESCRIPTION = (
    "Phase-balanced long-context retrieval splits. Every item is asked at each phase of the "
    "fact's token position modulo a stride, so a model whose attention or KV cache works in "
    "fixed token windows shows a worst phase below its average. Scores are the worst phase "
    "(cross-fitted), with the average and the gap between them alongside."
)
#: The keys of ``eval.yaml`` and of each of its tasks, as the Hub documents them ("Eval.yaml
#: specification": ``id``, ``config``, ``split``, and for ``inspect-ai`` also ``field_spec``,
#: ``solvers`` and ``scorers``, each solver and scorer a ``name`` with optional ``args``).
EVAL_KEYS = ("name", "description", "evaluation_framework", "tasks")
TASK_KEYS = ("id", "config", "split", "field_spec", "solvers", "scorers")
#: ``field_spec``'s keys as Inspect's ``FieldSpec`` names them (the Hub's ``input``,
#: ``target``, optional ``choices`` and ``input_image``; Inspect's ``metadata``).
FIELD_SPEC_KEYS = ("input", "target", "choices", "input_image", "metadata", "id")
#: How Inspect reads a phasebench row: the prompt is the input, the answer the target, and the
#: rest of the row the sample's metadata (phase, base item, length phase, ...), which the
#: scorer and its phase statistics read (:func:`phasebench.inspectai._tasks.phase_answer`).
SOLVERS = ({"name": "generate"},)
SCORERS = ({"name": "phasebench/phase_answer"},)


#: The phase axis a design varies, by its ``length_phases`` (unset: the needle's phase alone;
#: ``only``: the length's phase alone; ``crossed``: both), as a board names it.
AXIS_OF_LENGTH_PHASES = {None: "needle", "only": "length", "crossed": "both"}


def task_id(
    family: str, length: int, modulus: int, axis: str = "needle", phases: int | None = None
) -> str:
    """The benchmark task of one board (``kv_4096_m8``; ``kv_4096_m8_length`` on another axis
    than the needle's; ``kv_131072_m128_16of128`` for 16 of 128 phases): the same parts as the
    board's own name, so one Hub task holds the entries of one board and no other."""
    tid = f"{family}_{int(length)}_m{int(modulus)}"
    if axis != "needle":
        tid += f"_{axis}"
    if phases is not None and int(phases) != int(modulus):
        tid += f"_{int(phases)}of{int(modulus)}"
    return tid


def config_task_id(config: Mapping[str, Any]) -> str:
    """The task of one config of a repository index (its family, length, ``modulus``, ``axis``
    and ``phases``, which :func:`phasebench.hub.repo.build_repo` records)."""
    if not isinstance(config.get("modulus"), int):
        raise HubError(
            f"config {ascii(config.get('name'))[:80]} records no modulus (an index written "
            f"before boards were named by modulus); publish the split again"
        )
    return task_id(config["family"], config["length"], config["modulus"],
                   config.get("axis") or "needle", config.get("phases"))  # fmt: skip


#: Why a family's boards are not tasks of the benchmark: Inspect AI, its framework, cannot run
#: them as phasebench scores them (:func:`inspect_runs`).
NOT_IN_INSPECT = (
    "scored by the log-likelihoods of two choices, which Inspect AI does not give for every "
    "prompt: not a task of the benchmark's eval.yaml"
)


def inspect_runs(family: str) -> bool:
    """Whether Inspect AI runs ``family`` as phasebench scores it: a generation task (kv,
    niah), not one scored by log-likelihoods (code; docs/inspect.md). The benchmark's tasks
    and the Eval Results exports hold these families' boards only, so both name the same ids."""
    from phasebench.families import get_family

    return not get_family(family).has_margin


def eval_tasks(index: Mapping[str, Any]) -> list[dict[str, str]]:
    """One task per board design (family x length x modulus x axis x phases) of a repository
    index (``phasebench.json``), in the index's order, each with the config it names and the
    split; families Inspect AI cannot run as phasebench scores them are left out
    (:func:`inspect_runs`)."""
    default = next((c for c in index["configs"] if c["name"] == index["default_config"]), None)
    chosen: dict[str, dict[str, Any]] = {}
    for config in index["configs"]:
        if not inspect_runs(config["family"]):
            continue
        tid = config_task_id(config)
        if tid not in chosen or (
            default is not None
            and config["tokenizer"] == default["tokenizer"]
            and chosen[tid]["tokenizer"] != default["tokenizer"]
        ):
            chosen[tid] = config
    order = {config_task_id(c): i for i, c in enumerate(index["configs"])}
    return [
        {
            "id": tid,
            "config": chosen[tid]["name"],
            "split": index["split"],
            "field_spec": _field_spec(chosen[tid]),
            "solvers": [dict(s) for s in SOLVERS],
            "scorers": [dict(s) for s in SCORERS],
        }
        for tid in sorted(chosen, key=order.__getitem__)
    ]


def _field_spec(config: Mapping[str, Any]) -> dict[str, Any]:
    """How Inspect maps one config's rows to samples: ``prompt`` in, ``answer`` out, ``id`` the
    sample's id, every other column of the config (the row schema, the family's own columns,
    the length axis's where it varies) as metadata."""
    from phasebench.families import get_family
    from phasebench.rows import LENGTH_PHASE_FIELDS, ROW_FIELDS

    fields = [*ROW_FIELDS, *get_family(config["family"]).extra_fields]
    if (config.get("axis") or "needle") != "needle":
        fields += LENGTH_PHASE_FIELDS
    columns = list(dict.fromkeys(name for name, _ in fields))
    metadata = [c for c in columns if c not in ("prompt", "answer", "id")]
    return {"input": "prompt", "target": "answer", "id": "id", "metadata": metadata}


def _eval_yaml_data(index: Mapping[str, Any]) -> dict[str, Any]:
    """The content of ``eval.yaml`` for a repository index."""
    return {
        "name": index["pretty_name"],
        "description": DESCRIPTION,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": eval_tasks(index),
    }


def render_eval_yaml(index: Mapping[str, Any]) -> str:
    """``eval.yaml`` as text (keys in the documented order)."""
    import yaml

    return yaml.safe_dump(_eval_yaml_data(index), sort_keys=False, allow_unicode=True, width=96)


def parse_eval_yaml(text: str) -> dict[str, Any]:
    """``eval.yaml`` read back and checked against the documented format: the four keys, text
    values, and tasks that each give a unique ``id``, a ``config`` and a ``split``;
    :class:`HubError` naming the first problem."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise HubError(f"{EVAL_FILE} is not YAML ({first_line(exc)})") from None
    if not isinstance(data, dict) or sorted(data) != sorted(EVAL_KEYS):
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise HubError(f"{EVAL_FILE} must hold exactly {', '.join(EVAL_KEYS)} (got {got})")
    for key in ("name", "description", "evaluation_framework"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise HubError(f"{EVAL_FILE}: {key!r} must be non-empty text")
    tasks = data["tasks"]
    if not isinstance(tasks, list) or not tasks:
        raise HubError(f"{EVAL_FILE}: 'tasks' must be a non-empty list")
    if data["evaluation_framework"] not in HUB_FRAMEWORKS:
        raise HubError(
            f"{EVAL_FILE}: the Hub accepts no framework {data['evaluation_framework']!r}"
        )
    seen = set()
    for task in tasks:
        if not isinstance(task, dict) or sorted(task) != sorted(TASK_KEYS):
            raise HubError(f"{EVAL_FILE}: every task gives exactly {', '.join(TASK_KEYS)}")
        if not all(isinstance(task[k], str) and task[k] for k in ("id", "config", "split")):
            raise HubError(f"{EVAL_FILE}: task {task!r} has an empty or non-text field")
        _check_inspect_fields(task)
        if task["id"] in seen:
            raise HubError(f"{EVAL_FILE}: task id {task['id']!r} appears twice")
        seen.add(task["id"])
    return data


def _check_inspect_fields(task: Mapping[str, Any]) -> None:
    """What the Hub asks of an ``inspect-ai`` task: a ``field_spec`` with a text ``input`` and
    ``target`` (Inspect's other field names optional), and solvers and scorers that each give a
    ``name`` and optional ``args``."""
    spec = task["field_spec"]
    if not isinstance(spec, dict) or not all(
        isinstance(spec.get(k), str) for k in ("input", "target")
    ):
        raise HubError(f"{EVAL_FILE}: task {task['id']!r}: field_spec needs input and target")
    if set(spec) - set(FIELD_SPEC_KEYS):
        raise HubError(f"{EVAL_FILE}: task {task['id']!r}: field_spec keys {sorted(spec)}")
    for kind in ("solvers", "scorers"):
        steps = task[kind]
        if (
            not isinstance(steps, list)
            or not steps
            or not all(
                isinstance(s, dict)
                and isinstance(s.get("name"), str)
                and set(s) <= {"name", "args"}
                for s in steps
            )
        ):
            raise HubError(f"{EVAL_FILE}: task {task['id']!r}: {kind} must list name (and args)")
