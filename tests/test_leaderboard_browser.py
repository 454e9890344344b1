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
    make_submission(subs, rows, model="acme/chunked-kv", accuracy=[0.95, 0.95, 0.2, 0.2] * 2)
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

        assert models()[0] == "acme/flat-attention"  # ranked by worst phase
        page.click("th[data-key=average]")  # numeric columns sort descending first
        by_average = models()
        page.click("th[data-key=gap]")
        by_gap = models()
        assert by_gap[0] == "acme/chunked-kv" and by_gap != by_average

        reported = page.locator("tr.reported")
        assert reported.count() >= 5
        assert reported.first.locator(".badge").inner_text() == "reported, not reproduced"
        page.uncheck("#show-reported")
        assert page.locator("tr.reported:visible").count() == 0

        assert not page.locator("th.phase-col").first.is_visible()
        page.check("#show-phases")
        assert page.locator("th.phase-col").first.is_visible()
        page.uncheck("#show-phases")
        page.check("#show-reported")
        page.fill("#text-filter", "mild")
        assert page.locator("#leaderboard tbody tr:visible").count() == 1
        page.fill("#text-filter", "")
        page.click("th[data-key=rank]")

        page.click("text=acme/chunked-kv")
        page.wait_for_load_state("networkidle")
        image = page.locator("img.profile").first
        assert image.evaluate("img => img.complete && img.naturalWidth > 0")
        assert "phasebench eval" in page.locator("pre.command").inner_text()
        assert not errors, errors
        assert not external, external
        browser.close()


@pytest.mark.slow
def test_shipped_examples_site_in_chromium(tmp_path):
    """The shipped example submissions (real runs) validate from the checkout, and on their site
    the SmolLM2 page shows its phase profiles and its code margin strip.
    PHASEBENCH_SCREENSHOT=docs/leaderboard.png refreshes the README's picture from this page."""
    site = tmp_path / "site"
    outcome = validate_all(ROOT / "leaderboard" / "submissions", cache=tmp_path / "cache")
    assert not outcome.refused, outcome.report_lines()
    models = {s.meta["model"] for s in outcome.accepted}
    assert models == {"phasebench/tiny-random-llama", "HuggingFaceTB/SmolLM2-135M-Instruct"}
    build_site(score(outcome, load_reported()), site)
    with serve(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 640})
        errors, external = _watch(page, url)
        page.goto(f"{url}/index.html")
        page.wait_for_load_state("networkidle")
        assert page.locator("tr.reported .badge").count() >= 5
        target = os.environ.get("PHASEBENCH_SCREENSHOT")
        screenshot = Path(target) if target else tmp_path / "leaderboard.png"
        page.screenshot(path=str(screenshot))
        assert screenshot.stat().st_size > 10_000
        page.click("text=HuggingFaceTB/SmolLM2-135M-Instruct >> nth=0")
        page.wait_for_load_state("networkidle")
        for selector in ("img.profile", "img.strip"):
            image = page.locator(selector).first
            assert image.evaluate("img => img.complete && img.naturalWidth > 0"), selector
        assert not errors, errors
        assert not external, external
        browser.close()
