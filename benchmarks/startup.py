"""Start-up time of the ``phasebench`` command, against a bare interpreter in the same run.

    python benchmarks/startup.py [--runs 7]

Prints the median wall time of ``phasebench --help``, ``phasebench generate --help`` and
``phasebench tasks-dir`` (each a fresh process, as a user or lm-eval's documented command line
runs them), of ``python -c pass`` as the baseline, and each one's ratio to the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "phasebench --help": [sys.executable, "-m", "phasebench", "--help"],
    "phasebench generate --help": [sys.executable, "-m", "phasebench", "generate", "--help"],
    "phasebench tasks-dir": [sys.executable, "-m", "phasebench", "tasks-dir"],
}


def median_seconds(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (median shown)")
    args = parser.parse_args()
    results = {name: median_seconds(cmd, args.runs) for name, cmd in COMMANDS.items()}
    baseline = results["python -c pass (baseline)"]
    print(f"median of {args.runs} runs each, {sys.executable}")
    for name, seconds in results.items():
        print(f"  {name:<30} {seconds:6.3f} s   {seconds / baseline:5.1f}x baseline")


if __name__ == "__main__":
    main()
