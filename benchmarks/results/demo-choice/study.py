"""Choose the demo's length and base items on selection seeds (never the reported 0, 1, 2):
in-process phase profiles of the committed weights (the same greedy answers lm-eval logs)."""

import json
import sys
import time
from pathlib import Path

import torch

from phasebench.reference import weights_dir
from phasebench.reference.evaluate import evaluate_folder, phase_summary

torch.set_num_threads(1)
variants, lengths, seeds, n_base = (
    sys.argv[1].split(","),
    sys.argv[2].split(","),
    sys.argv[3].split(","),
    int(sys.argv[4]),
)
for length in map(int, lengths):
    for seed in map(int, seeds):
        for v in variants:
            t = time.time()
            r = evaluate_folder(
                (Path("work/control-w8s1") / v if v == "mean-w8s1" else weights_dir() / v),
                length=length,
                n_base=n_base,
                seed=seed,
            )
            s = phase_summary(r).to_dict()
            print(
                json.dumps(
                    {
                        "variant": v,
                        "length": length,
                        "seed": seed,
                        "n_base": n_base,
                        "acc": round(100 * s["acc"], 1),
                        "gap": round(100 * s["gap"], 1),
                        "p": s["p_value"],
                        "period": s["dominant_period"],
                        "per_phase": [round(100 * a, 1) for a in r["per_phase"]],
                        "s": round(time.time() - t, 1),
                    }
                ),
                flush=True,
            )
