"""Build submissions in lm-eval 0.4.13's output format for the leaderboard tests.

The prompts come from phasebench's real generator and a real tokenizer; records and hashes are
made with lm-eval's own ``hash_string`` and ``handle_non_serializable`` exactly as its evaluator
logs them. The "model" is a scripted responder whose accuracy per phase is given, so tests know
what the leaderboard must show.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from lm_eval.utils import handle_non_serializable, hash_string

from phasebench.build import generate, iter_rows
from phasebench.rng import derive_rng
from phasebench.specs import SplitSpec

TASK = "phasebench_kv"
VERSION = "1.0"
TASKS = {TASK: VERSION}
REVISION = "0123456789abcdef0123456789abcdef01234567"


def split_rows(cache: Path, length: int = 128, n_base: int = 16, modulus: int = 8) -> list[dict]:
    spec = SplitSpec(family="kv", length=length, n_base=n_base, modulus=modulus)
    folder = cache / spec.config_name
    if not (folder / "manifest.json").exists():
        generate([spec], cache, overwrite=True, progress=False)
    return list(iter_rows(folder))


def sample_record(i: int, row: dict, response: str) -> dict:
    acc = float(response.lstrip().startswith(row["answer"]))
    return {
        "doc_id": i,
        "doc": row,
        "target": row["answer"],
        "arguments": [[row["prompt"], {"until": ["\n"], "max_gen_toks": 16}]],
        "resps": [[response]],
        "filtered_resps": [response],
        "filter": "none",
        "metrics": ["acc"],
        "doc_hash": hash_string(
            json.dumps(row, indent=2, default=handle_non_serializable, ensure_ascii=False)
        ),
        "prompt_hash": hash_string(row["prompt"]),
        "target_hash": hash_string(str(row["answer"])),
        "acc": acc,
    }


def make_submission(
    root: Path,
    rows: list[dict],
    *,
    model: str = "acme/phase-model",
    revision: str = REVISION,
    accuracy: list[float] | None = None,
    seed: int = 0,
    meta: dict | None = None,
    max_length: int = 4096,
) -> Path:
    """Write ``root/<org>__<name>/<revision>/`` with submission.yaml, results and samples."""
    accuracy = accuracy or [0.9] * 8
    folder = root / model.replace("/", "__") / revision
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for i, row in enumerate(rows):
        rng = derive_rng(seed, "responder", model, row["id"])
        right = rng.random() < accuracy[row["phase"]]
        response = " " + row["answer"] if right else " 00000"
        records.append(sample_record(i, row, response))
    backend = (meta or {}).get("backend", "hf")
    write_lmeval(folder, records, max_length=max_length, backend=backend)
    data = {
        "model": model,
        "revision": revision,
        "precision": "bfloat16",
        "backend": "hf",
        "kv_cache": "none (full attention)",
        "chat_template": False,
        "license": "apache-2.0",
        "contact": "maintainers@example.org",
        "tokenizer": {"name": "deepseek-v4"},
    }
    data.update(meta or {})
    (folder / "submission.yaml").write_text(yaml.safe_dump(data, sort_keys=True))
    return folder


def write_lmeval(
    folder: Path, records: list[dict], *, max_length: int = 4096, backend: str = "hf", **changes
) -> None:
    """results_*.json and samples_*.jsonl as lm-eval writes them for these records, run on
    ``backend`` (lm-eval records it twice: ``config.model`` and ``model_source``)."""
    scored = [r["acc"] for r in records if "acc" in r]  # a repeat run's warm reads score apart
    acc = sum(scored) / len(scored)
    task_hash = hash_string(
        "".join(r["doc_hash"] + r["prompt_hash"] + r["target_hash"] for r in records)
    )
    results = {
        "results": {TASK: {"alias": TASK, "acc,none": acc, "acc_stderr,none": "N/A"}},
        "versions": {TASK: VERSION},
        "configs": {
            TASK: {
                "task": TASK,
                "doc_to_text": "{{prompt}}",
                "output_type": "generate_until",
                "generation_kwargs": {"until": ["\n"], "max_gen_toks": 16},
                "metadata": {
                    "version": 1.0,
                    "max_seq_lengths": [records[0]["doc"]["length"]],
                    "n_base": 16,
                    "phase_modulus": records[0]["doc"]["phase_modulus"],
                    "seed": 0,
                },
            }
        },
        "n-samples": {TASK: {"original": len(records), "effective": len(records)}},
        "config": {"model": backend, "model_args": "pretrained=acme/phase-model", "limit": None},
        "model_source": backend,
        "task_hashes": {TASK: task_hash},
        "max_length": max_length,
        "lm_eval_version": "0.4.13",
        "transformers_version": "5.0.0",
        "date": 1795000000.0,
    }
    results.update(changes)
    (folder / "results_2026-11-30T05-00-00.000000.json").write_text(json.dumps(results, indent=2))
    with open(folder / f"samples_{TASK}_2026-11-30T05-00-00.000000.jsonl", "w") as fh:
        for record in records:
            fh.write(json.dumps(record, default=handle_non_serializable, ensure_ascii=False) + "\n")
