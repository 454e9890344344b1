"""Render the static site from ``leaderboard.json``. Displays numbers; never computes a statistic.

Pages are jinja2 templates with autoescaping (every string from a submission is text, never
markup). The site is one index of boards, one page per board (one task at one length), one page
per model, so no page carries every row. Charts are inline SVG drawn by the templates from
:mod:`phasebench.leaderboard.charts`, so they follow the page's colours and filters; the only
script is the local ``leaderboard.js``. Nothing is loaded from the network.

Pages are written with plain writes: :func:`build_site` renders into a staging folder that is
swapped in whole, so a failure never leaves a half-written site.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from phasebench import metrics
from phasebench._version import __version__
from phasebench.atomic import atomic_write_text, check_replaceable, staged_folder
from phasebench.errors import OutputError
from phasebench.leaderboard import charts

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
        auto_reload=False,
    )
    env.filters["pct"] = _pct
    env.filters["pp"] = _pp
    env.filters["ci"] = _ci
    env.filters["ci_pp"] = functools.partial(_ci, unit=" pp")
    env.filters["p"] = _p
    env.filters["tokens"] = _tokens
    env.filters["identity"] = identity
    env.filters["key"] = _key
    env.filters["serving"] = lambda s: _serving(s) if s else ""
    env.filters["short"] = _short
    env.filters["heat"] = charts.heat_class
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


def _p(value: Any, n_perm: int | None = None) -> str:
    """``p = 0.0123``, or ``p < 0.001`` at the permutation floor (:func:`metrics.format_p`)."""
    shown = metrics.format_p(value, n_perm)
    if shown is None:
        return "p —"
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"


def _key(value: Any) -> str:
    """A number as a sort key in the page (``data-v``): 6 significant digits, empty if missing."""
    return "" if value is None else f"{value:.6g}"


def _tokens(value: Any) -> str:
    return "—" if value is None else f"{value} tokens"


# -- identity and links -------------------------------------------------------------------------

#: The project's source repository and the study it follows; every page links to both.
REPOSITORY = "https://github.com/phasebench/phasebench"
#: The study the benchmark follows: its arXiv id, shown on the site, and its page.
ARXIV_ID = "2609.36322"
PAPER = f"https://arxiv.org/abs/{ARXIV_ID}"
HUB = "https://huggingface.co"
#: A board page shows its first rows only until the visitor asks for all of them.
TOP_N = 100
#: KV-cache descriptions are cut to this many characters in tables (full text on the model page).
KV_SHORT = 40


def identity(item: Mapping[str, Any]) -> str:
    """What tells one entry from another: model, variant and serving engine when given."""
    parts = [str(item.get("model", ""))]
    meta = item.get("meta") or {}
    variant = item.get("variant") or meta.get("variant")
    if variant:
        parts.append(str(variant))
    serving = item.get("serving") or meta.get("serving")
    if serving:
        parts.append(_serving(serving))
    return " · ".join(parts)


def _serving(serving: Any) -> str:
    if isinstance(serving, Mapping):
        return " ".join(str(serving[k]) for k in ("engine", "version") if serving.get(k))
    return str(serving)


def _short(text: Any, limit: int = KV_SHORT) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def hub_url(model: str) -> str | None:
    """The model's page on the Hub, for an ``org/name`` id (published figures have none)."""
    parts = str(model).split("/")
    if len(parts) == 2 and all(parts) and " " not in model:
        return f"{HUB}/{model}"
    return None


def build_date() -> str:
    """The day the site is built (UTC), or the day of ``SOURCE_DATE_EPOCH`` when it is set, so
    that a rebuild from the same inputs can be made byte-identical."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (
        datetime.datetime.fromtimestamp(int(epoch), datetime.UTC)
        if epoch and epoch.isdigit()
        else datetime.datetime.now(datetime.UTC)
    )
    return moment.strftime("%Y-%m-%d")


def study_bibtex() -> str:
    """The study's BibTeX entry, from the one text the data card and the READMEs cite."""
    from phasebench.resources import resource_dir

    text = (resource_dir("data_cards") / "citation.md").read_text(encoding="utf-8")
    start = text.index("```bibtex") + len("```bibtex")
    return text[start : text.index("```", start)].strip()


def _slug(board: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in board).strip("-")


def board_page(board: str) -> str:
    """The page of one board (``phasebench_kv@4096`` -> ``boards/phasebench-kv-4096.html``)."""
    return f"boards/{_slug(board)}.html"


# -- site ---------------------------------------------------------------------------------------


def render_site(
    board: Mapping[str, Any],
    out: Path,
    *,
    built: str | None = None,
    repository: str = REPOSITORY,
) -> list[Path]:
    """Write index.html (the boards and their leaders), one page per board under boards/, one
    page per model under models/, reported.html (published figures), rejections.html, the
    static pages and the assets. ``built`` is the build date shown on every page."""
    out = Path(out)
    env = environment()
    written: list[Path] = []
    site = {
        "built": built or board.get("built") or build_date(),
        "version": board.get("phasebench_version", __version__),
        "repository": repository,
        "paper": PAPER,
        "arxiv": ARXIV_ID,
        "n_perm": (board.get("method") or {}).get("n_perm"),
    }
    env.globals.update(site=site, hub_url=hub_url)

    def write(rel: str, template: str, **context: Any) -> None:
        path = out / rel
        text = env.get_template(template).render(**context)
        written.append(atomic_write_text(path, text))

    boards = []
    order = {r["board"]: (r["task"], r["length"]) for r in board["rows"]}
    for name in sorted(order, key=lambda n: order[n]):  # by task, then length as a number
        members = [r for r in board["rows"] if r["board"] == name]  # in score's rank order
        first = members[0]
        labels = [identity(r) for r in members]
        boards.append(
            {
                "name": name,
                "slug": _slug(name),
                "label": f"{first['task']} @ {first['length']} tokens",
                "task": first["task"],
                "length": first["length"],
                "rows": members,
                "labels": labels,
                "leaders": [
                    (r, lab) for r, lab in zip(members, labels, strict=True) if r["rank_worst"] == 1
                ],  # fmt: skip
                "has_serving": any(r.get("serving") for r in members),
                "kv_caches": sorted({str(r["kv_cache"]) for r in members if r.get("kv_cache")}),
                "max_phases": max((len(r.get("per_phase") or []) for r in members), default=0),
                "scatter": charts.scatter_svg(
                    members,
                    labels,
                    "scatter",
                    f"{first['task']} @ {first['length']} tokens: average against cross-fitted "
                    "worst phase, one point per model · variant",
                ),
            }
        )
    common = {"method": board.get("method") or {}}
    write(
        "index.html",
        "index.html.j2",
        board=board,
        boards=boards,
        root=".",
        bibtex=study_bibtex(),
        **common,
    )
    for b in boards:
        write(
            f"boards/{b['slug']}.html",
            "board.html.j2",
            b=b,
            boards=boards,
            top_n=TOP_N,
            kv_short=KV_SHORT,
            root="..",
            **common,
        )
    write("reported.html", "reported.html.j2", rows=board.get("reported", []), root=".", **common)
    for name in STATIC_PAGES:
        write(name, f"{name}.j2", root=".", bibtex=study_bibtex(), **common)
    schema = resources.files("phasebench.leaderboard") / "submission.schema.json"
    written.append(atomic_write_text(out / "submission.schema.json", schema.read_text("utf-8")))
    board_slugs = {(r["task"], r["length"]): _slug(r["board"]) for r in board["rows"]}
    for page, detail in sorted(board["models"].items()):
        items = []
        for n, entry in enumerate(detail["boards"], start=1):
            summary = entry["summary"]
            sweeps = summary.get("margin_sweeps")  # a family with a margin
            items.append(
                {
                    "entry": entry,
                    "board": board_slugs.get((entry["task"], entry["length"])),
                    "profile": functools.partial(charts.profile_svg, summary, f"profile-{n}"),
                    "strip": (
                        functools.partial(charts.margin_strip_svg, sweeps, f"strip-{n}")
                        if sweeps
                        else None
                    ),
                    "bound": charts.margin_bound(sweeps) if sweeps else None,
                }
            )
        write(
            page,
            "model.html.j2",
            detail=detail,
            label=identity(detail),
            items=items,
            root="..",
            **common,
        )
    write("rejections.html", "rejections.html.j2", report=board["rejections"], root=".", **common)
    for name in ASSETS:
        source = resources.files("phasebench.leaderboard") / "templates" / name
        written.append(atomic_write_text(out / "assets" / name, source.read_text("utf-8")))
    return written


def build_site(
    board: Mapping[str, Any],
    out: Path,
    *,
    built: str | None = None,
    repository: str = REPOSITORY,
) -> list[Path]:
    """Tables plus site into ``out``, built beside it and swapped in: a failure leaves the
    previous site as it was, and ``out`` is replaced only if it is an earlier phasebench site
    (it holds :data:`SITE_MARKER`) or empty; anything else is refused before any work.

    The build date (``built``, default :func:`build_date`) goes into ``leaderboard.json`` and on
    every page, next to the phasebench version."""
    from phasebench.leaderboard.score import write_tables

    out = Path(out)
    board = {**board, "built": built or build_date()}
    with staged_folder(out, marker=SITE_MARKER) as staging:
        write_tables(board, staging)
        render_site(board, staging, repository=repository)
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
