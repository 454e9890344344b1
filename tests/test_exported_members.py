"""The public API is pinned: adding or removing a name is a decision, not an accident. Each
name must be the very object its module defines, whatever submodules were imported before."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import phasebench

PUBLIC = {
    "GENERATOR_VERSION": "phasebench._version",
    "__version__": "phasebench._version",
    "PhasebenchError": "phasebench.errors",
    "SplitSpec": "phasebench.specs",
    "load_tokenizer": "phasebench.tokenization",
    "generate": "phasebench.build",
    "read_manifest": "phasebench.build",
    "iter_rows": "phasebench.build",
    "verify": "phasebench.verification",
    "summarize": "phasebench.stats",
}


def test_public_names_are_pinned():
    assert sorted(phasebench.__all__) == sorted(PUBLIC)


def _every_module() -> list[str]:
    found = []
    for info in pkgutil.walk_packages(phasebench.__path__, "phasebench."):
        if info.name.startswith("phasebench._") and info.name not in ("phasebench._version",):
            continue  # resource packages of the wheel (tasks, generators, data cards)
        found.append(info.name)
    return found


def test_every_public_name_is_its_modules_object_after_importing_everything():
    """Importing a submodule sets an attribute on the package; no submodule may shadow a
    public name (``phasebench.verify`` once became the module once ``phasebench.hub`` ran)."""
    for name in _every_module():
        if name.startswith(("phasebench.reference", "phasebench.demo")):
            continue  # torch-dependent: covered by the subprocess test below
        importlib.import_module(name)
    for name, module in PUBLIC.items():
        assert getattr(phasebench, name) is getattr(importlib.import_module(module), name), name


def test_identity_holds_in_a_fresh_interpreter_whatever_is_imported_first():
    code = (
        "import phasebench, phasebench.hub, phasebench.lmeval.tasks, phasebench.verification\n"
        "import phasebench.verification as v, phasebench.build as b\n"
        "assert phasebench.verify is v.verify, type(phasebench.verify)\n"
        "assert phasebench.generate is b.generate\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_no_submodule_is_named_like_a_public_name():
    names = {m.rsplit(".", 1)[-1] for m in _every_module() if m.count(".") == 1}
    assert not names & set(PUBLIC), names & set(PUBLIC)
