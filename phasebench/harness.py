"""``phasebench tasks-dir`` and ``phasebench eval``: lm-eval's own CLI with the phasebench tasks.

lm-eval has no plugin hook for tasks, so the tasks folder is passed as ``--include_path``.
``phasebench eval`` parses the arguments with lm-eval's own parser, prepares each phasebench
split (generated for the model's tokenizer and cached, so lm-eval then loads it at once), refuses
a run whose longest prompt plus generation budget exceeds the model's context (lm-eval's ``hf``
backend would cut the prompt from the left, deleting needles and faking a phase gap), and then
hands the very same arguments to lm-eval.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from phasebench.errors import PhasebenchError
from phasebench.resources import resource_dir

#: lm-eval task name -> split family; the group ``phasebench`` runs all three.
TASK_FAMILIES = {"phasebench_niah": "niah", "phasebench_kv": "kv", "phasebench_code": "code"}
GROUP = "phasebench"
#: ``max_gen_toks`` of the generate_until task YAMLs (``--gen_kwargs`` may override it).
DEFAULT_MAX_GEN_TOKS = 16
#: lm-eval's ``hf`` backend default when neither the arguments nor the config name a length.
HF_DEFAULT_MAX_LENGTH = 2048


def tasks_dir() -> str:
    """The installed ``tasks/`` folder, for ``lm_eval --include_path``."""
    return str(resource_dir("tasks"))


def requested_families(tasks: Sequence[str]) -> list[str]:
    """Families of the phasebench tasks among lm-eval ``--tasks`` values (others are ignored)."""
    names = [t.strip() for item in tasks for t in str(item).split(",") if t.strip()]
    found: list[str] = []
    for name in names:
        if name == GROUP:
            found.extend(TASK_FAMILIES.values())
        elif name in TASK_FAMILIES:
            found.append(TASK_FAMILIES[name])
    return list(dict.fromkeys(found))


def model_max_length(model: str | None, model_args: Mapping[str, Any]) -> int:
    """The context length lm-eval's backend will use, read the way the backend reads it.

    ``max_length`` (hf) or ``max_model_len`` (vllm) when given; otherwise the model config's
    ``n_positions``/``max_position_embeddings``/``n_ctx`` and the tokenizer's
    ``model_max_length`` through lm-eval's own ``resolve_max_length``, default 2048.
    """
    for key in ("max_length", "max_model_len"):
        if model_args.get(key):
            return int(model_args[key])
    import transformers
    from lm_eval.models.utils import resolve_max_length

    from phasebench.lmeval import _tokenizer_source
    from phasebench.tokenization import load_tokenizer

    pretrained = model_args.get("pretrained")
    if not pretrained:
        raise PhasebenchError("pass --model_args pretrained=MODEL so the context length is known")
    kwargs: dict[str, Any] = {
        "revision": model_args.get("revision") or "main",
        "trust_remote_code": bool(model_args.get("trust_remote_code", False)),
    }
    for key in ("gguf_file", "subfolder"):
        if model_args.get(key):
            kwargs[key] = model_args[key]
    try:
        config = transformers.AutoConfig.from_pretrained(str(pretrained), **kwargs)
    except Exception as exc:  # transformers raises many kinds; one line for the user
        raise PhasebenchError(
            f"cannot read the config of {pretrained!r} ({type(exc).__name__}); pass "
            f"max_length=N in --model_args"
        ) from None
    tok = load_tokenizer(*_tokenizer_source(model_args))
    return int(resolve_max_length(config, tok.hf, default=HF_DEFAULT_MAX_LENGTH))


def generation_budget(family: str, rows: Sequence[Mapping[str, Any]], gen_kwargs: Any) -> int:
    """Tokens a prompt may grow by: ``max_gen_toks`` (kv, niah) or the longest choice (code)."""
    if family == "code":
        return 0  # rows' lengths already count the answer token that is scored (see guard)
    if isinstance(gen_kwargs, Mapping) and gen_kwargs.get("max_gen_toks"):
        return int(gen_kwargs["max_gen_toks"])
    if isinstance(gen_kwargs, str) and "max_gen_toks=" in gen_kwargs:
        return int(gen_kwargs.split("max_gen_toks=")[1].split(",")[0])
    return DEFAULT_MAX_GEN_TOKS


def check_fits(family: str, longest: int, budget: int, max_length: int) -> None:
    """Refuse a run that lm-eval would left-truncate (one clear line)."""
    if longest + budget > max_length:
        raise PhasebenchError(
            f"phasebench_{family}: the longest prompt ({longest} tokens) plus {budget} generated "
            f"tokens exceeds the model's context of {max_length}; lm-eval would cut the prompt "
            f"and delete needles. Lower max_seq_lengths in --metadata or raise max_length "
            f"(hf) / max_model_len (vllm) in --model_args"
        )


def prepare(ns: argparse.Namespace) -> None:
    """Build (or find) every phasebench split of the run and apply the truncation guard."""
    from phasebench.lmeval import resolve_split

    families = requested_families(ns.tasks or [])
    if not families:
        return
    model_args = dict(ns.model_args or {})
    metadata = dict(ns.metadata or {})
    chat = getattr(ns, "apply_chat_template", None)
    if chat:
        metadata["apply_chat_template"] = True
        if getattr(ns, "system_instruction", None):
            metadata["system_instruction"] = ns.system_instruction
        ns.metadata = metadata  # the tasks relabel phases for the templated sequence
    max_length = model_max_length(ns.model, model_args)
    for family in families:
        split = resolve_split(family, **(model_args | metadata))
        if family == "code":
            longest = max(int(r["anchor_index"]) + 1 for r in split.rows)
        else:
            longest = max(int(r["length"]) for r in split.rows) + split.anchor_offset
        check_fits(
            family, longest, generation_budget(family, split.rows, ns.gen_kwargs), max_length
        )


def run_eval(argv: Sequence[str]) -> int:
    """Run lm-eval's CLI on ``argv`` with the phasebench tasks folder included."""
    from lm_eval._cli.harness import HarnessCLI
    from lm_eval.utils import setup_logging

    args = list(argv)
    if args and args[0] == "run":
        args = args[1:]
    if "--include_path" in args:
        raise PhasebenchError(
            "phasebench eval adds --include_path itself; call lm_eval directly to combine "
            "task folders (lm_eval --include_path DIR ... with DIR from `phasebench tasks-dir`)"
        )
    args = ["run", *args, "--include_path", tasks_dir()]
    setup_logging()
    cli = HarnessCLI()
    ns = cli._parser.parse_args(args)
    prepare(ns)
    cli.execute(ns)
    return 0


def _tasks_dir_cmd(args: argparse.Namespace) -> int:
    print(tasks_dir())
    return 0


def _eval_cmd(args: argparse.Namespace) -> int:
    return run_eval(args.lm_eval_args)


def register(subparsers: argparse._SubParsersAction) -> None:
    td = subparsers.add_parser(
        "tasks-dir", help="print the installed lm-eval tasks folder (for --include_path)"
    )
    td.set_defaults(func=_tasks_dir_cmd)
    ev = subparsers.add_parser(
        "eval",
        help="run lm-eval with the phasebench tasks (every lm-eval flag passes through)",
        description="Runs `lm_eval run ARGS --include_path $(phasebench tasks-dir)` after "
        "preparing the phasebench splits and checking that no prompt would be truncated.",
        # every token, options included, belongs to lm-eval (`phasebench eval --help` shows
        # lm-eval's help): this parser recognises no options of its own
        prefix_chars="+",
        add_help=False,
    )
    ev.add_argument("lm_eval_args", nargs="*", metavar="ARGS")
    ev.set_defaults(func=_eval_cmd)
