"""Shared command-line options: each declared once in ``phasebench/cli/_args.py``, with one type
and a default read from where the fact lives."""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

import pytest

from phasebench import metrics, reference
from phasebench.cli import _args, build_parser, main
from phasebench.specs import DEFAULT_MODULUS, DEFAULT_SEED, SplitSpec

CLI = Path(_args.__file__).parent
SPLIT_SEED = next(f.default for f in dataclasses.fields(SplitSpec) if f.name == "seed")


def _shared_add_arguments(source: str) -> list[tuple[int, str]]:
    """``(line, flag)`` of every ``add_argument("--flag", ...)`` call naming a shared option."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and arg.value in _args.SHARED:
                    found.append((node.lineno, arg.value))
    return found


def test_the_scan_finds_a_shared_option_added_by_hand():
    source = 'p.add_argument("--length", type=int)\np.add_argument(\n    "--out", default=None)\n'
    assert _shared_add_arguments(source) == [(1, "--length"), (2, "--out")]


def test_no_command_module_declares_a_shared_option_itself():
    offenders = [
        f"{path.name}:{line}: {flag}"
        for path in sorted(CLI.glob("*.py"))
        if path.name != "_args.py"
        for line, flag in _shared_add_arguments(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "declare these in phasebench/cli/_args.py: " + ", ".join(offenders)


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command and action by its words (``"reference sweep"``)."""
    found = {}

    def walk(parser, words):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[" ".join([*words, name])] = sub
                    walk(sub, [*words, name])

    walk(build_parser(), [])
    return found


def _option(command: str, flag: str) -> argparse.Action:
    parser = _commands()[command]
    return next(a for a in parser._actions if flag in a.option_strings)


@pytest.mark.parametrize(
    ("command", "flag", "home"),
    [
        ("generate", "--modulus", DEFAULT_MODULUS),
        ("probe", "--modulus", DEFAULT_MODULUS),
        ("power", "--modulus", DEFAULT_MODULUS),
        ("generate", "--seed", SPLIT_SEED),
        ("demo", "--seed", SPLIT_SEED),
        ("reference sweep", "--seed", SPLIT_SEED),
        ("report", "--stats-seed", metrics.SEED),
        ("reference train", "--train-seed", None),  # the training settings' own seed
        ("generate", "--n-base", None),  # the family's own default_n_base
        ("demo", "--n-base", reference.DEMO_N_BASE),
        ("reference evaluate", "--n-base", reference.DEMO_N_BASE),
        ("reference sweep", "--n-base", reference.SWEEP_N_BASE),
        ("demo", "--length", reference.EVAL_LENGTH),
        ("reference evaluate", "--length", reference.EVAL_LENGTH),
        ("reference sweep", "--length", reference.SWEEP_LENGTH),
        ("generate", "--num-proc", 1),
        ("verify", "--num-proc", 1),
        ("reference train", "--threads", 1),
        ("reference evaluate", "--threads", 1),
    ],
)
def test_defaults_are_read_from_their_homes(command, flag, home):
    assert _option(command, flag).default == home


def test_each_shared_option_has_one_type_everywhere():
    types: dict[str, set[str]] = {}
    for parser in _commands().values():
        for action in parser._actions:
            if isinstance(action, _args.Renamed):
                continue  # an old spelling, refused: not an option
            for flag in set(action.option_strings) & set(_args.SHARED):
                if flag == "--length" and isinstance(action, argparse._AppendAction):
                    continue  # generate's repeatable lengths admit 0 (the code family)
                types.setdefault(flag, set()).add(getattr(action.type, "__name__", None))
    assert types == {
        "--out": {None},
        "--seed": {"non_negative_int"},
        "--stats-seed": {"non_negative_int"},
        "--train-seed": {"non_negative_int"},
        "--n-base": {"positive_int"},
        "--length": {"positive_int"},
        "--modulus": {"positive_int"},
        "--quiet": {None},
        "--num-proc": {"positive_int"},
        "--threads": {"positive_int"},
    }


def _seed_meaning(command: str) -> str | None:
    """What ``--seed`` is on ``command``: ``"split"`` (an option whose default is the split's),
    the option it was renamed to (refused), or None (no ``--seed``)."""
    action = next((a for a in _commands()[command]._actions if "--seed" in a.option_strings), None)
    if action is None:
        return None
    return action.new if isinstance(action, _args.Renamed) else "split"


def test_seed_is_the_splits_seed_wherever_it_appears():
    """Every command's ``--seed`` is the seed of the split it builds (default the split's);
    the statistics' and the training seed have names of their own."""
    found = {c: _seed_meaning(c) for c in _commands() if _seed_meaning(c) is not None}
    assert found == {
        "generate": "split", "demo": "split", "reference sweep": "split",
        "report": "--stats-seed", "reference train": "--train-seed",
    }  # fmt: skip
    for command, meaning in found.items():
        if meaning == "split":
            assert _option(command, "--seed").default == SPLIT_SEED, command
            # and its help says so (``reference sweep``'s once read "evaluation seed")
            assert "split" in _option(command, "--seed").help, command


@pytest.mark.parametrize(
    ("argv", "new"),
    [
        (["report", "out", "--seed", "3"], "--stats-seed"),
        (["report", "out", "--seed"], "--stats-seed"),
        (["reference", "train", "all", "--seed", "1"], "--train-seed"),
    ],
)
def test_the_old_seed_spelling_is_refused_in_one_line_naming_the_new(argv, new, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err]
    assert f"--seed is now {new}" in err


@pytest.mark.parametrize("command", ["generate", "power", "probe"])
def test_a_bad_modulus_is_refused_alike_by_every_command(command, capsys):
    assert main([command, "--modulus", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err]
    assert "argument --modulus: must be >= 1 (got 0)" in err


#: The one seed written as a number outside its home: the reference models' training recipe.
OWN_SEEDS = {("phasebench/reference/train.py", "TrainSettings")}


def _is_number(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _numeric_seed_defaults(source: str) -> list[tuple[int, str]]:
    """``(line, where)`` of every parameter or class field named ``seed`` whose default is a
    number written there rather than read from a home."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            pairs = list(
                zip(args.args[len(args.args) - len(args.defaults) :], args.defaults, strict=True)
            )
            pairs += [
                (a, d)
                for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                if d is not None
            ]
            for arg, value in pairs:
                if arg.arg == "seed" and _is_number(value):
                    found.append((value.lineno, node.name))
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if (
                    isinstance(item, ast.AnnAssign)
                    and isinstance(item.target, ast.Name)
                    and item.target.id == "seed"
                    and _is_number(item.value)
                ):
                    found.append((item.lineno, node.name))
    return found


def test_seed_defaults_are_read_from_their_homes():
    """A split's seed defaults to :data:`phasebench.specs.DEFAULT_SEED`, the statistics' to
    :data:`phasebench.metrics.SEED` (two facts, two homes); no function or class writes a
    default seed as a number of its own."""
    assert SPLIT_SEED == DEFAULT_SEED == 0 and metrics.SEED == 0
    package = CLI.parent
    offenders, own = [], set()
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package.parent).as_posix()
        for line, name in _numeric_seed_defaults(path.read_text(encoding="utf-8")):
            if (where, name) in OWN_SEEDS:
                own.add((where, name))
            else:
                offenders.append(f"{where}:{line}: {name}")
    assert offenders == [] and own == OWN_SEEDS, offenders


def test_the_seed_scan_finds_a_number():
    source = "def f(a, seed: int = 0):\n    pass\nclass S:\n    seed: int = 3\n"
    source += "def g(seed=None):\n    pass\n"
    assert _numeric_seed_defaults(source) == [(1, "f"), (4, "S")]


def test_probe_help_names_the_strides_the_default_modulus_covers():
    divisors = [s for s in range(2, DEFAULT_MODULUS + 1) if DEFAULT_MODULUS % s == 0]
    shown = _option("probe", "--modulus").help
    assert (
        shown
        == f"phase modulus P ({DEFAULT_MODULUS} covers strides {', '.join(map(str, divisors))})"
    )
