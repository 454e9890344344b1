"""The task metadata knobs (``--metadata`` JSON of ``phasebench eval`` and ``lm_eval``), declared
once: their names, defaults and rules. ``phasebench eval --help``, the README's table (checked by
``tests/test_docs.py``) and the refusal of an unknown key all read :data:`KNOBS`.

lm-eval merges ``--model_args`` into the same mapping before a task sees it, so a task cannot
tell a model argument from a metadata key: inside a task (plain ``lm_eval``) only a key that is
a near miss of a knob is refused (:func:`check_keys` with ``strict=False``); ``phasebench eval``
sees ``--metadata`` alone and refuses every key it does not know when every task of the run is
phasebench's (other tasks may read keys of their own).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from phasebench.errors import SpecError
from phasebench.specs import TOKENIZER_ARG_NAMES


@dataclass(frozen=True)
class Knob:
    """One ``--metadata`` key: its default as shown, and what it takes."""

    name: str
    default: str
    rule: str


def _n_base_default() -> str:
    from phasebench.families import get_family, names

    return ", ".join(f"{family} {get_family(family).default_n_base}" for family in names())


#: The shortest kv prompt (at P = 8) two tokenizers take, as ``generate`` measures it: the
#: declared floor is the family's ``min_length``; the header, the question and the needle the
#: tokenizer encodes them into take more (a shorter length is refused, naming its minimum).
KV_MINIMUMS = {"DeepSeek-V4": 119, "SmolLM2": 133}


def _min_lengths() -> str:
    from phasebench.families import get_family, names

    by_min: dict[int, list[str]] = {}
    for family in names():
        by_min.setdefault(get_family(family).min_length, []).append(family)
    measured = ", ".join(f"{n} for {name}" for name, n in KV_MINIMUMS.items())
    return "; ".join(
        f"{', '.join(fams)}: at least {n}"
        + (f" and what the template takes with the tokenizer, kv: {measured}" if n else "")
        for n, fams in by_min.items()
    )


def knobs() -> tuple[Knob, ...]:
    """Every ``--metadata`` key a phasebench task reads, in the order the help shows them."""
    from phasebench.lmeval.data import DEFAULT_LENGTHS, DEFAULT_MODULUS, DEFAULT_SEED
    from phasebench.metrics import METRIC_SETS

    return (
        Knob("max_seq_lengths", str(list(DEFAULT_LENGTHS)),
             f"prompt lengths in tokens ({_min_lengths()})"),
        Knob("phase_modulus", str(DEFAULT_MODULUS), "P: phases 0..P-1 (code: a divisor of 16)"),
        Knob("n_base", _n_base_default(),
             'base items per length: one number or {"kv": 32, "niah": 16}; kv and niah need a '
             "multiple of P, at least 2P; code: n_base x 4 styles a multiple of P, at least 2P"),
        Knob("seed", str(DEFAULT_SEED), "generation seed"),
        Knob("metrics", METRIC_SETS[0], f"metric set: {' or '.join(METRIC_SETS)}"),
        Knob("length_phases", "off", 'kv, niah: true adds the prompt-length axis (each base item '
             'at lengths L..L+P-1, the needle at one phase), "crossed" every needle phase at '
             "every length phase (docs/serving.md)"),
        Knob("phases", "all", 'kv, niah: a subset of residues mod P, a list or "0:128:16,125:128" '
             "(long periods; docs/serving.md)"),
        Knob("prefix_cache", "off", '"repeat": every prompt sent twice in a row, a cold read '
             'then a warm one (one request at a time); "salted": every prompt opens with a salt of '
             "its own, a multiple of P tokens, so no prompt can be read from a prefix cache "
             "(docs/serving.md)"),
        Knob("dataset_path", "none", "a pre-built split: a folder from `phasebench generate` or "
             "`phasebench publish`, or a Hub dataset id"),
    )  # fmt: skip


#: Keys a task also reads that are not knobs: the tokenizer's name and arguments (lm-eval's model
#: arguments, also accepted in --metadata), what ``phasebench eval`` adds for a chat template,
#: and the ``version`` of the task YAMLs' own ``metadata:`` block, merged in by lm-eval.
OTHER_KEYS = (
    "tokenizer",
    "pretrained",
    "model",
    *TOKENIZER_ARG_NAMES,
    "apply_chat_template",
    "system_instruction",
    "version",
)
#: How close (difflib's ratio) a key must be to a knob to count as a misspelling of it inside a
#: task, where model arguments share the mapping: ``max_seq_lenghts`` is 0.93 from
#: ``max_seq_lengths``, lm-eval's ``max_length`` 0.8.
NEAR_MISS = 0.84


def _known_keys() -> tuple[str, ...]:
    return (*(k.name for k in knobs()), *OTHER_KEYS)


def check_keys(keys: Iterable[str], *, strict: bool) -> None:
    """Refuse a key that is not a knob, naming the nearest known one. ``strict``: every unknown
    key (``phasebench eval``, which sees ``--metadata`` alone); otherwise only a near miss of a
    knob (:data:`NEAR_MISS`), since lm-eval mixes the model arguments in."""
    names = [k.name for k in knobs()]
    known = set(_known_keys())
    for key in keys:
        if key in known:
            continue
        cutoff = 0.6 if strict else NEAR_MISS
        near = difflib.get_close_matches(str(key), names, n=1, cutoff=cutoff)
        if not near and not strict:
            continue
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise SpecError(
            f"--metadata has no key {key!r}; {hint}phasebench's keys: {', '.join(names)}"
        )


def help_table(width: int = 96) -> str:
    """The knobs as ``phasebench eval --help`` shows them, each default once."""
    import textwrap

    items = knobs()
    pad = max(len(k.name) for k in items)
    return "\n".join(
        textwrap.fill(
            f"{k.rule} (default: {k.default})",
            width,
            initial_indent=f"  {k.name:<{pad}}  ",
            subsequent_indent=" " * (pad + 4),
        )
        for k in items
    )


def markdown_table() -> str:
    """The knobs as the README's table (``tests/test_docs.py`` compares the two)."""
    lines = ["| key | default | what it takes |", "|---|---|---|"]
    lines += [f"| `{k.name}` | {k.default} | {k.rule.replace('|', '/')} |" for k in knobs()]
    return "\n".join(lines)
