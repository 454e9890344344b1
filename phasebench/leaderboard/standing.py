"""Which rows of a board are ranked, and why the others are not: one ranked row per
configuration, references and floors drawn apart. Selection among scored rows only; every number
a rule reads is the row's own, computed by :mod:`phasebench.stats` through the scoring.

A row's ``standing`` is one of :data:`STANDINGS`, decided in this order:

* ``test fixture``: ``fixture: true`` in ``submission.yaml`` (a random or toy model).
* ``reference``: ``role: reference`` in ``submission.yaml`` (the run a compressed method is
  measured against: no compression, full attention), on a board that holds another entry of
  the same model (one it is the reference for). It is the ceiling of a board of methods, not a
  competitor: drawn as a reference row and line, never ranked, never the leader. On a board
  with no other entry of its model it is an entry like any other.
* ``earlier design``: a configuration (:data:`CONFIGURATION`: one model, revision, backend,
  declared KV cache, precision, serving stack and chat template on one board) run at several
  designs is ranked once, at its strongest design (:func:`strongest`: most base items); the
  others are listed under it with their numbers (``design_of`` names the ranked row's anchor).
* ``at floor``: the configuration's average cannot be told from the task's chance level and its
  gap is not significant (:func:`at_floor`): phase sensitivity is not measurable there.
* ``ranked``: everything else. Places and rank intervals are computed over these rows only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

RANKED = "ranked"
EARLIER = "earlier design"
REFERENCE = "reference"
AT_FLOOR = "at floor"
FIXTURE = "test fixture"
#: Every standing, in the order a board lists its rows (ranked rows first).
STANDINGS = (RANKED, REFERENCE, AT_FLOOR, FIXTURE, EARLIER)
#: The value of ``role`` in ``submission.yaml`` that declares a reference run.
REFERENCE_ROLE = "reference"

#: What makes two rows one configuration: runs that agree on all of these differ only in their
#: design (base items, seed), so the board ranks them once.
CONFIGURATION = ("board", "model", "revision", "backend", "kv_cache", "precision", "serving",
                 "chat_template")  # fmt: skip

#: How far above chance (in accuracy, 0..1) the lower end of an average's 95% interval may
#: reach and still count as "at chance": a phase can fall at most this far below such an
#: average, far less than the smallest gap any design detects with 80% power (18 points at 256
#: base items x 8 phases), so a gap that is not significant there says nothing of robustness.
FLOOR_MARGIN = 0.05

#: What an at-floor row says instead of "no significant gap".
FLOOR_NOTE = "at floor: phase sensitivity not measurable"


def configuration(row: Mapping[str, Any]) -> str:
    """The row's configuration, as one stable text (the fields of :data:`CONFIGURATION`)."""
    return json.dumps([row.get(k) for k in CONFIGURATION], sort_keys=True, default=str)


def strongest(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The design a configuration is ranked at: the most base items; among equals the latest
    run, then the first model page by name (deterministic)."""
    return min(rows, key=lambda r: (-int(r.get("n_base") or 0), _negated(r.get("date")),
                                    str(r.get("page"))))  # fmt: skip


def _negated(date: Any) -> tuple[int, ...]:
    return tuple(-ord(c) for c in str(date or ""))


def at_floor(row: Mapping[str, Any], chance: float) -> bool:
    """Whether the row's average sits at the task's floor or chance level (``chance``, declared
    by its family): its gap is not significant and the lower end of the average's 95% interval
    is at most :data:`FLOOR_MARGIN` above chance. A model that may be guessing (or failing
    everywhere) has a flat profile whatever its position handling, so "no significant gap"
    would read as robustness it did not show. A significant gap is measured sensitivity, so
    such a row is never at floor."""
    if row.get("significant"):
        return False
    interval = row.get("acc_ci") or [None, None]
    low = interval[0] if interval[0] is not None else row.get("acc")
    return low is not None and low <= chance + FLOOR_MARGIN + 1e-12


def assign(rows: Sequence[dict[str, Any]], chance: Mapping[str, float]) -> None:
    """Set each row's ``standing``, ``ranked``, ``configuration`` and, on the row a
    configuration is ranked at, ``earlier_designs`` (the other designs' anchors, strongest
    first) and ``designs_disagree`` (one design's gap significant, another's not); on an
    earlier design, ``design_of`` (the anchor of its configuration's row). ``rows`` are one
    board's; ``chance`` maps a task to its family's chance level. Rows need their ``anchor``."""
    compared = {r.get("model") for r in rows
                if not r.get("fixture") and r.get("role") != REFERENCE_ROLE}  # fmt: skip
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        row["configuration"] = configuration(row)
        groups.setdefault(row["configuration"], []).append(row)
    for members in groups.values():
        head = strongest(members)
        others = sorted((r for r in members if r is not head),
                        key=lambda r: (-int(r.get("n_base") or 0), str(r.get("page"))))  # fmt: skip
        for row in members:
            if row.get("fixture"):
                standing = FIXTURE
            elif row.get("role") == REFERENCE_ROLE and row.get("model") in compared:
                standing = REFERENCE
            elif row is not head:
                standing = EARLIER
            elif at_floor(row, chance.get(str(row.get("task")), 0.0)):
                standing = AT_FLOOR
            else:
                standing = RANKED
            row["standing"] = standing
            row["ranked"] = standing == RANKED
            row["design_of"] = head["anchor"] if row is not head else None
        head["earlier_designs"] = [r["anchor"] for r in others]
        verdicts = {bool(r.get("significant")) for r in members}
        head["designs_disagree"] = len(verdicts) > 1
        for row in others:
            row["earlier_designs"] = []
            row["designs_disagree"] = False


def order_key(row: Mapping[str, Any], heads: Mapping[str, Mapping[str, Any]],
              ranking: str) -> tuple:  # fmt: skip
    """Where a row stands on its board: ranked configurations by place (then by the ranking
    statistic ``ranking``, a row's column), then references, at-floor rows and fixtures; each
    configuration's earlier designs right under its row. ``heads`` maps a configuration to the
    row it is ranked at."""
    head = heads[row["configuration"]]
    rank = head.get("rank_worst")
    return (
        STANDINGS.index(head["standing"]),
        rank is None,
        rank or 0,
        -(head.get(ranking) or 0.0),
        str(head.get("model")),
        str(head.get("variant") or ""),
        head["configuration"],
        row is not head,
        -int(row.get("n_base") or 0),
        str(row.get("page")),
    )


def heads(rows: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Each configuration's row (the one it is ranked at, or listed at when it is not
    ranked), by configuration."""
    return {r["configuration"]: r for r in rows if r.get("design_of") is None}
