"""A small kv split, the repository folder ``publish`` makes of it, and the ways the refusal
tests damage them (the fixtures ``kv_split``, ``kv_published`` and their copies are in
``tests/conftest.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from phasebench.specs import SplitSpec

#: The split the fixtures build: kv at 256 tokens, 16 base items, DeepSeek-V4's tokenizer.
SPEC = SplitSpec("kv", 256, n_base=16)
#: Its config's folder in the published repository.
CONFIG = f"{SPEC.config_name}_deepseek_v4"


def parquet(folder: Path) -> Path:
    """The (first) parquet file of a config folder."""
    return next(folder.glob("*.parquet"))


def refused_in_one_line(code: int, err: str) -> None:
    """Exit code 2 and one line on stderr, phasebench's, no traceback."""
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("phasebench"), err
    assert "Traceback" not in err


def edit_index(repo: Path, edit) -> None:
    """Apply ``edit`` to the first config of a repository's ``phasebench.json``."""
    index = json.loads((repo / "phasebench.json").read_text())
    edit(index["configs"][0])
    (repo / "phasebench.json").write_text(json.dumps(index))


def outside(repo: Path) -> None:
    """A valid config beside the folder, which a config name ``../other/...`` would reach."""
    shutil.copytree(repo / CONFIG, repo.parent / "other" / CONFIG)
    edit_index(repo, lambda c: c.update(name=f"../other/{CONFIG}",
                                        manifest=f"../other/{CONFIG}/manifest.json"))  # fmt: skip


def linked_config(repo: Path) -> None:
    """The config folder moved out and replaced by a link to it."""
    shutil.move(repo / CONFIG, repo.parent / "elsewhere")
    (repo / CONFIG).symlink_to(repo.parent / "elsewhere", target_is_directory=True)


#: Damaged or lying ``phasebench.json`` files: case -> (damage, a word the refusal names).
HOSTILE_REPOS = {
    "name-outside": (outside, "config name"),
    "manifest-passwd": (
        lambda r: edit_index(r, lambda c: c.update(manifest="/etc/passwd")),
        "manifest",
    ),  # fmt: skip
    "file-passwd": (
        lambda r: edit_index(r, lambda c: c["files"][0].update(path="/etc/passwd")),
        "data file",
    ),  # fmt: skip
    "index-not-json": (lambda r: (r / "phasebench.json").write_text("{not json"), "JSON"),
    "index-huge": (lambda r: (r / "phasebench.json").write_bytes(b" " * (17 << 20)), "larger"),
    "no-name": (lambda r: edit_index(r, lambda c: c.pop("name")), "config name"),
    "linked-config": (linked_config, "outside"),
}
