"""CPU seconds per prompt of phasebench-kvpress one prompt at a time, batched, and through
kvpress's own pipeline, on the same prompts and press, with the answers compared.

The three ways, in one process on the same model:

- ``batch 1``: ``KVPressLM.answer`` per prompt (what ``--batch_size 1`` runs);
- ``batched``: ``KVPressLM.answer_prepared`` on ``--batch`` prompts at a time (what
  ``--batch_size N`` runs: prompts of one config have the same context and question lengths);
- ``kvpress pipeline``: ``KVPressTextGenerationPipeline._forward`` per prompt on the same context
  and question ids (its ``preprocess`` is skipped: it would wrap the context in a chat template
  or a BOS and add a newline to the question, other prompts than phasebench's), then the same
  stop-sequence cut as lm-eval's. It decodes ``max_gen_toks`` tokens whatever the answer, and
  its one-pass question fails on the ragged caches ChunkKV leaves (docs/kvpress.md).

Run in the kvpress environment, one thread, e.g.::

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/kvpress_batch.py \\
        --pretrained DIR --gguf-file SmolLM2-135M-Instruct.Q4_1.gguf --tokenizer TOKDIR \\
        --family niah --length 1024 --prompts 8 --batch 8 --presses chunk8,chunkkv8
"""

from __future__ import annotations

import json
import time

from kvpress_cost import _press_and_inner
from kvpress_model import GEN_KWARGS, load, parser

from phasebench.kvpress.audit import AUDIT_PRESSES, press_args


def main() -> None:
    cli = parser(__doc__.splitlines()[0])
    cli.add_argument("--prompts", type=int, default=8)
    cli.add_argument("--batch", type=int, default=8)
    cli.add_argument("--presses", default="chunk8,chunkkv8")
    cli.add_argument("--chunk", type=int, default=None, help="chunk length for chunk/chunkkv")
    args = cli.parse_args()

    import torch
    from kvpress import KVPressTextGenerationPipeline
    from lm_eval.models.utils import postprocess_generated_text

    from phasebench.kvpress.presses import parse_press

    lm, rows = load(args, args.prompts)
    pipe = KVPressTextGenerationPipeline(model=lm.model, tokenizer=lm.tokenizer, device="cpu")
    for name in args.presses.split(","):
        values = press_args(name, args.ratio) if name in AUDIT_PRESSES else _sweep(name, args)
        spec, _ = parse_press(*_press_and_inner(values))
        lm.press = spec.build() if spec is not None else None
        prepared = [lm.prepare(r["prompt"], dict(GEN_KWARGS), r) for r in rows]
        figures = {"press": spec.describe() if spec is not None else "no press"}

        start = time.process_time()
        single = [lm.answer_prepared([p])[0] for p in prepared]
        figures["batch1_cpu_s"] = (time.process_time() - start) / len(rows)

        start = time.process_time()
        batched = []
        for i in range(0, len(prepared), args.batch):
            batched += lm.answer_prepared(prepared[i : i + args.batch])
        figures["batched_cpu_s"] = (time.process_time() - start) / len(rows)

        start = time.process_time()
        piped: list[str | None] = []
        failure = None
        for p in prepared:
            tensors = {
                "context_ids": torch.tensor([p.head]),
                "questions_ids": [torch.tensor([p.tail])],
            }
            try:
                with torch.no_grad():
                    (text,) = pipe._forward(tensors, max_new_tokens=p.max_new, press=lm.press)
                piped.append(postprocess_generated_text(text, list(p.until), None))
            except RuntimeError as exc:
                failure = str(exc).splitlines()[0][:120]
                piped.append(None)
        figures["pipeline_cpu_s"] = (time.process_time() - start) / len(rows)
        figures["pipeline_failed"] = sum(a is None for a in piped)
        if failure:
            figures["pipeline_error"] = failure
        figures["prompts"] = len(rows)
        figures["batch"] = args.batch
        figures["batched_equal_batch1"] = sum(a == b for a, b in zip(single, batched, strict=True))
        figures["pipeline_equal_batch1"] = sum(a == b for a, b in zip(single, piped, strict=True))
        figures["correct"] = sum(
            a.lstrip().startswith(r["answer"]) for a, r in zip(single, rows, strict=True)
        )
        figures["speedup_batched_vs_batch1"] = figures["batch1_cpu_s"] / figures["batched_cpu_s"]
        shown = {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}
        print(json.dumps(shown), flush=True)


def _sweep(name: str, args) -> dict:
    """``chunk`` / ``chunkkv`` with ``--chunk`` as the chunk length."""
    inner = {"press": "chunk" if name == "chunk" else "chunkkv", "inner": "knorm"}
    return inner | {"chunk_length": args.chunk, "compression_ratio": args.ratio}


if __name__ == "__main__":
    main()
