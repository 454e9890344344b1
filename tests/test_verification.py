"""``phasebench verify`` and ``inspect`` on damaged or tampered splits: truncated or flipped
files, a forged manifest, a changed needle with its hashes recomputed, null fields, control
characters; each is found and named in one line."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from phasebench.build import HASH_KEY, MANIFEST, content_hash, generate, iter_rows
from phasebench.cli import main
from support.repos import SPEC, parquet, refused_in_one_line


def _verify(capsys, *paths: Path) -> tuple[int, str, str]:
    code = main(["verify", *map(str, paths), "--quiet"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, captured.out, captured.err


def _inspect(capsys, path: Path, *args: str) -> tuple[int, str]:
    code = main(["inspect", str(path), "--no-color", *args])
    err = capsys.readouterr().err.strip()
    return code, err


def test_truncated_parquet(kv_split_copy, capsys):
    path = parquet(kv_split_copy)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    code, out, _ = _verify(capsys, kv_split_copy)
    assert code == 1 and "FAILED" in out and path.name in out and "readable" in out
    refused_in_one_line(*_inspect(capsys, kv_split_copy))


def test_flipped_bytes(kv_split_copy, capsys):
    path = parquet(kv_split_copy)
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 64):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    code, out, _ = _verify(capsys, kv_split_copy)
    assert code == 1 and "FAILED" in out
    refused_in_one_line(*_inspect(capsys, kv_split_copy))


@pytest.mark.parametrize(
    "text",
    ["", "\x00\xff garbage", "[]", '{"config": "kv_256"}', "null", '{"files": 3}'],
    ids=["empty", "bytes", "list", "keys", "null", "types"],
)
def test_garbage_manifest(kv_split_copy, capsys, text):
    (kv_split_copy / MANIFEST).write_text(text, encoding="latin-1")
    code, out, _ = _verify(capsys, kv_split_copy)
    assert code == 1 and "manifest" in out, out
    refused_in_one_line(*_inspect(capsys, kv_split_copy))


def _rewrite_manifest(folder: Path, edit) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    edit(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../../etc/passwd", "sub/x.parquet"])
def test_manifest_file_list_cannot_leave_the_folder(kv_split_copy, capsys, target):
    _rewrite_manifest(kv_split_copy, lambda m: m["files"][0].update(path=target))
    code, out, _ = _verify(capsys, kv_split_copy)
    assert code == 1 and "plain file name" in out, out
    code, err = _inspect(capsys, kv_split_copy)
    refused_in_one_line(code, err)
    assert "root:" not in err


def _recompute_hashes(folder: Path, rows: list[dict]) -> None:
    """Write ``rows`` back with every hash recomputed, as a careful forger would."""
    path = parquet(folder)
    table = pq.read_table(path)
    digest = content_hash(rows)
    out = pa.Table.from_pylist(rows, schema=table.schema).replace_schema_metadata(
        {HASH_KEY: digest.encode()}
    )
    pq.write_table(out, path)

    def edit(manifest):
        manifest["files"][0]["content_sha256"] = digest
        hashes = [f["content_sha256"] for f in manifest["files"]]
        manifest["content_hash"] = (
            "sha256:" + hashlib.sha256("\n".join(hashes).encode()).hexdigest()
        )

    _rewrite_manifest(folder, edit)


def test_a_changed_needle_value_is_found_even_with_hashes_recomputed(kv_split_copy, capsys):
    rows = list(iter_rows(kv_split_copy))
    row = rows[3]
    needle = f"{row['needle_key']}: {row['answer']}\n"
    other = str((int(row["answer"]) + 1) % 90_000 + 10_000)
    assert row["prompt"].count(needle) == 1
    row["prompt"] = row["prompt"].replace(needle, f"{row['needle_key']}: {other}\n")
    _recompute_hashes(kv_split_copy, rows)
    code, out, _ = _verify(capsys, kv_split_copy)
    assert code == 1 and row["id"] in out and "needle" in out, out


def test_a_needle_key_repeated_in_the_haystack_is_found(kv_split_copy, capsys):
    rows = list(iter_rows(kv_split_copy))
    row = rows[5]
    # an earlier record is renamed to the needle's key (same length, same token count)
    body = row["prompt"][: row["key_char"]].splitlines(keepends=True)
    victim = next(i for i in range(3, len(body)) if body[i][:6].isalnum() and ": " in body[i])
    body[victim] = row["needle_key"] + body[victim][6:]
    row["prompt"] = "".join(body) + row["prompt"][row["key_char"] :]
    row["key_char"] = row["prompt"].find(row["needle_key"])
    _recompute_hashes(kv_split_copy, rows)
    code, out, _ = _verify(capsys, kv_split_copy)
    assert code == 1 and row["id"] in out, out


def test_verify_names_a_partial_config_it_skipped(kv_split, tmp_path, capsys, deepseek):
    out = tmp_path / "split"
    shutil.copytree(kv_split, out / kv_split.name)
    generate([SPEC.replace(length=320)], out, overwrite=True, progress=False, tokenizer=deepseek)
    (out / "kv_320" / MANIFEST).unlink()
    code, stdout, _ = _verify(capsys, out)
    assert code == 1 and "kv_256: OK" in stdout and "kv_320" in stdout and "partial" in stdout


@pytest.mark.parametrize("field", ["prompt", "anchor_index", "depth", "answer", "phase"])
def test_null_fields_are_named_by_verify_and_inspect(kv_split_copy, capsys, field):
    rows = list(iter_rows(kv_split_copy))
    rows[0][field] = None
    _recompute_hashes(kv_split_copy, rows)
    code, out, _ = _verify(capsys, kv_split_copy)
    assert code == 1 and f"{field} is null" in out and rows[0]["id"] in out, out
    assert "unsupported operand" not in out
    code, err = _inspect(capsys, kv_split_copy)
    refused_in_one_line(code, err)
    assert f"{field} is null" in err, err


def test_inspect_escapes_control_and_bidi_characters(kv_split_copy, capsys):
    rows = list(iter_rows(kv_split_copy))
    row = rows[0]
    evil = "\x1b]0;owned\x07\x1b[2J\u202e\x9b"
    row["prompt"] = (
        row["prompt"][: row["key_char"]] + evil + row["prompt"][row["key_char"] + len(evil) :]
    )
    _recompute_hashes(kv_split_copy, rows)
    assert main(["inspect", str(kv_split_copy), "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x9b" not in out and "\x07" not in out
    assert "\\x1b]0;owned\\x07" in out and "\\u202e" in out


@pytest.mark.parametrize("num_proc", [1, 2])
def test_batched_verify_gives_the_row_at_a_time_verdicts(kv_split_copy, deepseek, num_proc):
    """``verify`` encodes its prompts in batches (the tokenizer's batch encoder, in ``num_proc``
    workers) and reads lengths, anchors, questions and the prefill ids from that one encoding
    per prompt; before, it encoded each prompt alone, twice. Its verdicts are the row-at-a-time
    exact path's, row for row, on a split with two damaged rows (a claimed anchor one token
    off, a prompt one character longer), both caught."""
    from phasebench.families import get_family
    from phasebench.specs import SplitSpec
    from phasebench.verification import verify_config

    rows = list(iter_rows(kv_split_copy))
    rows[3]["anchor_index"] += 1
    rows[3]["phase"] = rows[3]["anchor_index"] % rows[3]["phase_modulus"]
    rows[10]["prompt"] = rows[10]["prompt"].replace(": ", ":  ", 1)
    _recompute_hashes(kv_split_copy, rows)
    manifest = json.loads((kv_split_copy / MANIFEST).read_text())
    family = get_family(SplitSpec.from_dict(manifest["spec"]))
    slow = [f"{row['id']}: {p}" for row in rows for p in family.verify_row(deepseek, row)]
    assert any(p.startswith(rows[3]["id"]) for p in slow), slow
    assert any(p.startswith(rows[10]["id"]) for p in slow), slow
    report = verify_config(kv_split_copy, num_proc=num_proc, progress=False, tokenizer=deepseek)
    ids = {row["id"] for row in rows}
    fast = [p for p in report.problems if p.partition(":")[0] in ids]
    assert fast == slow and report.checked == len(rows), report.problems
