"""``phasebench tasks-dir`` and ``phasebench eval``: lm-eval's own CLI with the phasebench tasks.

lm-eval has no plugin hook for tasks, so the tasks folder is passed as ``--include_path``.
``phasebench eval`` parses the arguments with lm-eval's own parser, prepares each phasebench
split (generated for the model's tokenizer and cached, so lm-eval then loads it at once), refuses
a run whose longest prompt plus generation budget exceeds the model's context (lm-eval's ``hf``
backend would cut the prompt from the left, deleting needles and faking a phase gap; through an
API, the context the user states as ``max_length``), and then hands the very same arguments to
lm-eval, except that ``local-completions`` and ``local-chat-completions`` run as their
witnessing subclasses (:mod:`phasebench.lmeval.witness`), which log the server's own prompt
token count for every sample.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phasebench.errors import EvalError, SpecError, first_line
from phasebench.lmeval.metadata import check_keys
from phasebench.lmeval.tasks import MAX_GEN_TOKS
from phasebench.lmeval.witness import (
    WITNESSED_BACKENDS,
    register_witnessed_backends,
    witnessed_backend,
)
from phasebench.resources import resource_dir
from phasebench.samples import MODEL_NAME_KEYS, SAMPLES_NAME, run_name, served_label

#: The lm-eval group that runs the task of every built-in family.
GROUP = "phasebench"


def _task_families() -> dict[str, str]:
    """lm-eval task name -> split family, for every known family (a registered one too)."""
    from phasebench.families import names, task_name

    return {task_name(name): name for name in names()}


#: The built-in families' tasks (lm-eval task name -> family).
TASK_FAMILIES = _task_families()
#: lm-eval's ``hf`` backend default when neither the arguments nor the config name a length.
HF_DEFAULT_MAX_LENGTH = 2048
#: lm-eval's OpenAI-style backends (``TemplateAPI``): the context is ``max_length`` in
#: ``--model_args`` (default 2048), of which lm-eval keeps one token back.
API_BACKENDS = (
    "local-completions",
    "local-chat-completions",
    "openai-completions",
    "openai-chat-completions",
)
API_DEFAULT_MAX_LENGTH = 2048


#: How lm-eval 0.4.13 begins the error for ``--tasks`` names it cannot find (before the model
#: loads), turned into one line by :func:`run_eval`.
TASKS_NOT_FOUND = "Tasks not found: "
#: phasebench's line under lm-eval's warning that an instruct model runs without its chat
#: template (the measurement is in docs/tasks.md, "Chat template").
CHAT_TEMPLATE_NOTE = (
    "phasebench: its prompts are completions; a template renames the phases (no change to the "
    "gap) but changes the task: SmolLM2-135M-Instruct scored 34.4% without it, 0.0% with it "
    "(docs/tasks.md, Chat template); compare gaps only between runs in one format"
)
#: The command that lists lm-eval's own tasks with the pinned lm-eval 0.4.13 (``lm_eval list
#: tasks`` is not one: "unrecognized arguments").
LIST_TASKS = "lm_eval ls tasks"


def _unknown_tasks_line(missing: str) -> str:
    """The line for ``--tasks`` names neither phasebench nor lm-eval knows: phasebench's own."""
    own = ", ".join(sorted(_task_families()))
    return (
        f"unknown task(s) {missing.strip()}: phasebench's tasks are {own} and the group {GROUP} "
        f"(lm-eval's own: {LIST_TASKS})"
    )


def tasks_dir() -> str:
    """The installed ``tasks/`` folder, for ``lm_eval --include_path``."""
    return str(resource_dir("tasks"))


def requested_families(tasks: Sequence[str]) -> list[str]:
    """Families of the phasebench tasks among lm-eval ``--tasks`` values (others are ignored)."""
    from phasebench.families import BUILTIN

    names = [t.strip() for item in tasks for t in str(item).split(",") if t.strip()]
    known = _task_families()
    found: list[str] = []
    for name in names:
        if name == GROUP:
            found.extend(BUILTIN)
        elif name in known:
            found.append(known[name])
    return list(dict.fromkeys(found))


def _own_tasks(ns: Any) -> bool:
    """Whether every ``--tasks`` name is one of phasebench's (then lm-eval need not index its
    own task files to find them)."""
    from phasebench import lmeval_compat as compat

    tasks = ns.tasks if isinstance(ns.tasks, list | tuple) else [ns.tasks or ""]
    names = {t.strip() for item in tasks for t in str(item).split(",") if t.strip()}
    return bool(names) and names <= compat.task_names(tasks_dir())


def model_max_length(model_args: Mapping[str, Any], backend: str | None = None) -> int:
    """The context length lm-eval's backend will use, read the way the backend reads it.

    API backends (:data:`API_BACKENDS`): ``max_length`` (default 2048) minus the one token
    lm-eval keeps back; the server's own context must be at least that. Others: ``max_length``
    (hf) or ``max_model_len`` (vllm) when given; otherwise the model config's
    ``n_positions``/``max_position_embeddings``/``n_ctx`` and the tokenizer's
    ``model_max_length`` through lm-eval's own ``resolve_max_length``, default 2048.
    """
    if backend in API_BACKENDS:
        return _context(model_args, "max_length", API_DEFAULT_MAX_LENGTH) - 1
    for key in ("max_length", "max_model_len"):
        if model_args.get(key):
            return _context(model_args, key, 0)
    import transformers

    from phasebench import lmeval_compat as compat
    from phasebench.lmeval.data import tokenizer_source
    from phasebench.tokenization import check_reachable, gguf_problem, load_tokenizer

    pretrained = model_args.get("pretrained")
    if not pretrained:
        raise EvalError("pass --model_args pretrained=MODEL so the context length is known")
    kwargs: dict[str, Any] = {
        "revision": model_args.get("revision") or "main",
        "trust_remote_code": bool(model_args.get("trust_remote_code", False)),
    }
    for key in ("gguf_file", "subfolder"):
        if model_args.get(key):
            kwargs[key] = model_args[key]
    if not Path(str(pretrained)).expanduser().exists():  # a Hub id: offline, fail at once
        check_reachable(str(pretrained), dict(model_args), files=("config.json",), what="model")
    elif problem := gguf_problem(str(pretrained), model_args):
        raise EvalError(problem)
    try:
        config = transformers.AutoConfig.from_pretrained(str(pretrained), **kwargs)
    except Exception as exc:  # transformers raises many kinds; one line for the user
        raise EvalError(
            f"cannot read the config of {pretrained!r} ({type(exc).__name__}); pass "
            f"max_length=N in --model_args"
        ) from None
    tok = load_tokenizer(*tokenizer_source(model_args))
    return compat.resolve_max_length(config, tok.hf, default=HF_DEFAULT_MAX_LENGTH)


def _context(model_args: Mapping[str, Any], key: str, default: int) -> int:
    value = model_args.get(key) or default
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EvalError(f"{key} in --model_args must be a token count (got {value!r})")
    return value


def generation_budget(family: str, gen_kwargs: Mapping[str, Any] | None) -> int:
    """Tokens the backend reserves after the prompt: ``max_gen_toks`` for a generate_until
    family such as kv and niah (the YAML's 16 unless ``--gen_kwargs`` overrides it), the scored
    answer token for a multiple_choice one (code)."""
    from phasebench.families import get_family

    if get_family(family).output_type == "multiple_choice":
        return 1
    if gen_kwargs and gen_kwargs.get("max_gen_toks"):
        return int(gen_kwargs["max_gen_toks"])
    return MAX_GEN_TOKS


def check_fits(
    family: str, longest: int, budget: int, max_length: int, backend: str | None = None
) -> None:
    """Refuse a run that lm-eval or the server would truncate (one clear line). Through an API
    the context is the one the user states as ``max_length``: it must be the server's own
    (Ollama's ``num_ctx``, vLLM's ``--max-model-len``), which phasebench cannot ask for."""
    if longest + budget <= max_length:
        return
    if backend in API_BACKENDS:
        raise EvalError(
            f"phasebench_{family}: the longest prompt ({longest} tokens) plus {budget} generated "
            f"tokens exceeds the stated context of {max_length + 1} (max_length in --model_args, "
            f"one token of which lm-eval keeps back); a server cuts such a prompt (Ollama drops "
            f"its middle, deleting needles). Lower max_seq_lengths in --metadata or start the "
            f"server with a larger context and state it as max_length"
        )
    raise EvalError(
        f"phasebench_{family}: the longest prompt ({longest} tokens) plus {budget} generated "
        f"tokens exceeds the model's context of {max_length}; lm-eval would cut the prompt "
        f"and delete needles. Lower max_seq_lengths in --metadata or raise max_length "
        f"(hf) / max_model_len (vllm) in --model_args"
    )


def check_stop_sequences(
    families: Sequence[str], gen_kwargs: Mapping[str, Any] | None, backend: str | None
) -> None:
    """Refuse, before anything loads, stop sequences (``until`` in ``--gen_kwargs``) that an
    OpenAI-type backend could not send with the two that are added to every generation request
    (:mod:`phasebench.lmeval.batching`): the server would answer HTTP 400 mid-run, or lm-eval's
    chat backend would drop one of the added ones without a word."""
    from phasebench.families import get_family
    from phasebench.lmeval.batching import API_STOP_LIMIT, stops_over_limit

    if backend not in API_BACKENDS:
        return
    if all(get_family(f).output_type == "multiple_choice" for f in families):
        return
    over = stops_over_limit(gen_kwargs)
    if over is None:
        return
    own, most = over
    raise EvalError(
        f"--gen_kwargs until gives {len(own)} stop sequences ({', '.join(map(repr, own))}); "
        f"{backend} sends at most {API_STOP_LIMIT}, and phasebench's batch stop and lm-eval's "
        f"end of sequence take two of them: keep at most {most} (drop "
        f"{', '.join(map(repr, own[most:]))})"
    )


def _check_metadata(families: Sequence[str], kwargs: Mapping[str, Any]) -> None:
    """Refuse task metadata the tasks would refuse, before anything is loaded: every split spec
    (lengths, ``phase_modulus``, ``n_base``, ``seed``, the length axis, ``phases``) and the
    metric set. lm-eval loads the model before its tasks, so a task that refused its metadata
    itself would do so only after the model had loaded."""
    from phasebench.families import get_family
    from phasebench.lmeval.data import _lengths, split_specs
    from phasebench.lmeval.tasks import _check_set

    _check_set(str(kwargs.get("metrics") or "compact"))
    if kwargs.get("dataset_path"):  # a pre-built split: its own manifests say the rest
        _lengths(kwargs)
        return
    for family in families:
        for spec in split_specs(family, kwargs):
            # a family's rules that need no tokenizer (n_base against the modulus, ...)
            check = get_family(spec).check_spec
            if check is not None:
                check(spec)


def _check_one_request_at_a_time(ns: Any, kwargs: Mapping[str, Any]) -> None:
    """``"prefix_cache": "repeat"`` with a ``--batch_size`` above 1 is refused: lm-eval would
    put a prompt's cold and warm reads into one batch (one request), read side by side rather
    than one from the other's cache (``num_concurrent`` is refused by the tasks themselves)."""
    from phasebench.lmeval.data import prefix_cache_arm

    size = str(getattr(ns, "batch_size", 1) or 1)
    if prefix_cache_arm(kwargs) == "repeat" and size != "1":
        raise SpecError(
            f'"prefix_cache": "repeat" sends each prompt twice in a row, one request at a time; '
            f"--batch_size {size} would put both reads into one batch: use --batch_size 1"
        )


def prepare(ns: Any, on_event: Callable[[str], None] | None = None) -> None:
    """Build (or find) every phasebench split of the run and apply the truncation guard.

    ``ns`` is lm-eval's parsed ``run`` namespace; with ``--apply_chat_template`` its metadata
    gains the flag so the tasks relabel phases for the templated sequence."""
    from phasebench.families import get_family, task_name
    from phasebench.lmeval.data import resolve_split

    families = requested_families(ns.tasks or [])
    if not families:
        return
    model_args = dict(ns.model_args or {})
    metadata = dict(ns.metadata or {})
    # --metadata alone, before lm-eval merges the model arguments in: every key phasebench does
    # not know is refused when the run's tasks are all phasebench's (others may read their own)
    check_keys(metadata, strict=_own_tasks(ns))
    chat = getattr(ns, "apply_chat_template", None)
    if chat:
        metadata["apply_chat_template"] = True
        if getattr(ns, "system_instruction", None):
            metadata["system_instruction"] = ns.system_instruction
        ns.metadata = metadata  # the tasks relabel phases for the templated sequence
    _check_metadata(families, model_args | metadata)  # before the tokenizer or model loads
    _check_one_request_at_a_time(ns, model_args | metadata)
    backend = getattr(ns, "model", None)
    check_stop_sequences(families, ns.gen_kwargs, backend)
    max_length = model_max_length(model_args, backend)
    prompts = 0
    for family in families:
        if on_event is not None:
            on_event(
                f"{task_name(family)}: the split for the model's tokenizer (generated on first "
                f"use, then cached)"
            )
        split = resolve_split(family, **(model_args | metadata))
        # the prompt as the model receives it (code, whose anchor is the answer: the anchor is
        # the prompt's token count; kv, niah: the templated sequence's under a chat template)
        if get_family(family).anchor_is_answer:
            longest = max(int(r["anchor_index"]) for r in split.rows)
        else:
            longest = max(served_label(r) for r in split.rows)
        budget = generation_budget(family, ns.gen_kwargs)
        check_fits(family, longest, budget, max_length, backend)
        prompts += len(split.rows)
    if backend in WITNESSED_BACKENDS:
        # the same backend, whose responses carry the server's prompt token counts
        register_witnessed_backends()
        ns.model = witnessed_backend(backend)
    if on_event is not None:
        limit = getattr(ns, "limit", None)
        counted = f"{prompts:,} prompts" + (f" (--limit {limit} per task)" if limit else "")
        on_event(
            f"lm-eval: indexing the tasks, loading the model, then running the {counted}; "
            "lm-eval's bar estimates the time left once its first batch is answered"
        )


@dataclass(frozen=True)
class EvalOutput:
    """What one ``phasebench eval`` run left on disk: lm-eval's ``--output_path`` (None when
    not given), whether ``--log_samples`` was on, and the per-sample logs of phasebench tasks
    this run wrote (``samples_<task>_<date>.jsonl``; files of earlier runs in the same folder
    and of other tasks are not listed)."""

    output_path: str | None
    log_samples: bool
    samples_files: tuple[Path, ...]


def output_folder(output_path: str) -> Path:
    """Where lm-eval writes its files: ``<output_path>/<model>/``, or beside a ``.json`` path."""
    path = Path(output_path)
    return path.parent if path.suffix == ".json" else path


def _samples_files(output_path: str | None) -> dict[Path, int]:
    if not output_path:
        return {}
    folder = output_folder(output_path)
    if not folder.is_dir():
        return {}
    found = {}
    known = _task_families()
    for f in folder.rglob("samples_*"):
        name = SAMPLES_NAME.match(f.name)
        # only phasebench tasks: a run may mix in other lm-eval tasks
        if name and name["task"] in known and f.is_file() and not f.is_symlink():
            found[f] = f.stat().st_mtime_ns
    return found


#: lm-eval options that take a JSON object (or ``key=value`` pairs).
JSON_OPTIONS = ("--metadata", "--model_args", "--gen_kwargs")


def _check_json_options(argv: Sequence[str]) -> None:
    """Refuse a JSON object that does not parse in one line, before lm-eval's parser raises it
    as a traceback (``ValueError: Invalid JSON``): lm-eval reads a value with ``{`` as JSON."""
    for i, arg in enumerate(argv):
        option, eq, value = arg.partition("=")
        if option not in JSON_OPTIONS:
            continue
        if not eq:
            value = argv[i + 1] if i + 1 < len(argv) else ""
        if "{" not in value:
            continue
        try:
            json.loads(value)
        except ValueError as exc:
            raise SpecError(
                f"{option} is not valid JSON ({first_line(exc)}): {value[:80]!r}; write it "
                f"""as '{{"max_seq_lengths": [1024]}}' (double quotes inside single quotes)"""
            ) from None


def run_eval(
    argv: Sequence[str],
    adjust: Callable[[Any], None] | None = None,
    on_event: Callable[[str], None] | None = None,
) -> EvalOutput:
    """Run lm-eval's CLI on ``argv`` with the phasebench tasks folder included, after
    :func:`prepare` has built the splits and checked that nothing will be truncated.
    ``adjust`` may change lm-eval's parsed namespace first (a staged run sets ``limit``).

    Returns where lm-eval put this run's per-sample logs, found by comparing the output folder
    before and after (lm-eval names them by the moment it saves, which it does not return)."""
    from phasebench import lmeval_compat as compat

    compat.check_version()
    args = list(argv)
    if args and args[0] == "run":
        args = args[1:]
    if "--include_path" in args:
        raise EvalError(
            "phasebench eval adds --include_path itself; call lm_eval directly to combine "
            "task folders (lm_eval --include_path DIR ... with DIR from `phasebench tasks-dir`)"
        )
    _check_json_options(args)
    seen: dict[Path, int] = {}

    def before(ns: Any) -> None:
        seen.update(_samples_files(getattr(ns, "output_path", None)))
        if adjust is not None:
            adjust(ns)
        prepare(ns, on_event)

    def name(ns: Any) -> str | None:
        """A local model's run is named by its GGUF file or folder, not its whole path."""
        model_args = dict(ns.model_args or {})
        ours = run_name(model_args)
        lm_evals = next((str(model_args[k]) for k in MODEL_NAME_KEYS if model_args.get(k)), None)
        return ours if ours != lm_evals else None

    try:
        ns = compat.run_cli(
            ["run", *args, "--include_path", tasks_dir()],
            before=before,
            own_tasks_only=_own_tasks,
            name=name,
            notes={compat.METADATA_HINT: None, compat.CHAT_TEMPLATE_WARNING: CHAT_TEMPLATE_NOTE},
        )
    except ValueError as exc:  # lm-eval's answer to a --tasks name it cannot find
        if not str(exc).startswith(TASKS_NOT_FOUND):
            raise
        raise EvalError(_unknown_tasks_line(str(exc).removeprefix(TASKS_NOT_FOUND))) from None
    output_path = getattr(ns, "output_path", None) or None
    after = _samples_files(output_path)
    written = sorted(f for f, mtime in after.items() if seen.get(f) != mtime)
    return EvalOutput(
        output_path=str(output_path) if output_path else None,
        log_samples=bool(getattr(ns, "log_samples", False)),
        samples_files=tuple(written),
    )
