"""``phasebench demo``'s forecast: before, each model's line gave its own time alone, and the
demo ran 9 minutes on a shared machine against the README's "about a minute"."""

from __future__ import annotations

from phasebench.demo import _forecast


def test_each_models_line_forecasts_the_others_at_the_pace_so_far():
    assert _forecast(30.0, 1, 6) == "; the other 5 about 2 min at this pace"
    assert _forecast(10.0, 1, 6) == "; the other 5 about 50 s at this pace"
    assert _forecast(120.0, 3, 6) == "; the other 3 about 2 min at this pace"
    assert _forecast(300.0, 6, 6) == ""  # the last model: nothing left to forecast


def test_the_demo_submissions_precision_is_the_readme_commands_and_said_why():
    """The README's command runs ``dtype=float32`` on Q4_1 weights; the demo's submission.yaml
    says ``precision: q4_1``. Before, the README said precision is "the dtype it ran in": now
    both name the quantization of the file the command loads, and the README says why."""
    from pathlib import Path

    import yaml

    from phasebench.demo import NEXT_GGUF, _submission_template
    from phasebench.samples import gguf_run_name

    meta = yaml.safe_load(_submission_template())
    quant = gguf_run_name(NEXT_GGUF).rpartition(":")[2]
    assert meta["precision"] == quant.lower() == "q4_1"
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert f"gguf_file={NEXT_GGUF},dtype=float32" in readme
    assert "`precision: q4_1` is the weights' quantization" in readme
    assert "dequantizes the Q4_1 weights to\nfloat32" in readme
