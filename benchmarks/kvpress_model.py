"""What the kvpress benchmarks share: the model options, and the backend loaded once with the
first rows of a split built for that model's tokenizer (run in the kvpress environment)."""

from __future__ import annotations

import argparse

#: lm-eval's generation settings of the kv and niah tasks.
GEN_KWARGS = {"until": ["\n"], "do_sample": False, "temperature": 0.0, "max_gen_toks": 16}


def parser(description: str) -> argparse.ArgumentParser:
    """A parser with the model, split and ratio options every kvpress benchmark takes."""
    out = argparse.ArgumentParser(description=description)
    out.add_argument("--pretrained", required=True, help="model folder")
    out.add_argument("--gguf-file", default=None, help="GGUF file in that folder")
    out.add_argument("--tokenizer", default=None, help="tokenizer folder (default: the model's)")
    out.add_argument("--family", default="niah", choices=["niah", "kv"])
    out.add_argument("--length", type=int, default=1024)
    out.add_argument("--ratio", type=float, default=0.25, help="compression ratio")
    return out


def load(args: argparse.Namespace, prompts: int):
    """``(lm, rows)``: a press-less ``KVPressLM`` (its ``press`` is swapped between calls) and
    the first ``prompts`` rows of the split, one thread."""
    import torch

    from phasebench.kvpress.backend import KVPressLM
    from phasebench.lmeval.data import resolve_split

    torch.set_num_threads(1)
    model_args = {"pretrained": args.pretrained, "dtype": "float32", "device": "cpu"}
    if args.gguf_file:
        model_args["gguf_file"] = args.gguf_file
    if args.tokenizer:
        model_args["tokenizer"] = args.tokenizer
    lm = KVPressLM(**model_args)
    split = resolve_split(args.family, **model_args, max_seq_lengths=[args.length], n_base=16)
    return lm, split.rows[:prompts]
