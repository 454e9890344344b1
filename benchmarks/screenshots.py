"""The leaderboard pictures in docs/img/, from the shipped site: builds it from
``leaderboard/submissions`` with ``phasebench leaderboard build`` (the command the docs give)
into a scratch folder, serves it on 127.0.0.1 and shoots its pages in headless Chromium
(Debian's /usr/bin/chromium through Playwright), so the pictures cannot drift from what the
build makes. Each PNG is reduced to 64 colours with Pillow to stay small::

    python benchmarks/screenshots.py                      # writes docs/img/leaderboard*.png
    python benchmarks/screenshots.py --out work/img       # elsewhere, to look first

The pages are picked by what they show, never by name: the board with the largest significant
gap (its first screen at 1280 x 800 and, whole, at 390 px), the entry with that gap (its model
page at 390 px and its samples page), the index's first screen and the methods page.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
COLOURS = 64


@contextlib.contextmanager
def serve(folder: Path):
    """The site over HTTP on 127.0.0.1, from a thread."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def build(submissions: Path, site: Path) -> dict:
    """``phasebench leaderboard build`` of the submissions into ``site``; its leaderboard.json."""
    subprocess.run(
        [sys.executable, "-m", "phasebench", "leaderboard", "build", str(submissions),
         "--out", str(site), "--quiet"],
        check=True,
    )  # fmt: skip
    return json.loads((site / "leaderboard.json").read_text(encoding="utf-8"))


def pages(board: dict) -> dict[str, tuple[str, int, bool]]:
    """Each picture's name and (page, width, whole page?), chosen from the board's findings."""
    from phasebench.leaderboard.render import board_page, samples_path

    found = [f for f in board["findings"] if f["largest"]]
    first = found[0] if found else board["findings"][0]
    entry = first["largest"] or next(r for r in board["rows"] if r["board"] == first["board"])
    return {
        "leaderboard": ("index.html", 1280, False),
        "leaderboard-board": (board_page(first["board"]), 1280, False),
        "leaderboard-390": (board_page(first["board"]), 390, True),
        "leaderboard-model": (entry["page"], 390, False),
        "leaderboard-samples": (samples_path(entry["page"]), 1280, False),
        "leaderboard-methods": ("methods.html", 1280, False),
    }


def shoot(site: Path, shots: dict[str, tuple[str, int, bool]], out: Path) -> list[Path]:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with serve(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        try:
            for name, (page_name, width, whole) in shots.items():
                if not (site / page_name).is_file():
                    continue
                page = browser.new_page(viewport={"width": width, "height": 800})
                page.goto(f"{url}/{page_name}")
                page.wait_for_load_state("networkidle")
                path = out / f"{name}.png"
                page.screenshot(path=str(path), full_page=whole)
                page.close()
                Image.open(path).convert("RGB").quantize(COLOURS).save(path, optimize=True)
                written.append(path)
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=Path, default=ROOT / "leaderboard" / "submissions")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="phasebench-shots-") as scratch:
        site = Path(scratch) / "site"
        board = build(args.submissions, site)
        for path in shoot(site, pages(board), args.out):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
