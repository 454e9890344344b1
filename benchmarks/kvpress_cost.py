"""Cost per prompt of phasebench-kvpress, per press: prefill, answer and CPU seconds, and the
cache the press keeps. Runs the backend's own ``answer`` on the first prompts of a split (the
model is loaded once; the press is swapped between rows).

Run in the kvpress environment, one thread, e.g.::

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/kvpress_cost.py \\
        --pretrained DIR --gguf-file SmolLM2-135M-Instruct.Q4_1.gguf --tokenizer TOKDIR \\
        --family niah --length 1024 --prompts 4
"""

from __future__ import annotations

import json
import statistics

from kvpress_model import GEN_KWARGS, load, parser

from phasebench.kvpress.audit import AUDIT_PRESSES, press_args


def main() -> None:
    cli = parser(__doc__.splitlines()[0])
    cli.add_argument("--prompts", type=int, default=4)
    cli.add_argument("--presses", default=",".join(AUDIT_PRESSES))
    args = cli.parse_args()

    from phasebench.kvpress.presses import parse_press

    lm, rows = load(args, args.prompts)
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
