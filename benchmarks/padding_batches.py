"""Rows that lm-eval's ``hf`` backend would pad off their labelled slot, with phasebench's
added stop sequence (now) and without it (the task YAML's generation arguments alone, as before).

The requests are the tasks' own (lm-eval's ``TaskManager`` and ``build_all_requests`` on the
phasebench task folder); the batches are cut by lm-eval's own ``Collator`` the way
``HFLM.generate_until`` cuts them (longest prompt first, grouped by generation arguments, ``n``
at a time); a row's left pad is the longest prompt of its batch minus its own token count. No
model runs: ``tests/lmeval/test_deepseek_v4_grid.py`` shows on a DeepSeek-V4 that a pad moves the
anchor along the compressor's grid. A row is off its slot when its pad is not a multiple of P.

    PYTHONPATH=$PWD python benchmarks/padding_batches.py --modulus 8 --length 1024
"""

from __future__ import annotations

import argparse

DESIGNS = {
    "needle axis, lengths L and L+6 (niah, kv)": ("phasebench_niah,phasebench_kv", "two"),
    "length axis (niah, kv)": ("phasebench_niah,phasebench_kv", "length"),
    "both axes crossed (niah)": ("phasebench_niah", "crossed"),
}


def requests(tasks: str, metadata: dict) -> list[tuple[str, dict]]:
    from lm_eval.tasks import TaskManager, get_task_dict

    from phasebench.lmeval.harness import tasks_dir

    manager = TaskManager(include_path=tasks_dir(), include_defaults=False, metadata=metadata)
    found = []
    for task in get_task_dict(tasks.split(","), manager).values():
        task.build_all_requests(rank=0, world_size=1)
        found += [instance.args for instance in task.instances]
    return found


def off_slot(reqs: list, lengths: dict, size: int, modulus: int) -> tuple[int, int]:
    """(rows off their slot mod P, rows padded at all) over the batches of ``size``."""
    from lm_eval.models.utils import Collator

    collator = Collator(reqs, sort_fn=lambda r: (-lengths[r[0]], r[0]), group_by="gen_kwargs")
    off = padded = 0
    for batch in collator.get_batched(n=size):
        longest = max(lengths[context] for context, _ in batch)
        for context, _ in batch:
            pads = longest - lengths[context]
            padded += pads > 0
            off += pads % modulus != 0
    return off, padded


def main() -> None:
    from phasebench.lmeval.batching import one_length_per_batch
    from phasebench.tokenization import load_tokenizer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modulus", type=int, default=8)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--tokenizer", default="deepseek-v4")
    ap.add_argument("--sizes", default="2,3,4,5,6,7,8,12,16,32,64")
    args = ap.parse_args()
    tok = load_tokenizer(args.tokenizer).hf
    P, L = args.modulus, args.length
    print(f"tokenizer {args.tokenizer}, P = {P}, L = {L}, n_base {2 * P}")
    print("batch size: rows off their slot mod P (rows padded), before | now")
    for name, (tasks, design) in DESIGNS.items():
        metadata = {"tokenizer": args.tokenizer, "phase_modulus": P, "n_base": 2 * P}
        metadata["max_seq_lengths"] = [L, L + 6] if design == "two" else [L]
        if design != "two":
            metadata["length_phases"] = True if design == "length" else "crossed"
        now = requests(tasks, metadata)
        before = [(c, dict(g, until=g["until"][:-1])) for c, g in now]  # the YAML's stops
        assert all(one_length_per_batch(b, 0)["until"][:-1] == b["until"] for _, b in before)
        lengths = {
            context: len(tok.encode(context, add_special_tokens=False)) for context, _ in now
        }
        print(f"{name}: {len(now)} prompts")
        for size in [int(s) for s in args.sizes.split(",")]:
            (o0, p0), (o1, p1) = (off_slot(r, lengths, size, P) for r in (before, now))
            print(f"  {size:3d}: {o0:4d} ({p0:4d}) | {o1:4d} ({p1:4d})")


if __name__ == "__main__":
    main()
