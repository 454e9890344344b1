"""Benchmark: the 128K kv or niah config (256 base items x 8 phases = 2,048 prompts of 131,072
tokens).

Prints prompts/s, wall time and peak RSS of ``phasebench generate`` (run as a child process so
its peak memory is its own), and, in the same run, the per-prompt cost of a naive generator that
re-encodes every whole prompt to find positions, extrapolated to the same 2,048 prompts.

    python benchmarks/generate.py [--family kv|niah] [--length 131072] [--n-base 256]
                                  [--num-proc 2] [--naive 16]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_generate(args: argparse.Namespace, out: Path) -> tuple[float, float]:
    cmd = [
        sys.executable,
        "-m",
        "phasebench",
        "generate",
        args.family,
        "--length",
        str(args.length),
        "--n-base",
        str(args.n_base),
        "--num-proc",
        str(args.num_proc),
        "--out",
        str(out),
        "--quiet",
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, peak_kib / 1024


def naive_seconds_per_prompt(out: Path, n: int) -> float:
    """Re-encode whole prompts on the exact path and locate the needle, as a retry-loop generator
    must do at least once per prompt."""
    from phasebench.build import config_folders, iter_rows
    from phasebench.tokenization import load_tokenizer

    tok = load_tokenizer("deepseek-v4")
    rows = []
    for row in iter_rows(config_folders(out)[0]):
        rows.append(row)
        if len(rows) == n:
            break
    start = time.perf_counter()
    for row in rows:
        tok.token_index_at(row["prompt"], [row["key_char"], row["question_char"]])
    return (time.perf_counter() - start) / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=["kv", "niah"], default="kv")
    parser.add_argument("--length", type=int, default=131072)
    parser.add_argument("--n-base", type=int, default=256)
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--naive", type=int, default=16, help="prompts to time the naive way")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="phasebench-bench-"))
    try:
        out = tmp / "out"
        wall, peak_mib = run_generate(args, out)
        n = args.n_base * 8
        size = sum(p.stat().st_size for p in out.rglob("*.parquet")) / 2**20
        naive = naive_seconds_per_prompt(out, args.naive)
        print(f"config        {args.family}_{args.length}: {n} prompts of {args.length} tokens")
        print(
            f"phasebench    {wall:.1f} s wall ({n / wall:.1f} prompts/s), peak RSS "
            f"{peak_mib:.0f} MiB, {size:.0f} MiB parquet, --num-proc {args.num_proc}"
        )
        print(
            f"naive         {naive:.3f} s per prompt (whole-prompt re-encode, "
            f"{args.naive} prompts) -> {naive * n:.0f} s for {n} prompts"
        )
        print(f"ratio         naive / phasebench = {naive * n / wall:.1f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
