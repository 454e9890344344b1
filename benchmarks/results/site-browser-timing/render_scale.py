"""Render time for N synthetic entries cloned from the shipped board (shared 2-core machine)."""

import copy
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from phasebench.leaderboard.render import build_site, render_site


def synth(n):
    base = json.loads(Path("work/board.json").read_text())
    rows, models = [], {}
    src = list(base["models"].items())
    for i in range(n):
        page, detail = src[i % len(src)]
        d = copy.deepcopy(detail)
        new = f"models/synthetic-{i:05d}.html"
        d["model"] = f"org{i % 37}/model-{i}"
        d["variant"] = f"v{i}"
        models[new] = d
        for r in base["rows"]:
            if r["page"] == page:
                r2 = copy.deepcopy(r)
                r2["page"] = new
                r2["model"] = d["model"]
                r2["variant"] = d["variant"]
                rows.append(r2)
    rows.sort(key=lambda r: (r["board"], r["rank_worst"], r["model"]))
    return {**base, "rows": rows, "models": models}


n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
board = synth(n)
print(n, "entries,", len(board["rows"]), "rows")
out = Path(tempfile.mkdtemp())
c = time.process_time()
t = time.perf_counter()
render_site(board, out / "r")
t1 = time.perf_counter() - t
c1 = time.process_time() - c
c = time.process_time()
t = time.perf_counter()
build_site(board, out / "b", built="2026-01-01")
t2 = time.perf_counter() - t
c2 = time.process_time() - c
sizes = sorted(((p.stat().st_size, p.name) for p in (out / "b").rglob("*.html")), reverse=True)[:3]
print(
    f"load {os.getloadavg()[0]:.1f}; render_site {t1:.2f} s wall {c1:.2f} s CPU, "
    f"build_site {t2:.2f} s wall {c2:.2f} s CPU; largest pages {sizes}"
)
shutil.rmtree(out)
