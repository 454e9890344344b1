"""Families are declared once: a throwaway fourth family, written here as a module of its own
(its records, needle and question its own, the needle engine doing the layout), goes through
``generate``, ``verify``, a real lm-eval task and ``phasebench report`` without any other module
knowing its name; and no module outside ``phasebench/families/`` names a family."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import subprocess
import sys

import pytest

from phasebench import families
from phasebench.cli import main
from phasebench.errors import SpecError
from support.lmeval import ROOT, offline_env

PACKAGE = ROOT / "phasebench"
NAME = "locker"

#: The throwaway family: lockers and what each holds, one per line; the question asks what one
#: locker holds. Everything else is the declaration.
MODULE = '''
"""The ``locker`` family (a test's throwaway): ``L12345 holds pears`` records."""

import numpy as np

from phasebench import families
from phasebench.families import needle as engine
from phasebench.rng import derive_rng

THINGS = ("apples", "pears", "keys", "maps", "coins", "shells", "stamps", "gloves")
HEADER = "Each line names a locker and what it holds. At the end you are asked about one.\\n"


def record(key, thing):
    return f"{key} holds {thing}\\n"


def needle(key, thing):
    return engine.Needle(lead="", keyed=record(key, thing), key=key, answer=thing,
                         question=f"Question: what does {key} hold?\\nAnswer: {key} holds")


def content(spec):
    rng = derive_rng(spec.seed, "locker", spec.length, "pool")
    size = spec.length // 2 + 1024
    codes = rng.choice(90_000, size=size, replace=False) + 10_000
    pool = [record(f"L{c}", THINGS[int(t)]) for c, t in
            zip(codes, rng.integers(0, len(THINGS), size=size), strict=True)]
    taken = set(int(c) for c in codes)

    def draw_needle(r):
        while True:
            code = int(r.integers(10_000, 100_000))
            if code not in taken:
                return needle(f"L{code}", THINGS[int(r.integers(0, len(THINGS)))])

    def draw_body(r, n):
        return r.choice(size, size=min(n, size), replace=False)

    return engine.NeedleContent(header=HEADER, pool=pool, draw_needle=draw_needle,
                                draw_body=draw_body)


def prepare(spec, tok):
    return engine.prepare(spec, tok, content(spec))


def verify_row(tok, row):
    return engine.verify_row(tok, row) + engine.needle_problems(
        row, needle(row["needle_key"], row["answer"]))


def describe(plan):
    return {"lockers_per_prompt_mean": round(float(np.mean([len(i.body) + 1
                                                            for i in plan.items])), 2)}


FAMILY = families.register(
    families.Family(name="locker", prepare=prepare, exact_check=engine.exact_check,
                    verify_row=verify_row, verify_config=engine.verify_config,
                    describe=describe, default_n_base=8, hub_tag="locker-lookup"),
    module=__name__,
)
'''


def _task_folder(folder):
    """The family's lm-eval task: kv's YAML under the family's own name, beside the shared
    YAML and the hooks shim (as ``tasks/`` has them)."""
    folder.mkdir()
    for name in ("_phasebench_common.yaml", "_phasebench_answer.yaml", "phasebench_hooks.py"):
        (folder / name).write_text((ROOT / "tasks" / name).read_text())
    kv = (ROOT / "tasks" / "phasebench_kv.yaml").read_text()
    text = kv.replace("task: phasebench_kv", f"task: phasebench_{NAME}")
    (folder / f"phasebench_{NAME}.yaml").write_text(text.replace("family: kv", f"family: {NAME}"))
    return folder


@pytest.fixture
def locker(tmp_path):
    """The family's module, written to a folder of its own and imported (which registers it);
    forgotten afterwards."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    path = folder / "locker_family.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("locker_family", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["locker_family"] = module
    try:
        spec.loader.exec_module(module)
        yield module.FAMILY, folder
    finally:
        families.unregister(NAME)
        sys.modules.pop("locker_family", None)


def test_built_in_declarations():
    assert families.names()[:3] == families.BUILTIN == ("kv", "niah", "code")
    code = families.get_family("code")
    assert code.has_margin and code.output_type == "multiple_choice" and code.anchor_is_answer
    row = {"family": "code", "length": 130, "config_length": 0, "item_id": "cast-0003",
           "pad_style": "comment_dash"}  # fmt: skip
    assert code.paired_unit(row) == "0/cast-0003/comment_dash"
    kv = families.get_family("kv")
    assert not kv.has_margin and kv.task == "phasebench_kv"
    assert kv.paired_unit({"family": "kv", "length": 4096, "base_id": 17}) == "4096/17"
    with pytest.raises(SpecError, match="must be one of kv, niah, code"):
        families.get_family("nope")
    with pytest.raises(SpecError, match="already declared"):
        families.register(dataclasses.replace(kv))
    with pytest.raises(SpecError, match="built-in"):
        families.unregister("kv")


@pytest.mark.parametrize("name", families.BUILTIN)
def test_each_task_yaml_matches_its_declaration(name):
    # the task as lm-eval reads it, its includes merged
    from lm_eval.tasks._yaml_loader import load_yaml

    family = families.get_family(name)
    task = load_yaml(ROOT / "tasks" / f"{family.task}.yaml", resolve_func=False, recursive=True)
    assert task["task"] == family.task and task["dataset_kwargs"] == {"family": name}
    assert task["output_type"] == family.output_type
    listed = {m["metric"] for m in task.get("metric_list", [])}  # else the shared YAML's acc
    assert ("margin" in listed) == family.has_margin


def _string_literals(path):
    """Every string constant of a module, with its line (the text of an f-string too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


#: Where a family's name is data, not a branch: the demo and the reference models run on a kv
#: split, report format 1's key for the margin sweeps is declared in the statistics table, and
#: each Inspect AI task passes the family it is named after (Inspect names a task by its function).
ALLOWED = {
    ("phasebench/inspectai/_tasks.py", "kv"),
    ("phasebench/inspectai/_tasks.py", "niah"),
    ("phasebench/inspectai/_tasks.py", "code"),
    ("phasebench/demo.py", "kv"),
    ("phasebench/reference/data.py", "kv"),
    ("phasebench/reference/evaluate.py", "kv"),
    ("phasebench/metrics.py", "code"),
}


def test_no_module_outside_families_names_a_family():
    """No string literal outside ``phasebench/families/`` is a family's name (what branching
    on a family needs), except the uses in :data:`ALLOWED`."""
    offenders, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "families"):
            continue
        where = path.relative_to(ROOT).as_posix()
        for line, value in _string_literals(path):
            if value in families.BUILTIN:
                if (where, value) in ALLOWED:
                    used.add((where, value))
                else:
                    offenders.append(f"{where}:{line}: {value!r}")
    assert not offenders, offenders
    assert used == ALLOWED  # no stale exemption
    # and the plain grep of the issue: "code" only in families/ and the statistics table
    found = subprocess.run(["grep", "-rln", '"code"', str(PACKAGE), "--include=*.py"],
                           capture_output=True, text=True).stdout.split()  # fmt: skip
    outside = {p for p in found if not p.startswith(str(PACKAGE / "families"))}
    assert outside == {str(PACKAGE / "metrics.py"), str(PACKAGE / "inspectai" / "_tasks.py")}


def test_a_fourth_family_generates_and_verifies(locker, tmp_path):
    from phasebench.build import generate, iter_rows
    from phasebench.specs import SplitSpec
    from phasebench.verification import verify

    family, _ = locker
    assert families.names() == (*families.BUILTIN, NAME)
    spec = SplitSpec(family=NAME, length=128, modulus=4, n_base=family.default_n_base)
    (folder,) = generate([spec], tmp_path / "out", progress=False)
    rows = list(iter_rows(folder))
    assert len(rows) == 8 * 4 and {r["family"] for r in rows} == {NAME}
    assert rows[0]["id"].startswith(f"{NAME}-128-")
    assert all(r["prompt"].endswith(f"what does {r['needle_key']} hold?\nAnswer: "
                                    f"{r['needle_key']} holds") for r in rows)  # fmt: skip
    assert {r["phase"] for r in rows} == {0, 1, 2, 3}
    manifest = json.loads((folder / "manifest.json").read_text())
    assert "lockers_per_prompt_mean" in manifest["family"]
    (report,) = verify([folder], progress=False)
    assert report.ok and report.checked, report.lines()
    # the CLI takes it as a choice, with its declared default n_base (8 items x 4 phases)
    assert main(["generate", NAME, "--length", "128", "--modulus", "4",
                 "--out", str(tmp_path / "cli"), "--quiet"]) == 0  # fmt: skip
    assert len(list(iter_rows(tmp_path / "cli" / f"{NAME}_128"))) == 8 * 4
    assert main(["verify", str(tmp_path / "cli" / f"{NAME}_128"), "--quiet"]) == 0
    # what the declaration does not allow is refused in one line, as for the built-ins
    with pytest.raises(SpecError, match="'length' must be >= 64"):
        SplitSpec(family=NAME, length=0)


def test_generate_help_reads_each_familys_own_n_base(locker, capsys):
    """``generate --help`` states each family's own ``n_base`` from its declaration (the code
    family's sweep from its padding styles and lengths), the throwaway family's too."""
    from phasebench.families.code import STYLES, SWEEP

    assert main(["generate", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    code = families.get_family("code")
    assert (
        f"(default: the family's own, {families.DEFAULT_N_BASE} for kv and niah; 8 for {NAME}; "
        f"code: {code.default_n_base} items, each swept over {len(STYLES)} padding styles x "
        f"{SWEEP} lengths)"
    ) in shown


def test_a_forgotten_family_is_unknown_again(locker):
    families.unregister(NAME)
    with pytest.raises(SpecError, match="must be one of kv, niah, code \\(got 'locker'\\)"):
        families.get_family(NAME)
    families.register(locker[0])  # the fixture forgets it again


def test_the_leaderboard_knows_a_family_from_its_declaration(locker):
    """The leaderboard's tasks are the families' tasks: a registered family's task is known (at
    the version of the shared task YAML its own includes), a forgotten one is not; another
    process adopts the registered families by their modules' names."""
    from phasebench.leaderboard.schema import known_tasks

    tasks = known_tasks()
    assert tasks[f"phasebench_{NAME}"] == tasks["phasebench_kv"] == "1.0"
    assert families.declarations() == {NAME: "locker_family"}
    families.adopt(families.declarations())  # already known: nothing to import
    families.unregister(NAME)
    assert f"phasebench_{NAME}" not in known_tasks() and families.declarations() == {}
    with pytest.raises(SpecError, match="module 'json' does not declare the family 'locker'"):
        families.adopt({NAME: "json"})
    families.register(locker[0])  # the fixture forgets it again


@pytest.mark.slow
def test_a_fourth_family_runs_as_an_lm_eval_task_reports_and_reaches_the_leaderboard(
    locker, tiny_llama, tmp_path, monkeypatch
):
    """The real lm-eval CLI on the family's own task (its YAML in a folder of its own), in a
    process that imports the family's module first; then ``phasebench report`` on the logs;
    then the logs packed as a submission and ``phasebench leaderboard build``: the family's
    board, the model page, the index and every export carry it, the leaderboard knowing the
    family from its declaration alone."""
    _, plugin = locker
    tasks = _task_folder(tmp_path / "tasks")
    launcher = tmp_path / "lm_eval_with_locker.py"
    launcher.write_text(
        "import runpy, sys\nimport locker_family  # registers the family\n"
        "sys.argv[0] = 'lm_eval'\nrunpy.run_module('lm_eval', run_name='__main__')\n"
    )
    env = offline_env(tmp_path / "cache")
    env["PYTHONPATH"] = f"{plugin}:{env['PYTHONPATH']}"
    metadata = {"max_seq_lengths": [128], "phase_modulus": 4, "metrics": "full"}
    command = [sys.executable, str(launcher), "--model", "hf", "--model_args",
               f"pretrained={tiny_llama},dtype=float32", "--tasks", f"phasebench_{NAME}",
               "--include_path", str(tasks), "--metadata", json.dumps(metadata), "--device",
               "cpu", "--batch_size", "8", "--log_samples", "--output_path", "out",
               "--seed", "0"]  # fmt: skip
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1500)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (results_file,) = (tmp_path / "out").glob("*/results_*.json")
    table = json.loads(results_file.read_text())["results"][f"phasebench_{NAME}"]
    for key in ("acc", "acc_worst_phase_crossfit", "phase_gap", "phase_gap_p_value"):
        assert isinstance(table[f"{key},none"], float), key
    assert "margin,none" not in table  # generate_until: no margin
    (samples_file,) = (tmp_path / "out").glob(f"*/samples_phasebench_{NAME}_*.jsonl")
    docs = [json.loads(line)["doc"] for line in samples_file.read_text().splitlines()]
    assert len(docs) == 8 * 4 and {d["family"] for d in docs} == {NAME}  # default n_base
    report = tmp_path / "report.json"
    assert main(["report", str(tmp_path / "out"), "--json", str(report)]) == 0
    (body,) = json.loads(report.read_text())["runs"].values()
    entry = body["tasks"][f"phasebench_{NAME}"]["128"]
    assert entry["n_base"] == 8 and entry["modulus"] == 4
    assert abs(entry["acc"] - table["acc,none"]) < 1e-9
    assert abs(entry["gap"] - table["phase_gap,none"]) < 1e-9

    # the leaderboard: the same lm-eval output packed as a submission, built into a site
    from phasebench.leaderboard.pack import pack
    from phasebench.leaderboard.render import board_page

    meta = {"model": "phasebench/tiny-random-llama", "revision": "ab" * 20,
            "precision": "float32", "backend": "hf", "kv_cache": "none (full attention)",
            "chat_template": False, "license": "apache-2.0", "contact": "maintainers",
            "tokenizer": {"name": "deepseek-v4"}}  # fmt: skip
    (tmp_path / "submission.yaml").write_text(json.dumps(meta))
    subs = tmp_path / "subs"
    pack(tmp_path / "out", subs / "phasebench__tiny-random-llama" / meta["revision"],
         tmp_path / "submission.yaml")  # fmt: skip
    # the validating processes know the families this process knows, importing their modules
    # by name as this process could (never anything a submission names)
    monkeypatch.syspath_prepend(str(plugin))
    site = tmp_path / "site"
    assert main(["leaderboard", "build", str(subs), "--out", str(site), "--no-reported",
                 "--quiet"]) == 0  # fmt: skip
    board = json.loads((site / "leaderboard.json").read_text())
    assert not board["rejections"]["refused"], board["rejections"]["refused"]
    (row,) = board["rows"]
    assert row["task"] == f"phasebench_{NAME}" and row["board"] == f"phasebench_{NAME}@128/m4"
    assert row["n_base"] == 8 and abs(row["acc"] - table["acc,none"]) < 1e-9
    assert abs(row["gap"] - table["phase_gap,none"]) < 1e-9
    board_html = (site / board_page(row["board"])).read_text()
    assert f"Task phasebench_{NAME} v1.0 · 128 tokens" in board_html
    assert "phasebench/tiny-random-llama" in board_html
    model_html = (site / row["page"]).read_text()
    assert f"phasebench_{NAME} @ 128 tokens" in model_html
    assert f"phasebench_{NAME} v1.0" in model_html  # the task versions of the entry
    index = (site / "index.html").read_text()
    assert f'href="{board_page(row["board"])}"' in index
    import pandas as pd

    for export in (
        pd.read_csv(site / "leaderboard.csv"),
        pd.read_parquet(site / "leaderboard.parquet"),
    ):
        assert list(export["task"]) == [f"phasebench_{NAME}"]
    # the Hub's Eval Results export: the family's benchmark task at its length
    assert main(["leaderboard", "export-eval-results", str(site), "--dataset", "org/phasebench",
                 "--site-url", "https://example.org/board",
                 "--out", str(tmp_path / "eval")]) == 0  # fmt: skip
    (written,) = (tmp_path / "eval").glob("*/.eval_results/*.yaml")
    assert f"task_id: {NAME}_128_m4" in written.read_text()  # one Hub task per board
