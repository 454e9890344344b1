"""End to end on real lm-eval output: the tiny random Llama through the real ``lm_eval`` CLI,
then pack, validate and build; a tampered copy is refused. (The shipped example submissions are
validated and browsed in test_leaderboard_browser.py.)"""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from phasebench.cli import main
from phasebench.leaderboard.validate import validate_all
from support.runs import tiny_submission


@pytest.mark.slow
def test_real_lmeval_run_packs_validates_and_builds(tmp_path):
    subs = tmp_path / "subs"
    folder = tiny_submission(tmp_path / "run", subs, lengths=(128,), n_base=16)
    raw = next((tmp_path / "run" / "out").iterdir())
    packed = next(folder.glob("samples_*.jsonl.gz")).stat().st_size
    assert packed * 4 < next(raw.glob("samples_*.jsonl")).stat().st_size

    # the unpacked lm-eval output validates as well as the packed one
    unpacked = subs / "phasebench__tiny-random-llama-raw" / folder.name
    unpacked.mkdir(parents=True)
    for path in raw.iterdir():
        shutil.copyfile(path, unpacked / path.name)
    meta = (folder / "submission.yaml").read_text()
    (unpacked / "submission.yaml").write_text(
        meta.replace("phasebench/tiny-random-llama", "phasebench/tiny-random-llama-raw")
    )
    # a tampered copy: one response flipped to the right answer, its acc and the totals kept
    tampered = subs / "phasebench__tiny-tampered" / folder.name
    shutil.copytree(folder, tampered)
    (tampered / "submission.yaml").write_text(
        meta.replace("phasebench/tiny-random-llama", "phasebench/tiny-tampered")
    )
    sample_file = next(tampered.glob("samples_*.jsonl.gz"))
    lines = gzip.decompress(sample_file.read_bytes()).decode().splitlines()
    first = json.loads(lines[0])
    first["filtered_resps"] = [" " + first["target"]]
    lines[0] = json.dumps(first)
    sample_file.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))

    outcome = validate_all(subs, cache=tmp_path / "cache")
    assert sorted(s.meta["model"] for s in outcome.accepted) == [
        "phasebench/tiny-random-llama",
        "phasebench/tiny-random-llama-raw",
    ], outcome.report_lines()
    ((name, (problem,)),) = outcome.refused
    assert name.startswith("phasebench__tiny-tampered") and problem.rule == "metric"
    assert "the responses give 1.0" in problem.message

    site = tmp_path / "site"
    assert main(["leaderboard", "build", str(subs), "--out", str(site), "--quiet"]) == 0
    board = json.loads((site / "leaderboard.json").read_text())
    row = next(r for r in board["rows"] if r["model"] == "phasebench/tiny-random-llama")
    assert row["n_base"] == 16 and row["board"].startswith("phasebench_kv@128/m")
    assert row["acc"] == 0.0 and row["lowest_phase"] == 0.0  # a random model retrieves nothing
    assert "lm-eval" not in row["lm_eval_version"] and row["lm_eval_version"] == "0.4.13"
