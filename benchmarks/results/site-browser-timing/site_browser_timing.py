"""Sort/filter time on the largest board of a 1,000-entry synthetic site, in Chromium (one-off
measurement on the shared 2-core machine; entries cloned from the shipped board,
work/board.json, written by make_board.py)."""

import functools
import http.server
import os
import tempfile
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from phasebench.leaderboard.render import build_site

src = open(Path(__file__).with_name("render_scale.py")).read().split("n = int")[0]
ns = {}
exec(src, ns)
site = Path(tempfile.mkdtemp()) / "site"
build_site(ns["synth"](1000), site, built="2026-01-01")


class Q(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Q, directory=str(site)))
threading.Thread(target=httpd.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{httpd.server_address[1]}/boards/phasebench-niah-1024.html"
with sync_playwright() as p:
    b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--headless"])
    page = b.new_page(viewport={"width": 1280, "height": 800})
    t = time.perf_counter()
    page.goto(url)
    page.wait_for_load_state("load")
    load = time.perf_counter() - t
    n = page.evaluate("document.querySelectorAll('*').length")

    def timed(js):
        return page.evaluate(
            "() => { const t = performance.now(); "
            + js
            + "; document.body.offsetHeight; return performance.now() - t; }"
        )

    sort = [timed("document.querySelector('th[data-key=gap] button').click()") for _ in range(4)]
    filt = timed(
        "const f = document.getElementById('text-filter'); f.value = 'org1'; "
        "f.dispatchEvent(new Event('input'))"
    )
    allrows = timed("const c = document.getElementById('show-all'); c.click()")
    sort_all = [
        timed("document.querySelector('th[data-key=average] button').click()") for _ in range(2)
    ]
    print(
        f"load {os.getloadavg()[0]:.1f}; page load {load:.2f} s, {n} elements; "
        f"sort (100 of 777 shown) {[round(x) for x in sort]} ms; filter {filt:.0f} ms; "
        f"show all {allrows:.0f} ms; sort with all 777 shown {[round(x) for x in sort_all]} ms"
    )
    b.close()
