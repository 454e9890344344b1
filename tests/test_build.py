"""Determinism, sharding, atomicity and tamper detection of built splits."""

from __future__ import annotations

import hashlib
import json

import pyarrow.parquet as pq
import pytest

from phasebench.build import content_hash, generate, iter_rows, read_manifest, units_per_chunk
from phasebench.errors import PhasebenchError, TokenizerError
from phasebench.specs import SplitSpec
from phasebench.verification import verify_config

# 64K tokens -> 16 base items per file: 32 base items make two files to shard over
MULTI = SplitSpec("kv", 65536, modulus=2, n_base=32, seed=3)


def digest(folder):
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def unsharded(deepseek, tmp_path_factory):
    out = tmp_path_factory.mktemp("unsharded")
    generate([MULTI], out, progress=False, tokenizer=deepseek)
    return out


def test_the_multi_file_config_really_has_several_files(unsharded):
    assert units_per_chunk(MULTI) == 16
    assert len(read_manifest(unsharded / MULTI.config_name)["files"]) == 2


def test_rerun_is_byte_identical(unsharded, deepseek, tmp_path):
    generate([MULTI], tmp_path, progress=False, tokenizer=deepseek)
    assert digest(tmp_path) == digest(unsharded)


@pytest.mark.slow
def test_shards_and_processes_give_the_same_bytes(unsharded, deepseek, tmp_path):
    sharded = tmp_path / "sharded"
    first = generate([MULTI], sharded, shard=(1, 2), progress=False, tokenizer=deepseek)
    assert not (first[0] / "manifest.json").exists()  # incomplete until every shard is in
    generate([MULTI], sharded, shard=(0, 2), progress=False, tokenizer=deepseek)
    assert digest(sharded) == digest(unsharded)
    procs = tmp_path / "procs"
    generate([MULTI], procs, num_proc=2, progress=False, tokenizer=deepseek)
    assert digest(procs) == digest(unsharded)


def test_manifest_records_provenance(unsharded, deepseek):
    m = read_manifest(unsharded / MULTI.config_name)
    assert m["spec"] == MULTI.to_dict()
    assert m["tokenizer"]["fingerprint"] == deepseek.fingerprint
    assert m["rows"] == 64 and m["content_hash"].startswith("sha256:")
    assert m["balance"]["count_per_phase"] == [32, 32]
    assert {"phasebench_version", "generator_version", "files", "family"} <= set(m)


def test_verify_catches_a_tampered_anchor(unsharded, deepseek, tmp_path):
    import shutil

    folder = tmp_path / "cfg"
    shutil.copytree(unsharded / MULTI.config_name, folder)
    path = sorted(folder.glob("*.parquet"))[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[3]["anchor_index"] += 1
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    report = verify_config(folder, progress=False, tokenizer=deepseek, sample=8)
    assert not report.ok
    text = "\n".join(report.lines())
    assert "content hash" in text and "phase != anchor_index" in text


def test_verify_refuses_another_tokenizer(unsharded, wordpiece):
    with pytest.raises(TokenizerError, match="was built for tokenizer"):
        verify_config(unsharded / MULTI.config_name, progress=False, tokenizer=wordpiece)


def test_interrupted_run_leaves_nothing(deepseek, tmp_path, monkeypatch):
    import phasebench.build as build

    def explode(i):
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "_write_chunk", explode)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        generate([SplitSpec("kv", 1024, n_base=16)], out, progress=False, tokenizer=deepseek)
    assert not out.exists()


def test_existing_output_needs_overwrite(deepseek, tmp_path):
    (tmp_path / "keep.txt").write_text("user data")
    with pytest.raises(PhasebenchError, match="--overwrite"):
        generate([SplitSpec("kv", 1024, n_base=16)], tmp_path, progress=False, tokenizer=deepseek)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_overwrite_replaces_a_config(deepseek, tmp_path):
    spec = SplitSpec("kv", 1024, n_base=16)
    generate([spec], tmp_path, progress=False, tokenizer=deepseek)
    generate([spec.replace(seed=1)], tmp_path, overwrite=True, progress=False, tokenizer=deepseek)
    assert json.loads((tmp_path / "kv_1024" / "spec.json").read_text())["seed"] == 1
    assert read_manifest(tmp_path / "kv_1024")["spec"]["seed"] == 1


def json_hash(rows):
    """The content hash as defined: each row's sorted-key JSON in UTF-8, then a newline."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


#: Long strings (escaped without the json module when they have no control character but the
#: newline) and short ones, with every character JSON escapes or might be thought to.
AWKWARD = 'say "hi" \\ back\\slash\nnew line\ttab\x00nul\x1f\x7f \u00e9 \U0001f642 \u2028 '
LONG_TEXTS = [
    AWKWARD * 200,
    'plain "quoted" \\ text\n' * 400,
    "\u00e9\U0001f642\n" * 3000,
    "x" * 4096,
    "x" * 4095,
    "\r\n" * 3000,
]


def test_content_hash_is_the_json_definition(unsharded):
    rows = list(iter_rows(unsharded / MULTI.config_name))
    assert content_hash(rows) == json_hash(rows)
    odd = [
        {
            "prompt": s,
            "choices": ["a", s],
            "n": 1,
            "f": 0.1,
            "b": True,
            "none": None,
            "nested": {"z": 1, "a": [s[:10]]},
            "\u00e9 key": s[:5],
        }
        for s in LONG_TEXTS
    ]
    odd += [{}, {1: "x" * 5000, 2: "y"}, {"only": "z" * 5000}]
    for row in odd:
        assert content_hash([row]) == json_hash([row]), row.keys()
    assert content_hash(rows[:3] + odd) == json_hash(rows[:3] + odd)
