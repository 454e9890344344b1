"""Every exception phasebench raises on purpose lives in ``phasebench/errors.py`` and is drawn
in its tree; one helper quotes another library's exception; ``PHASEBENCH_DEBUG=1`` lets a bug
that a broad ``except`` would have turned into a user error keep its traceback."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

from phasebench import errors
from phasebench.cli import main

PACKAGE = Path(__file__).resolve().parent.parent / "phasebench"
#: Raised on purpose outside errors.py, and listed in its docstring: never leaves validation.
LISTED_ELSEWHERE = {("leaderboard/collect.py", "Refused")}


def _exception_classes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [getattr(b, "id", None) or getattr(b, "attr", "") for b in node.bases]
            if any(b.endswith(("Error", "Exception")) for b in bases):
                found.append(node.name)
    return found


def test_every_exception_class_lives_in_errors():
    outside = [
        (path.relative_to(PACKAGE).as_posix(), name)
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "errors.py"
        for name in _exception_classes(path)
    ]
    assert set(outside) == LISTED_ELSEWHERE, outside
    for _, name in LISTED_ELSEWHERE:
        assert name in errors.__doc__


def test_the_tree_in_the_docstring_names_every_class():
    classes = [
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, errors.PhasebenchError)
    ]
    assert sorted(classes) == sorted(n for n in errors.__all__ if n[0].isupper())
    tree = errors.__doc__.split("::", 1)[1]
    for name in classes:
        assert f" {name} " in tree or tree.strip().startswith(name), name
    assert issubclass(errors.PlainYamlError, errors.PhasebenchError)
    assert issubclass(errors.PlainYamlError, ValueError)  # still caught as before


def test_the_modules_that_raise_them_give_the_same_objects():
    from phasebench.kvpress.presses import PressError
    from phasebench.kvpress.prompt import PromptSplitError
    from phasebench.leaderboard.plain_yaml import PlainYamlError
    from phasebench.probe import ProbeError
    from phasebench.samples import LogError

    assert (PressError, PromptSplitError, PlainYamlError, ProbeError, LogError) == (
        errors.PressError, errors.PromptSplitError, errors.PlainYamlError, errors.ProbeError,
        errors.LogError)  # fmt: skip


def test_first_line_is_the_one_helper():
    assert errors.first_line(ValueError("one\ntwo")) == "one"
    assert errors.first_line(ValueError("  \n")) == "ValueError"
    assert errors.first_line(OSError(), empty="") == ""
    assert errors.first_line(ValueError("x" * 500), 10) == "x" * 10
    copies = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "errors.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "splitlines()[0]" in line or "splitlines() or [" in line
    ]
    assert not copies, copies


# -- PHASEBENCH_DEBUG ---------------------------------------------------------------------------


def _samples(folder: Path) -> Path:
    run_dir = folder / "model"
    run_dir.mkdir(parents=True)
    lines = []
    for base in range(4):
        for phase in range(8):
            doc = {"id": f"kv-4096-b{base:05d}-p{phase}", "family": "kv", "length": 4096,
                   "phase_modulus": 8, "phase": phase, "base_id": base}  # fmt: skip
            lines.append(json.dumps({"doc": doc, "acc": 1.0, "filter": "none"}))
    (run_dir / "samples_phasebench_kv_2026-01-01T00-00-00.000000.jsonl").write_text(
        "\n".join(lines) + "\n"
    )
    return run_dir


def test_a_bug_in_the_report_keeps_its_traceback_under_debug(tmp_path, monkeypatch, capsys):
    import phasebench.report._compute as report  # where build_report looks it up

    def buggy(*args, **kwargs):
        raise TypeError("a bug of phasebench's")

    monkeypatch.setattr(report, "summarize_samples", buggy)
    folder = _samples(tmp_path)
    argv = ["report", str(folder), "--n-boot", "0", "--n-perm", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unexpected shape" in err and "TypeError" in err and len(err.splitlines()) == 1
    monkeypatch.setenv("PHASEBENCH_DEBUG", "1")
    with pytest.raises(TypeError, match="a bug"):
        main(argv)
    monkeypatch.setenv("PHASEBENCH_DEBUG", "0")
    assert main(argv) == 2


def test_the_command_line_shows_tracebacks_under_debug(tmp_path, monkeypatch, capsys):
    missing = str(tmp_path / "missing.json")
    assert main(["report", missing]) == 2
    assert "Traceback" not in capsys.readouterr().err
    monkeypatch.setenv("PHASEBENCH_DEBUG", "1")
    with pytest.raises(errors.PhasebenchError):
        main(["report", missing])


def test_a_bug_in_validation_keeps_its_traceback_under_debug(tmp_path, monkeypatch):
    import phasebench.leaderboard.validate as validate

    def buggy(*args, **kwargs):
        raise KeyError("a bug of phasebench's")

    monkeypatch.setattr(validate, "read_submission", buggy)
    request = {"folder": str(tmp_path / "acme__m" / ("0" * 40)), "root": str(tmp_path),
               "tasks": {}, "cache": str(tmp_path / "cache")}  # fmt: skip
    answer = validate.validate_folder(request)
    assert "KeyError" in answer["refused"][0]["message"]
    monkeypatch.setenv("PHASEBENCH_DEBUG", "1")
    with pytest.raises(KeyError, match="a bug"):
        validate.validate_folder(request)


def test_a_bug_in_verify_keeps_its_traceback_under_debug(tmp_path, monkeypatch, deepseek):
    import dataclasses

    import phasebench.verification as verification
    from phasebench.build import generate
    from phasebench.families import get_family
    from phasebench.specs import SplitSpec

    spec = SplitSpec("kv", 256, n_base=16)
    (folder,) = generate([spec], tmp_path, progress=False, tokenizer=deepseek)

    def buggy(tok, row):
        raise IndexError("a bug of phasebench's")

    family = dataclasses.replace(get_family(spec), verify_row=buggy)
    monkeypatch.setattr(verification, "get_family", lambda spec: family)
    report = verification.verify_config(folder, sample=2, progress=False, tokenizer=deepseek)
    assert any("unexpected shape" in p for p in report.problems), report.problems
    monkeypatch.setenv("PHASEBENCH_DEBUG", "1")
    with pytest.raises(IndexError, match="a bug"):
        verification.verify_config(folder, sample=2, progress=False, tokenizer=deepseek)
