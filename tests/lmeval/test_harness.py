"""``phasebench tasks-dir`` / ``eval`` pieces that need no model run."""

from __future__ import annotations

import pytest

from phasebench.cli import main
from phasebench.errors import PhasebenchError
from phasebench.lmeval import harness
from phasebench.lmeval.tasks import MAX_GEN_TOKS
from phasebench.resources import resource_dir


def test_tasks_dir_prints_the_folder_with_the_yamls(capsys):
    assert main(["tasks-dir"]) == 0
    folder = capsys.readouterr().out.strip()
    assert folder == harness.tasks_dir()
    assert folder.endswith("tasks")
    assert (resource_dir("tasks") / "phasebench_kv.yaml").is_file()


def test_the_generation_budget_is_the_yamls():
    """lm-eval reads ``max_gen_toks`` from a YAML, not from Python: the one YAML kv and niah
    include says the same number as the code."""
    import yaml

    text = (resource_dir("tasks") / "_phasebench_answer.yaml").read_text()
    assert yaml.safe_load(text)["generation_kwargs"]["max_gen_toks"] == MAX_GEN_TOKS
    for family in ("kv", "niah"):
        task = yaml.safe_load((resource_dir("tasks") / f"phasebench_{family}.yaml").read_text())
        assert "_phasebench_answer.yaml" in task["include"] and "generation_kwargs" not in task


def test_requested_families():
    # the group runs every built-in family, in the order they are declared
    assert harness.requested_families(["phasebench"]) == ["kv", "niah", "code"]
    assert harness.requested_families(["hellaswag,phasebench_code", "phasebench_kv"]) == [
        "code",
        "kv",
    ]
    assert harness.requested_families(["hellaswag"]) == []


def test_generation_budget():
    assert harness.generation_budget("kv", None) == 16
    assert harness.generation_budget("niah", {"max_gen_toks": 64, "temperature": 0}) == 64
    assert harness.generation_budget("code", {"max_gen_toks": 64}) == 1


def test_check_fits_boundary():
    harness.check_fits("kv", 4080, 16, 4096)  # exactly full is fine
    with pytest.raises(PhasebenchError, match=r"longest prompt \(4081 tokens\) plus 16"):
        harness.check_fits("kv", 4081, 16, 4096)


def test_model_max_length_read_like_the_backend(tiny_llama):
    tiny = tiny_llama
    assert harness.model_max_length({"pretrained": str(tiny)}) == 2048  # config
    assert harness.model_max_length({"pretrained": str(tiny), "max_length": 300}) == 300
    assert harness.model_max_length({"max_model_len": 131200}) == 131200
    with pytest.raises(PhasebenchError, match="pretrained=MODEL"):
        harness.model_max_length({})


def test_eval_refuses_a_second_include_path():
    with pytest.raises(PhasebenchError, match="adds --include_path itself"):
        harness.run_eval(["--tasks", "phasebench_kv", "--include_path", "/elsewhere"])


def test_a_run_of_phasebench_tasks_alone_skips_lm_evals_own_task_index():
    """lm-eval's CLI indexes its ~15,000 task files on every run; a run whose tasks are all
    phasebench's indexes the tasks folder alone, a run that mixes in another task keeps them."""
    from types import SimpleNamespace

    import lm_eval.tasks

    from phasebench import lmeval_compat as compat

    own = harness._own_tasks
    assert own(SimpleNamespace(tasks="phasebench_kv,phasebench_niah"))
    assert own(SimpleNamespace(tasks=["phasebench"]))
    assert not own(SimpleNamespace(tasks="phasebench_kv,arc_easy"))
    assert not own(SimpleNamespace(tasks=None))
    base = lm_eval.tasks.TaskManager
    with compat.included_tasks_only():
        manager = lm_eval.tasks.TaskManager(include_path=harness.tasks_dir())
        assert {"phasebench_kv", "phasebench_niah", "phasebench_code"} <= set(manager.all_tasks)
        assert "arc_easy" not in manager.all_tasks
    assert lm_eval.tasks.TaskManager is base


@pytest.mark.slow
@pytest.mark.parametrize("name", ["DeepSeek-V4", "SmolLM2"])
def test_the_kv_minimum_lengths_the_knob_table_names_are_the_enforced_ones(name, request, tmp_path):
    """The knob table's kv minimum is what ``generate`` enforces with each tokenizer: one token
    shorter is refused naming that minimum, the minimum itself builds. Before, the table said
    "at least 64" and SmolLM2 needs 133."""
    from phasebench.build import generate
    from phasebench.errors import SpecError
    from phasebench.lmeval.metadata import KV_MINIMUMS, knobs
    from phasebench.specs import SplitSpec

    tok = request.getfixturevalue({"DeepSeek-V4": "deepseek", "SmolLM2": "smollm2"}[name])
    least = KV_MINIMUMS[name]
    assert f"{least} for {name}" in knobs()[0].rule

    def spec(length: int) -> SplitSpec:
        return SplitSpec(family="kv", length=length, n_base=16, tokenizer=tok.name)

    with pytest.raises(SpecError, match=f"needs at least {least} tokens"):
        generate([spec(least - 1)], tmp_path / "short", progress=False, tokenizer=tok)
    generate([spec(least)], tmp_path / "least", progress=False, tokenizer=tok)
    assert (tmp_path / "least" / f"kv_{least}" / "manifest.json").is_file()
