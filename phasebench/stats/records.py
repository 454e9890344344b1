"""The scored record: what one sample contributes to the phase statistics. Standard library
only, so the lm-eval task hooks and the sample readers can build records without importing
numpy or scipy (which :func:`phasebench.stats.summarize_samples` needs only when it runs)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple


class ScoredRecord(NamedTuple):
    """What one sample contributes to the phase statistics. A tuple, so lm-eval can collect
    and log it (a logged record comes back as a list: :meth:`of` turns it back)."""

    #: The sample's config length (:func:`phasebench.rows.config_length`).
    length: int
    modulus: int
    #: Its paired unit (:func:`phasebench.families.paired_unit`): one row of the phase matrix.
    unit: Any
    phase: int
    acc: float
    #: The family's margin (None for families without one).
    margin: float | None
    #: Padding tokens (the sweep order of a margin family; 0 elsewhere).
    pad: int
    #: The row's length phase where its config ran the length axis (None elsewhere).
    length_phase: int | None = None

    @classmethod
    def of(cls, items: Iterable[Any]) -> ScoredRecord:
        """A record from its fields in order (a logged list, nested lists made tuples)."""
        return cls(*(tuple(x) if isinstance(x, list) else x for x in items))
