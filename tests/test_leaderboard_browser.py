"""The built site in real headless Chromium (Debian's package) through Playwright's Python API."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import threading
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from phasebench.leaderboard.render import build_site
from phasebench.leaderboard.score import load_reported, score
from phasebench.leaderboard.validate import validate_all
from support.submissions import TASKS, make_submission, split_rows

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("site")
    rows = split_rows(tmp / "split")
    subs = tmp / "subs"
    make_submission(subs, rows, model="acme/flat-attention", accuracy=[0.8] * 8)
    make_submission(subs, rows, model="acme/chunked-kv", accuracy=[0.95, 0.95, 0.2, 0.2] * 2,
                    meta={"kv_cache": "CSA window 8 stride 4"})  # fmt: skip
    make_submission(subs, rows, model="acme/mild", accuracy=[0.9, 0.7] * 4)
    board = score(validate_all(subs, tasks=TASKS, cache=tmp / "cache"), load_reported())
    build_site(board, tmp / "site")
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


def _watch(page, server: str) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    external: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(server) else None)
    return errors, external


def _boards_hold_their_own_rows(page) -> None:
    """Every tbody is one board: its heading first, then only rows of that board."""
    groups = page.evaluate(
        """() => Array.from(document.querySelectorAll('#leaderboard tbody')).map(g => ({
            board: g.dataset.board,
            first: g.rows[0].className,
            rows: Array.from(g.rows).slice(1).map(r => r.dataset.board)}))"""
    )
    assert groups, "no boards"
    for group in groups:
        assert group["first"] == "board-head"
        assert group["rows"] and set(group["rows"]) == {group["board"]}, group


def _fits(page, width: int = 390) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url}: page is {scroll} px wide at a {width} px viewport"


@pytest.mark.slow
def test_site_in_chromium(server):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors, external = _watch(page, server)
        page.goto(f"{server}/index.html")
        page.wait_for_load_state("networkidle")

        def models() -> list[str]:
            cells = page.locator("#leaderboard tbody tr:not(.reported) td:nth-child(2) a")
            return cells.all_inner_texts()

        assert models()[0] == "acme/flat-attention"  # ranked by cross-fitted worst phase
        rank = page.locator("th[data-key=rank]")
        assert rank.get_attribute("aria-sort") == "ascending"
        page.click("th[data-key=average] button")  # numeric columns sort descending first
        by_average = models()
        page.click("th[data-key=gap] button")
        by_gap = models()
        assert by_gap[0] == "acme/chunked-kv" and by_gap != by_average
        _boards_hold_their_own_rows(page)  # sorting never mixes boards or published figures

        reported = page.locator("tr.reported")
        assert reported.count() >= 5
        assert reported.first.locator(".badge").inner_text() == "reported, not reproduced"
        page.uncheck("#show-reported")
        assert page.locator("tr.reported:visible").count() == 0
        assert not page.locator("tbody.reported-board").is_visible()

        assert not page.locator("th.phase-col").first.is_visible()
        page.check("#show-phases")
        assert page.locator("th.phase-col").first.is_visible()
        page.uncheck("#show-phases")
        page.check("#show-reported")
        page.fill("#text-filter", "mild")
        assert page.locator("#leaderboard tbody tr:not(.board-head):visible").count() == 1
        page.fill("#text-filter", "")

        # the KV-cache column and its filter
        kv = page.locator("#leaderboard tbody tr:not(.reported) td:nth-child(3)")
        assert "CSA window 8 stride 4" in kv.all_inner_texts()
        page.select_option("#kv-filter", "CSA window 8 stride 4")
        visible = page.locator("#leaderboard tbody tr:not(.board-head):visible td:nth-child(2) a")
        assert visible.all_inner_texts() == ["acme/chunked-kv"]
        page.select_option("#kv-filter", "")

        # units on the values
        first = page.locator("#leaderboard tbody tr:not(.reported):not(.board-head)").first
        cells = first.locator("td").all_inner_texts()
        assert cells[3].split()[0].endswith("%") and cells[4].split()[0].endswith("%")
        assert cells[5].split()[1].startswith("pp")  # then * when significant

        page.click("th[data-key=rank] button")
        page.click("th[data-key=rank] button")
        page.click("text=acme/chunked-kv")
        page.wait_for_load_state("networkidle")
        image = page.locator("img.profile").first
        assert image.evaluate("img => img.complete && img.naturalWidth > 0")
        command = page.locator("pre.command").inner_text()
        assert "phasebench eval" in command and "pretrained=acme/chunked-kv" in command
        assert not errors, errors
        assert not external, external
        browser.close()


@pytest.mark.slow
def test_sorting_by_keyboard(server):
    """Tab reaches the sort headers (buttons inside th), Enter and Space sort, aria-sort says
    how, and the order changes within each board only."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors, _ = _watch(page, server)
        page.goto(f"{server}/index.html")
        page.wait_for_load_state("networkidle")
        page.focus("#show-reported")  # the last control before the table

        def focused() -> str:
            return page.evaluate(
                "() => { const th = document.activeElement.closest('th');"
                " return th ? th.dataset.key : document.activeElement.className; }"
            )

        page.keyboard.press("Tab")
        assert focused() == "table-scroll"  # the scroll region is reachable to scroll sideways
        page.keyboard.press("Tab")
        assert focused() == "rank"
        for _ in range(20):
            if focused() == "gap":
                break
            page.keyboard.press("Tab")
        assert focused() == "gap"
        gap = page.locator("th[data-key=gap]")
        assert gap.get_attribute("aria-sort") is None

        def gaps() -> list[float]:
            cells = page.locator("#leaderboard tbody tr:not(.reported):not(.board-head)")
            return [float(v) for v in cells.evaluate_all(
                "rows => rows.map(r => r.cells[5].dataset.v)")]  # fmt: skip

        page.keyboard.press("Enter")
        assert gap.get_attribute("aria-sort") == "descending"
        assert page.locator("th[data-key=rank]").get_attribute("aria-sort") is None
        assert gaps() == sorted(gaps(), reverse=True)
        page.keyboard.press("Space")
        assert gap.get_attribute("aria-sort") == "ascending"
        assert gaps() == sorted(gaps())
        _boards_hold_their_own_rows(page)
        assert not errors, errors
        browser.close()


@pytest.mark.slow
def test_glossary_and_links(server):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors, external = _watch(page, server)
        page.goto(f"{server}/index.html")
        page.wait_for_load_state("networkidle")
        assert "What is measured" in page.locator("section.measured").inner_text()
        terms = [t.lower() for t in page.locator("#glossary dt").all_inner_texts()]
        for term in ("phase", "worst phase (cross-fitted)", "lowest phase (plain)", "gap",
                     "weak phase", "period", "null gap", "%, pp"):  # fmt: skip
            assert term in terms, (term, terms)
        worst = page.locator("#g-worst + dd").inner_text()
        assert "ranks by this number" in worst and "biased low" in worst
        page.click("header nav >> text=glossary")
        assert page.evaluate("location.hash") == "#glossary"
        assert page.locator("#glossary").is_visible()
        for href in ("leaderboard.csv", "leaderboard.json", "leaderboard.parquet",
                     "per_phase.parquet", "about.html", "submit.html",
                     "submission.schema.json"):  # fmt: skip
            response = page.request.get(f"{server}/{href}")
            assert response.ok, href
        links = page.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
        assert {"leaderboard.csv", "leaderboard.json", "leaderboard.parquet"} <= {
            h.removeprefix("./") for h in links
        }
        page.click("header nav >> text=submit a model")
        page.wait_for_load_state("networkidle")
        assert "phasebench leaderboard pack" in page.locator("main").inner_text()
        page.goto(f"{server}/about.html")
        assert "biased low" in page.locator("main").inner_text()
        assert not errors, errors
        assert not external, external
        browser.close()


@pytest.mark.slow
def test_pages_fit_a_390_px_screen(server):
    """No horizontal page overflow on a phone: the wide table scrolls inside its own region."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(f"{server}/index.html")
        page.wait_for_load_state("networkidle")
        _fits(page)
        region = page.locator(".table-scroll").first
        assert region.evaluate("el => el.scrollWidth > el.clientWidth")  # the table scrolls
        page.check("#show-phases")
        _fits(page)
        for href in page.locator("#leaderboard td:nth-child(2) a").evaluate_all(
            "as => as.map(a => a.getAttribute('href'))"
        ):
            page.goto(f"{server}/{href}")
            page.wait_for_load_state("networkidle")
            _fits(page)
        for name in ("about.html", "submit.html", "rejections.html"):
            page.goto(f"{server}/{name}")
            _fits(page)
        browser.close()


@pytest.mark.slow
def test_shipped_examples_site_in_chromium(tmp_path):
    """The shipped example submissions (real runs) validate from the checkout, and on their site
    the SmolLM2 page shows its phase profiles, its code margin strip and a Reproduce command
    with the model's Hub id, not a path of the machine that built the site. Pages fit 390 px.
    PHASEBENCH_SCREENSHOTS=docs refreshes the pictures docs/leaderboard.md shows."""
    site = tmp_path / "site"
    outcome = validate_all(ROOT / "leaderboard" / "submissions", cache=tmp_path / "cache")
    assert not outcome.refused, outcome.report_lines()
    models = {s.meta["model"] for s in outcome.accepted}
    assert models == {"phasebench/tiny-random-llama", "HuggingFaceTB/SmolLM2-135M-Instruct"}
    build_site(score(outcome, load_reported()), site)
    target = Path(os.environ.get("PHASEBENCH_SCREENSHOTS") or tmp_path)
    shots = {name: target / f"leaderboard{name}.png" for name in ("", "-390", "-model")}
    with serve(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        errors, external = _watch(page, url)
        page.goto(f"{url}/index.html")
        page.wait_for_load_state("networkidle")
        assert page.locator("tr.reported .badge").count() >= 5
        # code@0, kv@256, kv@512, niah@512, niah@1024 (the kvpress audit), niah@256 (the
        # kvpress stride sweep) + published
        assert page.locator("#leaderboard tbody.board").count() == 7
        _boards_hold_their_own_rows(page)
        page.screenshot(path=str(shots[""]))
        page.click("text=HuggingFaceTB/SmolLM2-135M-Instruct >> nth=0")
        page.wait_for_load_state("networkidle")
        for selector in ("img.profile", "img.strip"):
            image = page.locator(selector).first
            assert image.evaluate("img => img.complete && img.naturalWidth > 0"), selector
        command = page.locator("pre.command").inner_text()
        assert "pretrained=HuggingFaceTB/SmolLM2-135M-Instruct," in command
        assert "gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf" in command
        assert "site-packages" not in command and "/root" not in command and "/home" not in command
        model_page = page.url
        phone = browser.new_page(viewport={"width": 390, "height": 844})
        phone.goto(f"{url}/index.html")
        phone.wait_for_load_state("networkidle")
        _fits(phone)
        phone.screenshot(path=str(shots["-390"]))
        phone.goto(model_page)
        phone.wait_for_load_state("networkidle")
        _fits(phone)
        phone.screenshot(path=str(shots["-model"]))
        for shot in shots.values():
            assert shot.stat().st_size > 10_000
        assert not errors, errors
        assert not external, external
        browser.close()
