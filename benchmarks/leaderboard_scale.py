"""The leaderboard at scale: a cold build, a rebuild with one new submission, and rendering.

    PYTHONPATH=$PWD:$PWD/tests python benchmarks/leaderboard_scale.py [--n 500] [--render 1000]

1. Writes ``--n`` synthetic but fully valid submissions (``tests/support/submissions.py``: real
   prompts from phasebench's generator and the DeepSeek-V4 tokenizer, lm-eval's own record and
   hash format, a scripted responder), each a different model with its own accuracy per phase.
2. Cold build: ``phasebench leaderboard build --cache`` in a fresh process over all of them,
   one validating process per core. Prints wall time, the CPU time of the whole process tree,
   CPU / wall (how many cores were busy on average, 2.0 being both), and the most validating
   processes seen running at once.
3. Rebuild with one new submission added, the same cache folder: the figure the 2-minute
   target is about, and its ratio to the cold build measured in this run (the baseline). The
   rebuild's own progress lines say how many submissions it reused and validated.
4. Rendering ``--render`` entries: the board of step 3 with its entries repeated under new
   model names until there are that many, rendered by ``build_site`` alone (no validation and
   no scoring), timed in this process.

Figures depend on the machine and on what else runs on it: say which when quoting them.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
TARGET_REBUILD_S = 120.0
TARGET_RENDER_S = 10.0


def measure(cmd: list[str], env: dict[str, str]) -> dict[str, float | str | int]:
    """Run ``cmd``; wall time, CPU time of every process of its tree (the fork server's
    children counted through it once reaped) and the most validating processes alive at once."""
    start = time.monotonic()
    out_file, err_file = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(cmd, env=env, stdout=out_file, stderr=err_file, text=True)
    root = psutil.Process(proc.pid)
    own: dict[int, float] = {}
    reaped: dict[int, float] = {}
    servers: set[int] = set()
    most = 0
    out_chunks: list[str] = []
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        workers = 0
        for p in tree:
            try:
                if p.pid not in servers and "forkserver" in " ".join(p.cmdline()):
                    servers.add(p.pid)
                times = p.cpu_times()
                own[p.pid] = times.user + times.system
                if p.pid in servers:
                    reaped[p.pid] = times.children_user + times.children_system
                if p.ppid() in servers:
                    own.pop(p.pid)
                    workers += 1
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        most = max(most, workers)
        time.sleep(0.05)
    proc.wait()
    wall = time.monotonic() - start
    out_file.seek(0)
    err_file.seek(0)
    out_chunks.append(out_file.read())
    err = err_file.read()
    cpu = sum(own.values()) + sum(reaped.values())
    return {"returncode": proc.returncode, "wall_s": wall, "cpu_s": cpu, "most_workers": most,
            "stdout": "".join(out_chunks), "stderr": err}  # fmt: skip


def repeated_board(board: dict, entries: int) -> dict:
    """``board`` with its entries repeated under new model names (and pages) until it holds
    ``entries`` of them: fully formed rows, as score writes them, for the renderer alone."""
    pages = sorted(board["models"])
    grown = copy.deepcopy(board)
    grown["rows"], grown["models"] = [], {}
    for i in range(entries):
        page = pages[i % len(pages)]
        copy_no = i // len(pages)
        new_page = page if copy_no == 0 else page.replace(".html", f"-copy{copy_no}.html")
        detail = copy.deepcopy(board["models"][page])
        if copy_no:
            detail["model"] = f"{detail['model']}-copy{copy_no}"
            detail["name"] = f"{detail['name']}-copy{copy_no}"
        grown["models"][new_page] = detail
        for row in board["rows"]:
            if row["page"] == page:
                row = dict(row, page=new_page, model=detail["model"])
                grown["rows"].append(row)
    grown["rows"].sort(key=lambda r: (r["board"], r["rank_worst"], r["model"]))
    return grown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="submissions of the cold build")
    parser.add_argument("--render", type=int, default=1000, help="entries to render")
    parser.add_argument("--jobs", type=int, default=None, help="validating processes at once")
    parser.add_argument("--keep", default=None, help="work here and keep the folder")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from support.submissions import make_submission, split_rows

    work = Path(args.keep or tempfile.mkdtemp(prefix="phasebench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    subs, site, cache = work / "subs", work / "site", work / "cache"
    t0 = time.monotonic()
    rows = split_rows(work / "split")
    for i in range(args.n):
        acc = [0.35 + 0.6 * ((i * 7 + p * 3) % 11) / 10 for p in range(8)]
        make_submission(subs, rows, model=f"scale/model-{i:04d}", accuracy=acc, seed=i)
    print(f"{args.n} submissions written in {time.monotonic() - t0:.0f} s "
          f"({len(rows)} samples each, kv at 128 tokens)")  # fmt: skip

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    build = [sys.executable, "-m", "phasebench", "leaderboard", "build", str(subs), "--out",
             str(site), "--cache", str(cache), "--no-reported"]  # fmt: skip
    if args.jobs:
        build += ["--jobs", str(args.jobs)]
    cold = measure(build, env)
    if cold["returncode"] != 0:
        print(cold["stderr"][-3000:])
        return 1
    print(f"cold build ({args.n} submissions): {cold['wall_s']:.1f} s wall, "
          f"{cold['cpu_s']:.1f} s CPU, {cold['cpu_s'] / cold['wall_s']:.2f} cores busy on "
          f"average, at most {cold['most_workers']} validating processes at once "
          f"(machine: {os.cpu_count()} cores)")  # fmt: skip

    make_submission(subs, rows, model="scale/newcomer", accuracy=[0.8] * 8, seed=10**6)
    again = measure(build, env)
    if again["returncode"] != 0:
        print(again["stderr"][-3000:])
        return 1
    lines = again["stderr"].splitlines()
    reused = sum(line.startswith("reused ") for line in lines)
    validated = sum(line.startswith("validated ") for line in lines)
    verdict = "meets" if again["wall_s"] <= TARGET_REBUILD_S else "misses"
    print(f"rebuild with one new ({args.n + 1} submissions): {again['wall_s']:.1f} s wall "
          f"({reused} reused, {validated} validated), {again['cpu_s']:.1f} s CPU; "
          f"{again['wall_s'] / cold['wall_s']:.3f} x the cold build; {verdict} the "
          f"{TARGET_REBUILD_S:.0f} s target")  # fmt: skip

    from phasebench.leaderboard.render import build_site

    board = json.loads((site / "leaderboard.json").read_text())
    grown = repeated_board(board, args.render)
    entries = len(grown["models"])
    start = time.monotonic()
    build_site(grown, work / "site-render")
    took = time.monotonic() - start
    verdict = "meets" if took <= TARGET_RENDER_S else "misses"
    print(f"render {entries} entries ({len(grown['rows'])} rows): {took:.1f} s; {verdict} the "
          f"{TARGET_RENDER_S:.0f} s target")  # fmt: skip
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
