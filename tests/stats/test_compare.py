"""Two runs of one split: ``phasebench.stats.compare_runs`` and ``phasebench report A B --diff``
(the difference in gap and worst phase, paired bootstrap interval and the p-value it inverts
to; refused in
one line unless both runs are of the same split). Calibration by simulation:
``benchmarks/compare_runs.py`` (``docs/stats.md``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from phasebench.cli import main
from phasebench.rng import derive_rng
from phasebench.stats import compare_runs, summarize_samples
from phasebench.stats.compare import bootstrap_test
from phasebench.stats.records import ScoredRecord

MODULUS = 8
WEAK = [0.9, 0.9, 0.9, 0.5] * 2  # stride 4, one weak phase in four: gap 40 points
FLAT = [0.8] * MODULUS
FINGERPRINT = "sha256:" + "ab" * 32


def outcomes(profile, n: int, key: str) -> np.ndarray:
    """Paired 0/1 outcomes with a Gaussian item latent (probit), exact per-phase accuracies."""
    rng = derive_rng(3, "compare-test", key)
    item = rng.normal(0.0, math.sqrt(0.5), (n, 1))
    noise = rng.normal(0.0, math.sqrt(0.5), (n, MODULUS))
    return (item + noise < sps.norm.ppf(profile)).astype(float)


def records(matrix: np.ndarray) -> list[ScoredRecord]:
    return [
        ScoredRecord(1024, MODULUS, f"1024/{b}", p, float(matrix[b, p]), None, 0)
        for b in range(matrix.shape[0])
        for p in range(MODULUS)
    ]


def test_identical_runs_differ_by_zero_with_p_one():
    run = records(outcomes(WEAK, 32, "same"))
    d = compare_runs(run, run, n_boot=200)
    for key in ("gap", "worst_phase_crossfit"):
        assert d[key]["difference"] == 0.0
        assert d[key]["difference_ci"] == [0.0, 0.0]
        assert d[key]["p_value"] == 1.0  # every resample differs by 0
        assert d[key]["significant"] is False
    assert d["n_base"] == 32


def test_a_known_difference_is_detected_and_its_numbers_are_the_summaries():
    before = records(outcomes(WEAK, 64, "before"))
    after = records(outcomes(FLAT, 64, "after"))
    d = compare_runs(before, after, n_boot=300)
    gap, worst = d["gap"], d["worst_phase_crossfit"]
    assert gap["difference"] < -0.2 and gap["difference_ci"][1] < 0 and gap["p_value"] < 0.01
    assert worst["difference"] > 0.1 and worst["difference_ci"][0] > 0 and worst["p_value"] < 0.05
    # one number everywhere: before and after are what the report shows for each run
    for run, side in ((before, "before"), (after, "after")):
        summary = summarize_samples(run, n_boot=0, n_perm=0)
        assert d["gap"][side] == pytest.approx(summary["gap"], abs=1e-12)
        assert d["worst_phase_crossfit"][side] == pytest.approx(
            summary["worst_phase_crossfit"], abs=1e-12
        )


def test_the_runs_are_paired_on_the_base_items_both_have():
    before = records(outcomes(WEAK, 40, "pair"))
    after = [r for r in before if r.unit not in {"1024/3", "1024/7"}]
    d = compare_runs(before, after, n_boot=50)
    assert d["n_base"] == 38 and d["gap"]["difference"] == 0.0  # the same rows, paired


def _write_run(folder: Path, matrix: np.ndarray, fingerprint: str = FINGERPRINT) -> Path:
    """An lm-eval style output folder (samples log and results file) of one kv run."""
    folder.mkdir(parents=True)
    date = "2026-01-01T00-00-00.000000"
    lines = []
    for b in range(matrix.shape[0]):
        for p in range(MODULUS):
            doc = {
                "id": f"kv-1024-b{b:05d}-p{p}",
                "family": "kv",
                "length": 1024,
                "phase_modulus": MODULUS,
                "phase": p,
                "base_id": b,
                "answer": "12345",
                "tokenizer_fingerprint": fingerprint,
                "seed": 0,
            }
            acc = float(matrix[b, p])
            lines.append({"doc_id": len(lines), "doc": doc, "filter": "none",
                          "metrics": ["acc"], "acc": acc})  # fmt: skip
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / f"samples_phasebench_kv_{date}.jsonl").write_text(text, encoding="utf-8")
    results = {"model_name": folder.name, "results": {}}
    (folder / f"results_{date}.json").write_text(json.dumps(results), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    before = _write_run(root / "before", outcomes(WEAK, 48, "cli-before"))
    after = _write_run(root / "after", outcomes(FLAT, 48, "cli-after"))
    return before, after


def test_report_diff_prints_and_writes_the_difference(two_runs, tmp_path, capsys):
    before, after = two_runs
    out = tmp_path / "r.json"
    args = ["report", str(before), str(after), "--diff", "--json", str(out)]
    assert main([*args, "--n-boot", "200"]) == 0
    printed = capsys.readouterr().out
    # the runs are named by the folders given (issue 52; they were named by model, which the
    # fixture names after its folder)
    # the heading wraps at 100 columns (between words; a path is never cut)
    heading = f"difference {after} minus {before}"
    assert heading in " ".join(printed.split())
    block = printed[printed.index("difference  ") :]
    line = next(x for x in block.splitlines() if x.strip().startswith("gap "))
    # no resample reached 0: the bootstrap's smallest p, 2 / (1 + 200)
    assert "->" in line and line.endswith(f"p = {2 / 201:.3g}")
    diff = json.loads(out.read_text())["difference"]
    entry = diff["tasks"]["phasebench_kv"]["1024"]
    assert (diff["before"], diff["after"]) == (str(before), str(after))
    assert entry["gap"]["difference"] < 0 and entry["split"]["tokenizer_fingerprint"] == FINGERPRINT
    assert main(["report", str(out)]) == 0  # the saved report renders its difference back
    assert heading in " ".join(capsys.readouterr().out.split())


def test_report_diff_refuses_runs_of_different_splits_in_one_line(two_runs, tmp_path, capsys):
    before, _ = two_runs
    other = _write_run(tmp_path / "other", outcomes(FLAT, 48, "x"), "sha256:" + "cd" * 32)
    written = tmp_path / "r.json"
    assert main(["report", str(before), str(other), "--diff", "--json", str(written)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not runs of one split" in err
    assert "tokenizer fingerprint sha256:abababab" in err
    fewer = _write_run(tmp_path / "fewer", outcomes(WEAK, 40, "y"))
    assert main(["report", str(before), str(fewer), "--diff"]) == 2
    assert "samples against" in capsys.readouterr().err
    assert main(["report", str(before), "--diff"]) == 2
    assert "exactly two runs" in capsys.readouterr().err
    assert not written.exists()  # nothing written on a refusal


def test_report_diff_names_the_runs_by_the_folders_given(tmp_path, capsys):
    """Before, ``--diff`` labelled the runs by model name: the same model before and after a
    fix read "m (2) minus m". They are named by the folders given, in the order given."""
    folders = []
    for name, profile in (("before-fix", WEAK), ("after-fix", FLAT)):
        folder = _write_run(tmp_path / name, outcomes(profile, 48, name))
        results = next(folder.glob("results_*.json"))
        results.write_text(json.dumps({"model_name": "acme/m", "results": {}}))
        folders.append(str(folder))
    assert main(["report", *folders, "--diff", "--n-boot", "50", "--n-perm", "50"]) == 0
    printed = capsys.readouterr().out
    assert f"difference {folders[1]} minus {folders[0]} (points" in " ".join(printed.split())


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.sampled_from([-0.2, -0.05, 0.0, 0.01, 0.1, 0.3]), min_size=1, max_size=80)
    | st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=300),
    alpha=st.sampled_from([0.05, 0.1, 0.2]),
)
def test_a_difference_is_significant_exactly_when_its_interval_excludes_zero(values, alpha):
    """Replicates with many ties and exact zeros, counts where alpha / 2 (1 + B) is whole:
    the p-value and the interval are one method and cannot disagree."""
    (lo, hi), p, significant = bootstrap_test(np.array(values), alpha)
    assert significant == (p <= alpha)
    if math.isnan(lo):
        assert not significant
    else:
        assert significant == (lo > 0 or hi < 0)
        assert lo <= hi


def test_compared_runs_agree_on_every_difference():
    before = records(outcomes(WEAK, 48, "agree-a"))
    for label, profile in (("agree-b", FLAT), ("agree-c", WEAK)):
        d = compare_runs(before, records(outcomes(profile, 48, label)), n_boot=400)
        for key in ("gap", "worst_phase_crossfit"):
            lo, hi = d[key]["difference_ci"]
            assert d[key]["significant"] == (lo > 0 or hi < 0) == (d[key]["p_value"] <= 0.05)
