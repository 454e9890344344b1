"""A corpus of hostile input, built by code (nothing binary is committed).

Submissions that try to run their own code, exhaust memory or time with small files, push a
legitimate entry off the board, or smuggle a formula into the CSV; and split folders that are
damaged or lie about their content. Each builder says what the validator must answer, so the
tests and ``benchmarks/hostile_build.py`` check the same corpus.

The code-execution cases ship a tokenizer folder whose ``tokenizer_config.json`` names a class
through ``auto_map`` in a ``tokenization_x.py`` that writes a marker file when it is imported:
the marker existing after a build means submitted code ran.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import zlib
from pathlib import Path

import yaml

from support.submissions import REVISION, TASK, make_submission

#: A second and third 40-hex revision for corpus entries that need one.
REVISION_B = "b" * 40
REVISION_C = "c" * 40
#: lm-eval's ``date`` of the synthetic submissions (support.submissions) and a later one.
DATE = 1795000000.0
LATER = DATE + 86400.0
#: A Hub revision that the fake Hugging Face cache holds.
HUB_REVISION = "a" * 40
HUB_REPO = "evilorg/evil-tokenizer"

_EVIL_MODULE = """\
from pathlib import Path

Path({marker!r}).write_text("submitted code ran")

from transformers import PreTrainedTokenizerFast


class XTokenizer(PreTrainedTokenizerFast):
    pass
"""


def evil_tokenizer(folder: Path, marker: Path) -> Path:
    """A tokenizer folder that runs ``tokenization_x.py`` (writing ``marker``) if anything loads
    it with ``trust_remote_code``: the DeepSeek-V4 ``tokenizer.json`` (so that, once loaded, its
    fingerprint matches the samples and the submission would pass), an ``auto_map`` entry and
    the module."""
    from phasebench.tokenization import builtin_path

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(builtin_path("deepseek-v4") / "tokenizer.json", folder / "tokenizer.json")
    config = {
        "auto_map": {"AutoTokenizer": ["tokenization_x.XTokenizer", "tokenization_x.XTokenizer"]},
        "tokenizer_class": "XTokenizer",
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "tokenization_x.py").write_text(_EVIL_MODULE.format(marker=str(marker)))
    return folder


def fake_hub_cache(cache: Path, marker: Path) -> Path:
    """A Hugging Face hub cache (the layout ``huggingface_hub`` reads offline) holding
    :data:`HUB_REPO` at :data:`HUB_REVISION` with the evil tokenizer in it."""
    repo = cache / f"models--{HUB_REPO.replace('/', '--')}"
    evil_tokenizer(repo / "snapshots" / HUB_REVISION, marker)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(HUB_REVISION)
    return cache


def billion_laughs() -> str:
    """The classic YAML alias bomb: nine levels of nine aliases, about 10^9 strings if
    expanded, in a few hundred bytes, the last one as the value of a real field (so a schema
    check that prints the value expands it)."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append("notes: *i")
    return "\n".join(lines) + "\n"


def gzip_repeating(path: Path, unit: bytes, total: int) -> Path:
    """A gzip file of ``unit`` repeated to ``total`` bytes, written as a stream (the
    uncompressed data never exists in memory or on disk)."""
    block = unit * max(1, (1 << 20) // len(unit))
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip container
    with open(path, "wb") as out:
        written = 0
        while written < total:
            chunk = block[: total - written]
            out.write(compressor.compress(chunk))
            written += len(chunk)
        out.write(compressor.flush())
    return path


def _meta(folder: Path) -> dict:
    return yaml.safe_load((folder / "submission.yaml").read_text())


def _set_meta(folder: Path, **changes) -> None:
    meta = _meta(folder)
    meta.update(changes)
    (folder / "submission.yaml").write_text(yaml.safe_dump(meta, sort_keys=True))


def _results(folder: Path) -> Path:
    return next(folder.glob("results_*.json"))


def _edit_results(folder: Path, edit) -> None:
    path = _results(folder)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))


def _samples(folder: Path) -> Path:
    return next(folder.glob("samples_*"))


def _replace_samples(folder: Path, gz: bool) -> Path:
    old = _samples(folder)
    old.unlink()
    name = f"samples_{TASK}_2026-11-30T05-00-00.000000.jsonl" + (".gz" if gz else "")
    return folder / name


def _rewrite_samples(folder: Path, edit) -> None:
    """Apply ``edit(record)`` to every logged sample, then recompute its ``doc_hash`` and the
    results' ``task_hashes`` with lm-eval's own hashing, as a careful forger would."""
    from lm_eval.utils import handle_non_serializable, hash_string

    path = _samples(folder)
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for rec in records:
        edit(rec)
        rec["doc_hash"] = hash_string(
            json.dumps(rec["doc"], indent=2, default=handle_non_serializable, ensure_ascii=False)
        )
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    joined = "".join(r["doc_hash"] + r["prompt_hash"] + r["target_hash"] for r in records)
    _edit_results(folder, lambda d: d["task_hashes"].update({TASK: hash_string(joined)}))


def forge_relabelling(folder: Path) -> None:
    """Give every sample the chat-template relabelling fields (``split_phase``,
    ``anchor_offset``) with an offset chosen per sample, so that phases 2 and 3 swap within
    every base item while ``submission.yaml`` says ``chat_template: false``: each field agrees
    with the others, every hash is recomputed, the responses are unchanged, and only the
    per-phase figures move."""

    def edit(rec: dict) -> None:
        doc = rec["doc"]
        modulus, phase = doc["phase_modulus"], doc["phase"]
        forged = {2: 3, 3: 2}.get(phase, phase)
        offset = (forged - phase) % modulus
        doc.update(split_phase=phase, anchor_offset=offset, phase=forged,
                   anchor_index=doc["anchor_index"] + offset)  # fmt: skip

    _rewrite_samples(folder, edit)


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_corpus(subs: Path, rows: list[dict], cwd: Path, marker: Path) -> dict[str, str | None]:
    """Write the hostile corpus under ``subs``; the validator is meant to run with ``cwd`` as its
    working folder and ``cwd / "hf-cache"`` as ``HF_HUB_CACHE``. Returns ``{submission: rule}``
    (``None``: accepted) for every entry a build must list, odd folder names included.

    ``subs`` must lie inside ``cwd`` (one case names its own folder relative to ``cwd``).
    """
    expected: dict[str, str | None] = {}

    def add(model: str, rule: str | None, revision: str = REVISION, **kwargs) -> Path:
        folder = make_submission(subs, rows, model=model, revision=revision, **kwargs)
        expected[f"{folder.parent.name}/{folder.name}"] = rule
        return folder

    # -- submitted code must never run ------------------------------------------------------
    evil_tokenizer(cwd / "evil-tokenizer", marker)
    fake_hub_cache(cwd / "hf-cache", marker)
    add(
        "hostile/remote-code",
        "schema",
        meta={"tokenizer": {"name": "evil-tokenizer", "args": {"trust_remote_code": "true"}}},
    )
    inside = add("hostile/code-inside", "files")
    evil_tokenizer(inside, marker)
    own = inside.relative_to(cwd).as_posix()
    _set_meta(inside, tokenizer={"name": own, "args": {"trust_remote_code": "true"}})
    add("hostile/path-tokenizer", "tokenizer", meta={"tokenizer": {"name": "evil-tokenizer"}})
    add(
        "hostile/hub-remote-code",
        "tokenizer",
        meta={"tokenizer": {"name": HUB_REPO, "args": {"revision": HUB_REVISION}}},
    )
    add("hostile/unpinned-hub", "tokenizer", meta={"tokenizer": {"name": HUB_REPO}})
    add("hostile/python-os", "tokenizer", meta={"tokenizer": {"name": "python:os"}})

    # -- small files that cost a lot -------------------------------------------------------
    bomb = add("hostile/yaml-bomb", "yaml")
    (bomb / "submission.yaml").write_text(billion_laughs())
    objects = add("hostile/gzip-objects", "size")
    gzip_repeating(_replace_samples(objects, gz=True), b"{}\n", 1 << 30)
    newlines = add("hostile/gzip-newlines", "size")
    gzip_repeating(_replace_samples(newlines, gz=True), b"\n", 1100 << 20)
    long_line = add("hostile/long-line", "size")
    gzip_repeating(_replace_samples(long_line, gz=True), b" ", 80 << 20)
    deep = add("hostile/deep-json", "json")
    _results(deep).write_text("[" * 200_000 + "]" * 200_000)
    claims = add("hostile/huge-spec", "hash")
    _edit_results(claims, lambda d: d["configs"][TASK]["metadata"].update(n_base=10**8))
    count = add("hostile/huge-count", "count")
    _edit_results(count, lambda d: d["n-samples"][TASK].update(original=10**12, effective=10**12))
    nan = add("hostile/nan", "json")
    text = _results(nan).read_text()
    _results(nan).write_text(text.replace('"acc,none": ', '"acc,none": NaN, "x": ', 1))
    lines = add("hostile/not-objects", "json")
    _replace_samples(lines, gz=False).write_text("[1, 2]\n" * 128)
    utf8 = add("hostile/bad-utf8", "json")
    path = _samples(utf8)
    path.write_bytes(path.read_bytes()[:200] + b"\xff\xfe" + path.read_bytes()[200:])
    link = add("hostile/symlink", "path")
    outside = cwd / "secret.json"
    outside.write_text("{}")
    (link / "results_2026-01-01T00-00-00.000000.json").symlink_to(outside)
    add("hostile/html", "schema", meta={"notes": "<script>alert('x')</script>"})
    (subs / "no-separator").mkdir()
    expected["no-separator"] = "path"
    (subs / "hostile__odd" / "..hidden").mkdir(parents=True)
    expected["hostile__odd/..hidden"] = "path"

    # -- identity: first come keeps its place; nobody retires someone else's entry -------------
    add("acme/good", None)
    # without git history nothing tells a copy from its original (a run date is the copier's
    # to set): both wait for a maintainer, neither takes the other's place
    add("acme/case-model", "duplicate")
    copy = add("ACME/Case-Model", "duplicate")
    _edit_results(copy, lambda d: d.update(date=DATE - 86400.0))
    add("acme/victim", None, meta={"contact": "victim@acme.example"})
    usurper = add(
        "acme/victim",
        "supersedes",
        revision=REVISION_B,
        meta={"contact": "mallory@evil.example", "supersedes": REVISION},
    )
    _edit_results(usurper, lambda d: d.update(date=LATER))
    old = add("acme/evolving", "superseded", meta={"contact": "team@acme.example"})
    new = add(
        "acme/evolving",
        None,
        revision=REVISION_B,
        meta={"contact": "team@acme.example", "supersedes": REVISION},
    )
    _edit_results(new, lambda d: d.update(date=LATER))
    del old
    org, name = "o" * 96, "n" * 95
    add(f"{org}/{name}a", None)
    add(f"{org}/{name}b", None)
    add("acme/formula", None, meta={"kv_cache": '=HYPERLINK("http://evil.example","x")'})
    forged = add("acme/forged-mark", "reproduced")
    mark = {
        "reproduced_by": "a maintainer",
        "date": "2026-12-01",
        "note": "re-ran it",
        "files": {
            p.name: "0" * 64 for p in sorted(forged.iterdir()) if p.name != "submission.yaml"
        },
    }
    (forged / "reproduced.yaml").write_text(yaml.safe_dump(mark))
    return expected


def gzip_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(gzip.compress(b"".join(lines)))
    return path


def memory_hog(path: Path, lines: int = 8, line_bytes: int = 15 << 20) -> Path:
    """A gzip samples file within every size cap (few lines, each under the line cap) whose
    lines parse into millions of fresh empty lists: about 300 MB of Python objects per line."""
    body = b'{"doc": [' + b"[]," * ((line_bytes - 12) // 3) + b"[]]}\n"
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        for _ in range(lines):
            out.write(compressor.compress(body))
        out.write(compressor.flush())
    return path


def replaced(data, path: tuple, value):
    """A copy of the JSON document ``data`` with the value at ``path`` (keys and list indices)
    replaced by ``value``; ``()`` replaces the whole document."""
    if not path:
        return value
    data = json.loads(json.dumps(data))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data
