"""The prefix-cache arms against a real prefix cache: llama-cpp-python's server on SmolLM2's
GGUF, its prompt cache on and off, read through ``phasebench eval --model local-completions``
with ``"prefix_cache": "baseline"`` (every prompt cold, then warm right after, then behind a salt
of its own: the ``repeat`` arm's two reads plus the cold baseline), greedy, one request at a
time; ``phasebench report --json`` pairs the reads. Prints one line per run and the elapsed
time of each, and a closing table.

    PYTHONPATH=$PWD:$PWD/tests python benchmarks/cache_arms_llama_cpp.py \\
        --server-python /path/to/venv/bin/python --out benchmarks/results/cache_arms_llama_cpp.txt

``--server-python`` is an interpreter with ``llama-cpp-python[server]`` (built from the sdist:
``tests/support/openai_server.py`` gives the CMake flags). llama-cpp-python keeps the last
prompt's KV state and reuses its longest common prefix on every request, cache or not; ``--cache
True`` adds a RAM cache of earlier prompts' states (``LlamaRAMCache``), so "off" here is a
one-prompt prefix cache and "on" a many-prompt one: neither reads a warm prompt from scratch.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def text_agreement(out: Path) -> str:
    """How many prompts got the same response text warm as cold, and salted as cold (the exact
    texts, before scoring: two wrong answers that differ count as a difference), from a run's
    logged samples under ``out``."""
    from support.lmeval import outputs

    _, samples = outputs(out)
    reads: dict[str, dict[str, str]] = {}
    for task_samples in samples.values():
        for s in task_samples:
            reads.setdefault(s["doc"]["id"], {})[s["doc"]["read"]] = s["resps"][0][0]
    n = len(reads)
    warm = sum(r.get("warm") == r.get("cold") for r in reads.values())
    salted = sum(r.get("salted") == r.get("cold") for r in reads.values())
    differ = sorted(i for i, r in reads.items() if r.get("warm") != r.get("cold"))
    shown = "; ".join(f"{i}: cold {reads[i]['cold']!r}, warm {reads[i]['warm']!r}" for i in differ)
    return (f"  response texts: warm = cold {warm}/{n}, salted = cold {salted}/{n}"
            + (f" (warm differs: {shown})" if differ else ""))  # fmt: skip


def one_run(base: str, tokenizer: Path, work: Path, family: str, length: int, modulus: int,
            arm: str) -> dict:  # fmt: skip
    """``phasebench eval`` of one split through the server, then ``phasebench report --json``;
    the report's ``prefix_cache`` entry and the run's wall time."""
    from support.lmeval import lm_eval, phasebench

    metadata = {"max_seq_lengths": [length], "n_base": 2 * modulus, "phase_modulus": modulus,
                "prefix_cache": arm}  # fmt: skip
    args = (
        f"model=smollm2,base_url={base}/v1/completions,tokenizer={tokenizer},max_length=2048,"
        "tokenizer_backend=huggingface,tokenized_requests=False"
    )
    work.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    proc = lm_eval(work, args, f"phasebench_{family}", metadata, wrapper=True,
                   model="local-completions", batch_size=1,
                   extra=["--gen_kwargs", "max_gen_toks=8"], timeout=3 * 3600)  # fmt: skip
    seconds = time.monotonic() - began
    if proc.returncode != 0:
        raise RuntimeError(f"phasebench eval exited {proc.returncode}: {proc.stderr[-2000:]}")
    rep = phasebench(work, "report", "out", "--json", "report.json")
    if rep.returncode != 0:
        raise RuntimeError(f"phasebench report exited {rep.returncode}: {rep.stderr[-2000:]}")
    report = json.loads((work / "report.json").read_text())
    (entry,) = [
        e for b in report["runs"].values() for e in b["tasks"][f"phasebench_{family}"].values()
    ]
    lines = [ln for ln in rep.stdout.splitlines() if "prefix cache" in ln or "cold vs" in ln]
    lines.append(text_agreement(work / "out"))
    return {"entry": entry, "seconds": seconds, "lines": lines}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server-python", required=True, help="interpreter with llama_cpp.server")
    parser.add_argument("--families", nargs="+", default=["kv", "niah"])
    parser.add_argument("--lengths", nargs="+", type=int, default=[512, 1024])
    parser.add_argument("--moduli", nargs="+", type=int, default=[4, 8])
    parser.add_argument("--cache", nargs="+", choices=["on", "off"], default=["on", "off"])
    parser.add_argument("--arm", choices=["baseline", "repeat"], default="baseline")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write the output here")
    parser.add_argument(
        "--recount",
        nargs="+",
        type=Path,
        metavar="RUN",
        help="only print the response-text agreement of these run folders",
    )
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    if args.recount:
        for run in args.recount:
            print(f"{run.name}\n{text_agreement(run / 'out')}")
        return 0
    from transformers import AutoTokenizer

    from support.models import SMOLLM2_GGUF, smollm2_folder
    from support.openai_server import llama_server

    out: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        out.append(line)

    work = Path(tempfile.mkdtemp(prefix="phasebench-cache-arms-"))
    tokenizer = work / "tokenizer"
    source = smollm2_folder()
    AutoTokenizer.from_pretrained(source, gguf_file=SMOLLM2_GGUF).save_pretrained(tokenizer)
    probe = [args.server_python, "-c", "import llama_cpp; print(llama_cpp.__version__)"]
    version = subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
    say(f"llama-cpp-python {version} server on {SMOLLM2_GGUF}, {args.threads} thread(s), "
        f"arm {args.arm}, greedy, max_gen_toks 8, n_base 2P, one request at a time")  # fmt: skip
    table = []
    for cache in args.cache:
        threads = ["--n_threads", str(args.threads), "--n_threads_batch", str(args.threads)]
        extra = ["--cache", "True" if cache == "on" else "False", *threads]
        log = work / f"server-{cache}.log"
        model = Path(source) / SMOLLM2_GGUF
        with llama_server(args.server_python, model, log, extra=extra) as base:
            for family, length, modulus in itertools.product(args.families, args.lengths,
                                                               args.moduli):  # fmt: skip
                name = f"{family}-{length}-P{modulus}-cache-{cache}"
                got = one_run(base, tokenizer, work / name, family, length, modulus, args.arm)
                entry = got["entry"]
                cache_entry = entry["prefix_cache"]
                base_entry = cache_entry.get("baseline") or {}
                say(f"\n{family} {length} tokens, P = {modulus}, cache {cache}: "
                    f"{cache_entry['n']} prompts, {got['seconds']:.0f} s")  # fmt: skip
                for line in got["lines"]:
                    say(line)
                table.append(
                    f"| {family} | {length} | {modulus} | {cache} | {cache_entry['n']} | "
                    f"{100 * entry['acc']:.1f} | {cache_entry['agree']}/{cache_entry['n']} | "
                    f"{cache_entry['first_only']}/{cache_entry['second_only']} | "
                    f"{cache_entry['p']:.3g} | "
                    f"{base_entry.get('cold_agree', '-')}/{base_entry.get('n', '-')} | "
                    f"{base_entry.get('warm_only', '-')}/{base_entry.get('cold_only', '-')} | "
                    f"{base_entry['p'] if base_entry else float('nan'):.3g} | "
                    f"{got['seconds']:.0f} |"
                )
    say(
        "\n| family | length | P | cache | prompts | acc cold | warm = cold | right only "
        "cold/warm | McNemar p | cold = salted | warm alone/cold alone | baseline p | s |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for line in table:
        say(line)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
