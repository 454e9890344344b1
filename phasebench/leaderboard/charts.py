"""Geometry of the site's charts: where each mark goes in an inline SVG, nothing else.

The charts are drawn by templates (``templates/charts.html.j2``) as inline SVG, so they scale,
follow the page's colours (dark mode included), name every point by model and variant, and can
be filtered by the page's script like the table beside them. These functions only map numbers
already in ``leaderboard.json`` to pixels and colour classes; they never compute a statistic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: How many of a board's leading points carry a label before a visitor highlights one.
LABELLED = 3
#: Colour classes of a cell shaded by accuracy (``heat-0`` lowest); the stylesheet names them.
HEAT_STEPS = 5
#: Diverging colour classes of the code margin strip (``m-0`` most negative, ``m-6`` most positive).
MARGIN_STEPS = 7


def heat_class(value: float | None) -> str:
    """``heat-0`` .. ``heat-4`` for an accuracy in [0, 1] (``heat-none`` when missing)."""
    if value is None:
        return "heat-none"
    return f"heat-{min(HEAT_STEPS - 1, max(0, int(value * HEAT_STEPS)))}"


class Frame:
    """A plot area of ``width`` x ``height`` px with margins, both axes 0-100 %."""

    def __init__(self, width: int, height: int, left: int = 44, right: int = 12,
                 top: int = 12, bottom: int = 38) -> None:  # fmt: skip
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = left, right, top, bottom

    def x(self, fraction: float) -> float:
        return round(self.left + fraction * (self.width - self.left - self.right), 1)

    def y(self, fraction: float) -> float:
        return round(
            self.height - self.bottom - fraction * (self.height - self.top - self.bottom), 1
        )

    def ticks(self) -> list[dict[str, Any]]:
        return [
            {"label": f"{v}", "x": self.x(v / 100), "y": self.y(v / 100)} for v in range(0, 101, 25)
        ]


def scatter(rows: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> dict[str, Any]:
    """Average (x) against cross-fitted worst phase (y) for one board, one point per row in the
    board's order; the first :data:`LABELLED` points are highlighted (labelled) to begin with."""
    frame = Frame(380, 320)
    points = []
    for index, (row, label) in enumerate(zip(rows, labels, strict=True)):
        acc, worst = row.get("acc"), row.get("worst_phase_crossfit")
        if acc is None or worst is None:
            continue
        x, y = frame.x(acc), frame.y(worst)
        points.append(
            {
                "index": index,
                "x": x,
                "y": y,
                "label": label,
                "acc": acc,
                "worst": worst,
                "highlight": index < LABELLED,
                "anchor": "end" if x > frame.width * 0.6 else "start",
            }
        )
    return {
        "frame": frame,
        "points": points,
        "diagonal": (frame.x(0), frame.y(0), frame.x(1), frame.y(1)),
    }


def profile(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Per-phase accuracy with its interval band and the average, for a model page."""
    frame = Frame(420, 240)
    per = summary["per_phase"]
    last = max(1, len(per) - 1)
    points, upper, lower = [], [], []
    for i, p in enumerate(per):
        x = round(frame.left + i / last * (frame.width - frame.left - frame.right), 1)
        if p["acc"] is not None:
            points.append({"x": x, "y": frame.y(p["acc"]), "phase": p["phase"], "acc": p["acc"]})
        lo, hi = p["ci"]
        if lo is not None and hi is not None:
            upper.append(f"{x},{frame.y(hi)}")
            lower.append(f"{x},{frame.y(lo)}")
    average = summary.get("acc")
    return {
        "frame": frame,
        "points": points,
        "line": " ".join(f"{p['x']},{p['y']}" for p in points),
        "band": " ".join(upper + lower[::-1]),
        "average_y": None if average is None else frame.y(average),
        "phase_ticks": [
            {
                "x": round(frame.left + i / last * (frame.width - frame.left - frame.right), 1),
                "label": p["phase"],
            }
            for i, p in enumerate(per)
        ],  # fmt: skip
    }


def margin_strip(code: Mapping[str, Any]) -> dict[str, Any]:
    """One row of cells per (item, padding style) pattern, one column per padding length,
    shaded by the sign and size of the margin relative to the largest one shown."""
    margins = code["margins"]
    finite = [abs(v) for row in margins for v in row if v is not None]
    bound = max(finite) if finite and max(finite) > 0 else 1.0
    cell_w, cell_h, left, top = 20, 12, 96, 6
    cells = []
    for r, row in enumerate(margins):
        for c, v in enumerate(row):
            if v is None:
                shade = "m-none"
            else:
                step = int((v / bound + 1) / 2 * MARGIN_STEPS)
                shade = f"m-{min(MARGIN_STEPS - 1, max(0, step))}"
            cells.append({"x": left + c * cell_w, "y": top + r * cell_h, "shade": shade,
                          "value": v, "pattern": code["patterns"][r], "step": c})  # fmt: skip
    steps = max((len(row) for row in margins), default=0)
    return {
        "cells": cells,
        "cell_w": cell_w,
        "cell_h": cell_h,
        "left": left,
        "top": top,
        "width": left + steps * cell_w + 8,
        "height": top + len(margins) * cell_h + 30,
        "rows": [
            {"y": top + r * cell_h + cell_h - 3, "label": p} for r, p in enumerate(code["patterns"])
        ],
        "cols": [{"x": left + c * cell_w + cell_w / 2, "label": c} for c in range(steps)],
        "bound": bound,
    }
