"""The site's charts as inline SVG: where each mark goes, nothing else.

Inline SVG scales, follows the page's colours (dark mode included, through the stylesheet's
classes), names every point by model and variant, and can be filtered by the page's script like
the table beside it. These functions only map numbers already in ``leaderboard.json`` to pixels
and colour classes; they never compute a statistic. Each chart is written as one string (every
text escaped), which keeps a 1,000-entry site quick to render.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from phasebench import metrics
from phasebench.formatting import format_value
from phasebench.leaderboard.standing import REFERENCE

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


def _axes(f: Frame, xlabel: str, ylabel: str, xticks: Sequence[tuple[float, Any]] | None) -> str:
    out = ['<g class="axis">']
    for t in f.ticks():
        out.append(
            f'<line class="grid" x1="{f.left}" x2="{f.width - f.right}" y1="{t["y"]}" '
            f'y2="{t["y"]}"/><text x="{f.left - 6}" y="{t["y"] + 3}" text-anchor="end">'
            f"{t['label']}</text>"
        )
    ticks = xticks if xticks is not None else [(t["x"], t["label"]) for t in f.ticks()]
    for x, label in ticks:
        out.append(
            f'<text x="{x}" y="{f.height - f.bottom + 14}" text-anchor="middle">{label}</text>'
        )
    base, mid_x = f.height - f.bottom, (f.left + f.width - f.right) / 2
    out.append(
        f'<line x1="{f.left}" x2="{f.width - f.right}" y1="{base}" y2="{base}"/>'
        f'<line x1="{f.left}" x2="{f.left}" y1="{f.top}" y2="{base}"/>'
        f'<text x="{mid_x}" y="{f.height - 6}" text-anchor="middle">{escape(xlabel)}</text>'
        f'<text transform="translate(12 {(f.top + base) / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(ylabel)}</text></g>'
    )
    return "".join(out)


def _open(kind: str, id: str, width: float, height: float, title: str) -> str:
    return (
        f'<svg class="chart {kind}" id="{escape(id)}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="{escape(id)}-title"><title id="{escape(id)}-title">{escape(title)}'
        "</title>"
    )


#: The most points of one board that carry a number (a 1,000-entry board stays legible).
NUMBERED = 40
#: Scatter label size in SVG units (about 11 px at 390 px, 14 px at 1280 px).
LABEL_PX = 11


def _label_box(x: float, y: float, text: str, anchor: str) -> tuple[float, float, float, float]:
    """The box (x0, y0, x1, y1) a label of digits covers at its baseline ``(x, y)``."""
    w = 0.62 * LABEL_PX * len(text) + 2
    x0 = {"start": x, "end": x - w, "middle": x - w / 2}[anchor]
    return (x0, y - LABEL_PX * 0.8, x0 + w, y + LABEL_PX * 0.2)


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(
    points: Sequence[tuple[float, float, str]], frame: Frame
) -> list[tuple[float, float, str] | None]:
    """Where each point's label goes, ``(x, y, anchor)``, or None where no place is free:
    tried around the point at growing distances, inside the plot area, clear of every label
    placed before and of every point. Pixels only."""
    area = (frame.left + 1, frame.top, frame.width - frame.right, frame.height - frame.bottom - 1)
    dots = [(x - 4.5, y - 4.5, x + 4.5, y + 4.5) for x, y, _ in points]
    placed: list[tuple[float, ...]] = []
    out: list[tuple[float, float, str] | None] = []
    for x, y, text in points:
        spot = None
        for ring in range(1, 7):
            d = 6 * ring
            for dx, dy, anchor in ((d, 4, "start"), (-d, 4, "end"), (0, -d - 1, "middle"),
                                   (0, d + 9, "middle"), (d, -d, "start"), (-d, -d, "end"),
                                   (d, d + 8, "start"), (-d, d + 8, "end")):  # fmt: skip
                box = _label_box(x + dx, y + dy, text, anchor)
                inside = (box[0] >= area[0] and box[2] <= area[2] and box[1] >= area[1]
                          and box[3] <= area[3])  # fmt: skip
                if inside and not any(_overlaps(box, o) for o in placed + dots):
                    spot = (round(x + dx, 1), round(y + dy, 1), anchor)
                    placed.append(box)
                    break
            if spot:
                break
        out.append(spot)
    return out


def scatter_svg(
    rows: Sequence[Mapping[str, Any]], labels: Sequence[str], id: str, title: str
) -> Markup:
    """Average (x) against cross-fitted worst phase (y) for one board, one point per row in the
    board's order, each with its two 95% intervals as bars; a point is filled red where the
    gap is significant and hollow where the entry is preliminary (or a test fixture); a
    reference run also draws a dashed line across the plot at its worst phase
    (``data-i`` is the row's place, which the page's script uses to follow the table). A
    point carries its place in the table as a number (the first :data:`NUMBERED`),
    placed so that no two labels overlap and none leaves the plot; its tooltip names model
    and variant with both numbers."""
    f = Frame(360, 300, left=46, right=10, top=10, bottom=40)
    out = [_open("scatter", id, f.width, f.height, title)]
    out.append(_axes(f, "average (%)", "worst phase, cross-fitted (%)", None))
    out.append(f'<line class="diagonal" x1="{f.x(0)}" y1="{f.y(0)}" x2="{f.x(1)}" y2="{f.y(1)}"/>')
    for index, row in enumerate(rows):
        # a reference run (no compression) is the ceiling the methods are measured against:
        # a dashed line across the plot at its worst phase
        worst = row.get(metrics.RANKING.column)
        if row.get("standing") == REFERENCE and worst is not None:
            y = f.y(worst)
            out.append(
                f'<line class="reference" x1="{f.left}" x2="{f.width - f.right}" y1="{y}" '
                f'y2="{y}"><title>reference: {escape(labels[index])}, worst phase '
                f"{format_value('%', worst)}</title></line>"
            )
    shown = []
    for index, row in enumerate(rows):
        acc, worst = row.get("acc"), row.get(metrics.RANKING.column)
        if acc is not None and worst is not None:
            shown.append((index, f.x(acc), f.y(worst)))
    numbered = shown[:NUMBERED]
    spots = place_labels([(x, y, str(i + 1)) for i, x, y in numbered], f)
    where = {i: spot for (i, _, _), spot in zip(numbered, spots, strict=True)}
    for index, x, y in shown:
        row, name = rows[index], escape(labels[index])
        acc, worst = row["acc"], row[metrics.RANKING.column]
        text = ""
        spot = where.get(index)
        if spot is not None:
            text = (
                f'<text x="{spot[0]}" y="{spot[1]}" text-anchor="{spot[2]}" aria-hidden="true">'
                f"{index + 1}</text>"
            )
        bars = ""
        w_lo, w_hi = row.get(metrics.RANKING.column_interval) or (None, None)
        a_lo, a_hi = row.get("acc_ci") or (None, None)
        if w_lo is not None and w_hi is not None:
            bars += f'<line class="ci" x1="{x}" x2="{x}" y1="{f.y(w_lo)}" y2="{f.y(w_hi)}"/>'
        if a_lo is not None and a_hi is not None:
            bars += f'<line class="ci" x1="{f.x(a_lo)}" x2="{f.x(a_hi)}" y1="{y}" y2="{y}"/>'
        kind = ("sig" if row.get("significant") else "flat") + (
            " pre" if row.get("preliminary") or row.get("fixture") else ""
        )
        marks = ", significant gap" if row.get("significant") else ""
        marks += ", preliminary" if row.get("preliminary") and not row.get("fixture") else ""
        out.append(
            f'<g class="pt{" hl" if index < LABELLED else ""}" data-i="{index}">{bars}'
            f'<circle class="{kind}" cx="{x}" cy="{y}" r="4"><title>{index + 1}. {name}: '
            f"average {format_value('%', acc)}, worst phase {format_value('%', worst)}{marks}"
            f"</title></circle>{text}</g>"
        )
    out.append("</svg>")
    return Markup("".join(out))


def profile_svg(summary: Mapping[str, Any], id: str, title: str) -> Markup:
    """Per-phase accuracy with its interval band and the average, for a model page."""
    f = Frame(420, 240)
    per = summary["per_phase"]
    last = max(1, len(per) - 1)
    xs = [round(f.left + i / last * (f.width - f.left - f.right), 1) for i in range(len(per))]
    points, upper, lower = [], [], []
    for x, p in zip(xs, per, strict=True):
        if p["acc"] is not None:
            points.append((x, f.y(p["acc"]), p["phase"], p["acc"]))
        lo, hi = p["ci"]
        if lo is not None and hi is not None:
            upper.append(f"{x},{f.y(hi)}")
            lower.append(f"{x},{f.y(lo)}")
    out = [_open("profile", id, f.width, f.height, title)]
    out.append(_axes(f, "phase (anchor position mod modulus)", "accuracy (%)",
                     [(x, p["phase"]) for x, p in zip(xs, per, strict=True)]))  # fmt: skip
    if upper:
        out.append(f'<polygon class="band" points="{" ".join(upper + lower[::-1])}"/>')
    if summary.get("acc") is not None:
        y = f.y(summary["acc"])
        out.append(
            f'<line class="average" x1="{f.left}" x2="{f.width - f.right}" y1="{y}" y2="{y}"/>'
        )
    out.append(f'<polyline class="line" points="{" ".join(f"{x},{y}" for x, y, _, _ in points)}"/>')
    for x, y, phase, acc in points:
        out.append(
            f'<circle class="dot" cx="{x}" cy="{y}" r="3.5"><title>phase {phase}: '
            f"{format_value('%', acc)}</title></circle>"
        )
    out.append("</svg>")
    return Markup("".join(out))


def margin_strip_svg(code: Mapping[str, Any], id: str, title: str) -> Markup:
    """One row of cells per (item, padding style) pattern, one column per padding length,
    shaded by the sign and size of the margin relative to the largest one shown; each cell's
    tooltip gives the pattern, the step and the margin."""
    margins = code["margins"]
    finite = [abs(v) for row in margins for v in row if v is not None]
    bound = max(finite) if finite and max(finite) > 0 else 1.0
    # the row labels' column is as wide as the longest label (8-unit text, about 5 units a
    # character), so that none is cut at the left edge
    longest = max((len(str(p)) for p in code["patterns"]), default=4)
    cell_w, cell_h, top = 20, 12, 6
    left = int(max(40, 5.2 * longest + 10))
    steps = max((len(row) for row in margins), default=0)
    width, height = left + steps * cell_w + 8, top + len(margins) * cell_h + 30
    out = [
        f'<svg class="chart strip" id="{escape(id)}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="{escape(id)}-title"><title id="{escape(id)}-title">{escape(title)}'
        f'</title><g class="axis">'
    ]
    patterns = [escape(p) for p in code["patterns"]]
    for r, label in enumerate(patterns):
        y = top + r * cell_h + cell_h - 3
        out.append(f'<text x="{left - 4}" y="{y}" text-anchor="end" class="small">{label}</text>')
    for c in range(steps):
        x = left + c * cell_w + cell_w / 2
        out.append(f'<text x="{x}" y="{height - 18}" text-anchor="middle" class="small">{c}</text>')
    out.append(
        f'<text x="{left + (width - left) / 2}" y="{height - 4}" text-anchor="middle">'
        "padding tokens added (sweep step)</text></g>"
    )
    for r, row in enumerate(margins):
        for c, v in enumerate(row):
            if v is None:
                shade, shown = "m-none", "—"
            else:
                step = int((v / bound + 1) / 2 * MARGIN_STEPS)
                shade, shown = f"m-{min(MARGIN_STEPS - 1, max(0, step))}", f"{v:.2f}"
            out.append(
                f'<rect class="{shade}" x="{left + c * cell_w}" y="{top + r * cell_h}" '
                f'width="{cell_w - 1}" height="{cell_h - 1}"><title>{patterns[r]}, step {c}: '
                f"{shown}</title></rect>"
            )
    out.append("</svg>")
    return Markup("".join(out))


def margin_bound(code: Mapping[str, Any]) -> float:
    """The largest margin shown (the end of the colour scale), for the caption."""
    finite = [abs(v) for row in code["margins"] for v in row if v is not None]
    return max(finite) if finite and max(finite) > 0 else 1.0


def _text_width(text: str, size: float = 11) -> float:
    """About how wide ``text`` is at ``size`` in a sans-serif face (a badge's box follows it)."""
    return round(0.6 * size * len(text) + 12, 1)


def badge_svg(label: str, value: str, title: str, *, warn: bool = False) -> str:
    """A small self-contained SVG badge (``label | value``) a model card can embed: its own
    colours and font, no script, no external reference; ``warn`` shades the value (a
    preliminary entry, a board without a leader)."""
    left, right = _text_width(label), _text_width(value)
    width, height = left + right, 20
    colour = "#b35900" if warn else "#08519c"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
        f'<rect width="{left}" height="{height}" fill="#333333"/>'
        f'<rect x="{left}" width="{right}" height="{height}" fill="{colour}"/>'
        '<g fill="#ffffff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="6" y="14">{escape(label)}</text>'
        f'<text x="{left + 6}" y="14">{escape(value)}</text></g></svg>\n'
    )


def settings_svg(series: Mapping[str, Any], id: str, title: str) -> Markup:
    """One method across its settings: gap (y, 0-100 pp) with its 95% interval against the
    varied parameter (x, its values evenly spaced in order), one point per entry, entries at
    one value side by side; filled red where the gap is significant, hollow where the entry is
    preliminary, as on the board's chart. Each point's tooltip names its board and variant."""
    f = Frame(420, 240, left=46, right=12, top=10, bottom=40)
    values = list(series["values"])
    span = f.width - f.left - f.right
    step = span / len(values)
    xs = {v: f.left + step * (i + 0.5) for i, v in enumerate(values)}
    ticks = [(round(xs[v], 1), escape(str(v))) for v in values]
    out = [_open("settings", id, f.width, f.height, title)]
    out.append(_axes(f, str(series["axis"]).replace("_", " "), "gap (pp)", ticks))
    gap = metrics.get("gap")
    at: dict[Any, list[Mapping[str, Any]]] = {}
    for point in series["points"]:
        at.setdefault(point["value"], []).append(point)
    for value, points in at.items():
        width = min(step * 0.7, 14 * len(points))
        for k, point in enumerate(points):
            x = round(xs[value] + (k + 0.5) * width / len(points) - width / 2, 1)
            y = f.y(point["gap"])
            lo, hi = point.get("gap_ci") or (None, None)
            bar = (
                f'<line class="ci" x1="{x}" x2="{x}" y1="{f.y(lo)}" y2="{f.y(hi)}"/>'
                if lo is not None and hi is not None
                else ""
            )
            kind = ("sig" if point.get("significant") else "flat") + (
                " pre" if point.get("preliminary") else ""
            )
            name = escape(f"{point['board']} · {point.get('variant') or ''}")
            shown = format_value(gap, point["gap"])
            out.append(
                f'<g class="pt">{bar}<circle class="{kind}" cx="{x}" cy="{y}" r="4"><title>'
                f"{escape(str(value))}: {name}: gap {shown}</title></circle></g>"
            )
    out.append("</svg>")
    return Markup("".join(out))
