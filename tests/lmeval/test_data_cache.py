"""The split cache of the lm-eval tasks: an edited entry is rebuilt, one that lost its manifest is
repaired, and a hostile ``dataset_path`` is one line."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from phasebench.build import MANIFEST, iter_rows
from phasebench.cli import main
from support.repos import HOSTILE_REPOS, SPEC, parquet


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
    path = parquet(folder)
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


@pytest.mark.parametrize("case", ["no-name", "name-outside", "manifest-passwd"])
def test_eval_with_a_hostile_dataset_path_is_one_line(kv_published_copy, capsys, case):
    """``phasebench eval`` reads ``dataset_path`` through the same checks before lm-eval
    loads any model."""
    HOSTILE_REPOS[case][0](kv_published_copy)
    metadata = json.dumps({"dataset_path": str(kv_published_copy), "max_seq_lengths": [256]})
    code = main(["eval", "--model", "hf", "--model_args",
                 "pretrained=deepseek-v4,tokenizer=deepseek-v4,max_length=4096",
                 "--tasks", "phasebench_kv", "--metadata", metadata])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err and "phasebench.json" in err[-1], err
    assert not any("Traceback" in line for line in err)
