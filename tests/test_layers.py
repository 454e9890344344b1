"""The package's layers import only downward, and only the command line parses arguments or
prints. Read from the source (every import statement, function-level ones included), so a new
import that points up fails here before it tangles anything."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "phasebench"

#: Lowest first. A module may import from its own layer and those below it, never above.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("phasebench._version", "phasebench.errors", "phasebench.rng",
              "phasebench.resources", "phasebench.templates", "phasebench.atomic",
              "phasebench.registry",
              # lm-eval's boundary: every assumption about lm-eval, readable from any layer
              "phasebench.lmeval.compat")),
    ("core", ("phasebench.specs", "phasebench.rows", "phasebench.tokenization",
              "phasebench.tokenizer_behaviour",
              "phasebench.placement", "phasebench.families", "phasebench.build",
              "phasebench.verification", "phasebench.inspection", "phasebench.prefill",
              "phasebench.salting")),
    ("analysis", ("phasebench.metrics", "phasebench.stats", "phasebench.formatting")),
    ("formats", ("phasebench.samples", "phasebench.inspect_log")),
    ("report", ("phasebench.report", "phasebench.plots", "phasebench.cache_reads")),
    ("hub", ("phasebench.hub",)),
    ("lmeval", ("phasebench.lmeval",)),
    # Inspect AI's tasks: the lm-eval tasks' split engine and scoring, in Inspect
    ("inspectai", ("phasebench.inspectai",)),
    ("leaderboard", ("phasebench.leaderboard",)),
    ("reference", ("phasebench.reference",)),
    ("apps", ("phasebench.demo", "phasebench.sweep", "phasebench.kvpress", "phasebench.probe")),
    ("cli", ("phasebench.cli", "phasebench.__main__")),
]  # fmt: skip


def layer_of(module: str) -> int | None:
    best, found = -1, None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    return found


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(path: Path) -> list[tuple[int, str]]:
    return _imports_of(ast.parse(path.read_text(encoding="utf-8")))


def _imports_of(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            # ``from phasebench import stats`` imports the submodule phasebench.stats
            if node.module == "phasebench":
                found += [(node.lineno, f"phasebench.{a.name}") for a in node.names]
    return found


def _type_checking_only(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(path: Path) -> list[tuple[int, str]]:
    """:func:`imports` less those under ``if TYPE_CHECKING:`` (annotations only: they never
    run, so they cannot close a circle)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if _type_checking_only(node):
            node.body = []
    return _imports_of(tree)


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports when it runs (a ``from a.b import c`` counts
    as ``a.b``, or as ``a.b.c`` where that is a module)."""
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        targets = set()
        for _, target in runtime_imports(path):
            while target and target not in found:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan): each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    missing = [m for m in modules() if m != "phasebench" and layer_of(m) is None]
    assert not missing, f"assign these modules to a layer in tests/test_layers.py: {missing}"


def test_layers_only_import_downward():
    upward = []
    for name, path in modules().items():
        if name == "phasebench":
            continue  # the facade re-exports lazily from every layer
        mine = layer_of(name)
        for line, target in imports(path):
            if not target.startswith("phasebench."):
                continue
            theirs = layer_of(target)
            if theirs is not None and mine is not None and theirs > mine:
                upward.append(
                    f"{path.relative_to(PACKAGE.parent)}:{line} ({LAYERS[mine][0]}) imports "
                    f"{target} ({LAYERS[theirs][0]})"
                )
    assert not upward, "\n".join(upward)


def test_no_import_circle():
    """Within a layer imports may go either way, but never round: two modules that import each
    other (even inside a function) are one module split in two, and whichever loads first sees
    the other half-built. Facade packages re-export lazily, so ``phasebench`` itself is left out
    (it imports from every layer by design)."""
    found = {name: path for name, path in modules().items() if name != "phasebench"}
    assert not circles(import_graph(found)), circles(import_graph(found))


def test_the_circle_check_sees_a_circle(tmp_path):
    """The checker itself: a function-level import back is a circle, a TYPE_CHECKING one is not."""
    (tmp_path / "a.py").write_text("from phasebench.b import f\n")
    (tmp_path / "b.py").write_text("def f():\n    from phasebench.a import g\n")
    (tmp_path / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from phasebench.a import g\n"
    )
    (tmp_path / "d.py").write_text("from phasebench.c import h\n")
    found = {f"phasebench.{n}": tmp_path / f"{n}.py" for n in "abcd"}
    graph = import_graph(found)
    assert circles(graph) == [["phasebench.a", "phasebench.b"]]
    assert graph["phasebench.c"] == set()


@pytest.mark.parametrize("forbidden", ["argparse", "print"])
def test_only_the_cli_parses_arguments_and_prints(forbidden):
    offenders = []
    for name, path in modules().items():
        if name.startswith("phasebench.cli") or name == "phasebench.__main__":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if forbidden == "argparse" and isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                if any(n.split(".")[0] == "argparse" for n in names):
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
            if forbidden == "print" and isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id == "print":
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, offenders


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The checker itself: an import of the CLI from the core is found."""
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from phasebench.cli import main\n")
    ((line, target),) = imports(source)
    assert (line, target) == (2, "phasebench.cli")
    assert layer_of(target) > layer_of("phasebench.build")


def test_every_package_ships_in_the_wheel():
    """``pyproject.toml`` lists the packages by hand (the resource packages need a mapping); a
    new subpackage missing from the list would be absent from a non-editable install."""
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        for path in PACKAGE.rglob("__init__.py")
    }
    assert found <= listed, sorted(found - listed)


#: The most lines one module of the package may have: a longer one does several jobs, and is
#: split into a package by job (as ``atomic/``, ``report/``, ``tokenization/`` are).
MAX_MODULE_LINES = 600


def test_no_module_does_several_jobs_by_its_length():
    long = {
        path.relative_to(PACKAGE.parent).as_posix(): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, long
