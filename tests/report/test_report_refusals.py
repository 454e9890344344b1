"""``phasebench report`` refuses repeated samples, an absurd modulus and a gzip of newlines before
any work, in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import one_line, run
from support.hostile import gzip_repeating


def _report_samples(folder: Path, lines: list[bytes], gz: bool = False) -> Path:
    run_dir = folder / "model"
    run_dir.mkdir(parents=True)
    name = "samples_phasebench_kv_2026-01-01T00-00-00.000000.jsonl"
    (run_dir / name).write_bytes(b"".join(lines))
    return run_dir


def _doc_line(b: int, r: int, acc: float, modulus: int = 8, **changes) -> bytes:
    doc = {"id": f"kv-4096-b{b:05d}-p{r}", "family": "kv", "length": 4096,
           "phase_modulus": modulus, "phase": r, "base_id": b, **changes}  # fmt: skip
    return (json.dumps({"doc": doc, "acc": acc, "filter": "none"}) + "\n").encode()


@pytest.mark.parametrize("repeat", ["same id", "same unit and phase"])
def test_report_refuses_a_repeated_sample(tmp_path, repeat):
    """One extra line repeating doc 0 (acc 1.0) among all-wrong answers was averaged in
    (phase 0 at 3.1%, an interval below 0): it is refused, naming both lines."""
    lines = [_doc_line(b, r, 0.0) for b in range(4) for r in range(8)]
    if repeat == "same id":
        lines.append(_doc_line(0, 0, 1.0))
    else:
        lines.append(_doc_line(0, 0, 1.0, id="kv-4096-b00000-p0-again"))
    folder = _report_samples(tmp_path, lines)
    code, _, err = run(["report", str(folder), "--n-boot", "0", "--n-perm", "0"])
    line = one_line(err)
    assert code == 2 and "sample 33" in line and "sample 1" in line, line


def test_report_refuses_an_absurd_modulus_before_any_work(tmp_path):
    lines = [_doc_line(b, r, 1.0, modulus=10**9) for b in range(2) for r in range(8)]
    code, _, err = run(["report", str(_report_samples(tmp_path, lines)), "--n-boot", "0",
                        "--n-perm", "0"])  # fmt: skip
    assert code == 2 and "4096" in one_line(err)


def test_report_caps_the_lines_of_a_gzip_of_newlines(tmp_path):
    """A small gzip of newlines (here 3 million; the probe used 1 GB) is refused by the line
    cap, naming it, instead of being read to the end."""
    run_dir = tmp_path / "model"
    run_dir.mkdir()
    gz = run_dir / "samples_phasebench_kv_2026-01-01T00-00-00.000000.jsonl.gz"
    gzip_repeating(gz, b"\n", 3_000_000)
    code, _, err = run(["report", str(run_dir), "--n-boot", "0", "--n-perm", "0"])
    assert code == 2 and f"more than {1 << 21} lines" in one_line(err)


@pytest.mark.parametrize("doc", ["long string", "list"])
def test_report_refuses_a_doc_that_is_not_an_object_in_one_line(tmp_path, doc):
    """A samples file of one long line whose doc is a JSON string (or a list): before, a
    traceback (``'str' object has no attribute 'get'``) and exit 1; now one line, exit 2."""
    value = "x" * 2_000_000 if doc == "long string" else [1, 2]
    line = (json.dumps({"doc_id": 0, "doc": value, "acc": 1.0}) + "\n").encode()
    folder = _report_samples(tmp_path, [line])
    code, _, err = run(["report", str(folder), "--n-boot", "0", "--n-perm", "0"])
    assert code == 2 and "Traceback" not in err
    assert "no phasebench samples" in one_line(err)


def test_report_refuses_a_salt_that_is_not_a_multiple_of_p(tmp_path):
    """A salted run whose salt is 17 tokens at P = 8 (every position off by one, labels kept):
    before, a significant gap from ``report`` and "128/128 agree" from ``--diff``; now both
    refuse it in one line, exit 2. A salt of 16 tokens is read."""
    weak = [0.0 if r == 1 else 1.0 for r in range(8)]
    plain = [_doc_line(b, r, weak[r]) for b in range(16) for r in range(8)]

    def salted(salt: int) -> list[bytes]:
        return [_doc_line(b, r, weak[(r + salt) % 8], prefix_cache="salted", salt_tokens=salt)
                for b in range(16) for r in range(8)]  # fmt: skip

    base = _report_samples(tmp_path / "plain", plain)
    odd = _report_samples(tmp_path / "odd", salted(17))
    for argv in ([str(odd)], [str(base), str(odd), "--diff"]):
        code, _, err = run(["report", *argv, "--n-boot", "0", "--n-perm", "0"])
        assert code == 2 and "Traceback" not in err
        assert "salt is 17 tokens, not a multiple of P = 8" in one_line(err)
    even = _report_samples(tmp_path / "even", salted(16))
    code, _, err = run(["report", str(even), "--n-boot", "0", "--n-perm", "0"])
    assert code == 0, err


def _repeat_lines(order: str, n_base: int = 8) -> list[bytes]:
    """A repeat run's lines in doc_id order: each prompt read cold then warm (the warm read
    wrong on phase 0), all cold then all warm, or each warm read before its cold twin."""
    prompts = [(b, r) for b in range(n_base) for r in range(8)]
    lines = []
    for i, (b, r) in enumerate(prompts):
        at = {"arm": {"cold": 2 * i, "warm": 2 * i + 1},
              "all cold, then all warm": {"cold": i, "warm": len(prompts) + i},
              "warm first": {"cold": 2 * i + 1, "warm": 2 * i}}[order]  # fmt: skip
        for read in ("cold", "warm"):
            doc = {"id": f"kv-4096-b{b:05d}-p{r}", "family": "kv", "length": 4096,
                   "phase_modulus": 8, "phase": r, "base_id": b, "read": read}  # fmt: skip
            key, value = ("acc", 1.0) if read == "cold" else ("acc_warm", float(r != 0))
            lines.append((at[read], {"doc_id": at[read], "doc": doc, key: value}))
    return [(json.dumps(rec) + "\n").encode() for _, rec in sorted(lines, key=lambda x: x[0])]


@pytest.mark.parametrize(
    "order", ["all cold, then all warm", "warm first", "batch_size 4", "num_concurrent 4"]
)
def test_report_refuses_a_repeat_run_out_of_the_arms_order(tmp_path, order):
    """Before: printed as "prefix cache  warm vs cold ... McNemar p ..." with no flag. Now a
    repeat run is checked against the order its arm sends the reads in, and against the
    logged lm-eval config (batch size 1, no concurrency): one line, exit 2."""
    folder = _report_samples(tmp_path, _repeat_lines("arm" if " 4" in order else order))
    config = {"model_args": "pretrained=acme/m", "batch_size": 1}
    if order == "batch_size 4":
        config["batch_size"] = 4
    elif order == "num_concurrent 4":
        config["model_args"] += ",num_concurrent=4"
    results = {"results": {"phasebench_kv": {}}, "config": config}
    (folder / "results_2026-01-01T00-00-00.000000.json").write_text(json.dumps(results))
    code, _, err = run(["report", str(folder), "--n-boot", "0", "--n-perm", "0"])
    assert code == 2 and "Traceback" not in err, err
    assert "not a measurement" in one_line(err)
    word = order.split()[0] if " 4" in order else "a repeat run reads each prompt cold, then warm"
    assert word in one_line(err)


def test_report_reads_a_repeat_run_in_the_arms_order(tmp_path):
    folder = _report_samples(tmp_path, _repeat_lines("arm"))
    results = {"results": {"phasebench_kv": {}}, "config": {"model_args": "pretrained=acme/m"}}
    (folder / "results_2026-01-01T00-00-00.000000.json").write_text(json.dumps(results))
    code, out, err = run(["report", str(folder), "--n-boot", "0", "--n-perm", "0"])
    assert code == 0, err
    assert "prefix cache  warm vs cold: 56/64 agree" in out


def _served_lines(concentrated: bool) -> list[bytes]:
    """A flat model (50% in every phase, 192 base items, P = 4) through a server whose count is
    off by one on 37 of 768 samples (4.8%, under the 5% line): all right answers of phase 0
    (``concentrated``), or spread over every phase, half of them right."""
    lines = []
    for b in range(192):
        for r in range(4):
            if concentrated:
                off = r == 0 and b < 37
                acc = float(b < 96) if r == 0 else float(b % 2)
            else:
                off = b < 37 and r == b % 4
                acc = float(b % 2)
            doc = {"id": f"kv-4096-b{b:05d}-p{r}", "family": "kv", "length": 4096,
                   "phase_modulus": 4, "phase": r, "base_id": b}  # fmt: skip
            served = [4096, 4095 if off else 4096]
            record = {"doc": doc, "acc": acc, "filter": "none", "served_verified": served}
            lines.append((json.dumps(record) + "\n").encode())
    return lines


@pytest.mark.parametrize("concentrated", [True, False], ids=["one phase", "spread"])
def test_report_refuses_a_gap_made_by_the_rows_left_out(tmp_path, concentrated):
    """Before: "gap 11.9 [6.1, 17.7] (significant; p < 0.001)", a gap made by the 37 left-out
    rows alone. Now the left-out rows are put back counted wrong and counted right; where the
    verdict differs, one line, exit 2. Spread over the phases, they change nothing: read."""
    folder = _report_samples(tmp_path, _served_lines(concentrated))
    code, out, err = run(["report", str(folder), "--n-boot", "0", "--n-perm", "200"])
    if concentrated:
        assert code == 2 and "Traceback" not in err, err
        assert "rests on the 37 samples left out" in one_line(err)
        assert "phase(s) 0" in one_line(err)
    else:
        assert code == 0, err
        assert "37 disagree and are left out" in out
