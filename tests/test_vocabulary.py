"""The words for checking mean one thing each (docs/architecture.md, "Words for checking"): a
``check_*`` raises, a ``*_problems`` returns what it found, ``verify`` re-encodes built data,
``validate`` decides a leaderboard submission. Read from every function of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import phasebench

PACKAGE = Path(phasebench.__file__).parent
#: Where a function may be named ``validate*``: the leaderboard's validation (and the command
#: that runs it), and one public name older than the rule (``phasebench.hub.validate_repo``).
VALIDATE = {"leaderboard/validate.py", "cli/leaderboard.py", "hub/repo.py"}
#: Where a function may be named ``verify*``: the verification of built splits and the families'
#: own checks of their rows.
VERIFY = ("verification.py", "families/")


def _functions(source: str):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            returns = ast.unparse(node.returns) if node.returns else ""
            yield node.name, returns, node.lineno


def offenders(where: str, source: str) -> list[str]:
    found = []
    for name, returns, line in _functions(source):
        bare = name.lstrip("_")
        listing = returns in ("list[str]", "list[Problem]")  # a check_* may return what it read
        if (bare.startswith("check_") or bare.endswith("_check")) and listing:
            found.append(f"{where}:{line}: {name} lists problems (a *_problems, not a check_*)")
        if bare.endswith("_problems") and not returns.startswith("list"):
            found.append(f"{where}:{line}: {name} does not return a list of problems")
        if bare.startswith("validate") and where not in VALIDATE:
            found.append(f"{where}:{line}: {name} (validate is for leaderboard submissions)")
        if bare.startswith("verify") and not where.startswith(VERIFY):
            found.append(f"{where}:{line}: {name} (verify is for built splits)")
    return found


def test_the_scan_finds_each_misuse():
    source = (
        "def check_rows(x) -> list[str]: ...\n"
        "def file_problems(x) -> None: ...\n"
        "def validate_spec(x): ...\n"
        "def _verify_answer(x): ...\n"
    )
    assert [line.split(":")[1] for line in offenders("stats/x.py", source)] == ["1", "2", "3", "4"]
    assert offenders("families/x.py", "def verify_row(tok, row) -> list[str]: ...") == []


def test_every_function_uses_the_words_by_the_rule():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        found += offenders(where, path.read_text(encoding="utf-8"))
    assert found == [], found
