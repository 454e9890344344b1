"""The split cache of the lm-eval tasks: an edited entry is rebuilt, one that lost its manifest is
repaired, and a hostile ``dataset_path`` is one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from phasebench.build import MANIFEST, generate, iter_rows
from phasebench.cli import main
from phasebench.specs import SplitSpec

SPEC = SplitSpec("kv", 256, n_base=16)


@pytest.fixture(scope="module")
def built(tmp_path_factory, deepseek) -> Path:
    out = tmp_path_factory.mktemp("built")
    generate([SPEC], out, progress=False, tokenizer=deepseek)
    return out / SPEC.config_name


def _parquet(folder: Path) -> Path:
    return next(folder.glob("*.parquet"))


def test_lmeval_cache_rebuilds_an_edited_entry(tmp_path, deepseek, caplog):
    """... and says so on the ``phasebench`` logger (it was rebuilt silently)."""
    import logging

    from phasebench.lmeval.data import cached_config

    root = tmp_path / "cache"
    caplog.set_level(logging.INFO, logger="phasebench")
    folder = cached_config(SPEC, deepseek, root)
    assert [r.levelname for r in caplog.records] == ["INFO"]  # generated on first use
    caplog.clear()
    original = list(iter_rows(folder))
    path = _parquet(folder)
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["prompt"] = rows[0]["prompt"].replace("Question", "Question (edited)")
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)  # hashes kept
    again = cached_config(SPEC, deepseek, root)
    assert list(iter_rows(again)) == original
    (warning,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert warning.name.startswith("phasebench") and "does not check" in warning.getMessage()
    caplog.clear()
    cached_config(SPEC, deepseek, root)
    assert caplog.records == []  # a good entry is served without a word


def test_lmeval_cache_repairs_an_entry_that_lost_its_manifest(tmp_path, deepseek):
    from phasebench.lmeval.data import cached_config

    root = tmp_path / "cache"
    folder = cached_config(SPEC, deepseek, root)
    original = list(iter_rows(folder))
    (folder / MANIFEST).unlink()
    again = cached_config(SPEC, deepseek, root)
    assert list(iter_rows(again)) == original
    assert [p.name for p in (root / "splits").iterdir()] == [folder.parent.name]


CONFIG = f"{SPEC.config_name}_deepseek_v4"


@pytest.fixture(scope="module")
def published(built, tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("published") / "repo"
    assert main(["publish", str(built.parent), "--out", str(repo)]) == 0
    return repo


@pytest.fixture
def repo(published, tmp_path) -> Path:
    folder = tmp_path / "repo"
    shutil.copytree(published, folder)
    return folder


def _edit_index(repo: Path, edit) -> None:
    index = json.loads((repo / "phasebench.json").read_text())
    edit(index["configs"][0])
    (repo / "phasebench.json").write_text(json.dumps(index))


def _outside(repo: Path) -> None:
    """A valid config beside the folder, which a config name ``../other/...`` would reach."""
    shutil.copytree(repo / CONFIG, repo.parent / "other" / CONFIG)
    _edit_index(repo, lambda c: c.update(name=f"../other/{CONFIG}",
                                         manifest=f"../other/{CONFIG}/manifest.json"))  # fmt: skip


def _linked_config(repo: Path) -> None:
    shutil.move(repo / CONFIG, repo.parent / "elsewhere")
    (repo / CONFIG).symlink_to(repo.parent / "elsewhere", target_is_directory=True)


HOSTILE_REPOS = {
    "name-outside": (_outside, "config name"),
    "manifest-passwd": (
        lambda r: _edit_index(r, lambda c: c.update(manifest="/etc/passwd")),
        "manifest",
    ),  # fmt: skip
    "file-passwd": (
        lambda r: _edit_index(r, lambda c: c["files"][0].update(path="/etc/passwd")),
        "data file",
    ),  # fmt: skip
    "index-not-json": (lambda r: (r / "phasebench.json").write_text("{not json"), "JSON"),
    "index-huge": (lambda r: (r / "phasebench.json").write_bytes(b" " * (17 << 20)), "larger"),
    "no-name": (lambda r: _edit_index(r, lambda c: c.pop("name")), "config name"),
    "linked-config": (_linked_config, "outside"),
}


@pytest.mark.parametrize("case", ["no-name", "name-outside", "manifest-passwd"])
def test_eval_with_a_hostile_dataset_path_is_one_line(repo, capsys, case):
    """``phasebench eval`` reads ``dataset_path`` through the same checks before lm-eval
    loads any model."""
    HOSTILE_REPOS[case][0](repo)
    metadata = json.dumps({"dataset_path": str(repo), "max_seq_lengths": [256]})
    code = main(["eval", "--model", "hf", "--model_args",
                 "pretrained=deepseek-v4,tokenizer=deepseek-v4,max_length=4096",
                 "--tasks", "phasebench_kv", "--metadata", metadata])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err and "phasebench.json" in err[-1], err
    assert not any("Traceback" in line for line in err)
