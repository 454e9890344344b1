"""``phasebench probe`` checks its limits and its output folder before the model runs."""

from __future__ import annotations

import os

import pytest

from support.cli import one_line, run


@pytest.mark.parametrize(
    ("args", "words"),
    [(["--modulus", "1000000000"], "--modulus"), (["--modulus", "4097"], "--modulus"),
     (["--rounds", "1000000"], "--rounds"), (["--filler="], "--filler")],
    ids=["modulus 1e9", "modulus 4097", "rounds 1e6", "empty filler"],
)  # fmt: skip
def test_probe_limits_are_checked_before_any_work(tmp_path, monkeypatch, args, words):
    import phasebench.probe as probe

    prompt = tmp_path / "prompt.txt"
    prompt.write_text("{{shift}}\nThe answer is")
    monkeypatch.setattr(probe, "plan_for_model", lambda *a, **k: pytest.fail("planned"))
    code, _, err = run(["probe", str(prompt), "--model", "hf", "--model_args",
                        "pretrained=nowhere", "--expect", "8", *args])  # fmt: skip
    assert code == 2 and words in one_line(err)


def test_probe_out_that_cannot_be_written_is_refused_before_the_model_runs(tmp_path, monkeypatch):
    import phasebench.probe as probe

    if os.access("/proc/sys", os.W_OK):
        pytest.skip("needs a folder this user cannot write (/proc/sys)")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("{{shift}}\nThe answer is")
    monkeypatch.setattr(probe, "plan_for_model", lambda *a, **k: pytest.fail("planned"))
    code, _, err = run(["probe", str(prompt), "--model", "hf", "--model_args",
                        "pretrained=nowhere", "--expect", "8", "--out", "/proc/sys"])  # fmt: skip
    assert code == 2 and "--out" in one_line(err)
