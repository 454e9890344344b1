"""Render the static site from ``leaderboard.json``. Displays numbers; never computes a statistic.

Pages are jinja2 templates with autoescaping (every string from a submission is text, never
markup). The site is one index of boards, one page per board (one task at one length, modulus
and axis), one page per model, so no page carries every row. Charts are inline SVG drawn by
the templates from :mod:`phasebench.leaderboard.charts`, so they follow the page's colours and
filters; the only script is the local ``leaderboard.js``. Nothing is loaded from the network.

Pages are written with plain writes: :func:`build_site` renders into a staging folder that is
swapped in whole, so a failure never leaves a half-written site.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from phasebench import metrics
from phasebench._version import __version__
from phasebench.atomic import atomic_copy, atomic_write_text, check_replaceable, staged_folder
from phasebench.errors import OutputError
from phasebench.formatting import format_interval, format_note, format_value
from phasebench.leaderboard import charts
from phasebench.leaderboard import standing as _standing
from phasebench.leaderboard.compare_page import compare_data
from phasebench.specs import DEFAULT_MODULUS

ASSETS = ("leaderboard.js", "compare.js", "style.css")
#: Pages rendered from the method and the rules alone (no rows).
STATIC_PAGES = ("about.html", "submit.html")
#: The file that marks a folder as a phasebench site: ``build_site`` replaces only such a folder
#: (or an empty one), never anything else.
SITE_MARKER = ".phasebench-site"


#: What a page never shows as it is (:data:`~phasebench.leaderboard.collect.INVISIBLE` less
#: tab and newline, which a prompt's window keeps): controls, and the characters that reorder
#: or hide text (a response holding U+202E would read backwards).
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)


def _shown(value: Any) -> Any:
    """Every value a template writes (jinja's ``finalize``, before autoescaping): a hidden
    character becomes its escape, ``\\u202e``, so a page shows what the text holds."""
    if isinstance(value, str) and _HIDDEN.search(value):
        text = _HIDDEN.sub(lambda m: ascii(m.group())[1:-1], str(value))
        return Markup(text) if isinstance(value, Markup) else text
    return value


def environment() -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(str(resources.files("phasebench.leaderboard") / "templates"))
    env = jinja2.Environment(
        loader=loader,
        autoescape=True,  # every page: submission text is always escaped
        finalize=_shown,  # ... and every hidden character shown as its escape
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    # every value carries its unit (accuracies in %, gaps in percentage points, periods in
    # tokens), written by the site style of phasebench.formatting; a unit filter writes a
    # value with no statistic behind it (a per-phase cell, a published figure)
    env.filters["pct"] = functools.partial(format_value, "%")
    env.filters["pp"] = functools.partial(format_value, "pp")
    env.filters["ci"] = functools.partial(format_interval, "%")
    env.filters["tokens"] = functools.partial(format_value, "tokens")
    env.filters["fmt"] = format_value
    env.filters["ival"] = format_interval
    env.filters["note"] = format_note
    env.filters["identity"] = identity
    env.filters["key"] = _key
    env.filters["serving"] = lambda s: _serving(s) if s else ""
    env.filters["short"] = _short
    env.filters["places"] = _places
    env.filters["heat"] = charts.heat_class
    env.filters["labelled"] = lambda row: (row, identity(row))
    env.filters["breakable"] = breakable
    return env


def unit_text(stat: metrics.Statistic) -> str:
    """What a column heading says under a statistic's label: what tells it apart, its unit,
    and its interval."""
    unit = {"%": "%", "pp": "pp", "tokens": "tokens", "nats": "nats"}.get(stat.unit, "")
    parts = [p for p in (stat.qualifier, unit) if p]
    text = ", ".join(parts)
    return text + (f" ± {metrics.LEVEL} CI" if stat.interval else "")


def _site_columns() -> list[dict[str, Any]]:
    """The board's score columns and the model page's summary lines, from the statistics table:
    each statistic the site shows on its own, with those shown beside it (``shown_with``)."""
    declared = metrics.statistics()
    return [
        {"stat": stat, "notes": [n for n in declared if n.shown_with == stat.key and n.site]}
        for stat in declared
        if stat.site and stat.shown_with is None and not stat.per_phase
    ]


def _glossary_entries() -> list[metrics.Statistic]:
    """Every statistic a page or an export shows, for the glossary (its ``help``)."""
    return [s for s in metrics.statistics() if s.site or s.exported]


def _key(value: Any) -> str:
    """A number as a sort key in the page (``data-v``): 6 significant digits, empty if missing."""
    if value is None:
        return ""
    return f"{value:d}" if isinstance(value, bool) else f"{value:.6g}"


# -- identity and links -------------------------------------------------------------------------

#: The project's source repository and the study it follows; every page links to both.
REPOSITORY = "https://github.com/phasebench/phasebench"
#: The study the benchmark follows: its arXiv id, shown on the site, and its page.
ARXIV_ID = "2609.36322"
PAPER = f"https://arxiv.org/abs/{ARXIV_ID}"
HUB = "https://huggingface.co"
#: A board page shows its first rows only until the visitor asks for all of them.
TOP_N = 100
#: How a board counts the rows it does not rank, several of one standing.
PLURAL = {_standing.REFERENCE: "references", _standing.AT_FLOOR: "at floor",
          _standing.EARLIER: "earlier designs", _standing.FIXTURE: "test fixtures"}  # fmt: skip
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


def breakable(name: Any) -> Markup:
    """A model id that a narrow cell may wrap after its ``/`` only (``HuggingFaceTB/`` then
    ``SmolLM2-135M-Instruct``), never inside a word; the text escaped."""
    return Markup("/<wbr>").join(escape(part) for part in str(name).split("/"))


def _serving(serving: Any) -> str:
    if isinstance(serving, Mapping):
        return " ".join(str(serving[k]) for k in ("engine", "version") if serving.get(k))
    return str(serving)


def _places(interval: Sequence[int] | None) -> str:
    """A rank interval as a cell writes it: ``2–5``, ``1`` when both ends agree, empty for
    none."""
    if not interval:
        return ""
    lo, hi = interval
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _short(text: Any, limit: int = KV_SHORT) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def hub_url(model: str) -> str | None:
    """The model's page on the Hub, for an ``org/name`` id (published figures have none)."""
    parts = str(model).split("/")
    if len(parts) == 2 and all(parts) and " " not in model:
        return f"{HUB}/{model}"
    return None


def _build_date() -> str:
    """The day the site is built (UTC), or the day of ``SOURCE_DATE_EPOCH`` when it is set, so
    that a rebuild from the same inputs can be made byte-identical."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (
        datetime.datetime.fromtimestamp(int(epoch), datetime.UTC)
        if epoch and epoch.isdigit()
        else datetime.datetime.now(datetime.UTC)
    )
    return moment.strftime("%Y-%m-%d")


def _study_bibtex() -> str:
    """The study's BibTeX entry, from the one text the data card and the READMEs cite."""
    from phasebench.resources import resource_dir

    text = (resource_dir("data_cards") / "citation.md").read_text(encoding="utf-8")
    start = text.index("```bibtex") + len("```bibtex")
    return text[start : text.index("```", start)].strip()


def _board_label(row: Mapping[str, Any]) -> str:
    """A board's name for people: task, length, modulus, and the axis or the phase subset when
    they are not the default (``phasebench_kv @ 512 tokens, modulus 8``)."""
    label = f"{row['task']} @ {row['length']} tokens"
    if row.get("modulus"):
        label += f", modulus {row['modulus']}"
    phases = row.get("n_phases")
    if phases and row.get("modulus") and phases != row["modulus"]:
        label += f" ({phases} phases)"
    axis = row.get("axis") or "needle"
    if axis != "needle":
        label += ", length phase" if axis == "length" else ", needle × length phase"
    return label


def filter_options(values: Sequence[str]) -> list[tuple[str, str]]:
    """The KV-cache filter's options, ``(value, text)``: each distinct value, its text without
    the words every option shares at the start (``kvpress 0.5.5``), never cut, so that what
    differs (press, chunk length, ratio) is what a visitor reads."""
    distinct = sorted(set(values))
    if len(distinct) < 2:
        return [(v, v) for v in distinct]
    words = [v.split(" ") for v in distinct]
    shared = 0
    while all(len(w) > shared + 1 for w in words) and len({w[shared] for w in words}) == 1:
        shared += 1
    return [(v, " ".join(w[shared:])) for v, w in zip(distinct, words, strict=True)]


def _slug(board: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in board).strip("-")


def board_page(board: str) -> str:
    """The page of one board: ``phasebench_kv@4096/m8`` -> ``boards/phasebench-kv-4096-m8.html``."""
    return f"boards/{_slug(board)}.html"


# -- site ---------------------------------------------------------------------------------------


def render_site(
    board: Mapping[str, Any],
    out: Path,
    *,
    built: str | None = None,
    repository: str = REPOSITORY,
    details: Mapping[str, list] | None = None,
) -> list[Path]:
    """Write index.html (the boards and their leaders), one page per board under boards/, one
    page per model under models/, reported.html (published figures), rejections.html, the
    static pages and the assets. ``built`` is the build date shown on every page."""
    out = Path(out)
    env = environment()
    written: list[Path] = []
    site = {
        "built": built or board.get("built") or _build_date(),
        "version": board.get("phasebench_version", __version__),
        "repository": repository,
        "paper": PAPER,
        "arxiv": ARXIV_ID,
        "n_perm": (board.get("method") or {}).get("n_perm"),
    }
    env.globals.update(
        site=site,
        hub_url=hub_url,
        unit_text=unit_text,
        row_reader=lambda row: lambda stat: row.get(stat.column),
        summary_reader=lambda summary: lambda stat: stat.value(summary),
        ranking=metrics.RANKING,  # the statistic boards rank by: no template spells its key
        default_modulus=DEFAULT_MODULUS,
        level=metrics.LEVEL,  # the intervals' level ("95%"), read from metrics.ALPHA
        floor_margin=_standing.FLOOR_MARGIN,
        # what a row's rank cell shows where it has no place
        standing_mark={
            _standing.REFERENCE: "ref.",
            _standing.AT_FLOOR: "floor",
            _standing.EARLIER: "earlier",
            _standing.FIXTURE: "—",
        },  # fmt: skip
    )

    def write(rel: str, template: str, **context: Any) -> None:
        path = out / rel
        text = env.get_template(template).render(**context)
        written.append(atomic_write_text(path, text))

    boards = []
    order = {
        r["board"]: (r["task"], r["length"], r.get("modulus") or 0, r["board"])
        for r in board["rows"]
    }
    for name in sorted(order, key=lambda n: order[n]):  # by task, length, modulus
        members = [r for r in board["rows"] if r["board"] == name]  # in score's rank order
        first = members[0]
        labels = [identity(r) for r in members]
        label = _board_label(first)
        ranked = [r for r in members if r.get("rank_worst") is not None]
        apart = [(what, sum(r.get("standing") == what for r in members))
                 for what in (_standing.REFERENCE, _standing.AT_FLOOR, _standing.EARLIER,
                              _standing.FIXTURE)]  # fmt: skip
        boards.append(
            {
                "name": name,
                "slug": _slug(name),
                "label": label,
                "task": first["task"],
                "length": first["length"],
                "modulus": first.get("modulus"),
                "phases": first.get("n_phases") or first.get("modulus"),
                "axis": first.get("axis") or "needle",
                "length_note": first.get("length_note") or "",
                "rows": members,
                "labels": labels,
                "ranked": ranked,
                "apart": [(what if n == 1 else PLURAL[what], n) for what, n in apart if n],
                "floor": [r for r in members if r.get("standing") == _standing.AT_FLOOR],
                "compared": [r for r in members if not r.get("fixture")],
                "by_anchor": {r["anchor"]: r for r in members},
                "leaders": [
                    (r, lab)
                    for r, lab in zip(members, labels, strict=True)
                    if r.get("rank_worst") == 1 and not r.get("preliminary")
                ],
                "rank_one": [r for r in members if r.get("rank_worst") == 1],
                "has_serving": any(r.get("serving") for r in members),
                "kv_caches": filter_options(
                    [str(r["kv_cache"]) for r in members if r.get("kv_cache")]
                ),  # fmt: skip
                "max_phases": max((len(r.get("per_phase") or []) for r in members), default=0),
                "scatter": charts.scatter_svg(
                    members,
                    labels,
                    "scatter",
                    f"{label}: average against worst phase (cross-fitted), one point per "
                    "model · variant",
                ),
            }
        )
    by_name = {b["name"]: b for b in boards}
    found = board.get("findings") or []
    findings = [{**f, "b": by_name[f["board"]]} for f in found if f["board"] in by_name]
    common = {
        "method": board.get("method") or {},
        "columns": _site_columns(),
        "glossary": _glossary_entries(),
        "metrics": metrics,
    }
    write(
        "index.html",
        "index.html.j2",
        board=board,
        # boards with findings first, in the order score gave them
        boards=[f["b"] for f in findings]
        + [b for b in boards if b["name"] not in {f["board"] for f in findings}],
        findings=findings,
        root=".",
        bibtex=_study_bibtex(),
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
            badge=badge_path(b["slug"]),
            root="..",
            **common,
        )
    for b in boards:
        written.extend(_write_badges(out, b))
    compared = board.get("comparisons") or {}
    for b in boards:
        if len(b["compared"]) >= 2:
            write(f"compare/{b['slug']}.html", "compare.html.j2", b=b,
                  data=compare_data(b, compared.get(b["name"]),
                                   [c["stat"] for c in common["columns"]]),
                  paired=compared.get(b["name"]) is not None, root="..", **common)  # fmt: skip
    series = []
    for n, item in enumerate(board.get("settings") or [], start=1):
        title = f"{item['model']}, {item['method']}: gap against {item['axis']}"
        points = [{**p, "board_slug": _slug(p["board"])} for p in item["points"]]
        series.append({**item, "points": points,
                       "chart": charts.settings_svg(item, f"settings-{n}", title)})  # fmt: skip
    write("methods.html", "methods.html.j2", series=series, root=".", **common)
    write("reported.html", "reported.html.j2", rows=board.get("reported", []), root=".", **common)
    for name in STATIC_PAGES:
        write(name, f"{name}.j2", root=".", bibtex=_study_bibtex(), **common)
    schema = resources.files("phasebench.leaderboard") / "submission.schema.json"
    written.append(atomic_write_text(out / "submission.schema.json", schema.read_text("utf-8")))
    board_slugs = {r["board"]: _slug(r["board"]) for r in board["rows"]}
    for page, detail in sorted(board["models"].items()):
        items = []
        for n, entry in enumerate(detail["boards"], start=1):
            summary = entry["summary"]
            sweeps = summary.get("margin_sweeps")  # a family with a margin
            slug = board_slugs.get(entry.get("board"))
            items.append(
                {
                    "entry": entry,
                    "board": slug,
                    "badge": badge_path(slug, page) if slug else None,
                    "profile": functools.partial(charts.profile_svg, summary, f"profile-{n}"),
                    "strip": (
                        functools.partial(charts.margin_strip_svg, sweeps, f"strip-{n}")
                        if sweeps
                        else None
                    ),
                    "bound": charts.margin_bound(sweeps) if sweeps else None,
                }
            )
        samples_page = samples_path(page)
        has_samples = any(entry.get("samples") for entry in detail["boards"])
        write(
            page,
            "model.html.j2",
            detail=detail,
            label=identity(detail),
            items=items,
            details=(details or {}).get(page, []),
            samples_page=Path(samples_page).name if has_samples else None,
            root="..",
            **common,
        )
        if has_samples:
            write(samples_page, "samples.html.j2", detail=detail, label=identity(detail),
                  items=items, model_page=Path(page).name, root="..", **common)  # fmt: skip
    write("rejections.html", "rejections.html.j2", report=board["rejections"], root=".", **common)
    for name in ASSETS:
        source = resources.files("phasebench.leaderboard") / "templates" / name
        written.append(atomic_write_text(out / "assets" / name, source.read_text("utf-8")))
    return written


def samples_path(page: str) -> str:
    """An entry's details page (per-phase table and a few samples per phase), beside its
    model page: ``models/<name>-samples.html``."""
    path = Path(page)
    return (path.parent / f"{path.stem}-samples.html").as_posix()


def badge_path(board_slug: str, page: str | None = None) -> str:
    """Where a board's badge lives (``badges/<board>.svg``), or an entry's badge on that board
    (``badges/<board>/<model page>.svg``), relative to the site's root."""
    if page is None:
        return f"badges/{board_slug}.svg"
    return f"badges/{board_slug}/{Path(page).stem}.svg"


def _write_badges(out: Path, b: Mapping[str, Any]) -> list[Path]:
    """The board's badge (its leader, or why it has none) and one per entry (worst phase,
    average, gap; marked when preliminary or a test fixture): small SVGs a model card links."""
    worst, acc, gap = metrics.RANKING, metrics.get("acc"), metrics.get("gap")
    short = f"phasebench {b['task'].removeprefix('phasebench_')}@{b['length']} m{b['modulus']}"
    written = []
    if b["leaders"]:
        row, _ = b["leaders"][0]
        value = f"leader: worst phase {format_value(worst, row.get(worst.column))}"
        if len(b["leaders"]) > 1:
            value = f"{len(b['leaders'])} share rank 1"
        warn = False
    else:
        apart = ", ".join(f"{n} {what}" for what, n in b["apart"])
        value, warn = ("no leader: preliminary" if b["ranked"] else f"none ranked: {apart}"), True
    text = charts.badge_svg(short, value, f"{b['label']}: {value}", warn=warn)
    written.append(atomic_write_text(out / badge_path(b["slug"]), text))
    for row in b["rows"]:
        value = (
            f"worst phase {format_value(worst, row.get(worst.column))} · average "
            f"{format_value(acc, row.get(acc.column))} · gap "
            f"{format_value(gap, row.get(gap.column))}"
        )
        if row.get("fixture"):
            value += " · test fixture"
        elif row.get("standing") not in (None, _standing.RANKED):
            value += f" · {row['standing']}"
        elif row.get("preliminary"):
            value += " · preliminary"
        title = f"{identity(row)}, {b['label']}: {value}"
        warn = bool(row.get("fixture") or row.get("preliminary"))
        text = charts.badge_svg(short, value, title, warn=warn)
        written.append(atomic_write_text(out / badge_path(b["slug"], row["page"]), text))
    return written


def _copy_details(board: Mapping[str, Any], submissions: Path, out: Path) -> dict[str, list]:
    """Each accepted entry's lm-eval results and per-sample logs, copied from its submission
    folder into ``details/<model page>/`` so that its page links them (the way the Open LLM
    Leaderboard publishes a details file per entry). Only the files validation named, from
    the folder validation read, and only plain files inside ``submissions``. Returns, per model
    page, ``(name, path relative to the site root)``."""
    root = Path(submissions).resolve()
    copied: dict[str, list] = {}
    for page, detail in board.get("models", {}).items():
        folder = (root / str(detail["name"])).resolve()
        if root not in folder.parents:
            continue
        prov = detail.get("provenance") or {}
        for name in list(prov.get("results_files") or []) + list(prov.get("samples_files") or []):
            source = folder / str(name)
            if "/" in str(name) or source.is_symlink() or not source.is_file():
                continue
            rel = f"details/{Path(page).stem}/{name}"
            atomic_copy(source, out / rel)
            copied.setdefault(page, []).append((str(name), rel))
    return copied


def build_site(
    board: Mapping[str, Any],
    out: Path,
    *,
    built: str | None = None,
    repository: str = REPOSITORY,
    submissions: Path | None = None,
) -> list[Path]:
    """Tables plus site into ``out``, built beside it and swapped in: a failure leaves the
    previous site as it was, and ``out`` is replaced only if it is an earlier phasebench site
    (it holds :data:`SITE_MARKER`) or empty; anything else is refused before any work.

    The build date (``built``, default :func:`_build_date`) goes into ``leaderboard.json`` and on
    every page, next to the phasebench version. With ``submissions`` (the folder validated),
    each entry's results and per-sample logs are published beside its page
    (:func:`_copy_details`)."""
    from phasebench.leaderboard.tables import write_tables

    out = Path(out)
    board = {**board, "built": built or _build_date()}
    with staged_folder(out, marker=SITE_MARKER) as staging:
        write_tables(board, staging)
        details = _copy_details(board, submissions, staging) if submissions is not None else {}
        render_site(board, staging, repository=repository, details=details)
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
