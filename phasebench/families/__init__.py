"""Split families: pure functions from (spec, tokenizer) to rows, no I/O.

Each family is a module (``kv``, ``niah``, ``code``) that satisfies :class:`Family`; its
``prepare`` returns a plan that satisfies :class:`SplitPlan`. ``build`` and ``verification``
use nothing else, so a new family is a new module with these functions.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from phasebench.errors import SpecError
from phasebench.specs import FAMILIES, SplitSpec

if TYPE_CHECKING:
    import pyarrow as pa

    from phasebench.tokenization import PhaseTokenizer

__all__ = ["Family", "SplitPlan", "get_family"]


@runtime_checkable
class SplitPlan(Protocol):
    """A config laid out without rendering it: rows come out unit by unit (a base item at every
    phase for kv and niah, an (item, padding style) sweep for code)."""

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


class Family(Protocol):
    """What a family module provides (checked for every family by a test)."""

    #: Columns the family adds to :data:`phasebench.rows.ROW_FIELDS`.
    EXTRA_FIELDS: tuple[tuple[str, pa.DataType], ...]

    def prepare(self, spec: SplitSpec, tok: PhaseTokenizer) -> SplitPlan:
        """Plan the config, check its seams and one whole prompt on the exact path."""
        ...

    def exact_check(self, plan: Any, row: dict[str, Any]) -> None:
        """Re-encode one whole prompt and raise if any position differs."""
        ...

    def verify_row(self, tok: PhaseTokenizer, row: dict[str, Any]) -> list[str]:
        """Exact-path problems of one row, independent of the plan."""
        ...

    def verify_config(self, spec: SplitSpec, meta: dict[str, list]) -> list[str]:
        """Config-level problems (pairing, coverage) from the rows' metadata columns."""
        ...

    def describe(self, plan: Any) -> dict[str, Any]:
        """Family facts for the manifest and the data card."""
        ...


def get_family(spec: SplitSpec | str) -> Family:
    """The family module of ``spec`` (imported on first use: each has its own templates)."""
    name = spec if isinstance(spec, str) else spec.family
    if name not in FAMILIES:
        raise SpecError(f"'family' must be one of {', '.join(FAMILIES)} (got {name!r})")
    return importlib.import_module(f"phasebench.families.{name}")  # type: ignore[return-value]
