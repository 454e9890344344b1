"""The built site in real headless Chromium (Debian's package) through Playwright's Python API,
at 1280 px and 390 px, light and dark, with axe-core (the copy bundled by the
axe-playwright-python package, injected from the installed file: nothing is downloaded)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import sync_playwright

from phasebench import __version__
from phasebench.leaderboard.render import board_page, build_site, identity
from phasebench.leaderboard.score import load_reported, score
from phasebench.leaderboard.validate import validate_all
from support.submissions import REVISION, TASKS, make_submission, split_rows

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTHS = (1280, 390)
BUILT = "2026-01-02"
LONG_KV = (
    "kvpress SnapKVPress(compression_ratio=0.25, window_size=64, kernel_size=5) on eager attention"
)


def _variant(subs: Path, rows, name: str, accuracy, kv: str) -> None:
    made = make_submission(subs, rows, model="acme/pressed", accuracy=accuracy, seed=1,
                           meta={"variant": name, "kv_cache": kv})  # fmt: skip
    made.rename(made.parent / f"{REVISION}+{name}")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("site")
    rows = split_rows(tmp / "split")
    subs = tmp / "subs"
    make_submission(subs, rows, model="acme/flat-attention", accuracy=[0.8] * 8)
    make_submission(subs, rows, model="acme/chunked-kv", accuracy=[0.95, 0.95, 0.2, 0.2] * 2,
                    meta={"kv_cache": "CSA window 8 stride 4"})  # fmt: skip
    make_submission(subs, rows, model="acme/mild", accuracy=[0.9, 0.7] * 4)
    _variant(subs, rows, "kvpress-snapkv-r0.25", [0.9, 0.3] * 4, LONG_KV)
    _variant(subs, rows, "kvpress-knorm-r0.25", [0.5] * 8, "kvpress KnormPress(0.25)")
    board = score(validate_all(subs, tasks=TASKS, cache=tmp / "cache"), load_reported())
    build_site(board, tmp / "site", built=BUILT)
    return tmp / "site"


@contextlib.contextmanager
def serve(folder: Path):
    """The site over HTTP on 127.0.0.1, from a thread."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def server(site):
    with serve(site) as url:
        yield url


@contextlib.contextmanager
def chromium():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _watch(page, server: str) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    external: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(server) else None)
    return errors, external


def _fits(page, width: int) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url}: page is {scroll} px wide at a {width} px viewport"


def _axe(page) -> None:
    violations = Axe().run(page).response["violations"]
    found = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in violations]
    assert not found, f"{page.url}: {found}"


def _board_url(server: str, site: Path) -> str:
    (page,) = [p for p in (site / "boards").glob("*.html")]
    return f"{server}/boards/{page.name}"


def _models(page) -> list[str]:
    return page.locator("#leaderboard tbody tr:visible th.c-model").evaluate_all(
        "cells => cells.map(c => c.dataset.v)"
    )


def _visible_labels(page) -> list[str]:
    return page.locator("#scatter .pt text").evaluate_all(
        "ts => ts.filter(t => getComputedStyle(t).display !== 'none' &&"
        " getComputedStyle(t.parentNode).display !== 'none').map(t => t.textContent)"
    )


def _titles(page) -> list[str]:
    """The tooltip of every chart point (SVG titles have no innerText)."""
    return page.locator("#scatter .pt circle title").evaluate_all(
        "ts => ts.map(t => t.textContent)"
    )


@pytest.mark.slow
def test_board_sorts_filters_and_keeps_its_state_in_the_url(server, site):
    url = _board_url(server, site)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors, external = _watch(page, server)
        page.goto(url)
        assert _models(page)[0] == "acme/flat-attention"  # ranked by cross-fitted worst phase
        assert page.locator("th[data-key=rank]").get_attribute("aria-sort") == "ascending"
        assert page.locator("#count").inner_text() == "5 of 5 entries shown"
        # identity: both variants of one model, told apart in the table
        labels = _models(page)
        assert "acme/pressed · kvpress-snapkv-r0.25" in labels
        assert "acme/pressed · kvpress-knorm-r0.25" in labels

        page.click("th[data-key=gap] button")  # numeric columns sort high to low first
        by_gap = _models(page)
        assert by_gap[0] == "acme/chunked-kv"
        assert "sort=gap" in page.url and "dir=desc" in page.url
        # place numbers follow the sort, and so do the chart's numbers
        places = page.locator("#leaderboard tbody tr .place").all_inner_texts()
        assert places == [str(i) for i in range(1, len(places) + 1)]
        first = page.locator("#leaderboard tbody tr").first
        point = page.locator(f"#scatter .pt[data-i='{first.get_attribute('data-order')}'] text")
        assert point.count() == 0 or point.text_content() == "1"
        # each row is an anchor: its place links to it, and the link opens on that row
        anchor = first.get_attribute("id")
        assert first.locator(".place").get_attribute("href") == f"#{anchor}"

        page.fill("#text-filter", "pressed")
        assert len(_models(page)) == 2
        assert page.locator("#count").inner_text() == "2 of 5 entries shown (2 match the filters)"
        assert "q=pressed" in page.url
        assert page.locator("#no-match").is_hidden()
        page.check("#show-phases")
        assert page.locator("th.ph").first.is_visible() and "phases=1" in page.url
        shared = page.url

        # the shared address opens the same view in a fresh page
        other = browser.new_page(viewport={"width": 1280, "height": 800})
        other.goto(shared)
        assert _models(other) == _models(page)
        assert other.locator("th[data-key=gap]").get_attribute("aria-sort") == "descending"
        assert other.input_value("#text-filter") == "pressed"
        assert other.locator("th.ph").first.is_visible()

        page.fill("#text-filter", "no such model")
        assert _models(page) == []
        assert page.locator("#no-match").is_visible()
        assert page.locator("#no-match").inner_text() == "No rows match these filters."
        assert page.locator("#count").inner_text().startswith("0 of 5")
        page.fill("#text-filter", "")
        page.select_option("#kv-filter", "CSA window 8 stride 4")
        assert _models(page) == ["acme/chunked-kv"] and "kv=CSA" in page.url
        page.select_option("#kv-filter", "")

        # units on the values
        first = page.locator("#leaderboard tbody tr:visible").first
        cells = first.locator("td").all_inner_texts()
        assert cells[1].split()[0].endswith("%") and cells[2].split()[0].endswith("%")
        assert cells[3].split()[1].startswith("pp")
        assert not errors, errors
        assert not external, external


@pytest.mark.slow
def test_rank_mode_changes_heading_title_and_url(server, site):
    url = _board_url(server, site)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        heading = page.locator("h1").inner_text()
        assert "ranked by worst phase (cross-fitted)" in heading
        assert "ranked by worst phase (cross-fitted)" in page.title()
        page.check("input[name=rank-by][value=average]")
        assert page.locator("h1").inner_text().endswith("ranked by average")
        assert "ranked by average" in page.title() and "rank=average" in page.url
        ranks = page.locator("#leaderboard tbody td.c-rank").evaluate_all(
            "cells => cells.map(c => [c.querySelector('.rk').textContent, c.dataset.average,"
            " (c.querySelector('.rki') || {}).textContent, c.dataset.averageRange])"
        )
        assert all(text == average for text, average, _, _ in ranks)
        # the rank interval under each rank follows the mode too
        assert all(shown == interval for _, _, shown, interval in ranks if shown is not None)
        fresh = browser.new_page()
        fresh.goto(page.url)
        assert fresh.locator("h1").inner_text().endswith("ranked by average")
        assert fresh.is_checked("input[name=rank-by][value=average]")


def _label_boxes(page) -> tuple[dict, list[dict]]:
    """The chart's box and the box of every label drawn, in page pixels."""
    return page.evaluate(
        """() => { const svg = document.querySelector('#scatter');
        const box = r => ({l: r.left, r: r.right, t: r.top, b: r.bottom});
        const labels = Array.from(svg.querySelectorAll('.pt text')).filter(t =>
            getComputedStyle(t.parentNode).display !== 'none').map(t =>
            box(t.getBoundingClientRect()));
        return [box(svg.getBoundingClientRect()), labels]; }"""
    )


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_rows_come_first_the_chart_follows_the_filters_and_its_labels_never_collide(
    server, site, width
):
    url = _board_url(server, site)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": 800})
        page.goto(url)
        chart = page.locator("#scatter").bounding_box()
        table = page.locator("#leaderboard").bounding_box()
        assert table["y"] < chart["y"]  # the rows first, the chart under them
        if width == 1280:
            first = page.locator("#leaderboard tbody tr").first.bounding_box()
            assert first["y"] + first["height"] <= 800  # a row in the first screen
        # each point draws its intervals and says whether its gap is significant
        assert page.locator("#scatter .pt line.ci").count() >= 5
        significant = page.locator("#leaderboard tbody tr").evaluate_all(
            "rows => rows.filter(r => r.querySelector('td.s-gap .sig')).length"
        )
        assert page.locator("#scatter .pt circle.sig").count() == significant > 0
        points = page.locator("#scatter .pt")
        assert points.count() == 5
        titles = _titles(page)  # every point is named by model and variant
        assert any(re.match(r"\d+\. acme/pressed · kvpress-snapkv-r0.25:", t) for t in titles)
        assert any(re.match(r"\d+\. acme/pressed · kvpress-knorm-r0.25:", t) for t in titles)
        # each point is numbered by its place in the table; the numbers lie inside the
        # chart and no two overlap
        places = page.locator("#leaderboard tbody tr .place").all_inner_texts()
        assert sorted(_visible_labels(page), key=int) == sorted(places, key=int)
        svg, boxes = _label_boxes(page)
        for i, a in enumerate(boxes):
            assert svg["l"] <= a["l"] and a["r"] <= svg["r"] and svg["t"] <= a["t"] <= svg["b"]
            for b in boxes[i + 1 :]:
                assert a["r"] <= b["l"] or b["r"] <= a["l"] or a["b"] <= b["t"] or b["b"] <= a["t"]
        # the text stays legible on a phone: at least 10 px
        size = page.locator("#scatter .pt text").first.evaluate(
            "t => t.getBoundingClientRect().height"
        )
        assert size >= 10
        page.fill("#text-filter", "pressed")
        assert page.locator("#scatter .pt:not(.off)").count() == 2
        assert len(_visible_labels(page)) == 2
        page.fill("#text-filter", "")
        # pointing at a row marks its point
        if width == 1280:
            last = page.locator("#leaderboard tbody tr").last
            index = last.get_attribute("data-order")
            last.hover()
            assert "focus" in page.locator(f"#scatter .pt[data-i='{index}']").get_attribute("class")


@pytest.mark.slow
def test_rank_model_and_header_stay_put_while_the_table_scrolls(server, site):
    url, width = _board_url(server, site), 1280
    with chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": 700})
        page.goto(url)
        # every score column fits at 1280 px without scrolling sideways
        region = page.locator(".table-scroll")
        assert region.evaluate("el => el.scrollWidth <= el.clientWidth")
        page.check("#show-phases")
        region = page.locator(".table-scroll")
        assert region.evaluate("el => el.scrollWidth > el.clientWidth")

        def lefts():
            return page.evaluate(
                """() => {const r = document.querySelector('#leaderboard tbody tr');
                return [r.cells[0].getBoundingClientRect().left,
                        r.cells[1].getBoundingClientRect().left,
                        r.cells[2].getBoundingClientRect().left]}"""
            )

        before = lefts()
        region.evaluate("el => { el.scrollLeft = 300; }")
        after = lefts()
        assert after[0] == before[0] and after[1] == before[1]  # rank and model fixed
        assert after[2] < before[2]  # the scores moved under them
        head = page.locator("#leaderboard thead th").first
        top = head.bounding_box()["y"]
        region.evaluate("el => { el.style.maxHeight = '150px'; el.scrollTop = 100; }")
        assert region.evaluate("el => el.scrollTop") > 0
        assert abs(head.bounding_box()["y"] - top) < 1  # the header row stays on top
        _fits(page, width)


@pytest.mark.slow
def test_on_a_phone_every_row_shows_worst_phase_average_and_gap(server, site):
    url = _board_url(server, site)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(url)
        region = page.locator(".table-scroll")
        assert region.evaluate("el => el.scrollWidth <= el.clientWidth")  # no sideways scroll
        rows = page.locator("#leaderboard tbody tr")
        assert rows.count() == 5
        for i in range(rows.count()):
            for key in ("worst_phase_crossfit", "acc", "gap"):
                cell = rows.nth(i).locator(f"td.s-{key}")
                box = cell.bounding_box()
                assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (i, key, box)
                heading = cell.evaluate("c => getComputedStyle(c, '::before').content")
                assert heading.strip('"') in {"worst phase", "average", "gap"}  # its words
                assert re.search(r"\d+\.\d(%| pp)", cell.inner_text())
        kv = page.locator("#leaderboard tbody td.c-kv").all_inner_texts()
        # a label read from the declared press, every parameter kept, nothing cut
        assert "SnapKV · ratio 0.25 · window 64 · kernel 5" in kv
        assert not any(LONG_KV in t or t.endswith("…") for t in kv)
        page.locator("th.c-model", has_text="kvpress-snapkv").locator("a:not(.place)").click()
        page.wait_for_load_state("networkidle")
        assert LONG_KV in page.locator("main").inner_text()  # whole on the model page
        _fits(page, 390)


@pytest.mark.slow
def test_skip_link_and_sorting_by_keyboard(server, site):
    """The first Tab reaches the skip link, Enter moves into the page; Tab reaches the sort
    headers (buttons inside th), Enter and Space sort, aria-sort says how."""
    url = _board_url(server, site)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors, _ = _watch(page, server)
        page.goto(url)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className") == "skip"
        assert page.locator("a.skip").is_visible()
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
        page.focus("#show-phases")  # the last control before the table

        def focused() -> str:
            return page.evaluate(
                "() => { const th = document.activeElement.closest('th');"
                " return th ? th.dataset.key : document.activeElement.className; }"
            )

        page.keyboard.press("Tab")
        assert focused() == "table-scroll"  # the scroll region is reachable to scroll sideways
        page.keyboard.press("Tab")
        assert focused() == "rank"
        for _ in range(6):
            if focused() == "gap":
                break
            page.keyboard.press("Tab")
        assert focused() == "gap"
        gap = page.locator("th[data-key=gap]")

        def gaps() -> list[float]:
            return [float(v) for v in page.locator("#leaderboard tbody tr").evaluate_all(
                "rows => rows.map(r => r.cells[4].dataset.v)")]  # fmt: skip

        page.keyboard.press("Enter")
        assert gap.get_attribute("aria-sort") == "descending"
        assert page.locator("th[data-key=rank]").get_attribute("aria-sort") is None
        assert gaps() == sorted(gaps(), reverse=True)
        page.keyboard.press("Space")
        assert gap.get_attribute("aria-sort") == "ascending"
        assert gaps() == sorted(gaps())
        assert not errors, errors


@pytest.mark.slow
def test_dark_mode_follows_the_system_setting(server):
    with chromium() as browser:
        colours = {}
        for scheme in ("light", "dark"):
            page = browser.new_page(color_scheme=scheme)
            page.goto(f"{server}/index.html")
            colours[scheme] = page.evaluate(
                "() => [getComputedStyle(document.body).backgroundColor,"
                " getComputedStyle(document.body).color]"
            )
        assert colours["light"] == ["rgb(255, 255, 255)", "rgb(34, 34, 34)"]
        background, text = colours["dark"]
        assert background == "rgb(18, 20, 23)" and text == "rgb(230, 230, 230)"
        # a followed #glossary link leaves the glossary on the page's own background
        page = browser.new_page(color_scheme="dark")
        page.goto(f"{server}/index.html#glossary")
        shade = page.evaluate(
            "() => getComputedStyle(document.getElementById('glossary')).backgroundColor"
        )
        assert shade in ("rgba(0, 0, 0, 0)", "transparent", background)


def _every_page(
    site: Path, server: str, browser, built: str, axe_all: bool = True, entries: set | None = None
) -> list[str]:
    """Open the pages of the site at every width and colour scheme: each fits the width, names
    its build and version, loads nothing from outside, logs no error and axe-core finds no
    violation. Every page is opened at the first width in the light scheme and audited there
    (with ``axe_all=False``: the first page of each template is audited, each top-level page,
    one board, one model page); with ``axe_all`` every page is also opened at the phone width.
    The first page of each template is opened and audited at every width and scheme: the dark
    scheme changes colours and the phone width the layout of a template, never of one page.
    ``entries``: the entry pages (``models/...``) opened, of all the site has; returns every
    page of the site, opened or not."""
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    assert {"index.html", "about.html", "submit.html", "rejections.html", "reported.html"} <= set(
        pages
    )
    kinds = {}
    for name in pages:
        kinds.setdefault(name.split("/")[0] if "/" in name else name, name)
    templates = set(kinds.values())
    for width in WIDTHS:
        for scheme in ("light", "dark"):
            page = browser.new_page(viewport={"width": width, "height": 800}, color_scheme=scheme)
            errors, external = _watch(page, server)
            first = width == WIDTHS[0] and scheme == "light"
            opened = pages if first or (axe_all and scheme == "light") else sorted(templates)
            opened = [n for n in opened if entries is None or not n.startswith("models/")
                      or n in entries or n in templates]  # fmt: skip
            audited = set(pages) if first and axe_all else templates
            for name in opened:
                page.goto(f"{server}/{name}")
                page.wait_for_load_state("networkidle")
                _fits(page, width)
                footer = page.locator("footer").inner_text()
                assert f"Built {built} with phasebench {__version__}" in footer, name
                if name in audited:
                    _axe(page)
            if width == 390 and (site / "boards").is_dir():
                board = next((site / "boards").glob("*.html")).relative_to(site).as_posix()
                page.goto(f"{server}/{board}?phases=1&all=1")
                _fits(page, width)
                _axe(page)
            assert not errors, errors
            assert not external, external
            page.close()
    return pages


@pytest.mark.slow
def test_every_page_fits_and_passes_axe(server, site):
    with chromium() as browser:
        pages = _every_page(site, server, browser, BUILT)
    models = [p for p in pages if p.startswith("models/")]
    # one page per entry, and beside it its samples page
    assert sum(not p.endswith("-samples.html") for p in models) == 5
    assert sum(p.endswith("-samples.html") for p in models) == 5
    assert sum(p.startswith("compare/") for p in pages) == 1 and "methods.html" in pages


@pytest.fixture(scope="module")
def shipped_site(tmp_path_factory, shipped_outcome) -> tuple[Any, dict, Path]:
    """The shipped example submissions validated (once per run, :func:`shipped_outcome`),
    scored and built into a site: ``(outcome, board, site folder)``, shared by the tests of
    the shipped site below."""
    site = tmp_path_factory.mktemp("shipped") / "site"
    outcome = shipped_outcome()
    board = score(outcome, load_reported())
    build_site(board, site, submissions=ROOT / "leaderboard" / "submissions")
    return outcome, board, site


def _shipped_boards(site: Path) -> dict[str, list[dict]]:
    rows = json.loads((site / "leaderboard.json").read_text())["rows"]
    boards: dict[str, list[dict]] = {}
    for row in rows:
        if not row.get("reported"):
            boards.setdefault(row["board"], []).append(row)
    return boards


@pytest.mark.slow
def test_shipped_boards_rank_one_row_per_configuration_and_no_reference_or_floor(shipped_site):
    """On every board of the shipped site (read from its leaderboard.json and pages): each
    configuration has exactly one ranked row, at its strongest design (most base items), its
    other designs listed under it and not ranked; no reference, at-floor, earlier-design or
    fixture row holds a place or a rank interval, is named a leader on the index or is a
    finding; places are counted among the ranked rows only."""
    from phasebench.leaderboard.standing import FLOOR_NOTE

    _, _, site = shipped_site
    boards = _shipped_boards(site)
    index = (site / "index.html").read_text()
    findings = json.loads((site / "leaderboard.json").read_text())["findings"]
    for name, members in boards.items():
        configurations: dict[str, list[dict]] = {}
        for row in members:
            configurations.setdefault(row["configuration"], []).append(row)
        for config, rows in configurations.items():
            heads = [r for r in rows if r["design_of"] is None]
            assert len(heads) == 1, (name, config)
            ranked = [r for r in rows if r["rank_worst"] is not None]
            assert len(ranked) <= 1 and ranked == [r for r in rows if r["ranked"]], (name, config)
            assert all(r["n_base"] <= heads[0]["n_base"] for r in rows), (name, config)
            for row in rows:
                if row is not heads[0]:
                    assert row["standing"] == "earlier design" and not row["ranked"]
                    assert row["design_of"] == heads[0]["anchor"]
        ranked = [r for r in members if r["ranked"]]
        assert all(r["standing"] == "ranked" for r in ranked)
        for row in members:
            if not row["ranked"]:
                assert row["rank_worst"] is None and row["rank_average"] is None, row["anchor"]
                assert row["rank_worst_interval"] is None, row["anchor"]
                assert row["rank_average_interval"] is None, row["anchor"]
        # every place counts ranked rows only: no place beyond their number
        assert all(1 <= r["rank_worst"] <= len(ranked) for r in ranked), name
        found = [f for f in findings if f["board"] == name][0]
        assert found["n_ranked"] == len(ranked)
        assert found["n_configurations"] == len(configurations)
        for pick in (found["largest"], found["control"]):
            if pick is not None:
                row = [r for r in members if r["anchor"] == pick["anchor"]][0]
                assert row["ranked"], (name, pick["anchor"])
        page = (site / board_page(name)).read_text()
        if any(r["standing"] == "at floor" for r in members):
            assert FLOOR_NOTE in page, name
    # the index names as leader (or ranked first) only entries ranked on some board
    leaders = re.findall(r'<ul class="leaders">(.*?)</ul>', index, re.S)
    linked = {m for block in leaders for m in re.findall(r'href="(models/[^"]+)"', block)}
    assert linked
    for page_name in linked:
        rows = [r for members in boards.values() for r in members if r["page"] == page_name]
        assert any(r["ranked"] for r in rows), page_name
    # the shipped boards as they stand: niah @ 512 m8 holds 12 rows of 8 configurations, 7
    # ranked (four earlier designs, the no-press reference); the reference never leads
    m8 = boards["phasebench_niah@512/m8"]
    assert len(m8) == 12 and len({r["configuration"] for r in m8}) == 8
    assert sum(r["ranked"] for r in m8) == 7
    reference = [r for r in m8 if r["standing"] == "reference"]
    assert [r["variant"] for r in reference] == ["kvpress-none-niah512-m8-n168"]
    assert [r["variant"] for r in m8 if r["rank_worst"] == 1] != reference
    # the code board's only entry sits at chance (50% for a two-way choice): at floor
    (code,) = boards["phasebench_code@0/m8"]
    assert code["standing"] == "at floor" and code["chance"] == 0.5
    # niah @ 512 m4: the two no-press runs are references, Chunk c=2 (2.3%) at floor
    m4 = {r["variant"]: r["standing"] for r in boards["phasebench_niah@512/m4"]}
    assert m4 == {None: "reference", "kvpress-none-niah512-m4": "reference",
                  "kvpress-chunk2-r0.1-niah512-m4": "at floor",
                  "kvpress-chunkkv2-r0.25-niah512-m4": "ranked"}  # fmt: skip
    # a configuration whose designs disagree says so on its row
    chunk4 = [r for r in m8 if r["variant"] == "kvpress-chunk4-r0.1-niah512-m8-n168"][0]
    assert chunk4["designs_disagree"] and len(chunk4["earlier_designs"]) == 2
    assert "designs disagree" in (site / board_page("phasebench_niah@512/m8")).read_text()
    # where several phases share the lowest accuracy the row says so, never one of them alone
    snapkv = [
        r for r in boards["phasebench_niah@1024/m8"] if r["variant"] == "kvpress-snapkv-r0.25"
    ]
    assert snapkv[0]["lowest_phase_ties"] == [0, 2, 3, 4, 7]
    assert "5 of 8 phases tie" in (site / board_page("phasebench_niah@1024/m8")).read_text()
    # CSV: places and their intervals as integers, empty where a row has no place
    import csv

    with (site / "leaderboard.csv").open(encoding="utf-8") as handle:
        lines = [line for line in csv.DictReader(handle) if line["reported"] == "False"]
    for column in ("rank_worst", "rank_worst_lo", "rank_worst_hi", "rank_average_lo"):
        assert all(re.fullmatch(r"\d*", line[column]) for line in lines), column
    assert {line["standing"] for line in lines} == {"ranked", "reference", "at floor",
                                                    "earlier design", "test fixture"}  # fmt: skip


@pytest.mark.slow
def test_shipped_ranks_agree_with_their_intervals_and_the_star_with_the_gap_interval(
    shipped_site,
):
    """On every board of the shipped site: each ranked row's place lies inside its rank
    interval; places follow the ranking statistic up to ties (a row with a higher cross-fitted
    worst phase never has a worse place); a gap marked significant has an interval whose
    lower end is above 0 and one not marked has an interval that reaches 0."""
    from phasebench import metrics

    _, _, site = shipped_site
    problems = []
    for name, members in _shipped_boards(site).items():
        ranked = [r for r in members if r["ranked"]]
        for row in ranked:
            for mode in ("worst", "average"):
                lo, hi = row[f"rank_{mode}_interval"]
                if not lo <= row[f"rank_{mode}"] <= hi:
                    problems.append(f"{name} {row['anchor']}: {mode} place outside [{lo}, {hi}]")
            for other in ranked:
                if (row[metrics.RANKING.column] > other[metrics.RANKING.column]
                        and row["rank_worst"] > other["rank_worst"]):  # fmt: skip
                    problems.append(f"{name} {row['anchor']}: placed below {other['anchor']}")
        for row in members:
            if row["gap_ci"] and row["gap_ci"][0] is not None:
                if row["significant"] != (row["gap_ci"][0] > 0):
                    problems.append(f"{name} {row['anchor']}: star and gap interval disagree")
    assert not problems, problems


@pytest.mark.slow
def test_shipped_examples_site_in_chromium(tmp_path, shipped_site):
    """The shipped example submissions (real runs) validate from the checkout; every page of their
    site, the entries' pages of the first entry of each board only, fits 1280 px (light; dark,
    and 390 px, on one page of each template: every page of the test site is opened at 390 px
    and audited above), with no axe-core violation on one page of each template. No
    board mixes moduli (the niah @ 512 runs at modulus 4, 8 and 12 are three boards, each
    stating its modulus); the random fixture is shown but not ranked and no preliminary entry
    is called a leader; the kvpress boards tell their presses apart in the chart and the
    filter; the SmolLM2 GGUF page shows its profiles, links its per-sample logs and its badge,
    and gives a Reproduce command with the model's Hub id and no revision (the GGUF's hash is
    not a Hub commit).
    The pictures docs/leaderboard.md shows come from benchmarks/screenshots.py."""
    submissions = ROOT / "leaderboard" / "submissions"
    outcome, board, site = shipped_site
    assert not outcome.refused, outcome.report_lines()
    models = {s.meta["model"] for s in outcome.accepted}
    assert models == {"phasebench/tiny-random-llama", "HuggingFaceTB/SmolLM2-135M-Instruct"}
    built = json.loads((site / "leaderboard.json").read_text())["built"]
    for name in {r["board"] for r in board["rows"]}:
        members = [r for r in board["rows"] if r["board"] == name]
        assert len({(r["modulus"], r["axis"], r["n_phases"]) for r in members}) == 1, name
    niah512 = [r for r in board["rows"] if r["task"] == "phasebench_niah" and r["length"] == 512]
    assert {r["modulus"] for r in niah512} == {4, 8, 12}
    assert len({r["board"] for r in niah512}) == 3
    fixture = [r for r in board["rows"] if r["model"] == "phasebench/tiny-random-llama"]
    assert fixture and all(r["fixture"] and r["rank_worst"] is None for r in fixture)
    kvpress = [r for r in board["rows"] if r["board"] == "phasebench_niah@1024/m8"]
    assert len(kvpress) == 7 and len({r["variant"] for r in kvpress}) == 7
    target = tmp_path
    shots = {name: target / f"leaderboard{name}.png" for name in ("", "-board", "-390", "-model")}
    with serve(site) as url, chromium() as browser:
        # entry pages: those of the first entry of each board (and their samples pages), the
        # other entries' pages share their template and differ in data the boards also show
        firsts = {}
        for row in board["rows"]:
            if not row.get("reported") and row.get("page"):
                firsts.setdefault(row["board"], row["page"])
        entries = set(firsts.values())
        entries |= {page.removesuffix(".html") + "-samples.html" for page in entries}
        pages = _every_page(site, url, browser, built, axe_all=False, entries=entries)
        # code@0, kv@256 (the fixture), kv@512 m4, niah@256 m4, niah@512 at m4, m8 and m12
        # (the kvpress stride sweep), niah@1024 m8 (the kvpress audit); one page per submission
        assert sum(p.startswith("boards/") for p in pages) == 8
        assert len(outcome.accepted) == len(list(submissions.glob("*/*/submission.yaml")))
        entry_pages = [p for p in pages if p.startswith("models/")]
        assert sum(not p.endswith("-samples.html") for p in entry_pages) == len(outcome.accepted)
        assert sum(p.endswith("-samples.html") for p in entry_pages) == len(outcome.accepted)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}/index.html")
        index = page.locator("main").inner_text()
        # a board with readings (168 base items x 8 phases, not preliminary) names its leader
        ranked = [r for r in board["rows"] if not r["fixture"] and not r.get("preliminary")]
        leaders = [r for r in ranked if r.get("rank_worst") == 1]
        assert leaders and "Leader:" in index
        assert all(identity(r) in index for r in leaders), [identity(r) for r in leaders]
        assert "Nothing is ranked here (1 test fixture)." in index
        # the first screen names the entry with the largest significant gap
        found = [r for r in board["rows"] if r.get("significant") and not r["fixture"]]
        largest = max(found, key=lambda r: r["gap"])
        lead = page.locator(".findings .lead")
        box = lead.bounding_box()
        assert box["y"] + box["height"] <= 800
        assert identity(largest) in lead.inner_text()
        assert f"{100 * largest['gap']:.1f} pp" in lead.inner_text()
        page.screenshot(path=str(shots[""]))
        for name in sorted({r["board"] for r in board["rows"]}):
            page.goto(f"{url}/{board_page(name)}")
            # the board's first row is inside the first screen
            first = page.locator("#leaderboard tbody tr").first.bounding_box()
            assert first["y"] + first["height"] <= 800, name
            # a significant period is named in its cell, never "consistent with —"
            for row in (r for r in board["rows"] if r["board"] == name):
                cell = page.locator(f"#{row['anchor']} td.s-dominant_period").inner_text()
                assert "consistent with —" not in cell, (name, row["anchor"])
                if row["dominant_period"] is not None:
                    assert f"consistent with {row['consistent_periods'][0]}" in cell
        for modulus in (4, 8, 12):
            page.goto(f"{url}/{board_page(f'phasebench_niah@512/m{modulus}')}")
            facts = page.locator(".board-facts").inner_text()
            assert f"modulus {modulus}, {modulus} phases" in facts, facts
        # the filter's options say what differs between the presses, uncut
        options = page.locator("#kv-filter option").all_inner_texts()[1:]
        assert len(set(options)) == len(options) >= 4
        assert all("chunk" in o and not o.endswith("…") for o in options), options
        page.goto(f"{url}/{board_page('phasebench_niah@1024/m8')}")
        titles = _titles(page)
        names = {t.split(":")[0].split(". ", 1)[1] for t in titles}
        assert len(names) == 7 and all("kvpress-" in n for n in names), names
        page.screenshot(path=str(shots["-board"]), full_page=True)
        page.goto(f"{url}/{board_page('phasebench_code@0/m8')}")
        page.locator("th.c-model a", has_text="HuggingFaceTB/SmolLM2-135M-Instruct").first.click()
        page.wait_for_load_state("networkidle")
        for selector in ("svg.profile", "svg.strip"):
            assert page.locator(selector).first.is_visible(), selector
        assert page.locator("svg.profile circle.dot").count() >= 8
        command = page.locator("pre.command").inner_text()
        assert "pretrained=HuggingFaceTB/SmolLM2-135M-Instruct," in command
        assert "gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf" in command
        assert "revision=" not in command  # the GGUF's hash is no Hub commit
        assert "site-packages" not in command and "/root" not in command and "/home" not in command
        hub = page.locator("a", has_text="on the Hugging Face Hub").get_attribute("href")
        assert hub == "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct"
        # per-sample logs and the badge, served by the site itself
        links = page.locator(".provenance a[download]")
        hrefs = links.evaluate_all("as => as.map(a => a.href)")
        assert any("/samples_" in h for h in hrefs) and any("/results_" in h for h in hrefs)
        for href in hrefs:
            assert page.request.get(href).status == 200, href
        badge = page.locator(".badge-embed img").first.get_attribute("src")
        answer = page.request.get(f"{url}/models/{badge}")
        assert answer.status == 200 and "worst phase" in answer.text(), badge
        model_page = page.url
        phone = browser.new_page(viewport={"width": 390, "height": 844})
        phone.goto(f"{url}/{board_page('phasebench_niah@1024/m8')}")
        phone.screenshot(path=str(shots["-390"]), full_page=True)
        phone.goto(model_page)
        phone.screenshot(path=str(shots["-model"]))
    for shot in shots.values():
        assert shot.stat().st_size > 10_000


@pytest.mark.slow
def test_compare_says_what_it_found_swaps_the_sign_and_keeps_a_wrong_address(server, site):
    """The compare page with two real entries leads with a verdict sentence and gives A − B in
    the order picked: swapping A and B flips the sign of every paired difference and of its
    interval. An address with a missing entry shows a notice, no comparison, and is kept as
    it was (no silent rewrite to the board's first entries)."""
    data = json.loads((site / "leaderboard.json").read_text())
    rows = {r["model"]: r for r in data["rows"] if r["variant"] is None}
    chunked, flat = rows["acme/chunked-kv"]["anchor"], rows["acme/flat-attention"]["anchor"]
    (compare,) = (site / "compare").glob("*.html")
    base = f"{server}/compare/{compare.name}"

    def differences(page) -> tuple[str, list[str], list[str]]:
        verdict = page.locator("#verdict").inner_text()
        cells = page.locator("#paired tbody tr").evaluate_all(
            "trs => trs.map(tr => [tr.cells[3].textContent, tr.cells[4].textContent])"
        )
        return verdict, [c[0] for c in cells], [c[1] for c in cells]

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors, _ = _watch(page, server)
        page.goto(f"{base}?a={chunked}&b={flat}")
        verdict, diffs, intervals = differences(page)
        # the stride-4 entry has the larger gap and the lower worst phase, and says so first
        assert verdict.startswith("A (acme/chunked-kv) has the larger phase gap, by "), verdict
        assert "lower worst phase" in verdict and "A − B +" in verdict, verdict
        assert diffs[0].startswith("+") and diffs[1].startswith("\u2212"), diffs
        assert all(" to " in i and "–" not in i for i in intervals), intervals
        assert page.locator("#notice").is_hidden()
        _fits(page, 390)  # every column readable on a phone: the tables stack
        page.goto(f"{base}?a={flat}&b={chunked}")
        swapped, diffs_swapped, intervals_swapped = differences(page)
        assert swapped.startswith("B (acme/chunked-kv) has the larger phase gap, by "), swapped
        sign = {"+": "\u2212", "\u2212": "+"}
        assert diffs_swapped == [sign[d[0]] + d[1:] for d in diffs], (diffs, diffs_swapped)
        assert all(i.startswith("[\u2212") for i in intervals_swapped[:1]), intervals_swapped
        wrong = f"{base}?a={chunked}&b=e-nothing-here"
        page.goto(wrong)
        notice = page.locator("#notice")
        assert notice.is_visible() and "(e-nothing-here) is not an entry" in notice.inner_text()
        assert page.locator("#verdict").inner_text() == ""
        assert page.url == wrong  # the address is kept as it was
        assert not errors, errors
