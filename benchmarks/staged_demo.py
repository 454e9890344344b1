"""A staged run (``phasebench eval --staged``) of a demo reference model against its full run.

Builds the demo's kv split (256 base items x 8 phases at 256 tokens, seed 0, the reference
tokenizer), runs the reference model ``mean-w8s4`` through lm-eval's ``hf`` backend once on the
whole split (the fixed design) and once staged (the library function ``phasebench eval
--staged`` calls), and prints both verdicts and the prompts each sent. The reference
architecture is registered with transformers first, as ``phasebench demo`` does, so the run
goes through ``phasebench.lmeval.staged.run_staged`` in this process.

    python benchmarks/staged_demo.py OUT [--variant mean-w8s4] [--futility 0.3]

At the end the staged run is packed as a leaderboard submission, validated and scored: the
board's mark, recomputed from the samples, is printed.

OUT must not exist or be empty. Needs the reference extra (torch) and lm-eval with sqlitedict
(``--use_cache``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from phasebench.demo import DEMO_MAX_GEN_TOKS, generate_split
from phasebench.reference import DEMO_N_BASE, EVAL_LENGTH, weights_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--variant", default="mean-w8s4")
    ap.add_argument("--futility", type=float, default=None, help="futility gap (fraction)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import torch

    from phasebench.lmeval.harness import run_eval
    from phasebench.lmeval.staged import run_staged
    from phasebench.reference.model import register_auto_classes
    from phasebench.report import build_report, runs_from_files

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    register_auto_classes()
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"{args.out} is not empty")
    splits = generate_split(args.out / "splits", EVAL_LENGTH, DEMO_N_BASE)
    model_args = f"pretrained={weights_dir() / args.variant},backend=causal,dtype=float32"
    metadata = json.dumps({"dataset_path": str(splits), "max_seq_lengths": [EVAL_LENGTH]})

    def argv(out: Path) -> list[str]:
        return ["--model", "hf", "--model_args", model_args, "--tasks", "phasebench_kv",
                "--metadata", metadata, "--output_path", str(out), "--log_samples",
                "--batch_size", "32", "--device", "cpu",
                "--gen_kwargs", f"max_gen_toks={DEMO_MAX_GEN_TOKS}"]  # fmt: skip

    start = time.monotonic()
    full = run_eval(argv(args.out / "full"))
    full_seconds = time.monotonic() - start
    (run,) = build_report(runs_from_files(full.samples_files))["runs"].values()
    entry = run["tasks"]["phasebench_kv"][str(EVAL_LENGTH)]

    start = time.monotonic()
    staged = run_staged(argv(args.out / "staged"), args.futility, on_event=print)
    staged_seconds = time.monotonic() - start
    d = staged.decision
    last = staged.looks[-1]
    print(f"\n{args.variant}, kv {EVAL_LENGTH} tokens, {DEMO_N_BASE} base items x 8 phases")
    print("| run | prompts sent | gap (points) | p-value | verdict | seconds |")
    print("|---|---|---|---|---|---|")
    full_verdict = "significant" if entry["significant"] else "not significant"
    print(f"| full (fixed design, p <= 0.05) | {entry['n_samples']} | {100 * entry['gap']:.1f} | "
          f"{entry['p_value']:.4f} | {full_verdict} | {full_seconds:.0f} |")  # fmt: skip
    print(f"| staged (look {d.stage} of {d.n_stages}) | {last['prompts']} | "
          f"{100 * last['gap']:.1f} | {last['p_value']:.4f} | {d.verdict} | "
          f"{staged_seconds:.0f} |")  # fmt: skip
    print(f"\nstaged decision: {d.reason}")
    same = (d.verdict == "significant") == bool(entry["significant"])
    print(f"same verdict as the full run: {'yes' if same else 'NO'}")
    print(f"record: {staged.record.relative_to(args.out)}")
    print(f"leaderboard: {board_mark(staged.samples_files[0].parent, args.out, args.variant)}")


def board_mark(run: Path, out: Path, variant: str) -> str:
    """Pack the staged run as a submission, validate and score it: the board's own mark."""
    import yaml

    from phasebench.leaderboard.pack import pack
    from phasebench.leaderboard.score import score
    from phasebench.leaderboard.validate import validate_all

    meta = {"model": f"phasebench/ref-{variant}", "revision": "0" * 40, "precision": "float32",
            "backend": "hf", "kv_cache": "chunked: window 8 stride 4, mean pooling",
            "chat_template": False, "license": "Apache-2.0", "contact": "staged demo",
            "max_length": 2048, "tokenizer": {"name": "phasebench-ref"}}  # fmt: skip
    meta_file = out / "submission.yaml"
    meta_file.write_text(yaml.safe_dump(meta, sort_keys=True))
    pack(run, out / "submissions" / f"phasebench__ref-{variant}" / ("0" * 40), meta_file)
    outcome = validate_all(out / "submissions", cache=out / "validate-cache")
    if not outcome.accepted:
        return "REFUSED " + " ".join(outcome.report_lines())
    (row,) = score(outcome)["rows"]
    return f"accepted, n_base {row['n_base']}; note: {row['note']}"


if __name__ == "__main__":
    main()
