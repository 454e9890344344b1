"""The length-phase axis and phase subsets: splits that generate and verify with the real
DeepSeek-V4 tokenizer, and statistics on simulated sample logs with known ground truth (a model
failing exactly when the prompt length is 3 mod 4 is found on the length axis only, a model
failing at needle phase 3 mod 4 on the needle axis only)."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from phasebench.build import generate, iter_rows, read_manifest
from phasebench.errors import SpecError
from phasebench.report import Run, build_report, render_tables
from phasebench.rng import derive_rng
from phasebench.specs import SplitSpec, parse_phases
from phasebench.verification import verify

MODULUS = 4


@pytest.fixture(scope="module")
def crossed(tmp_path_factory):
    spec = SplitSpec(family="kv", length=256, modulus=MODULUS, n_base=8, length_phases="crossed")
    out = tmp_path_factory.mktemp("crossed")
    (folder,) = generate([spec], out, progress=False)
    return folder


def test_crossed_config_varies_both_axes_and_verifies(crossed):
    rows = list(iter_rows(crossed))
    assert len(rows) == 8 * MODULUS * MODULUS
    assert {r["length"] for r in rows} == {256, 257, 258, 259}
    cells = defaultdict(set)
    for r in rows:
        assert r["length_phase"] == r["length"] % MODULUS and r["config_length"] == 256
        assert r["phase"] == r["anchor_index"] % MODULUS
        cells[r["base_id"]].add((r["phase"], r["length_phase"]))
    assert all(len(c) == MODULUS * MODULUS for c in cells.values())
    # the anchor does not move with the length phase
    anchors = defaultdict(set)
    for r in rows:
        anchors[(r["base_id"], r["phase"])].add(r["anchor_index"])
    assert all(len(a) == 1 for a in anchors.values())
    balance = read_manifest(crossed)["balance"]
    assert balance["length_phase"]["max_mean_deviation"] == 0.0
    (report,) = verify([crossed], progress=False)
    assert report.ok, report.problems


def test_length_only_and_subset_configs_verify(tmp_path):
    only = SplitSpec(family="niah", length=256, modulus=MODULUS, n_base=8, length_phases="only")
    (folder,) = generate([only], tmp_path / "only", progress=False)
    rows = list(iter_rows(folder))
    assert len(rows) == 8 * MODULUS and folder.name == "niah_256_length"
    assert all(len({r["phase"] for r in rows if r["base_id"] == b}) == 1 for b in range(8))
    subset = SplitSpec(family="kv", length=512, modulus=8, n_base=16, phases="0:8:4,7")
    (sub,) = generate([subset], tmp_path / "subset", progress=False)
    assert {r["phase"] for r in iter_rows(sub)} == {0, 4, 7}
    assert read_manifest(sub)["balance"]["phases"] == [0, 4, 7]
    for report in verify([folder, sub], progress=False):
        assert report.ok, report.problems


@pytest.mark.slow
def test_hca_subset_at_modulus_128_generates_and_verifies(tmp_path):
    """The HCA recipe (docs/serving.md): every 16th residue of 128 plus 125..127, 256 base
    items (the least that balances 128 residues) at 2,048 tokens: 2,816 prompts."""
    spec = SplitSpec(family="kv", length=2048, modulus=128, n_base=256, phases="0:128:16,125:128")
    (folder,) = generate([spec], tmp_path, progress=False)
    manifest = read_manifest(folder)
    assert manifest["rows"] == 256 * 11
    assert manifest["balance"]["count_per_phase"] == [256] * 11
    assert manifest["balance"]["max_mean_deviation"] <= 0.5
    (report,) = verify([folder], progress=False)
    assert report.ok, report.problems


def test_phase_subsets_are_spelled_as_ranges():
    assert parse_phases("0:128:16,125:128") == (0, 16, 32, 48, 64, 80, 96, 112, 125, 126, 127)
    with pytest.raises(SpecError, match="'phases' must be residues in 0..7"):
        SplitSpec(family="kv", length=512, modulus=8, n_base=16, phases="0,9")
    with pytest.raises(SpecError, match="start:stop"):
        SplitSpec(family="kv", length=512, modulus=8, n_base=16, phases="0:x")
    with pytest.raises(SpecError, match="code family"):
        SplitSpec(family="code", length=0, n_base=4, length_phases="only")


# -- simulated sample logs ---------------------------------------------------------------------


def _simulated(weak: str, n_base: int = 48, seed: int = 0) -> list[dict]:
    """Sample-log lines of a crossed kv config at 4096 tokens, P = 4: the model answers right
    with probability 0.9, except in the weak cells (``length``: prompt length = 3 mod 4;
    ``needle``: needle phase 3), where it fails."""
    lines = []
    for b in range(n_base):
        rng = derive_rng(seed, "simulated-length", weak, b)
        for phase in range(MODULUS):
            for lp in range(MODULUS):
                length = 4096 + (lp - 4096) % MODULUS
                failing = (lp if weak == "length" else phase) == 3
                doc = {
                    "id": f"kv-4096-b{b:05d}-p{phase}-l{lp}",
                    "family": "kv",
                    "length": length,
                    "config_length": 4096,
                    "length_phase": lp,
                    "phase_modulus": MODULUS,
                    "phase": phase,
                    "base_id": b,
                }
                acc = 0.0 if failing else float(rng.random() < 0.9)
                lines.append({"doc_id": len(lines), "doc": doc, "filter": "none", "acc": acc})
    return lines


@pytest.mark.parametrize(("weak", "other"), [("length", "needle"), ("needle", "length")])
def test_each_simulated_model_is_found_on_its_own_axis(weak, other):
    samples = json.loads(json.dumps(_simulated(weak)))
    report = build_report([Run(f"SIMULATED-{weak}", "here", {"phasebench_kv": samples})],
                          n_boot=300, n_perm=300)  # fmt: skip
    (entry,) = report["runs"][f"SIMULATED-{weak}"]["tasks"]["phasebench_kv"].values()
    axes = {"needle": entry, "length": entry["length_axis"]}
    found, quiet = axes[weak], axes[other]
    assert found["significant"] and found["dominant_period"] == 4
    assert found["lowest_phase_index"] == 3 and found["gap"] > 0.8
    assert not quiet["significant"] and quiet["dominant_period"] is None
    assert quiet["gap"] < 0.15
    table = np.array(entry["phase_table"]["acc"], dtype=float)
    weak_cells = table[:, 3] if weak == "length" else table[3, :]
    assert np.all(weak_cells == 0.0)
    text = render_tables(report)
    assert "length phase (total prompt length mod P; anchor fixed)" in text
    assert "accuracy per needle phase (rows) x length phase (columns)" in text


@pytest.mark.slow
def test_both_axes_run_through_lm_eval_on_smollm2(tmp_path):
    """niah with both axes crossed (4 base items x 2 needle phases x 2 length phases at 256
    tokens: the plumbing, not the statistics, which the tests above pin) through ``phasebench
    eval`` on SmolLM2-135M-Instruct's GGUF (``hf``): the model retrieves the needle, the split
    is generated for the model's tokenizer and verified, the lm-eval aggregates and
    ``phasebench report`` give both profiles and the 2-D table."""
    import subprocess
    import sys

    from support.lmeval import ROOT, lm_eval, outputs
    from support.models import smollm2_model_args

    modulus = 2
    metadata = {"max_seq_lengths": [256], "n_base": 4, "phase_modulus": modulus,
                "length_phases": "crossed"}  # fmt: skip
    proc = lm_eval(tmp_path, smollm2_model_args(), "phasebench_niah", metadata, wrapper=True,
                   timeout=3000)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "length phase (total prompt length mod P; anchor fixed)" in proc.stdout
    results, samples = outputs(tmp_path / "out")
    logged = samples["phasebench_niah"]
    assert len(logged) == 4 * modulus * modulus
    assert {s["doc"]["length"] for s in logged} == {256, 257}
    assert {(s["doc"]["phase"], s["doc"]["length_phase"]) for s in logged} == {
        (0, 0), (0, 1), (1, 0), (1, 1)}  # fmt: skip
    table = results["results"]["phasebench_niah"]
    # a real model retrieves the needle: SmolLM2 found it in all 16 prompts when measured
    # (docs/tasks.md: 7 needles of 8 at 1,024 tokens); the suite's one check of niah retrieval
    # by a real model
    retrieved = {s["doc"]["base_id"] for s in logged if s["acc"] == 1.0}
    assert len(retrieved) >= 2 and table["acc,none"] > 0.5, table["acc,none"]
    for key in ("acc_lowest_phase", "phase_gap", "acc_lowest_length_phase", "length_phase_gap",
                "length_phase_gap_p_value", "length_phase_period"):  # fmt: skip
        assert f"{key},none" in table, sorted(table)
    assert 0.0 <= table["acc_lowest_length_phase,none"] <= table["acc,none"] <= 1.0
    # the cached split verifies on its own
    (config,) = (tmp_path / "cache").rglob("niah_256_crossed")
    (report,) = verify([config], progress=False)
    assert report.ok, report.problems
    shown = subprocess.run(
        [sys.executable, "-m", "phasebench", "report", str(tmp_path / "out"),
         "--n-boot", "200", "--n-perm", "200"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout  # fmt: skip
    assert "needle phase (anchor index mod P; each length phase paired)" in shown
    assert "length phase (total prompt length mod P; anchor fixed)" in shown
    assert "accuracy per needle phase (rows) x length phase (columns)" in shown
