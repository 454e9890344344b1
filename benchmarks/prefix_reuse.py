"""Prefill tokens of a split with and without an ideal prefix cache, in three send orders.

Builds each config (the DeepSeek-V4 tokenizer by default), encodes every prompt whole (the
exact token ids lm-eval's ``hf`` backend feeds) and counts, with
:func:`phasebench.prefill.prefill_tokens`, the tokens a server computes without a cache and
with an ideal cache of the previous prompt, for the prompts sent

- in the order the split stores them (base item after base item);
- in the order lm-eval's ``hf`` and ``vllm`` backends send generation requests: longest token
  sequence first, ties by the prompt text (``tests/lmeval/test_request_order.py`` reads this order
  from the ``hf`` backend itself);
- in the order lm-eval's OpenAI-style API backends (``local-completions``) send them: longest
  prompt in characters first, ties in stored order.

The last columns: what a cache holding every earlier prompt would leave (the size of the token
trie of all prompts, the same in every order), and whether the figures the manifest states
(``prefill``, counted at build time on the fast path) are these exact ones.

    python benchmarks/prefix_reuse.py [--n-base 16] [--tokenizer deepseek-v4]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from phasebench.build import generate, iter_rows, read_manifest
from phasebench.prefill import adjacent_renderings, prefill_tokens, shared_prefix
from phasebench.specs import SplitSpec
from phasebench.tokenization import load_tokenizer

CONFIGS = (("kv", 8192, None), ("niah", 8192, None), ("kv", 8192, "only"), ("kv", 8192, "crossed"))
MANIFEST_ORDERS = {"stored": "stored_order", "lm-eval hf, vllm": "lm_eval_order"}


def every_earlier_prompt(ids: list[list[int]]) -> int:
    """Tokens a cache of every earlier prompt leaves: the size of the prompts' token trie."""
    ordered = sorted(ids)
    shared = sum(shared_prefix(a, b) for a, b in zip(ordered, ordered[1:], strict=False))
    return sum(len(x) for x in ordered) - shared


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-base", type=int, default=16)
    ap.add_argument("--tokenizer", default="deepseek-v4")
    args = ap.parse_args()
    tok = load_tokenizer(args.tokenizer)
    print(f"tokenizer {args.tokenizer}, {args.n_base} base items, P = 8\n")
    print(
        "| config | axes | prompts | order | items together | prefill tokens | "
        "with prefix cache | saved | every earlier prompt cached | manifest agrees |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    clock = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for family, length, axes in CONFIGS:
            spec = SplitSpec(family=family, length=length, n_base=args.n_base,
                             tokenizer=args.tokenizer, length_phases=axes)  # fmt: skip
            generate([spec], Path(tmp), overwrite=True, progress=False)
            rows = list(iter_rows(Path(tmp) / spec.config_name))
            ids = [tok.encode(r["prompt"]) for r in rows]
            stated = read_manifest(Path(tmp) / spec.config_name)["prefill"]
            trie = every_earlier_prompt(ids)
            orders = {
                "stored": list(range(len(rows))),
                "lm-eval hf, vllm": sorted(
                    range(len(rows)), key=lambda i: (-len(ids[i]), rows[i]["prompt"])
                ),
                "lm-eval API": sorted(range(len(rows)), key=lambda i: -len(rows[i]["prompt"])),
            }
            for name, order in orders.items():
                out = prefill_tokens(ids[i] for i in order)
                together = adjacent_renderings([rows[i]["base_id"] for i in order])
                print(f"| {spec.config_name} | {axes or 'needle'} | {out['prompts']} | {name} | "
                      f"{'yes' if together else 'no'} | {out['prefill_tokens']:,} | "
                      f"{out['prefill_tokens_prefix_cache']:,} | "
                      f"{100 * out['prefix_cache_saving']:.1f}% | {trie:,} "
                      f"({100 * (1 - trie / out['prefill_tokens']):.1f}% saved) | "
                      f"{_agrees(stated, MANIFEST_ORDERS.get(name), out)} |")  # fmt: skip
    print(f"\n{time.monotonic() - clock:.0f} s")


def _agrees(stated: dict, order: str | None, out: dict) -> str:
    if order is None:
        return "-"
    said = stated[order]["prefill_tokens_prefix_cache"]
    ok = (
        said == out["prefill_tokens_prefix_cache"]
        and stated["prefill_tokens"] == out["prefill_tokens"]
    )
    return "yes" if ok else f"NO ({said:,})"


if __name__ == "__main__":
    main()
