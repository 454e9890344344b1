"""Build the leaderboard over the example submissions plus the whole hostile corpus
(``tests/support/hostile.py``) and print what it cost: wall time, CPU time and peak memory of
the whole process tree (the command, its fork server and every validating process), and the
outcome for every corpus entry against what the corpus expects.

    PYTHONPATH=$PWD:$PWD/tests python benchmarks/hostile_build.py [--keep DIR]

Memory is sampled every 0.1 s with psutil: "peak tree RSS" adds the resident sets of all live
processes (pages shared between the fork server and its children count once per process, so it
over-counts), "peak PSS" splits shared pages between the processes that share them; "largest
process" is the biggest single resident set seen. CPU time adds every process's own user and
system time at its last sample; the validating processes are counted through the fork server
that reaps them (its children's time), so none is missed however short it lives.
"""

from __future__ import annotations

import argparse
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


def measure(cmd: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    root = psutil.Process(proc.pid)
    own: dict[int, float] = {}  # user + system time of each process at its last sample
    reaped: dict[int, float] = {}  # the fork server's children, counted through it
    server: set[int] = set()
    peak_rss = peak_pss = largest = 0
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        rss = pss = 0
        for p in tree:
            try:
                if p.pid not in server and "forkserver" in " ".join(p.cmdline()):
                    server.add(p.pid)
                times = p.cpu_times()
                own[p.pid] = times.user + times.system
                if p.pid in server:
                    reaped[p.pid] = times.children_user + times.children_system
                if p.ppid() in server:
                    own.pop(p.pid)  # counted by the server once it is reaped
                info = p.memory_full_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            rss += info.rss
            pss += getattr(info, "pss", info.rss)
            largest = max(largest, info.rss)
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(0.1)
    out, err = proc.communicate()
    return {
        "returncode": proc.returncode,
        "wall_s": time.monotonic() - start,
        "cpu_s": sum(own.values()) + sum(reaped.values()),
        "processes": len(own),
        "peak_tree_rss_mib": peak_rss / 2**20,
        "peak_pss_mib": peak_pss / 2**20,
        "largest_process_mib": largest / 2**20,
        "stdout": out.decode(),
        "stderr": err.decode(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", default=None, help="build here and keep the folder")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from support.hostile import build_corpus
    from support.submissions import split_rows

    work = Path(args.keep or tempfile.mkdtemp(prefix="phasebench-hostile-"))
    if work.exists() and args.keep:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)  # mkdtemp made it already without --keep
    subs = work / "subs"
    t0 = time.monotonic()
    rows = split_rows(work / "split")
    expected = build_corpus(subs, rows, work, work / "MARKER")
    for example in sorted((ROOT / "leaderboard" / "submissions").glob("*/*")):
        shutil.copytree(example, subs / example.parent.name / example.name)
        expected[f"{example.parent.name}/{example.name}"] = None
    print(f"corpus built in {time.monotonic() - t0:.0f} s: {len(expected)} entries")

    env = {**os.environ, "HF_HUB_CACHE": str(work / "hf-cache"), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "phasebench", "leaderboard", "build", str(subs),
           "--out", str(work / "site"), "--quiet", "--cache", str(work / "cache")]  # fmt: skip
    figures = measure(cmd, work, env)
    print(figures["stdout"][-6000:], figures["stderr"][-3000:], sep="\n")
    board = json.loads((work / "site" / "leaderboard.json").read_text())
    report = board["rejections"]
    refused = {r["submission"]: r["problems"][0]["rule"] for r in report["refused"]}
    superseded = {s["submission"] for s in report["superseded"]}
    wrong = []
    for name, rule in sorted(expected.items()):
        got = (
            None
            if name in report["accepted"]
            else "superseded"
            if name in superseded
            else refused.get(name, "missing")
        )
        if got != rule:
            wrong.append(f"{name}: expected {rule}, got {got}")
    print(f"exit code            {figures['returncode']}")
    print(f"wall time            {figures['wall_s']:.1f} s")
    print(f"CPU time (all procs) {figures['cpu_s']:.1f} s")
    print(f"peak tree RSS        {figures['peak_tree_rss_mib']:.0f} MiB")
    print(f"peak tree PSS        {figures['peak_pss_mib']:.0f} MiB")
    print(f"largest process      {figures['largest_process_mib']:.0f} MiB")
    print(f"accepted {len(report['accepted'])}, superseded {len(superseded)}, "
          f"refused {len(refused)}; submitted code ran: {(work / 'MARKER').exists()}")  # fmt: skip
    print("every entry as expected" if not wrong else "\n".join(["UNEXPECTED:", *wrong]))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not wrong and figures["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
