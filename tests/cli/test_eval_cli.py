"""``phasebench eval`` as a new user meets it: its own help before lm-eval's, task metadata
refused before any tokenizer or model loads, lm-eval's own tags left as they are."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from phasebench.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _eval(capsys, metadata: dict, model_args: str = "pretrained=/no/such/model") -> tuple:
    code = main(["eval", "--model", "hf", "--model_args", model_args, "--tasks",
                 "phasebench_kv", "--metadata", json.dumps(metadata)])  # fmt: skip
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines()


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        ({"n_base": "abc"}, "'n_base'"),
        ({"n_base": "{not json"}, "'n_base'"),
        ({"n_base": 3}, "n_base"),
        ({"phase_modulus": "x"}, "'phase_modulus'"),
        ({"max_seq_lengths": "a,b"}, "'max_seq_lengths'"),
        ({"length_phases": "sideways"}, "'length_phases'"),
        ({"metrics": "fulll"}, "'metrics'"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_task_metadata_is_refused_before_the_model_loads(capsys, metadata, words):
    """The model path does not exist: reading its config is the first thing that would fail
    once the metadata passed, so the metadata error coming first shows it is checked before
    anything of the model is loaded."""
    code, err = _eval(capsys, metadata)
    assert code == 2 and err, err
    assert words in err[-1] and "/no/such/model" not in err[-1], err
    assert not any("Traceback" in line for line in err)


@pytest.mark.parametrize(
    ("metadata", "line"),
    [
        (
            '{"max_seq_lenghts": [512]}',
            "--metadata has no key 'max_seq_lenghts'; did you mean 'max_seq_lengths'?",
        ),
        ('{"nbase": 16}', "--metadata has no key 'nbase'; did you mean 'n_base'?"),
        ('{"max_seq_lengths": [512]', "--metadata is not valid JSON (Expecting ',' delimiter"),
        ("{'n_base': 16}", "--metadata is not valid JSON (Expecting property name"),
    ],
)
def test_a_misspelled_key_or_bad_json_is_one_line_naming_it(capsys, metadata, line):
    """Before, a misspelled knob was ignored (a 4,096-token default run) and malformed JSON
    ended in lm-eval's ``ValueError`` traceback."""
    code = main(["eval", "--model", "hf", "--model_args", "pretrained=/no/such/model",
                 "--tasks", "phasebench_kv", "--metadata", metadata])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"phasebench: error: {line}"), err


def test_unknown_keys_of_other_tasks_pass_when_the_run_mixes_tasks():
    """With another lm-eval task in the run, a key phasebench does not know may be that task's
    (RULER reads ``tokenizer``, others their own): only near misses of a knob are refused."""
    from argparse import Namespace

    from phasebench.errors import SpecError
    from phasebench.lmeval.harness import prepare

    def ns(tasks, metadata):
        return Namespace(tasks=tasks, metadata=metadata, model_args={}, model="hf")

    with pytest.raises(SpecError, match="did you mean 'n_base'"):
        prepare(ns(["phasebench_kv", "arc_easy"], {"n_bas": 16}))
    with pytest.raises(SpecError, match="no key 'ruler_only'"):
        prepare(ns(["phasebench_kv"], {"ruler_only": 1}))
    # a mixed run gets past the key check (and stops later, at the missing model)
    with pytest.raises(Exception, match="pretrained"):
        prepare(ns(["phasebench_kv", "arc_easy"], {"ruler_only": 1}))


def test_inside_a_task_model_arguments_are_never_taken_for_misspelled_knobs():
    """lm-eval merges ``--model_args`` into the task's mapping: every argument of its hf and
    API backends passes the task-side check, which refuses near misses of a knob only."""
    import inspect

    from lm_eval.models.api_models import TemplateAPI
    from lm_eval.models.huggingface import HFLM

    from phasebench.errors import SpecError
    from phasebench.lmeval.metadata import check_keys

    names = set(inspect.signature(HFLM.__init__).parameters)
    names |= set(inspect.signature(TemplateAPI.__init__).parameters)
    assert "max_length" in names and "pretrained" in names
    check_keys(names, strict=False)
    with pytest.raises(SpecError, match="did you mean 'phase_modulus'"):
        check_keys(["phase_modulo"], strict=False)


def test_good_metadata_reaches_the_model(capsys):
    code, err = _eval(capsys, {"n_base": 16, "max_seq_lengths": [256]})
    assert code == 2 and "/no/such/model" in err[-1], err


def test_including_the_tasks_leaves_lm_evals_own_tags_alone(caplog):
    """A tag given in an ``--include_path`` folder replaces lm-eval's own tag of that name
    (``--tasks longcxt`` would have run phasebench alone, with a warning "Task 'longcxt' from
    None overrides existing task"). lm-eval's RULER folder stands for its own tasks (indexing
    all of them takes minutes); include paths merge as the defaults and ``--include_path`` do."""
    import lm_eval.tasks
    from lm_eval.tasks import TaskManager

    from phasebench.lmeval.harness import tasks_dir

    ruler = str(Path(lm_eval.tasks.__file__).parent / "ruler")
    own = TaskManager(include_path=[ruler], include_defaults=False).task_index
    tags = {name: set(e.tags) for name, e in own.items() if e.kind.name == "TAG"}
    assert tags.get("longcxt"), sorted(tags)
    with caplog.at_level(logging.WARNING):
        index = TaskManager(include_path=[ruler, tasks_dir()], include_defaults=False).task_index
    assert not [r for r in caplog.records if "overrides" in r.getMessage()]
    for name, tasks in tags.items():
        assert set(index[name].tags) == tasks, name
    assert set(index["phase_sensitivity"].tags) == {"phasebench_kv", "phasebench_niah",
                                                    "phasebench_code"}  # fmt: skip


def test_help_shows_phasebenchs_part_then_lm_evals(capsys):
    """``phasebench eval --help``: what phasebench adds (the metadata keys, the truncation guard)
    first, every knob ``docs/tasks.md`` documents among the keys, then lm-eval's own help."""
    assert main(["eval", "--help"]) == 0
    out = capsys.readouterr().out
    ours, _, theirs = out.partition("lm-eval's own options:")
    assert "truncation guard" in ours and "Task metadata (--metadata JSON)" in ours
    assert "usage: lm-eval run" in theirs and "--model_args" in theirs
    docs = (Path(__file__).resolve().parents[2] / "docs" / "tasks.md").read_text()
    knobs = docs.partition("Knobs, all through lm-eval's `--metadata` JSON:")[2].split("\n\n")[1]
    keys = [line.split("`")[1] for line in knobs.splitlines() if line.startswith("| `")]
    assert len(keys) >= 8, keys
    for key in keys:
        assert f"\n  {key} " in ours, key


def test_a_local_model_is_named_by_its_file_or_folder(tmp_path):
    """Run names and output folders: a GGUF model (a folder in site-packages, often) by its
    model and quantization (before: by its file name, ``SmolLM2-135M-Instruct.Q4_1.gguf``), a
    local folder by its last part, a Hub id as it is."""
    from phasebench.report import load_runs
    from phasebench.samples import run_name
    from support.models import SMOLLM2_GGUF, smollm2_folder

    gguf = {"pretrained": str(smollm2_folder()), "gguf_file": SMOLLM2_GGUF}
    assert run_name(gguf) == "SmolLM2-135M-Instruct:Q4_1"
    assert run_name(",".join(f"{k}={v}" for k, v in gguf.items())) == "SmolLM2-135M-Instruct:Q4_1"
    for file, name in [("llama-3-8b-instruct-Q4_K_M.gguf", "llama-3-8b-instruct:Q4_K_M"),
                       ("tiny.f16.gguf", "tiny:f16"), ("model.gguf", "model")]:  # fmt: skip
        assert run_name({**gguf, "gguf_file": file}) == name
    assert run_name({"pretrained": str(tmp_path / "my-model")}) == "my-model"
    assert run_name({"pretrained": "./checkpoints/step-100/"}) == "step-100"
    assert run_name("pretrained=HuggingFaceTB/SmolLM2-135M,dtype=float32") == (
        "HuggingFaceTB/SmolLM2-135M"
    )
    assert run_name({"model": "llama3", "base_url": "http://127.0.0.1:1/v1"}) == "llama3"
    assert run_name({}) is None

    # phasebench report names a run lm-eval logged with its whole path the same way
    run_dir = tmp_path / "out" / "whatever"
    run_dir.mkdir(parents=True)
    results = {"results": {}, "model_name": gguf["pretrained"],
               "config": {"model_args": gguf}}  # fmt: skip
    (run_dir / "results_2026-01-01T00-00-00.000000.json").write_text(json.dumps(results))
    doc = {"id": "kv-256-b00000-p0", "family": "kv", "length": 256, "phase_modulus": 2,
           "phase": 0, "base_id": 0}  # fmt: skip
    lines = [json.dumps({"doc": {**doc, "phase": r, "base_id": b}, "acc": 1.0}) + "\n"
             for b in range(2) for r in range(2)]  # fmt: skip
    (run_dir / "samples_phasebench_kv_2026-01-01T00-00-00.000000.jsonl").write_text("".join(lines))
    runs, _ = load_runs([run_dir])
    assert [r.name for r in runs] == ["SmolLM2-135M-Instruct:Q4_1"]


def test_a_split_generated_at_task_load_shows_its_progress(tmp_path, monkeypatch, capsys):
    """The split a task run needs is generated with a progress bar (on stderr, as `phasebench
    generate` shows it); found in the cache the next time, it shows none."""
    from phasebench.lmeval.data import resolve_split

    monkeypatch.setenv("PHASEBENCH_CACHE", str(tmp_path / "cache"))
    kwargs = {"tokenizer": "deepseek-v4", "max_seq_lengths": [256], "n_base": 16}
    resolve_split("kv", **kwargs)
    err = capsys.readouterr().err
    assert "kv_256" in err and "128/128" in err and "prompt" in err, err
    resolve_split("kv", **kwargs)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_plain_lm_eval_refuses_a_misspelled_key_in_one_line(tmp_path, tiny_llama):
    """Plain ``lm_eval --include_path``: lm-eval builds the model before its tasks, so the task
    refuses after the model loaded, but in one line (``TaskRefusal``) instead of a traceback;
    before, the misspelled key was ignored and the 4,096-token default ran."""
    from support.lmeval import lm_eval

    done = lm_eval(tmp_path, f"pretrained={tiny_llama}", "phasebench_kv",
                   {"max_seq_lenghts": [256], "n_base": 16}, extra=["--limit", "1"],
                   log_samples=False)  # fmt: skip
    err = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert err[-1].startswith(
        "phasebench_kv: --metadata has no key 'max_seq_lenghts'; did you mean 'max_seq_lengths'?"
    ), err[-3:]
    assert not (tmp_path / "cache").exists()  # nothing was generated


@pytest.mark.slow  # lm-eval indexes its task files to list them: 6 to 9 s in CI
def test_an_unknown_task_is_one_line_naming_the_known_ones(capsys):
    """Before, ``--tasks phasebench_needle`` ended in lm-eval's 23-line traceback (exit 1)."""
    code = main(["eval", "--model", "hf", "--model_args", "pretrained=/no/such/model",
                 "--tasks", "phasebench_needle"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "phasebench_needle" in err[0] and "phasebench_kv" in err[0], err
    assert "phasebench_niah" in err[0] and "lm_eval ls tasks" in err[0], err


def test_the_task_hint_is_a_command_the_pinned_lm_eval_runs(capsys):
    """The hint's command, run by the pinned lm-eval's own command line: before, it was
    ``lm_eval list tasks``, which lm-eval 0.4.13 answers with "unrecognized arguments" (exit
    2). It runs here with phasebench's folder included and lm-eval's 15,000 built-in task files
    left unindexed (tens of seconds), so the listing it prints holds phasebench's tasks."""
    import shlex
    import sys

    from lm_eval._cli.harness import HarnessCLI

    from phasebench import lmeval_compat as compat
    from phasebench.lmeval.harness import LIST_TASKS, _unknown_tasks_line, tasks_dir

    assert f"(lm-eval's own: {LIST_TASKS})" in _unknown_tasks_line("x")
    program, *argv = shlex.split(LIST_TASKS)
    assert program == "lm_eval"
    cli = HarnessCLI()
    saved = sys.argv
    sys.argv = [program, *argv, "--include_path", tasks_dir()]
    try:
        namespace = cli.parse_args()  # SystemExit(2) on "unrecognized arguments"
    finally:
        sys.argv = saved
    capsys.readouterr()
    with compat.included_tasks_only():
        cli.execute(namespace)
    listing = capsys.readouterr().out
    assert "phasebench_kv" in listing and "phasebench_niah" in listing, listing[-2000:]


def test_a_gguf_folder_without_gguf_file_names_gguf_file(tmp_path, capsys):
    """Before, a folder holding only a GGUF file, given as ``pretrained=`` without
    ``gguf_file=``, pointed to ``max_length=N`` and, with that, to a missing tokenizer."""
    from phasebench.errors import TokenizerError
    from phasebench.tokenization import load_tokenizer

    (tmp_path / "Model.Q4_1.gguf").write_bytes(b"GGUF")
    for extra in ("", ",max_length=8192"):
        code = main(["eval", "--model", "hf", "--model_args", f"pretrained={tmp_path}{extra}",
                     "--tasks", "phasebench_kv"])  # fmt: skip
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and "gguf_file=Model.Q4_1.gguf" in err[-1], err
        assert not any("Traceback" in line for line in err)
    with pytest.raises(TokenizerError, match="gguf_file=Model.Q4_1.gguf"):
        load_tokenizer(str(tmp_path))


def test_seed_is_the_splits_seed_and_lm_evals_seeds_have_their_own_name():
    """``--seed`` means the split's seed in every phasebench command, ``eval`` included: it
    becomes the task metadata's ``seed`` (merged with the rest of ``--metadata``, as lm-eval's
    own parser reads it); lm-eval's four seeds go to lm-eval as its ``--seed`` from
    ``--lm_eval_seed``."""
    from phasebench.cli.eval import _own_options
    from phasebench.lmeval_compat import parse_run_args

    argv = ["--model", "hf", "--tasks", "phasebench_kv", "--metadata", '{"n_base": 16}']
    staged, futility, rest = _own_options([*argv, "--seed", "7", "--lm_eval_seed", "1,2,3,4"])
    parsed = parse_run_args(rest)
    assert (staged, futility) == (False, None)
    assert parsed.metadata == {"n_base": 16, "seed": 7}
    assert parsed.seed == [1, 2, 3, 4]
    assert parse_run_args(_own_options(argv)[2]).metadata == {"n_base": 16}


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--seed", "1,2"], "argument --seed: "),
        (["--seed"], "argument --seed: expected one argument"),
        (["--seed", "3", "--metadata", '{"seed": 4}'],
         "--seed 3 and the metadata's seed 4 disagree"),
        (["--seed", "3", "--metadata", "seed=4", "n_base=2"],
         "--seed 3 and the metadata's seed 4 disagree"),
    ],
)  # fmt: skip
def test_a_seed_that_is_not_the_splits_is_one_line(capsys, extra, line):
    code = main(["eval", "--model", "hf", "--model_args", "pretrained=/no/such/model",
                 "--tasks", "phasebench_kv", *extra])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"phasebench: error: {line}"), err


@pytest.mark.slow
def test_an_interrupted_eval_says_how_to_resume_and_resumes_with_the_same_answers(
    tmp_path, tiny_llama, capsys, monkeypatch
):
    """Before, an interrupted eval left nothing and said nothing. Interrupted at its fourth
    generation call, ``phasebench eval`` says how to resume (with ``--use_cache``: where the
    answers are kept; without: to add it); the same command again resumes, asks lm-eval's
    model only for the prompts not yet answered, and logs the answers an uninterrupted run
    gives."""
    from lm_eval.models.huggingface import HFLM

    def argv(out: Path, *extra: str) -> list[str]:
        return ["eval", "--model", "hf", "--model_args", f"pretrained={tiny_llama}",
                "--tasks", "phasebench_kv", "--metadata",
                json.dumps({"max_seq_lengths": [256], "n_base": 16}), "--limit", "6",
                "--batch_size", "1", "--gen_kwargs", "max_gen_toks=2", "--log_samples",
                "--output_path", str(out), *extra]  # fmt: skip

    def answers(out: Path) -> list:
        (samples,) = out.rglob("samples_phasebench_kv_*.jsonl")
        rows = [json.loads(line) for line in samples.read_text().splitlines()]
        return sorted((r["doc"]["id"], r["resps"]) for r in rows)

    generate, calls = HFLM._model_generate, []

    def counted(self, *args, **kwargs):
        calls.append(1)
        if interrupt and len(calls) == 4:
            raise KeyboardInterrupt
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(HFLM, "_model_generate", counted)
    interrupt = True
    assert main(argv(tmp_path / "plain")) == 130
    assert (
        capsys.readouterr().err.count(
            "phasebench eval: interrupted; nothing was kept: add --use_cache PREFIX (lm-eval keeps "
            "each answer as it comes) and an interrupted run resumes when the same command "
            "runs again\n"
        )
        == 1
    )
    cache = tmp_path / "cache" / "run"
    calls.clear()
    assert main(argv(tmp_path / "resumed", "--use_cache", str(cache))) == 130
    assert (
        capsys.readouterr().err.count(
            f"phasebench eval: interrupted; the answers so far are kept in {cache}_rank0.db: run "
            "the same command again to resume (only the prompts not yet answered are asked)\n"
        )
        == 1
    )
    interrupt = False
    calls.clear()
    assert main(argv(tmp_path / "resumed", "--use_cache", str(cache))) == 0
    assert len(calls) == 3, calls  # six prompts, three answered before the interruption
    calls.clear()
    assert main(argv(tmp_path / "whole")) == 0
    assert len(calls) == 6
    assert answers(tmp_path / "resumed") == answers(tmp_path / "whole")
