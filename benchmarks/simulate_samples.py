"""Write SIMULATED lm-eval output folders for exercising ``phasebench report``.

Nothing here runs a model. The files follow lm-eval 0.4's layout and sample-line keys
(``<out>/<model_name_sanitized>/results_<date>.json`` and ``samples_<task>_<date>.jsonl`` with
``doc``, ``filter``, ``metrics`` and the per-sample metric values), and every results file says
``"phasebench_simulated": true`` and names the model ``SIMULATED-...``. Use it to see the report
on known ground truth (docs/stats.md) and in tests; real numbers come from real lm-eval runs.

Models written (item difficulty varies through a latent shared by each base item):

- ``SIMULATED-stride4``: kv accuracy 90% at phases 0-2 mod 4, 55% at phase 3 mod 4
  (true gap 35 points, period 4); code margin sign flips with period 4 in padding length.
- ``SIMULATED-flat``: kv accuracy 80% at every phase (true gap 0); code margin positive.

    python benchmarks/simulate_samples.py OUT [--n-base 64] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats as sps

from phasebench.rng import derive_rng

DATE = "2026-01-01T00-00-00.000000"  # fixed, so the simulated folders are byte-identical
MODULUS = 8
KV_LENGTH = 4096
CODE_LENGTH = 2048
PAD_STYLES = ("equals", "dashes", "hashes", "stars")
N_PADS = 16

MODELS = {
    "SIMULATED-stride4": {"kv": [0.9, 0.9, 0.9, 0.55] * 2, "code_amp": 0.8},
    "SIMULATED-flat": {"kv": [0.8] * MODULUS, "code_amp": 0.0},
}


def kv_samples(profile: list[float], n_base: int, rng: np.random.Generator) -> list[dict]:
    item = rng.normal(0.0, math.sqrt(0.5), n_base)
    lines = []
    for b in range(n_base):
        for phase in range(MODULUS):
            hit = item[b] + rng.normal(0.0, math.sqrt(0.5)) < sps.norm.ppf(profile[phase])
            doc = {
                "id": f"kv-{KV_LENGTH}-b{b:05d}-p{phase}",
                "family": "kv",
                "length": KV_LENGTH,
                "phase_modulus": MODULUS,
                "phase": phase,
                "base_id": b,
                "answer": "12345",
            }
            lines.append(_line(len(lines), doc, {"acc": float(hit)}))
    return lines


def code_samples(amp: float, n_items: int, rng: np.random.Generator) -> list[dict]:
    lines = []
    for i in range(n_items):
        base_len = 1900 + int(rng.integers(0, 64))
        strength = rng.uniform(0.2, 0.6)
        for style in PAD_STYLES:
            for pad in range(N_PADS):
                length = base_len + pad
                phase = length % MODULUS
                # Periodic weak spot: one residue in four loses the right answer.
                swing = -amp if phase % 4 == 3 else amp * 0.5
                margin = strength + swing + rng.normal(0.0, 0.05)
                doc = {
                    "id": f"code-{CODE_LENGTH}-i{i:04d}-{style}-{pad:02d}",
                    "family": "code",
                    "length": length,
                    "config_length": CODE_LENGTH,
                    "phase_modulus": MODULUS,
                    "phase": phase,
                    "base_id": i,
                    "item_id": f"item{i:04d}",
                    "pad_style": style,
                    "pad_tokens": pad,
                }
                metrics = {"acc": float(margin > 0), "margin": round(float(margin), 6)}
                lines.append(_line(len(lines), doc, metrics))
    return lines


def _line(doc_id: int, doc: dict, metrics: dict) -> dict:
    return {
        "doc_id": doc_id,
        "doc": doc,
        "target": doc.get("answer", ""),
        "filter": "none",
        "metrics": list(metrics),
        **metrics,
    }


def write(out: Path, n_base: int = 64, seed: int = 0) -> list[Path]:
    folders = []
    for model, spec in MODELS.items():
        folder = out / model
        folder.mkdir(parents=True, exist_ok=True)
        kv = kv_samples(spec["kv"], n_base, derive_rng(seed, "simulate", model, "kv"))
        code = code_samples(
            spec["code_amp"], n_base // 4, derive_rng(seed, "simulate", model, "code")
        )
        for task, lines in (("phasebench_kv", kv), ("phasebench_code", code)):
            text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)
            (folder / f"samples_{task}_{DATE}.jsonl").write_text(text, encoding="utf-8")
        results = {"model_name": model, "phasebench_simulated": True, "results": {}}
        (folder / f"results_{DATE}.json").write_text(json.dumps(results, indent=2) + "\n")
        folders.append(folder)
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--n-base", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for folder in write(Path(args.out), args.n_base, args.seed):
        print(folder)


if __name__ == "__main__":
    main()
