"""Split families: pure functions from (spec, tokenizer) to rows, no I/O, each declared once.

A family is a module (``kv``, ``niah``, ``code``) whose :data:`FAMILY` is a :class:`Family`: the
functions that plan, render and check its rows, and every fact the rest of the package asks
about it (the lm-eval output type, its extra row columns, its default ``n_base``, whether it
has a margin, how its paired unit is formed, its Hub card tags, ...). No module outside this
package branches on a family's name: it asks :func:`get_family` for the declaration. So a new
family is a new module with its ``FAMILY``, made known by :func:`register` (the built-in ones
are known by name and imported on first use), plus what lives outside Python: its lm-eval task
YAML (``tasks/phasebench_<name>.yaml``, or one in a folder of its own passed to lm-eval's
``--include_path``) and, to publish it, its data card section (``data_cards/family_<name>.md``).
The leaderboard knows the tasks of the families known here, so a submission of a registered
family's task is validated, scored and shown like a built-in one (its validating processes
import the registered modules by name, :func:`adopt`; a submission never names code to run).
``tests/families/test_families.py`` runs such a fourth family through every step.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from phasebench.errors import SpecError
from phasebench.registry import Registry

if TYPE_CHECKING:
    import pyarrow as pa

    from phasebench.specs import SplitSpec
    from phasebench.tokenization import PhaseTokenizer

__all__ = [
    "BUILTIN",
    "DEFAULT_N_BASE",
    "Family",
    "SplitPlan",
    "adopt",
    "declarations",
    "get_family",
    "names",
    "paired_unit",
    "register",
    "task_name",
    "unregister",
]

#: Base items per config when neither the spec nor the family names a number.
DEFAULT_N_BASE = 256

#: The shortest ``length`` a family whose ``length`` is the prompt's token count accepts.
MIN_LENGTH = 64

OutputType = Literal["generate_until", "multiple_choice"]


@runtime_checkable
class SplitPlan(Protocol):
    """A config laid out without rendering it: rows come out unit by unit (a base item at every
    phase for kv and niah, an (item, padding style) sweep for code).

    A plan may also offer ``prompt_pieces()``, every row's prompt as the pieces it joins
    (:class:`phasebench.prefill.PromptPieces`), from which the build counts the manifest's
    prefill figures; the manifest of a plan without it states none."""

    spec: SplitSpec

    @property
    def n_units(self) -> int:
        """How many units the config has."""
        ...

    @property
    def rows_per_unit(self) -> int:
        """How many rows one unit renders to."""
        ...

    def render(self, units: Sequence[int]) -> Iterator[dict[str, Any]]:
        """The rows of ``units``, in order (pure: no I/O)."""
        ...

    def balance(self) -> dict[str, Any]:
        """Per-phase counts and anchor statistics of the whole config."""
        ...


@dataclass(frozen=True)
class Family:
    """One split family: its functions and every fact the rest of the package asks of it.

    Functions: ``prepare(spec, tok)`` plans the config and checks its seams and one whole
    prompt on the exact path; ``exact_check(plan, row)`` re-encodes one whole prompt and raises
    if any position differs; ``verify_row(tok, row)`` lists one row's exact-path problems;
    ``verify_config(spec, meta)`` lists config-level problems (pairing, coverage) from the
    rows' metadata columns; ``describe(plan)`` gives the family's facts for the manifest and
    the data card; ``check_spec(spec)``, when given, refuses a spec by the family's own rules
    that need no tokenizer (``phasebench eval`` asks it before it loads one).

    Facts: ``output_type``, the lm-eval output type of its task (``generate_until``: scored by
    answer-prefix match of the response; ``multiple_choice``: by the log-likelihoods of
    ``choices``, so every sample also has a margin); ``extra_fields``, the columns it adds to
    :data:`phasebench.rows.ROW_FIELDS`; ``default_n_base``, base items per config when none is
    asked for; ``unit_fields``, the row fields that, after the config length, name its paired
    unit; ``rows_per_item``, rows one base item renders to (None: one per rendered phase,
    :attr:`phasebench.specs.SplitSpec.renderings`); ``extra_prompt_tokens``, tokens a prompt
    holds beyond ``length`` (for the budget and memory estimates); ``min_length`` and
    ``default_lengths`` of ``length`` (a family whose ``length`` may be left out has
    ``(0,)``); ``item_rendering``: how one base item's ``rows_per_item`` rows come about, as
    ``phasebench generate --help`` shows it (``"swept over 4 padding styles x 16 lengths"``);
    ``anchor_is_answer``: the anchor is the first answer token, after the whole
    prompt (else it is the token holding character ``key_char`` of the prompt);
    ``no_phase_axes``: None where the length-phase axis and phase subsets apply, else why they
    do not (said when a spec asks for them); ``takes_haystack``: a ``--haystack`` text applies;
    ``hub_task_category``, ``hub_task_id``, ``hub_tag`` and ``languages``: its data card's task
    category, task id, tag and languages. ``length_note``: what a config's ``length`` means
    where it is not the prompt's token count (the leaderboard says it beside the board's name).
    ``chance``: the accuracy of a model that cannot do the task at all (0 for an answer it must
    write, 1 / choices for a choice among given answers); the leaderboard does not rank an
    entry whose average sits there (no room for a phase to fall below it).
    """

    name: str
    prepare: Callable[[SplitSpec, PhaseTokenizer], SplitPlan]
    exact_check: Callable[[Any, dict[str, Any]], None]
    verify_row: Callable[[PhaseTokenizer, dict[str, Any]], list[str]]
    verify_config: Callable[[SplitSpec, dict[str, list]], list[str]]
    describe: Callable[[Any], dict[str, Any]]
    check_spec: Callable[[SplitSpec], None] | None = None
    output_type: OutputType = "generate_until"
    extra_fields: tuple[tuple[str, pa.DataType], ...] = ()
    default_n_base: int = DEFAULT_N_BASE
    unit_fields: tuple[str, ...] = ("base_id",)
    rows_per_item: int | None = None
    extra_prompt_tokens: int = 0
    min_length: int = MIN_LENGTH
    default_lengths: tuple[int, ...] = ()
    item_rendering: str = ""
    anchor_is_answer: bool = False
    no_phase_axes: str | None = None
    takes_haystack: bool = False
    hub_task_category: str = "text-generation"
    hub_task_id: str | None = None
    hub_tag: str = ""
    languages: tuple[str, ...] = ("en",)
    length_note: str = ""
    chance: float = 0.0

    @property
    def task(self) -> str:
        """Its lm-eval task name (``phasebench_<name>``)."""
        return task_name(self.name)

    @property
    def has_margin(self) -> bool:
        """Scored by log-likelihoods, so every sample has a margin (log p(right) minus log p(best
        distractor)) besides its 0/1 accuracy."""
        return self.output_type == "multiple_choice"

    def paired_unit(self, row: Mapping[str, Any]) -> str:
        """What is paired across phases: ``<config length>/<unit fields...>`` (a base item,
        ``"4096/17"``, or a code sweep, ``"0/cast-0003/comment_dash"``)."""
        from phasebench.rows import config_length

        parts = [str(config_length(row))]
        for name in self.unit_fields:
            value = row[name]
            parts.append(str(int(value)) if name == "base_id" else str(value))
        return "/".join(parts)

    def estimated_size(self, spec: SplitSpec) -> tuple[int, int]:
        """``(rows, prompt tokens)`` of ``spec``'s config: ``n_base`` items times their rows,
        tokens are rows times the longest prompt."""
        if self.rows_per_item is not None:
            rows = spec.n_base * self.rows_per_item
            return rows, rows * (spec.length + self.extra_prompt_tokens)
        rows = spec.n_base * spec.renderings
        longest = spec.length + self.extra_prompt_tokens
        longest += spec.modulus - 1 if spec.length_phases else 0
        return rows, rows * longest


#: Family name -> the module that declares it (imported on first use: each has its templates).
_MODULES: dict[str, str] = {
    "kv": "phasebench.families.kv",
    "niah": "phasebench.families.niah",
    "code": "phasebench.families.code",
}
#: The families phasebench ships (the lm-eval group ``phasebench`` runs their tasks).
BUILTIN: tuple[str, ...] = tuple(_MODULES)
#: The families declared so far (a built-in one once its module is imported).
_LOADED: Registry[Family] = Registry("family", SpecError)


def paired_unit(row: Mapping[str, Any]) -> str:
    """What is paired across phases, as the row's family declares it
    (:meth:`Family.paired_unit`): a base item at one config length (kv,
    niah: ``"4096/17"``), or one (item, padding style) sweep at one config length (code, whose
    16 padding lengths visit each phase 16/P times: ``"0/cast-0003/comment_dash"``).

    Units are strings and the statistics order the rows of a phase matrix by sorting them, so
    every consumer resamples the same rows (the order of the bootstrap and permutation streams
    is part of the numbers)."""
    return get_family(str(row["family"])).paired_unit(row)


def task_name(family: str) -> str:
    """The lm-eval task of a family: ``phasebench_<family>``."""
    return f"phasebench_{family}"


def names() -> tuple[str, ...]:
    """Every known family, built-in ones first (the order of tables and cards)."""
    return tuple(_MODULES)


def register(family: Family, module: str | None = None) -> Family:
    """Make ``family`` known under its name. ``module`` is where its ``FAMILY`` is declared, for
    a process that looks it up by name (default: the module of ``family.prepare``)."""
    if not isinstance(family, Family):
        raise SpecError(f"a family is declared as a Family (got {type(family).__name__})")
    if family.name in _MODULES:
        get_family(family.name)  # a built-in one is declared by importing its module
    _LOADED.add(family, [family.name])
    _MODULES[family.name] = module or family.prepare.__module__
    return family


def unregister(name: str) -> None:
    """Forget a registered family (tests); the built-in ones cannot be removed."""
    if name in BUILTIN:
        raise SpecError(f"{name!r} is a built-in family")
    found = _LOADED.get(name)
    if found is not None:
        _LOADED.remove(found)
    _MODULES.pop(name, None)


def declarations() -> dict[str, str]:
    """Family name -> the module that declares it, for every family registered here that is not
    built in: what another process of this phasebench needs to know the same families
    (:func:`adopt`; the leaderboard's validating processes)."""
    return {name: module for name, module in _MODULES.items() if name not in BUILTIN}


def adopt(modules: Mapping[str, str]) -> None:
    """Know the families another process of this phasebench registered (its
    :func:`declarations`): each module not yet imported is imported by name, which registers its
    family as it did there. Only for a mapping the program made from its own registry, never one
    read from a file or a submission (that would run code it names)."""
    for name, module in modules.items():
        if name not in _LOADED:
            importlib.import_module(module)
        if name not in _LOADED:
            raise SpecError(f"module {module!r} does not declare the family {name!r}")


def get_family(spec: SplitSpec | str) -> Family:
    """The declaration of ``spec``'s family, or of the family named so (its module imported on
    first use); an unknown name is refused with the list of known ones."""
    name = spec if isinstance(spec, str) else spec.family
    found = _LOADED.get(name)
    if found is None:
        if name not in _MODULES:
            raise SpecError(f"'family' must be one of {', '.join(_MODULES)} (got {name!r})")
        found = _LOADED.add(importlib.import_module(_MODULES[name]).FAMILY, [name])
    return found
