"""lm-evaluation-harness as phasebench uses it: every use of its internals and every assumption
about how it behaves, in one module.

phasebench reaches into lm-eval in a few places: its CLI parser (so ``phasebench eval`` takes
exactly lm-eval's flags), ``ConfigurableTask``'s aggregation tables (the phase aggregates have
data-dependent names), its context-length resolution, its hashing of logged samples, and its
results tracker. Each is wrapped here, so an lm-eval upgrade is checked in one file.
:data:`SUPPORTED` lists the versions these wrappers were checked against;
:func:`check_version` says when another one is installed.

phasebench also relies on how lm-eval behaves, and each such assumption is stated here, once,
beside what models it (the section "lm-eval's behaviour"), with a contract test in
``tests/test_lmeval_compat.py`` that runs the pinned lm-eval's own code, so an upgrade that
changes one fails one named test:

- generation batches never mix generation arguments: the ``hf`` backend and the API backends
  group ``generate_until`` requests by their ``gen_kwargs`` before they cut batches
  (:data:`GENERATION_GROUPED_BY`; ``phasebench.lmeval.batching`` rests on it);
- the order generation requests are sent in (:func:`send_order`; the manifest's
  ``lm_eval_order`` prefill figures rest on it);
- a task YAML's ``include`` chain, merged by lm-eval's own loader (:func:`task_yaml`; the
  leaderboard's known task versions rest on it);
- ``--limit N`` answers the first N documents of a task in its order (:func:`first_documents`)
  and ``--use_cache PREFIX`` keeps its answers in :func:`cache_file` (``phasebench eval
  --staged`` rests on both).

This module imports nothing of phasebench but :mod:`phasebench.errors` (the base layer), and
lm-eval only inside its functions, so every layer may read it (``phasebench.prefill`` models
the send order with it).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import metadata
from os import PathLike
from pathlib import Path
from typing import Any

from phasebench.errors import DependencyError, EvalError

__all__ = [
    "CHAT_TEMPLATE_WARNING",
    "DEFAULT_MAX_GEN_TOKS",
    "GENERATION_GROUPED_BY",
    "METADATA_HINT",
    "SUPPORTED",
    "add_phase_metric",
    "apply_template",
    "cache_file",
    "check_version",
    "configurable_task",
    "create_model",
    "doc_hash",
    "evaluate_and_save",
    "explained_warnings",
    "first_documents",
    "hash_string",
    "parse_model_args",
    "parse_run_args",
    "record_responses",
    "register_model",
    "reusing_models",
    "request",
    "resolve_max_length",
    "run_cli",
    "send_order",
    "task_yaml",
    "with_gen_kwargs",
]

#: lm-eval versions whose internals the functions below were checked against.
SUPPORTED = ("0.4.13",)
#: lm-eval's own ``max_gen_toks`` for generate_until tasks whose YAML names none (the
#: phasebench YAMLs name 16; see :data:`phasebench.lmeval.tasks.MAX_GEN_TOKS`).
DEFAULT_MAX_GEN_TOKS = 256


def check_version() -> str:
    """The installed lm-eval version; a one-line error if it is missing, a warning if it is
    not one of :data:`SUPPORTED`."""
    try:
        version = metadata.version("lm_eval")
    except metadata.PackageNotFoundError:
        raise DependencyError(
            "lm-evaluation-harness is not installed; pip install 'phasebench[lmeval]'"
        ) from None
    if version not in SUPPORTED:
        warnings.warn(
            f"phasebench was checked against lm-eval {', '.join(SUPPORTED)}, not {version}",
            stacklevel=2,
        )
    return version


# -- lm-eval's behaviour ------------------------------------------------------------------------
#
# What phasebench assumes lm-eval does, each modelled once.
# tests/test_lmeval_compat.py runs lm-eval's own code against every one of them.

#: The field lm-eval's generation backends (``hf``, and ``local-completions`` and the other API
#: backends) group ``generate_until`` requests by before they cut batches: two requests whose
#: generation arguments differ are never answered in one batch. phasebench gives every prompt
#: token count a stop sequence of its own (``phasebench.lmeval.batching``), so a batch holds
#: prompts of one token count and no row is padded on the left. (lm-eval's ``vllm`` backend
#: groups nothing, and pads nothing either.)
GENERATION_GROUPED_BY = "gen_kwargs"


def send_order(lengths: Sequence[int], before: Callable[[int, int], int]) -> list[int]:
    """Row indices in the order lm-eval's ``hf`` backend sends generation requests, for rows
    whose generation arguments differ exactly where their prompt token counts do (as
    ``phasebench.lmeval.batching`` makes them): one group per prompt token count
    (:data:`GENERATION_GROUPED_BY`), groups in the order of their first row, each group sorted
    by descending token count and then by ``before(i, j)`` (a comparison of the prompt texts,
    negative when row ``i``'s text sorts first)."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(int(n), []).append(i)

    def compare(i: int, j: int) -> int:
        return (lengths[j] > lengths[i]) - (lengths[j] < lengths[i]) or before(i, j)

    key = functools.cmp_to_key(compare)
    return [i for rows in groups.values() for i in sorted(rows, key=key)]


def task_yaml(path: str | PathLike[str]) -> dict[str, Any]:
    """A task YAML as lm-eval's task index reads it: its ``include`` chain merged in (in order,
    a later file's keys over an earlier one's, the file's own keys over all), ``!function``
    tags left as text (nothing is imported). Not a mapping, or an include circle: ``{}``."""
    try:
        from lm_eval.tasks._yaml_loader import load_yaml
    except ModuleNotFoundError:
        check_version()  # a one-line DependencyError when lm-eval is missing
        raise
    try:
        return load_yaml(path, resolve_func=False, recursive=True)
    except ValueError:  # not a mapping, or an include circle
        return {}


def first_documents(namespace: Any, n: int) -> None:
    """Make the run parsed into ``namespace`` answer the first ``n`` documents of its task, in
    the task's order: lm-eval's ``--limit n`` (its ``create_iterator`` is an ``islice`` over
    the task's documents; a ``limit`` of 1 or more counts documents, below 1 a share)."""
    namespace.limit = float(n)


def cache_file(prefix: str | PathLike[str], rank: int = 0) -> Path:
    """The file in which lm-eval's ``--use_cache PREFIX`` keeps the answers of process
    ``rank`` (one SQLite file per rank)."""
    return Path(f"{prefix}_rank{int(rank)}.db")


# -- CLI --------------------------------------------------------------------------------------


def under_lm_eval_cli() -> bool:
    """Whether this process is lm-eval's own command line (``lm_eval ...`` or ``python -m
    lm_eval``), where an exception raised by a task ends in a traceback after the model loaded,
    and not ``phasebench eval`` or a Python caller of ``simple_evaluate``."""
    import sys

    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == "lm_eval.__main__":
        return True
    entry = getattr(main, "cli_evaluate", None)
    return getattr(entry, "__module__", None) == "lm_eval.__main__"


def run_cli(
    argv: Sequence[str],
    before: Callable[[Any], None] | None = None,
    *,
    own_tasks_only: Callable[[Any], bool] | None = None,
    name: Callable[[Any], str | None] | None = None,
    notes: Mapping[tuple[str, str], str | None] | None = None,
) -> Any:
    """Parse ``argv`` with lm-eval's own parser (``lm_eval run ...``), let ``before`` inspect
    and adjust the parsed namespace, then execute it as lm-eval's CLI would. Returns the
    namespace (``output_path``, ``log_samples``, ...).

    lm-eval's CLI indexes every task file it ships (about 15,000 YAML files, tens of seconds)
    on each run, even when all the tasks asked for come from ``--include_path``. When
    ``own_tasks_only(namespace)`` is true the run's task manager indexes the included folders
    alone (:func:`included_tasks_only`); the tasks it then loads are the same files. ``name``
    may give the run another model name than lm-eval's own (which names the results'
    ``model_name`` and the output sub-folder after ``pretrained``, a whole absolute path for a
    local model). ``notes``: lm-eval's warnings dropped or explained
    (:func:`explained_warnings`)."""
    from lm_eval._cli.harness import HarnessCLI
    from lm_eval.utils import setup_logging

    setup_logging()
    cli = HarnessCLI()
    namespace = cli._parser.parse_args(list(argv))
    if before is not None:
        before(namespace)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_no_context_bars())
        stack.enter_context(explained_warnings(notes or {}))
        if own_tasks_only is not None and own_tasks_only(namespace):
            stack.enter_context(included_tasks_only())
        stack.enter_context(_model_name(name(namespace) if name is not None else None))
        cli.execute(namespace)
    return namespace


#: lm-eval's warning, logged by ``lm_eval.api.task`` each time it loads a task whose dataset a
#: function builds (phasebench's), that custom kwargs "can be passed to --metadata": printed
#: even when ``--metadata`` was passed, and phasebench's metadata keys are in
#: ``phasebench eval --help``; dropped.
METADATA_HINT = ("lm_eval.api.task", "Custom kwargs can be passed to `--metadata`")
#: lm-eval's warning, logged by ``lm_eval.evaluator``, that a model whose name says instruct or
#: chat runs without ``--apply_chat_template`` (its words are wrapped over lines).
CHAT_TEMPLATE_WARNING = ("lm_eval.evaluator", "chat template is not applied")


@contextlib.contextmanager
def explained_warnings(notes: Mapping[tuple[str, str], str | None]) -> Iterator[None]:
    """Within the block, an lm-eval log record holding the text of a key of ``notes``
    (``(logger, text)``) is dropped (note None) or printed with the note on a line after it."""
    import logging

    class Explain(logging.Filter):
        def __init__(self, texts: dict[str, str | None]) -> None:
            super().__init__()
            self.texts = texts

        def filter(self, record: logging.LogRecord) -> bool:
            words = " ".join(record.getMessage().split())
            for text, note in self.texts.items():
                if text in words:
                    if note is None:
                        return False
                    record.msg, record.args = f"{record.getMessage()}\n{note}", ()
            return True

    by_logger: dict[str, dict[str, str | None]] = {}
    for (name, text), note in notes.items():
        by_logger.setdefault(name, {})[text] = note
    filters = [(logging.getLogger(name), Explain(texts)) for name, texts in by_logger.items()]
    for logger, explain in filters:
        logger.addFilter(explain)
    try:
        yield
    finally:
        for logger, explain in filters:
            logger.removeFilter(explain)


def parse_run_args(argv: Sequence[str]) -> Any:
    """``argv`` (``lm_eval run`` arguments, without ``run``) parsed by lm-eval's own parser,
    without running anything."""
    from lm_eval._cli.harness import HarnessCLI

    return HarnessCLI()._parser.parse_args(["run", *argv])


@contextlib.contextmanager
def _model_name(model_name: str | None) -> Iterator[None]:
    """lm-eval's run tracker names the run ``model_name`` (and its output folder after it)."""
    if not model_name:
        yield
        return
    from lm_eval.loggers.evaluation_tracker import GeneralConfigTracker
    from lm_eval.utils import sanitize_model_name

    original = GeneralConfigTracker.log_experiment_args

    def log_experiment_args(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.model_name = model_name
        self.model_name_sanitized = sanitize_model_name(model_name)

    GeneralConfigTracker.log_experiment_args = log_experiment_args
    try:
        yield
    finally:
        GeneralConfigTracker.log_experiment_args = original


@contextlib.contextmanager
def _no_context_bars() -> Iterator[None]:
    """Within the block, lm-eval builds each task's requests without its unnamed progress bar
    (``Task.build_all_requests``), so the run shows one bar for the work: the model's."""
    import functools

    import lm_eval.api.task
    from tqdm import tqdm

    original = lm_eval.api.task.tqdm
    lm_eval.api.task.tqdm = functools.partial(tqdm, disable=True)
    try:
        yield
    finally:
        lm_eval.api.task.tqdm = original


@contextlib.contextmanager
def included_tasks_only() -> Iterator[None]:
    """Within the block, lm-eval's ``TaskManager`` leaves out its built-in tasks (as if built
    with ``include_defaults=False``): its CLI builds one without that choice."""
    import lm_eval.tasks

    base = lm_eval.tasks.TaskManager

    class IncludedOnly(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("include_defaults", False)
            super().__init__(*args, **kwargs)

    lm_eval.tasks.TaskManager = IncludedOnly
    try:
        yield
    finally:
        lm_eval.tasks.TaskManager = base


@contextlib.contextmanager
def reusing_models() -> Iterator[dict[str, Any]]:
    """Within the block, lm-eval builds a model once per model type and arguments: a later
    ``simple_evaluate`` with the same ``--model``, ``--model_args``, batch size and device gets
    the instance the first one loaded. Yields the loaded models (key -> instance), so a caller
    can say how many loads there were.

    ``simple_evaluate`` builds its model through ``lm_eval.api.registry.get_model(name)
    .create_from_arg_string/obj(...)`` whenever ``model`` is a name; the block swaps the
    registry lookup for one whose two constructors remember what they built. Passing the
    instance itself (``simple_evaluate(model=lm)``) would also load once, but lm-eval then
    records ``model_source: CUSTOM`` and the class name as the results' ``model``, which is not
    what a run of the named backend records (the leaderboard reads both)."""
    import lm_eval.api.registry as registry

    lookup = registry.get_model
    loaded: dict[str, Any] = {}

    class _Remembering:
        def __init__(self, name: str) -> None:
            self._name = name
            self._cls = lookup(name)

        def __getattr__(self, attr: str) -> Any:
            return getattr(self._cls, attr)

        def _once(self, how: str, args: Any, config: Any) -> Any:
            key = json.dumps([self._name, how, args, config], sort_keys=True, default=repr)
            if key not in loaded:
                loaded[key] = getattr(self._cls, how)(args, config)
            return loaded[key]

        def create_from_arg_string(self, args: str, config: Any = None) -> Any:
            return self._once("create_from_arg_string", args, config)

        def create_from_arg_obj(self, args: Mapping[str, Any], config: Any = None) -> Any:
            return self._once("create_from_arg_obj", dict(args), config)

    registry.get_model = _Remembering
    try:
        yield loaded
    finally:
        registry.get_model = lookup


def task_names(include_path: str) -> set[str]:
    """Every task, group and tag name lm-eval finds in ``include_path`` alone."""
    from lm_eval.tasks import TaskManager

    return set(TaskManager(include_path=include_path, include_defaults=False).all_tasks)


def run_legacy_cli() -> None:
    """lm-eval's console entry point, reading ``sys.argv``."""
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()


# -- tasks ------------------------------------------------------------------------------------


def configurable_task() -> type:
    """lm-eval's ``ConfigurableTask`` (the base of every YAML task)."""
    from lm_eval.api.task import ConfigurableTask

    return ConfigurableTask


def add_phase_metric(
    task: Any, key: str, aggregation: Callable[[Sequence[Any]], float], higher: bool | None
) -> None:
    """Register the aggregate ``key`` on a ``ConfigurableTask`` after its data is loaded (the
    YAML cannot name metrics whose names depend on the data). ``higher`` None shows no arrow in
    lm-eval's table (p-values)."""
    task._aggregation_list[key] = aggregation
    task._higher_is_better[key] = higher


def with_gen_kwargs(request: Any, change: Callable[[Mapping[str, Any]], dict]) -> Any:
    """A ``generate_until`` request (``Instance``) with its generation arguments (the second of
    ``arguments``, a dict) replaced by ``change(gen_kwargs)``; other requests unchanged."""
    if getattr(request, "request_type", None) != "generate_until":
        return request
    context, gen_kwargs, *rest = request.arguments
    request.arguments = (context, change(gen_kwargs), *rest)
    return request


def resolve_max_length(config: Any, hf_tokenizer: Any, default: int) -> int:
    """The context length lm-eval's ``hf`` backend derives from a model config and tokenizer."""
    from lm_eval.models.utils import resolve_max_length as resolve

    return int(resolve(config, hf_tokenizer, default=default))


def register_model(name: str, cls: type | str) -> None:
    """Make ``--model NAME`` load ``cls``: an ``lm_eval.api.model.LM`` subclass, or its
    ``"module:Class"`` path, imported only when a run asks for ``NAME`` (idempotent)."""
    if not isinstance(cls, str):
        from lm_eval.api.registry import register_model as register

        register(name)(cls)
        return
    import lm_eval.models  # noqa: F401  (lm-eval fills its registry only while it is empty)
    from lm_eval.api.registry import model_registry

    if name not in model_registry:
        model_registry.register(name, target=cls)


# -- logged samples ---------------------------------------------------------------------------


def hash_string(text: str) -> str:
    """lm-eval's ``hash_string``: SHA-256 hex of the UTF-8 text (``prompt_hash``,
    ``target_hash``, ``task_hashes``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _non_serializable(value: Any) -> Any:
    """What lm-eval's ``handle_non_serializable`` writes for values JSON cannot hold."""
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, set):
        return list(value)
    return str(value)


def doc_hash(doc: Mapping[str, Any]) -> str:
    """``doc_hash`` as lm-eval logs it: the doc as indented JSON, not ASCII-escaped."""
    text = json.dumps(doc, indent=2, default=_non_serializable, ensure_ascii=False)
    return hash_string(text)


def apply_template(template: str, doc: Mapping[str, Any]) -> str:
    """A ``doc_to_text`` jinja2 template rendered the way lm-eval renders it (its own jinja2
    environment, ``lm_eval.utils.apply_template``), each template compiled once rather than once
    per sample."""
    return _compiled(template).render(**dict(doc))


@functools.lru_cache(maxsize=64)
def _compiled(template: str) -> Any:
    from lm_eval.utils import env  # the environment lm-eval's apply_template compiles with

    return env.from_string(template)


# -- running ----------------------------------------------------------------------------------


def evaluate_and_save(
    *,
    model: str,
    model_args: Mapping[str, Any],
    tasks: Sequence[str],
    include_path: str,
    metadata: Mapping[str, Any],
    output_path: Path,
    model_name: str,
    batch_size: int | str = 32,
    gen_kwargs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``lm_eval.simple_evaluate`` with per-sample logs, saved as lm-eval's CLI saves them
    (``output_path/<model_name>/results_<date>.json`` and ``samples_<task>_<date>.jsonl``).

    The task manager gets the model arguments with the metadata, as lm-eval's CLI hands them
    to task dataset loaders. Returns the results dict without its samples."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    with _no_context_bars():  # one bar for the work: the model's requests
        results = simple_evaluate(
            model=model,
            model_args=dict(model_args),
            tasks=list(tasks),
            task_manager=TaskManager(
                include_path=include_path,
                include_defaults=False,  # phasebench's own tasks only: no index of lm-eval's
                metadata=dict(model_args) | dict(metadata),
            ),
            batch_size=batch_size,
            gen_kwargs=dict(gen_kwargs) if gen_kwargs else None,
            log_samples=True,
            random_seed=0,
            numpy_random_seed=0,
            torch_random_seed=0,
            fewshot_random_seed=0,
        )
    tracker = EvaluationTracker(output_path=str(output_path))
    results["config"]["model_name"] = model_name
    tracker.general_config_tracker.model_name = model_name
    tracker.general_config_tracker.model_name_sanitized = model_name
    samples = results.pop("samples")  # as lm-eval's CLI does before saving
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return results


# -- one model, called directly ---------------------------------------------------------------


def create_model(model: str, model_args: str, **config: Any) -> Any:
    """An lm-eval model (``lm_eval.api.model.LM``) built as ``lm_eval --model MODEL
    --model_args ARGS`` builds it: the registered class, from the argument string, with
    ``config`` (``batch_size``, ``device``) added where not None. Without a device, the one
    lm-eval's command line gives (:func:`cli_default_device`), as ``phasebench eval`` runs: a
    GPU where there is one, else the CPU (the ``hf`` backend's own default, ``cuda``, fails on
    a machine without one)."""
    import lm_eval.models  # noqa: F401  (fills the model registry)
    from lm_eval.api.registry import get_model

    if config.get("device") is None:
        config["device"] = cli_default_device()

    try:
        cls = get_model(model)
    except (KeyError, ValueError):
        raise EvalError(f"lm-eval has no model type {model!r} (see lm_eval ls models)") from None
    return cls.create_from_arg_string(model_args, {k: v for k, v in config.items() if v})


def cli_default_device() -> str | None:
    """The ``device`` lm-eval's ``run`` command gives a model when ``--device`` is left out
    (its ``EvaluatorConfig``'s default)."""
    import dataclasses

    from lm_eval.config.evaluate_config import EvaluatorConfig

    field = next(f for f in dataclasses.fields(EvaluatorConfig) if f.name == "device")
    return field.default if isinstance(field.default, str) else None


def parse_model_args(text: str) -> dict[str, Any]:
    """``--model_args`` as lm-eval parses them (``a=1,b=x``; numbers and booleans typed)."""
    from lm_eval.utils import simple_parse_args_string

    return dict(simple_parse_args_string(text or ""))


def request(kind: str, doc: Mapping[str, Any], arguments: tuple, idx: int = 0) -> Any:
    """One lm-eval request (``Instance``) of ``kind`` (``loglikelihood``, ``generate_until``)
    for ``doc`` with ``arguments`` (context and continuation, or context and gen_kwargs)."""
    from lm_eval.api.instance import Instance

    return Instance(request_type=kind, doc=dict(doc), arguments=arguments, idx=idx)


def record_responses(lm: Any) -> list[Any]:
    """Make an lm-eval API model (``TemplateAPI``: ``local-completions``,
    ``local-chat-completions``, ...) keep every JSON response its server sent, in the order they
    arrived; returns the list they are appended to. lm-eval reads only the answer from a
    response and drops the rest (``usage.prompt_tokens``, the server's own count of the prompt),
    so the parsers it calls on each response are wrapped on this instance."""
    seen: list[Any] = []
    for name in ("parse_generations", "parse_logprobs"):
        original = getattr(lm, name)

        def parse(*args: Any, _original: Callable = original, **kwargs: Any) -> Any:
            outputs = kwargs.get("outputs", args[0] if args else None)
            seen.extend(outputs if isinstance(outputs, list) else [outputs])
            return _original(*args, **kwargs)

        setattr(lm, name, parse)
    return seen
