"""Render the static site from ``leaderboard.json``. Displays numbers; never computes a statistic.

Pages are jinja2 templates with autoescaping (every string from a submission is text, never
markup); plots are matplotlib SVGs made deterministic (fixed ``svg.hashsalt``, no date metadata);
the only script is the local ``leaderboard.js``. Nothing is loaded from the network.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from phasebench.atomic import atomic_write_text, check_replaceable, staged_folder
from phasebench.errors import OutputError

ASSETS = ("leaderboard.js", "style.css")
#: Pages rendered from the method and the rules alone (no rows).
STATIC_PAGES = ("about.html", "submit.html")
#: The file that marks a folder as a phasebench site: ``build_site`` replaces only such a folder
#: (or an empty one), never anything else.
SITE_MARKER = ".phasebench-site"


def environment() -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(str(resources.files("phasebench.leaderboard") / "templates"))
    env = jinja2.Environment(
        loader=loader,
        autoescape=True,  # every page: submission text is always escaped
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["pct"] = _pct
    env.filters["pp"] = _pp
    env.filters["ci"] = _ci
    env.filters["ci_pp"] = functools.partial(_ci, unit=" pp")
    env.filters["p"] = _p
    env.filters["tokens"] = _tokens
    return env


# Every value carries its unit: accuracies in %, gaps (differences of two percentages) in
# percentage points, periods in tokens. These format numbers; they never compute one.


def _pct(value: Any, digits: int = 1) -> str:
    return "—" if value is None else f"{100 * value:.{digits}f}%"


def _pp(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f} pp"


def _ci(interval: Sequence[Any] | None, unit: str = "%") -> str:
    if not interval or interval[0] is None or interval[1] is None:
        return ""
    return f"[{100 * interval[0]:.1f}–{100 * interval[1]:.1f}{unit}]"


def _p(value: Any) -> str:
    return "—" if value is None else f"{value:.3g}"


def _tokens(value: Any) -> str:
    return "—" if value is None else f"{value} tokens"


# -- plots --------------------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.hashsalt": "phasebench",
            "svg.fonttype": "path",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    _pyplot().close(fig)
    return buf.getvalue()


def phase_profile_svg(summary: Mapping[str, Any], title: str) -> str:
    """Per-phase accuracy with its Wilson interval band, the average and the worst phase."""
    plt = _pyplot()
    per = summary["per_phase"]
    phases = [p["phase"] for p in per]
    acc = [100 * (p["acc"] if p["acc"] is not None else float("nan")) for p in per]
    lo = [100 * (p["ci"][0] if p["ci"][0] is not None else float("nan")) for p in per]
    hi = [100 * (p["ci"][1] if p["ci"][1] is not None else float("nan")) for p in per]
    fig, ax = plt.subplots(figsize=(5.2, 2.6))
    ax.fill_between(phases, lo, hi, color="#9ecae1", alpha=0.6, label="95% interval", step=None)
    ax.plot(phases, acc, marker="o", color="#08519c", label="accuracy")
    if summary.get("acc") is not None:
        ax.axhline(100 * summary["acc"], color="#636363", ls="--", lw=1, label="average")
    ax.set_xticks(phases)
    ax.set_xlabel("phase (anchor position mod modulus)")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(-2, 102)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3)
    return _svg(fig)


def margin_strip_svg(code: Mapping[str, Any], title: str) -> str:
    """Code margin log p(right) - log p(distractor) against padding length, per pattern."""
    import numpy as np

    plt = _pyplot()
    margins = np.array(
        [[np.nan if v is None else v for v in row] for row in code["margins"]], dtype=float
    )
    bound = float(np.nanmax(np.abs(margins))) if np.isfinite(margins).any() else 1.0
    height = 0.6 + 0.22 * max(1, len(code["patterns"]))
    fig, ax = plt.subplots(figsize=(5.2, min(height, 8.0)))
    image = ax.imshow(margins, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    steps = margins.shape[1]
    ax.set_xticks(range(steps), [str(x) for x in range(steps)], fontsize=6)
    ax.set_yticks(range(len(code["patterns"])), code["patterns"], fontsize=6)
    ax.set_xlabel("padding tokens added (sweep step)")
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, label="margin")
    return _svg(fig)


def scatter_svg(rows: Sequence[Mapping[str, Any]], title: str) -> str:
    """Average against the cross-fitted worst phase (the ranked number), with y = x: distance
    below the line is what averages hide."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 4.0))
    ax.plot([0, 100], [0, 100], color="#969696", lw=1, ls="--", label="y = x")
    for row in rows:
        if row.get("acc") is None or row.get("worst_phase_crossfit") is None:
            continue
        x, y = 100 * row["acc"], 100 * row["worst_phase_crossfit"]
        ax.plot([x], [y], marker="o", color="#08519c")
        ax.annotate(row["model"].split("/")[-1], (x, y), fontsize=6, xytext=(3, 3),
                    textcoords="offset points")  # fmt: skip
    ax.set_xlim(-2, 102)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("average (%)")
    ax.set_ylabel("worst phase, cross-fitted (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    return _svg(fig)


def heatmap_svg(rows: Sequence[Mapping[str, Any]], title: str) -> str:
    """Models x phases accuracy."""
    import numpy as np

    plt = _pyplot()
    width = max(len(r.get("per_phase") or []) for r in rows)
    data = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        for j, value in enumerate(row.get("per_phase") or []):
            data[i, j] = np.nan if value is None else 100 * value
    fig, ax = plt.subplots(figsize=(5.0, 0.9 + 0.3 * len(rows)))
    image = ax.imshow(data, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(width))
    ax.set_yticks(range(len(rows)), [r["model"].split("/")[-1] for r in rows], fontsize=7)
    ax.set_xlabel("phase")
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, label="accuracy (%)")
    return _svg(fig)


# -- site ---------------------------------------------------------------------------------------


def _slug(board: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in board).strip("-")


def board_page(board: str) -> str:
    """The page of one board (``phasebench_kv@4096`` -> ``boards/phasebench-kv-4096.html``)."""
    return f"boards/{_slug(board)}.html"


def render_site(board: Mapping[str, Any], out: Path) -> list[Path]:
    """Write index.html, one page per model, rejections.html, plots/*.svg and the assets."""
    out = Path(out)
    env = environment()
    written: list[Path] = []

    def write(rel: str, text: str) -> None:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        written.append(path)

    boards = []
    for name in sorted({r["board"] for r in board["rows"]}):
        members = [r for r in board["rows"] if r["board"] == name]  # in score's rank order
        slug = _slug(name)
        label = f"{members[0]['task']} @ {members[0]['length']} tokens"
        write(
            f"plots/{slug}-average-vs-worst.svg", scatter_svg(members, f"{name}: average vs worst")
        )
        write(f"plots/{slug}-phases.svg", heatmap_svg(members, f"{name}: accuracy per phase"))
        boards.append(
            {
                "name": name,
                "slug": slug,
                "label": label,
                "task": members[0]["task"],
                "length": members[0]["length"],
                "rows": members,
            }
        )
    rows = [*board["rows"], *board.get("reported", [])]
    kv_caches = sorted({str(r["kv_cache"]) for r in rows if r.get("kv_cache")})

    max_phases = max((len(r.get("per_phase") or []) for r in board["rows"]), default=0)
    write(
        "index.html",
        env.get_template("index.html.j2").render(
            board=board, boards=boards, kv_caches=kv_caches, max_phases=max_phases, root="."
        ),
    )
    for name in STATIC_PAGES:
        page = env.get_template(f"{name}.j2").render(method=board.get("method", {}), root=".")
        write(name, page)
    schema = resources.files("phasebench.leaderboard") / "submission.schema.json"
    write("submission.schema.json", schema.read_text(encoding="utf-8"))
    for page, detail in sorted(board["models"].items()):
        plots = []
        for entry in detail["boards"]:
            stem = f"{Path(page).stem}-{_slug(entry['task'] + '@' + str(entry['length']))}"
            title = f"{detail['model']} {entry['task']} @ {entry['length']}"
            write(f"plots/{stem}-profile.svg", phase_profile_svg(entry["summary"], title))
            item = {"entry": entry, "profile": f"../plots/{stem}-profile.svg", "strip": None}
            if entry["summary"].get("code"):
                write(
                    f"plots/{stem}-margins.svg", margin_strip_svg(entry["summary"]["code"], title)
                )
                item["strip"] = f"../plots/{stem}-margins.svg"
            plots.append(item)
        write(page, env.get_template("model.html.j2").render(detail=detail, plots=plots, root=".."))
    write(
        "rejections.html",
        env.get_template("rejections.html.j2").render(report=board["rejections"], root="."),
    )
    for name in ASSETS:
        source = resources.files("phasebench.leaderboard") / "templates" / name
        write(f"assets/{name}", source.read_text(encoding="utf-8"))
    return written


def build_site(board: Mapping[str, Any], out: Path) -> list[Path]:
    """Tables plus site into ``out``, built beside it and swapped in: a failure leaves the
    previous site as it was, and ``out`` is replaced only if it is an earlier phasebench site
    (it holds :data:`SITE_MARKER`) or empty; anything else is refused before any work."""
    from phasebench.leaderboard.score import write_tables

    out = Path(out)
    with staged_folder(out, marker=SITE_MARKER) as staging:
        write_tables(board, staging)
        render_site(board, staging)
    return sorted(p for p in out.rglob("*") if p.is_file() and p.name != SITE_MARKER)


def check_site_out(out: Path | str, submissions: Path | str) -> Path:
    """Refuse, before any work, a site folder that :func:`build_site` must not replace: the
    submissions folder, a folder inside it or above it, or a non-empty folder that is not an
    earlier phasebench site. Returns ``out`` resolved."""
    target, source = Path(out).resolve(), Path(submissions).resolve()
    if target == source or source in target.parents or target in source.parents:
        raise OutputError(
            f"--out {str(out)!r} overlaps the submissions folder {str(submissions)!r}; "
            f"give the site a folder of its own"
        )
    return check_replaceable(target, SITE_MARKER)


def load_board(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))
