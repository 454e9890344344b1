"""Every file and folder phasebench writes goes through ``phasebench/atomic/``; what it does
there: files whole or absent, sets of files together or not at all, folders swapped in, stale
staging folders of killed runs removed (and nothing else), one writer per output folder."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phasebench.atomic import (
    STAGING_LOCK,
    atomic_file,
    atomic_files,
    atomic_write_text,
    clean_stale_staging,
    lock_folder,
    remove_entry,
    staged_folder,
)
from phasebench.errors import OutputError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "phasebench"

# -- the rule, read from the source --------------------------------------------------------------

#: Calls that write, rename or remove a file or folder, by the attribute called.
WRITERS = {
    "write_text", "write_bytes", "write_dataset", "save_to_disk", "mkdir", "makedirs", "rmdir",
    "removedirs", "unlink", "rmtree", "copyfile", "copy2", "copytree", "copyfileobj", "move",
    "touch", "symlink_to", "hardlink_to", "chmod", "mkdtemp", "mkstemp", "TemporaryDirectory",
    "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile", "save_pretrained", "truncate",
}  # fmt: skip
#: Calls that write only when called on ``os``, ``shutil``, ``numpy`` or ``torch``.
MODULE_WRITERS = {"open", "remove", "rename", "replace", "link", "symlink", "copy", "save"}
#: pandas writers that write a file only when given a path (else they return the text).
PATH_WRITERS = {"to_csv", "to_json", "to_excel", "to_feather", "to_pickle", "to_html"}
#: Writers that may write into a file :func:`phasebench.atomic.atomic_file` opened, or into
#: memory (``io.BytesIO``), and into nothing else.
SINK_WRITERS = {"write_table": 1, "to_parquet": 0, "savefig": 0}  # where the sink is passed
#: The unavoidable exceptions, each with its reason.
ALLOWED = {
    ("reference/train.py", "save_pretrained"): "transformers writes the weights, into the "
    "folder atomic.staged_folder stages",
    ("kvpress/audit.py", "save_pretrained"): "transformers writes the tokenizer's files, into "
    "the folder atomic.staged_folder stages",
}


def _writes_mode(node: ast.Call, position: int) -> bool:
    modes = [kw.value for kw in node.keywords if kw.arg == "mode"]
    if len(node.args) > position:
        modes.append(node.args[position])
    for mode in modes:
        if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
            return True  # a mode that is not a literal could be anything
        if set(mode.value) & set("wax+"):
            return True
    return False


def _literal_write_mode(node: ast.Call) -> bool:
    """``X.open("w")``: a literal mode that writes (``files.open(target)`` names no mode)."""
    modes = [kw.value for kw in node.keywords if kw.arg == "mode"] + node.args[:1]
    return any(
        isinstance(m, ast.Constant) and isinstance(m.value, str) and set(m.value) & set("wax+")
        for m in modes
    )


def _sink_names(tree: ast.AST) -> set[str]:
    """Names bound to ``io.BytesIO()`` or by ``with atomic_file(...) as NAME``."""

    def called(node: ast.AST) -> str:
        func = node.func if isinstance(node, ast.Call) else None
        return getattr(func, "attr", None) or getattr(func, "id", "")

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and called(node.value) == "BytesIO":
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.With):
            for item in node.items:
                if called(item.context_expr) == "atomic_file" and item.optional_vars is not None:
                    found.add(getattr(item.optional_vars, "id", ""))
    return found


def direct_writers(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    sinks = _sink_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            if func.id == "open" and _writes_mode(node, 1):
                found.append((node.lineno, "open"))
            elif func.id in WRITERS:
                found.append((node.lineno, func.id))
            continue
        if not isinstance(func, ast.Attribute):
            continue
        name, owner = func.attr, getattr(func.value, "id", None)
        modules = {"os", "shutil", "np", "numpy", "torch", "tempfile"}
        positional_only = not node.keywords
        if name in WRITERS:
            found.append((node.lineno, name))
        elif name in MODULE_WRITERS and owner in modules:
            found.append((node.lineno, f"{owner}.{name}"))
        elif name in ("rename", "replace") and len(node.args) == 1 and positional_only:
            found.append((node.lineno, name))  # Path.rename / Path.replace (str takes two)
        elif name == "open" and owner in ("gzip", "bz2", "lzma") and _writes_mode(node, 1):
            found.append((node.lineno, "open"))  # gzip.open(path, "wb")
        elif name == "open" and _literal_write_mode(node):
            found.append((node.lineno, "open"))  # Path.open("w")
        elif name in PATH_WRITERS and (
            node.args or any(k.arg == "path_or_buf" for k in node.keywords)
        ):
            found.append((node.lineno, name))
        elif name in SINK_WRITERS:
            where = SINK_WRITERS[name]
            target = node.args[where] if len(node.args) > where else None
            if not (isinstance(target, ast.Name) and target.id in sinks):
                found.append((node.lineno, name))
    return found


#: The package that writes: every module in it may (and each but its facade and its checks
#: does, ``os.open`` of a lock file counted as a write).
ATOMIC = PACKAGE / "atomic"


def test_no_module_writes_except_through_atomic():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if path.is_relative_to(ATOMIC):
            continue
        for line, call in direct_writers(path):
            if (rel, call) not in ALLOWED:
                offenders.append(f"phasebench/{rel}:{line}: {call}")
    assert not offenders, "write through phasebench.atomic:\n" + "\n".join(offenders)


def test_the_writing_modules_are_the_ones_the_rule_leaves_out():
    """The exemption covers the modules that write and nothing more: each of ``phasebench.atomic``
    but its facade writes (so the reader sees them; the checks make and remove a trial folder),
    and nothing else is left out."""
    writing = {p.name for p in ATOMIC.glob("*.py") if direct_writers(p)}
    assert writing == {"_writes.py", "_folders.py", "_locks.py", "_reclaim.py", "_checks.py"}
    assert not direct_writers(ATOMIC / "__init__.py")


def test_the_rule_sees_the_writers_it_names(tmp_path):
    """The reader itself: each way of writing it names is found, and what does not write is
    not (``str.replace``, ``dict.copy``, ``dataclasses.replace``, a figure into memory)."""
    source = tmp_path / "sample.py"
    source.write_text(
        "import os, shutil, io, gzip, dataclasses\n"
        "open(p, 'w')\n"
        "p.write_text('x')\n"
        "shutil.rmtree(p)\n"
        "os.replace(a, b)\n"
        "p.replace(q)\n"
        "p.open('ab')\n"
        "gzip.open(p, 'wt')\n"
        "frame.to_csv(p)\n"
        "fig.savefig(p)\n"
        "pq.write_table(table, p)\n"
        "open(p)\n"
        "s.replace('a', 'b')\n"
        "d.copy()\n"
        "dataclasses.replace(x, a=1)\n"
        "text = frame.to_csv(index=False)\n"
        "buffer = io.BytesIO()\n"
        "fig.savefig(buffer, format='png')\n"
        "with atomic_file(p) as handle:\n"
        "    frame.to_parquet(handle)\n"
        "files.open(target)\n"
    )
    assert [line for line, _ in direct_writers(source)] == list(range(2, 12))


# -- files ---------------------------------------------------------------------------------------


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = atomic_write_text(tmp_path / "a.txt", "old")
    with pytest.raises(RuntimeError):
        with atomic_file(target) as handle:
            handle.write(b"new, half")
            raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_a_set_of_files_appears_together_or_not_at_all(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(RuntimeError):
        with atomic_files() as files:
            files.add_text(tmp_path / "one.txt", "1")
            files.add_text(tmp_path / "two.txt", "2")
            raise RuntimeError("the third fails")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    with atomic_files() as files:
        files.add_text(tmp_path / "one.txt", "1")
        files.add_copy(tmp_path / "keep.txt", tmp_path / "two.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "one.txt", "two.txt"]
    assert (tmp_path / "two.txt").read_text() == "mine"


def test_remove_entry_only_removes_a_child_of_its_owner(tmp_path):
    owner, other = tmp_path / "cache", tmp_path / "other"
    (owner / "entry").mkdir(parents=True)
    (other / "data").mkdir(parents=True)
    (owner / "link").symlink_to(other, target_is_directory=True)
    remove_entry(owner / "link", owner)  # the link goes, never what it points to
    assert (other / "data").is_dir() and not (owner / "link").exists()
    with pytest.raises(ValueError):
        remove_entry(other / "data", owner)
    remove_entry(owner / "entry", owner)
    assert list(owner.iterdir()) == []


# -- staged folders and their stale staging ------------------------------------------------------

KILLED = """
import os, sys
from phasebench.atomic import staged_folder
with staged_folder(sys.argv[1], marker="made.txt") as staging:
    open(os.path.join(staging, "half.txt"), "w").write("half")
    print("staging", flush=True)
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), 9)
    sys.stdin.readline()  # "hold": a live run, until the test lets it go
"""


def _staging_run(target: Path, how: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(target), how], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline().strip() == "staging"
    return proc


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name.split("-")[0] for p in folder.iterdir() if p.name.startswith("."))


def test_a_killed_run_leaves_staging_that_the_next_run_removes(tmp_path):
    target = tmp_path / "out"
    proc = _staging_run(target, "kill")
    assert proc.wait() == -9
    assert _hidden(tmp_path) == [".out.staging"]  # SIGKILL runs no cleanup
    with staged_folder(target, marker="made.txt") as staging:
        (staging / "whole.txt").write_text("whole")
    assert _hidden(tmp_path) == []
    assert sorted(p.name for p in target.iterdir()) == ["made.txt", "whole.txt"]


def test_staging_of_a_live_run_and_look_alike_folders_are_kept(tmp_path):
    target = tmp_path / "out"
    foreign = tmp_path / ".out.staging-mine"  # the same name pattern, not made by phasebench
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    proc = _staging_run(target, "hold")
    try:
        with staged_folder(target, marker="made.txt") as staging:
            (staging / "whole.txt").write_text("whole")
        live = [
            p for p in tmp_path.iterdir() if p.name.startswith(".out.staging-") and p != foreign
        ]
        assert len(live) == 1 and (live[0] / STAGING_LOCK).is_file()  # still being built
        assert (foreign / "notes.txt").read_text() == "mine"
    finally:
        proc.communicate("\n", timeout=60)
    assert proc.returncode == 0
    assert clean_stale_staging(target) == []
    assert (foreign / "notes.txt").read_text() == "mine"


def test_a_folder_not_made_by_the_command_is_never_replaced(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="not made by this command"):
        with staged_folder(target, marker="made.txt"):
            pass
    assert (target / "notes.txt").read_text() == "mine"


def test_keep_existing_keeps_what_another_process_put_there(tmp_path):
    target = tmp_path / "entry"
    with staged_folder(target, keep_existing=True) as staging:
        (staging / "a.txt").write_text("mine")
        target.mkdir()
        (target / "a.txt").write_text("theirs")  # finished first, meanwhile
    assert (target / "a.txt").read_text() == "theirs"
    assert _hidden(tmp_path) == []


# -- one writer at a time ------------------------------------------------------------------------

HOLD = """
import sys
from phasebench.atomic import lock_folder
with lock_folder(sys.argv[1], shared=sys.argv[2] == "shared"):
    print("locked", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("held, wanted, refused", [
    ("exclusive", "exclusive", True), ("exclusive", "shared", True),
    ("shared", "exclusive", True), ("shared", "shared", False),
])  # fmt: skip
def test_lock_folder_refuses_a_conflicting_writer(tmp_path, held, wanted, refused):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), held], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "locked"
        if refused:
            with pytest.raises(OutputError, match="another phasebench process"):
                with lock_folder(tmp_path, shared=wanted == "shared"):
                    pass
        else:
            with lock_folder(tmp_path, shared=True):
                pass
    finally:
        proc.communicate("\n", timeout=60)
    with lock_folder(tmp_path):  # released with its process
        pass
    assert list(tmp_path.iterdir()) == []  # no lock file left behind
