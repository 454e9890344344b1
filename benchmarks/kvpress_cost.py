"""Cost per prompt of phasebench-kvpress, per press: prefill, answer and CPU seconds, and the
cache the press keeps. Runs the backend's own ``answer`` on the first prompts of a split (the
model is loaded once; the press is swapped between rows).

Run in the kvpress environment, one thread, e.g.::

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/kvpress_cost.py \\
        --pretrained DIR --gguf-file SmolLM2-135M-Instruct.Q4_1.gguf --tokenizer TOKDIR \\
        --family niah --length 1024 --prompts 4
"""

from __future__ import annotations

import argparse
import json
import statistics

from phasebench.kvpress.audit import AUDIT_PRESSES, press_args

GEN_KWARGS = {"until": ["\n"], "do_sample": False, "temperature": 0.0, "max_gen_toks": 16}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pretrained", required=True)
    parser.add_argument("--gguf-file", default=None)
    parser.add_argument("--tokenizer", default=None)
    parser.add_argument("--family", default="niah")
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--ratio", type=float, default=0.25)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--presses", default=",".join(AUDIT_PRESSES))
    args = parser.parse_args()

    import torch

    from phasebench.kvpress.backend import KVPressLM
    from phasebench.kvpress.presses import parse_press
    from phasebench.lmeval.data import resolve_split

    torch.set_num_threads(1)
    model_args = {"pretrained": args.pretrained, "dtype": "float32", "device": "cpu"}
    if args.gguf_file:
        model_args["gguf_file"] = args.gguf_file
    if args.tokenizer:
        model_args["tokenizer"] = args.tokenizer
    lm = KVPressLM(**model_args)
    split = resolve_split(args.family, **model_args, max_seq_lengths=[args.length], n_base=16)
    rows = split.rows[: args.prompts]
    for name in args.presses.split(","):
        spec, _ = parse_press(*_press_and_inner(press_args(name, args.ratio)))
        lm.press = spec.build() if spec is not None else None
        lm.stats = []
        answers = [lm.answer(r["prompt"], dict(GEN_KWARGS), r) for r in rows]
        correct = sum(
            a.lstrip().startswith(r["answer"]) for a, r in zip(answers, rows, strict=True)
        )
        s = lm.stats
        print(
            json.dumps(
                {
                    "press": name,
                    "describe": spec.describe() if spec is not None else "none",
                    "prompts": len(rows),
                    "correct": correct,
                    "context_tokens": s[0].context_tokens,
                    "kept": [min(x.kept_min for x in s), max(x.kept_max for x in s)],
                    "ragged": sum(x.ragged for x in s),
                    "prefill_s": round(statistics.mean(x.prefill_s for x in s), 2),
                    "answer_s": round(statistics.mean(x.answer_s for x in s), 2),
                    "cpu_s": round(statistics.mean(x.cpu_s for x in s), 2),
                }
            ),
            flush=True,
        )


def _press_and_inner(values: dict) -> tuple:
    values = dict(values)
    return values.pop("press", None), values.pop("inner", None), values


if __name__ == "__main__":
    main()
