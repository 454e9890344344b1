"""The built site in real headless Chromium (Debian's package) through Playwright's Python API."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest
from leaderboard_submissions import TASKS, make_submission, split_rows
from playwright.sync_api import sync_playwright

from phasebench.leaderboard.render import build_site
from phasebench.leaderboard.score import load_reported, score
from phasebench.leaderboard.validate import validate_all

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


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))

    class Quiet(handler.func):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site))
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.mark.slow
def test_site_in_chromium(server, tmp_path):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        external: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "request",
            lambda r: external.append(r.url) if not r.url.startswith(server) else None,
        )
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

        # PHASEBENCH_SCREENSHOT=docs/leaderboard.png refreshes the README's picture.
        target = os.environ.get("PHASEBENCH_SCREENSHOT")
        screenshot = Path(target) if target else tmp_path / "leaderboard.png"
        page.set_viewport_size({"width": 1280, "height": 560})
        page.screenshot(path=str(screenshot))
        assert screenshot.stat().st_size > 10_000

        page.click("text=acme/chunked-kv")
        page.wait_for_load_state("networkidle")
        image = page.locator("img.profile").first
        assert image.evaluate("img => img.complete && img.naturalWidth > 0")
        assert "phasebench eval" in page.locator("pre.command").inner_text()
        assert not errors, errors
        assert not external, external
        browser.close()
