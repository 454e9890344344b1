"""Which kvpress presses run through phasebench-kvpress on a model: every press kvpress exports,
built by name with its defaults (a wrapper gets ``inner=knorm``; every ``compression_ratio`` is
set), answers the first prompt of a split. Prints one JSON line per press: the cache it kept
(min/max over layers, so ragged presses show), or the one-line error phasebench reports.

Run in the kvpress environment, one thread, e.g.::

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PYTHONPATH=$PWD python benchmarks/kvpress_survey.py \\
        --pretrained DIR --gguf-file SmolLM2-135M-Instruct.Q4_1.gguf --tokenizer TOKDIR
"""

from __future__ import annotations

import json

from kvpress_model import GEN_KWARGS, load, parser


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()

    from phasebench.errors import PhasebenchError
    from phasebench.kvpress.presses import (
        PressError,
        init_fields,
        inner_field,
        parse_press,
        press_classes,
    )

    lm, (row, *_) = load(args, 1)
    for name, cls in sorted(press_classes().items()):
        values = {}
        slot = inner_field(cls)
        inner = "knorm" if slot is not None else None
        fields = set(init_fields(cls))
        if "compression_ratio" in fields or slot is not None:
            values["compression_ratio"] = args.ratio
        result = {"press": name, "class": cls.__name__}
        try:
            spec, _ = parse_press(name, inner, values)
            lm.press, lm.stats = spec.build(), []
            answer = lm.answer(row["prompt"], dict(GEN_KWARGS), row)
            (s,) = lm.stats
            result.update(
                describe=spec.describe(),
                context=s.context_tokens,
                kept=[s.kept_min, s.kept_max],
                ragged=s.ragged,
                correct=answer.lstrip().startswith(row["answer"]),
                prefill_s=round(s.prefill_s, 2),
            )
        except (PressError, PhasebenchError) as exc:
            result["refused"] = str(exc)
        except Exception as exc:  # outside the prefill: not reported as a press failure
            result["unexpected"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
