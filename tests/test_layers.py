"""The package's layers import only downward, its folders are one layer each, and only the
command line parses arguments or prints. Read from the source (every import statement,
function-level ones included), so a new import that points up fails here before it tangles
anything.

Each top-level module or subpackage of ``phasebench/`` is one *node* (``stats/``, ``metrics``).
``docs/architecture.md`` declares the layers (its table "Layers (lowest first)", which this file
reads) and draws the graph between the nodes (the block after ``<!-- drawn: ... -->``, which
this file compares with the code); ``python tests/test_layers.py`` redraws it."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

from phasebench._moved import MOVED

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "phasebench"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: The line before the drawn graph in ``docs/architecture.md``.
DRAWN = "<!-- drawn: tests/test_layers.py -->"


def node_of(module: str) -> str:
    """The top-level module or subpackage a module belongs to: ``phasebench.stats.power`` ->
    ``stats/``, ``phasebench.metrics`` -> ``metrics``."""
    top = module.split(".")[1]
    return f"{top}/" if (PACKAGE / top).is_dir() else top


def declared_layers(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(layer, nodes)`` lowest first, from the architecture's layer table: its first column
    names the layer, its second the nodes in backticks."""
    section = text.split("## Layers (lowest first)", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] not in ("layer", "---"):
            layers.append((cells[0], tuple(re.findall(r"`([^`]+)`", cells[1]))))
    return layers


#: Lowest first. A module may import from its own layer and those below it, never above.
LAYERS: list[tuple[str, tuple[str, ...]]] = declared_layers(
    ARCHITECTURE.read_text(encoding="utf-8")
)


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of the layer the module's node is declared in."""
    node = node_of(module)
    return next((i for i, (_, nodes) in enumerate(LAYERS) if node in nodes), None)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name, the old paths of moved modules left out
    (:data:`phasebench._moved.MOVED`: each *is* the module at its new path)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in MOVED:
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


def _resolved(path: Path, found: dict[str, Path]) -> list[tuple[int, str]]:
    """``(line, module)`` of each package module ``path`` imports when it runs (a ``from a.b
    import c`` counts as ``a.b``, or as ``a.b.c`` where that is a module)."""
    out = []
    for line, target in runtime_imports(path):
        while target and target not in found:
            target = target.rpartition(".")[0]
        if target:
            out.append((line, target))
    return out


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports when it runs."""
    return {
        name: {target for _, target in _resolved(path, found) if target != name}
        for name, path in found.items()
    }


def folder_graph(found: dict[str, Path]) -> dict[str, dict[str, list[str]]]:
    """Node -> the nodes it imports when it runs -> where (``path:line imports module``)."""
    graph: dict[str, dict[str, list[str]]] = {node_of(name): {} for name in found}
    for name, path in found.items():
        for line, target in _resolved(path, found):
            if node_of(target) != node_of(name):
                shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                where = f"{Path(shown).as_posix()}:{line} imports {target}"
                graph[node_of(name)].setdefault(node_of(target), []).append(where)
    return graph


def circles(graph: dict[str, set[str]] | dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected sets of more than one node (Tarjan): each is an import circle."""
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


def circle_edges(graph: dict[str, dict[str, list[str]]]) -> list[str]:
    """Every edge inside a circle of the folder graph, with the imports that make it."""
    lines = []
    for group in circles(graph):
        lines.append(f"these import one another in a circle: {', '.join(group)}")
        for node in group:
            for other in sorted(set(graph[node]) & set(group)):
                lines.append(f"  {node} -> {other}: {'; '.join(graph[node][other])}")
    return lines


def floors(graph: dict[str, dict[str, list[str]]]) -> dict[str, int]:
    """0 for a node that imports no other, else one above the highest node it imports (the
    graph has no circle)."""
    found: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in found:
            found[node] = 1 + max((floor(other) for other in graph[node]), default=-1)
        return found[node]

    for node in graph:
        floor(node)
    return found


def drawing(graph: dict[str, dict[str, list[str]]]) -> str:
    """The graph as ``docs/architecture.md`` draws it: one line per node, by layer, lowest
    first, and within a layer by floor, each with the nodes it imports; every node's imports
    stand above it."""
    floor = floors(graph)
    rows = [("layer", "module", "imports")]
    for layer, nodes in LAYERS:
        for node in sorted(nodes, key=lambda n: (floor.get(n, 0), n)):
            rows.append((layer, node, ", ".join(sorted(graph.get(node, ()))) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return "\n".join(
        f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}".rstrip() for row in rows
    )


def drawn(text: str) -> str:
    """The fenced block after :data:`DRAWN` in ``docs/architecture.md``."""
    after = text.split(DRAWN, 1)[1]
    return after.split("```text\n", 1)[1].split("\n```", 1)[0]


def _package_graph() -> dict[str, dict[str, list[str]]]:
    return folder_graph({n: p for n, p in modules().items() if n != "phasebench"})


def test_every_module_has_a_layer():
    nodes = {node_of(m) for m in modules() if m != "phasebench"}
    declared = [node for _, members in LAYERS for node in members]
    missing = sorted(nodes - set(declared))
    assert not missing, f"add these to a layer of docs/architecture.md's table: {missing}"
    assert sorted(set(declared) - nodes) == [], "the layer table names what is not a module"
    assert len(declared) == len(set(declared)), "a module is in two layers of the table"


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


def test_each_folder_is_one_layer():
    """No circle between the top-level modules and subpackages: a reader who opens ``lmeval/``
    or ``stats/`` finds one floor of the house, and what it imports is all below it."""
    assert circle_edges(_package_graph()) == []


def test_the_architecture_draws_the_import_graph():
    """``docs/architecture.md`` draws the graph between the folders once, and it is this one
    (``python tests/test_layers.py`` redraws it)."""
    expected = drawing(_package_graph())
    assert drawn(ARCHITECTURE.read_text(encoding="utf-8")) == expected, (
        "docs/architecture.md's import graph differs from the code's; redraw it with "
        "`python tests/test_layers.py`:\n" + expected
    )


def test_the_circle_check_sees_a_circle(tmp_path):
    """The checker itself: a function-level import back is a circle, a TYPE_CHECKING one is not;
    between folders, the edges of the circle are named with the imports that make them."""
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
    # two real folders of the package, tied by made-up modules in each
    stats, lmeval = tmp_path / "stats.py", tmp_path / "lmeval.py"
    stats.write_text("import phasebench.lmeval.tasks\n")
    lmeval.write_text("def f():\n    from phasebench.stats.x import y\n")
    tied = {"phasebench.stats.x": stats, "phasebench.lmeval.tasks": lmeval}
    lines = [line.split(": ", 1)[0] for line in circle_edges(folder_graph(tied))]
    assert lines == [
        "these import one another in a circle",
        "  lmeval/ -> stats/",
        "  stats/ -> lmeval/",
    ]
    assert "lmeval.py:2 imports phasebench.stats.x" in circle_edges(folder_graph(tied))[1]


def test_no_module_imports_an_old_path():
    """The old paths of moved modules are for users' code only: the package, the benchmarks and
    the tests import the new paths, so dropping the old ones breaks nothing."""
    offenders = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"),
                        *(ROOT / "tests").rglob("*.py")]):  # fmt: skip
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from phasebench.lmeval import compat`` names the module as well
                named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for target in named:
                if any(target == old or target.startswith(old + ".") for old in MOVED):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}")
    assert not offenders, offenders


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_the_moved_module_with_a_warning(old):
    """Code that imports a moved module by its old path keeps working for one release: it gets
    the module itself (the same object, so private names and monkeypatches behave) and a
    DeprecationWarning that names the new path; the CHANGELOG says it moved."""
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(f"import {MOVED[old]}")):
        module = importlib.import_module(old)
    assert module is new
    assert f"`{old}`" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


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


if __name__ == "__main__":  # redraw docs/architecture.md's import graph from the code
    text = ARCHITECTURE.read_text(encoding="utf-8")
    old = drawn(text)
    ARCHITECTURE.write_text(text.replace(old, drawing(_package_graph()), 1), encoding="utf-8")
