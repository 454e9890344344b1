"""``phasebench probe``: exact one-token shifts of a user's prompt on three tokenizer families,
the statistics and verdict, and the bad-input refusals (one line, exit code 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from phasebench.cli import main
from phasebench.probe import ProbeError, parse_prompt, plan_shifts
from phasebench.probe.analysis import analyse, terminal_plot
from phasebench.probe.run import Answer
from phasebench.probe.shifts import STYLE_NAMES, chat_frame
from support.probes import NIAH_PROBE as NIAH

FILLER_LINE = "The afternoon was quiet and nothing else happened.\n"
FAMILIES = ["deepseek", "smollm2", "mistral_v1"]


def independent_check(tok, plan, frame_special: bool) -> int:
    """Re-encode every rendering's whole text here and check, from the ids and the offsets
    alone, that the key passage moved by exactly its shift and nothing else changed."""
    prompt, head = plan.prompt, len(plan.frame.head)
    ref = tok.hf(plan.frame.wrap(prompt.plain), add_special_tokens=frame_special,
                 return_offsets_mapping=True)  # fmt: skip
    ref_ids = list(ref["input_ids"])

    def token_at(offsets, char):
        return next(i for i, (s, e) in enumerate(offsets) if s <= char < e)

    ref_anchor = token_at(ref["offset_mapping"], head + len(prompt.before))
    if prompt.paired:
        ref_after = token_at(ref["offset_mapping"], head + len(prompt.before) + len(prompt.key))
    firsts = {}
    for r in plan.renderings:
        enc = tok.hf(r.text, add_special_tokens=frame_special, return_offsets_mapping=True)
        ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
        pad0 = r.pad_tokens[0]
        pad1 = r.pad_tokens[1] if prompt.paired else 0
        assert len(ids) == r.n_tokens == len(ref_ids) + pad0 + pad1
        assert ids[:ref_anchor] == ref_ids[:ref_anchor]  # before the marker: unchanged
        key_char = head + len(prompt.before) + r.content[len(prompt.before) :].index(prompt.key)
        anchor = token_at(offsets, key_char)
        assert anchor == r.anchor == ref_anchor + pad0 and r.phase == anchor % plan.modulus
        if prompt.paired:  # the key moved by pad0; what follows the second padding did not
            n_key = ref_after - ref_anchor
            assert ids[anchor : anchor + n_key] == ref_ids[ref_anchor:ref_after]
            after = token_at(offsets, head + len(r.content) - len(prompt.after))
            assert after == ref_after + pad0 + pad1 and after - (anchor + n_key) == pad1
            assert ids[after:] == ref_ids[ref_after:]
        else:
            assert ids[anchor:] == ref_ids[ref_anchor:]
        first = firsts.setdefault(r.style, r)
        assert r.anchor - first.anchor == r.shift - first.shift  # exactly k tokens per shift
    return len(plan.renderings)


@pytest.mark.parametrize("fixture", FAMILIES)
@pytest.mark.parametrize("paired", [True, False])
def test_every_shift_is_exact_by_re_encoding(fixture, paired, request):
    tok = request.getfixturevalue(fixture)
    text = NIAH if paired else NIAH.replace("{{balance}}", "")
    prompt = parse_prompt(text)
    plan = plan_shifts(tok, prompt, modulus=4, rounds=2, styles=STYLE_NAMES, custom=FILLER_LINE)
    assert plan.styles, plan.refused
    n = independent_check(tok, plan, frame_special=True)
    assert n == len(plan.styles) * 8
    for style in plan.styles:
        rows = [r for r in plan.renderings if r.style == style]
        assert [r.shift for r in rows] == list(range(8))
        assert sorted(r.phase for r in rows) == sorted(list(range(4)) * 2)
        lengths = {r.n_tokens for r in rows}
        assert len(lengths) == (1 if paired else 8)  # paired: only the phase moves


def test_shifts_after_a_chat_template_count_the_template(smollm2):
    """SmolLM2's template adds a system turn: positions are counted in the templated sequence."""
    frame = chat_frame(smollm2)
    plan = plan_shifts(smollm2, parse_prompt(NIAH), modulus=4, rounds=1, frame=frame,
                       styles=("comment_hash",))  # fmt: skip
    assert frame.head and plan.renderings[0].text.startswith(frame.head)
    assert independent_check(smollm2, plan, frame_special=frame.special) == 4
    plain = plan_shifts(smollm2, parse_prompt(NIAH), modulus=4, rounds=1, styles=("comment_hash",))
    offset = plan.renderings[0].anchor - plain.renderings[0].anchor
    assert offset == len(smollm2.encode(frame.head)) > 0


def test_choices_must_be_single_tokens(deepseek):
    prompt = parse_prompt("x = 1\n{{shift}}y = T.Cast(FP")
    plan = plan_shifts(deepseek, prompt, modulus=2, rounds=1, styles=("comment_hash",),
                       choices=("8", "32"))  # fmt: skip
    assert plan.choices == ("8", "32")
    with pytest.raises(ProbeError, match="is 3 tokens after the prompt"):
        plan_shifts(deepseek, prompt, modulus=2, rounds=1, styles=("comment_hash",),
                    choices=("8", "12345678"))  # fmt: skip


@pytest.mark.parametrize(
    "text,match",
    [
        ("no marker here", "has no {{shift}} marker"),
        ("a {{shift}} b {{shift}} c", "2 {{shift}} markers"),
        ("{{balance}} x {{shift}} y", "must come after {{shift}}"),
        ("x\n{{shift}}   ", "nothing but whitespace follows"),
    ],
)
def test_bad_prompts_are_refused(text, match):
    with pytest.raises(ProbeError, match=match):
        parse_prompt(text)


def test_a_marker_inside_a_token_is_refused(deepseek):
    with pytest.raises(ProbeError, match="marker splits the token 'velmorax'|splits the token"):
        plan_shifts(deepseek, parse_prompt("The number for velm{{shift}}orax is 4."), rounds=1)


def fake_answers(plan, values):
    return [
        Answer(r, None, (v, 0.0), None, None) for r, v in zip(plan.renderings, values, strict=True)
    ]


@pytest.fixture(scope="module")
def code_plan(request):
    tok = request.getfixturevalue("deepseek")
    prompt = parse_prompt("x = 1\n{{shift}}y = T.Cast(FP")
    # 2 styles x 8 rounds: 16 rows, as many as the default 4 styles x 4 rounds give
    return plan_shifts(tok, prompt, modulus=8, rounds=8, choices=("8", "4"),
                       styles=("filler", "comment_dash"))  # fmt: skip


def test_a_period_4_margin_is_found_and_a_drift_is_not(code_plan):
    rng = np.random.default_rng(0)
    periodic = [(0.8 if r.phase % 4 < 2 else -0.6) + rng.normal(0, 0.1)
                for r in code_plan.renderings]  # fmt: skip
    result = analyse(code_plan, fake_answers(code_plan, periodic), expect=None, provenance={})
    assert result.verdict.startswith("margin depends on phase mod "), result.verdict
    summary = result.data["summary"]
    assert summary["p_value"] < 0.01
    # the profile's variation is the period-4 rhythm (the period-fit test of phasebench.stats
    # names 4 in about 86 of 100 such samples of 16 rows, 8 in the others: measured)
    assert summary["spectrum"]["4"] > 0.95
    # a smooth drift with the padding's length is not a phase effect
    drift = [0.05 * r.shift - 0.5 + rng.normal(0, 0.05) for r in code_plan.renderings]
    result = analyse(code_plan, fake_answers(code_plan, drift), expect=None, provenance={})
    assert result.verdict.startswith("no phase dependence detected"), result.verdict
    assert result.data["drift"]["removed"]
    wrong = [-1.0 + rng.normal(0, 0.05) for r in code_plan.renderings]
    result = analyse(code_plan, fake_answers(code_plan, wrong), expect=None, provenance={})
    assert result.verdict.endswith("wrong at every shift: not a phase effect"), result.verdict
    # the summary alone by default (before: a line per shift, 128, before it); bars after it
    text = terminal_plot(result)
    assert text.startswith("per phase (mod 8)") and "comment_dash" not in text, text
    assert len(text.splitlines()) <= 8, text
    bars = terminal_plot(result, bars=True)
    assert bars.startswith(text) and "comment_dash" in bars
    assert len(bars.splitlines()) > len(code_plan.renderings), bars


def test_a_phase_effect_over_few_rounds_is_not_vetoed_by_its_own_control_folds(deepseek):
    """Three rounds x four styles (the kvpress worked example's design): a period-8 effect,
    right at two phases in eight, folded at 9 moves one column per row and stayed aligned over
    the two rows there are, so the raw control folds vetoed it in 20 of 20 simulations; the
    folds of what the phase does not explain, Bonferroni over the folds, do not."""
    plan = plan_shifts(deepseek, parse_prompt("x = 1\n{{shift}}y = T.Cast(FP"), modulus=8,
                       rounds=3, choices=("8", "4"))  # fmt: skip
    called = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        values = [(1.0 if r.phase in (2, 3) else -1.0) * (rng.random() < 0.8)
                  + rng.normal(0, 0.3) for r in plan.renderings]  # fmt: skip
        result = analyse(plan, fake_answers(plan, values), expect=None, provenance={})
        called += result.verdict.startswith("margin depends on phase mod 8")
    assert called >= 9, called


def test_generated_answers_are_scored_by_prefix(code_plan):
    answers = [Answer(r, " 8, then" if r.phase != 3 else " 4", (), None, None)
               for r in code_plan.renderings]  # fmt: skip
    result = analyse(code_plan, answers, expect="8", provenance={})
    assert result.data["right"]["right"] == len(answers) - len(answers) // 8
    assert result.verdict.startswith("answer depends on phase mod 8"), result.verdict
    # without --expect: whether the answer is the run's most common one
    result = analyse(code_plan, answers, expect=None, provenance={})
    assert result.data["probe"]["measure"] == "modal answer"
    assert result.data["right"]["distinct_answers"] == 2


def test_a_server_count_that_disagrees_is_left_out(code_plan):
    answers = [Answer(r, "8", (), r.n_tokens + (r.shift == 5), r.n_tokens)
               for r in code_plan.renderings]  # fmt: skip
    result = analyse(code_plan, answers, expect="8", provenance={})
    assert result.data["witness"]["disagreed"] == 2  # shift 5 of each style
    assert result.data["witness"]["excluded_from_statistics"] == 2
    assert "2 shifts left out" in result.verdict
    assert result.data["witness"]["agreed"] == len(answers) - 2


def write(tmp_path, text):
    path = tmp_path / "prompt.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


API = ["--model", "local-completions", "--model_args",
       "model=deepseek-v4,base_url=http://127.0.0.1:9/v1/completions,max_length=64"]  # fmt: skip


@pytest.mark.parametrize(
    "text,extra,match",
    [
        ("no marker", [], "has no {{shift}} marker"),
        ("velm{{shift}}orax is 4", [], "splits the token"),
        ("x = 1\n{{shift}}y = T.Cast(FP", ["--choices", "8,12345678"], "is 3 tokens after"),
        ("x\n" * 80 + "{{shift}}y = 1", [], "exceeds the model's context of 63"),
        ("x\n{{shift}}y", ["--styles", "nope"], "unknown padding style"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, text, extra, match):
    code = main(["probe", write(tmp_path, text), *API, "--rounds", "1", *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("phasebench: error: ")
    assert match in err
    assert not (tmp_path / "out").exists()


def test_out_must_be_a_folder(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code = main(["probe", write(tmp_path, "x\n{{shift}}y"), *API, "--out", str(tmp_path / "file")])
    assert code == 2 and "is not a folder" in capsys.readouterr().err


def test_result_json_is_plain(code_plan):
    values = [0.1 * (r.phase % 2) for r in code_plan.renderings]
    result = analyse(code_plan, fake_answers(code_plan, values), expect=None, provenance={})
    text = json.dumps(result.to_dict(), allow_nan=False)
    assert json.loads(text)["probe"]["modulus"] == 8


def test_without_matplotlib_the_json_is_written_and_the_figure_left_out(
    code_plan, tmp_path, monkeypatch
):
    """The kvpress environment has no matplotlib: a probe that ran for minutes there keeps its
    probe.json rather than failing on the figure (a run measured in that environment did)."""
    from phasebench.probe import output

    values = [0.1 * (r.phase % 2) for r in code_plan.renderings]
    result = analyse(code_plan, fake_answers(code_plan, values), expect=None, provenance={})
    monkeypatch.setattr(output, "can_draw", lambda: False)
    written = output.write_outputs(result, tmp_path / "out")
    assert [p.name for p in written] == ["probe.json"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["probe.json"]
    assert output.figure_png(json.loads(written[0].read_text()))[:4] == b"\x89PNG"


@pytest.mark.slow
def test_end_to_end_on_smollm2_through_hf(tmp_path, capsys, monkeypatch):
    """The probe command ``phasebench demo`` ends with (``phasebench.demo.next_commands``), run
    as printed from a folder holding the shipped example prompt, ``$G`` the folder of
    SmolLM2's GGUF, through lm-eval's ``hf`` backend; one round of one padding style (the 8
    shifts of the default modulus) keeps it short. The demo's other next commands run in
    ``tests/reference/test_reference.py::test_the_demos_next_commands_run_as_printed``."""
    import shlex
    import shutil
    from pathlib import Path

    from phasebench.demo import next_commands
    from support.models import smollm2_folder

    monkeypatch.chdir(tmp_path)
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples", tmp_path / "examples")
    _, printed = next_commands("demo-out")[-1]
    argv = shlex.split(printed.replace("$G", smollm2_folder()))
    assert argv[:2] == ["phasebench", "probe"]
    code = main([*argv[1:], "--rounds", "1", "--styles", "comment_hash"])
    captured = capsys.readouterr()
    printed = captured.out
    assert code == 0, captured.err[-2000:]
    # one bar, the probe's; each slow step says what it does (before: a pair of lm-eval bars
    # per shift, and nothing while the tokenizer and the model loaded)
    assert "Running loglikelihood requests" not in captured.err, captured.err[-2000:]
    assert "Loading weights" not in captured.err and "probe: 100%" in captured.err
    assert "8 exact shifts planned; loading the model through lm-eval's hf backend" in captured.err
    out = tmp_path / "my-probe"
    data = json.loads((out / "probe.json").read_text())
    assert len(data["shifts"]) == 8 and data["witness"]["kind"] == "backend tok_encode"
    assert all(len(e["logprobs"]) == 2 for e in data["shifts"])  # --choices 8,4
    assert (out / "probe.png").read_bytes()[:4] == b"\x89PNG"
    assert printed.rstrip().splitlines()[-1] == data["verdict"]


def test_a_question_cut_that_a_lone_context_encodes_differently_is_refused(smollm2):
    """SmolLM2 encodes a text-final blank line as one token, the same blank line before
    ``Question`` as two: kvpress, which encodes the context alone, needs the cut before it."""
    from phasebench.probe.shifts import check_question_cut

    good = "Notes.\n{{shift}}The number for velmorax is 48213.{{question}}\n\nQuestion: the number?"
    bad = good.replace("{{question}}\n\n", "\n\n{{question}}")
    kwargs = {"modulus": 2, "rounds": 1, "styles": ("comment_hash",)}
    check_question_cut(smollm2, plan_shifts(smollm2, parse_prompt(good), **kwargs))
    with pytest.raises(ProbeError, match="encodes differently alone"):
        check_question_cut(smollm2, plan_shifts(smollm2, parse_prompt(bad), **kwargs))


def test_an_out_folder_that_cannot_be_made_is_refused_before_the_model_runs(tmp_path, capsys):
    # /proc passes every permission check for root, yet no folder can be made there; the server
    # named in API does not exist, so reaching the model would fail with another message.
    prompt = write(tmp_path, "x\n{{shift}}y")
    code = main(["probe", prompt, *API, "--out", "/proc/phasebench_probe_out"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--out '/proc/phasebench_probe_out': cannot make a folder in '/proc'" in err


def test_the_model_is_built_on_the_device_lm_evals_command_line_picks(tiny_llama):
    """``phasebench probe`` without ``--device`` built the ``hf`` model with the backend's own
    default, ``cuda``: on a machine without a GPU, a traceback ("Torch not compiled with CUDA
    enabled"), so the demo's probe step did not run as printed. Without a device the model is
    built as ``lm_eval run`` (and ``phasebench eval``) builds it: a GPU where there is one,
    else the CPU."""
    import torch

    from phasebench import lmeval_compat as compat

    lm = compat.create_model("hf", f"pretrained={tiny_llama},dtype=float32", batch_size=1)
    assert lm.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
