"""``generate --overwrite``: an interrupted overwrite keeps the old complete split, and only configs
phasebench made are replaced."""

from __future__ import annotations

import shutil

import pytest

from phasebench.build import generate
from support.repos import SPEC


def test_interrupted_overwrite_keeps_the_old_complete_split(
    kv_split, tmp_path, deepseek, monkeypatch
):
    import phasebench.build as build

    out = tmp_path / "split"
    shutil.copytree(kv_split, out / kv_split.name)
    before = {p.name: p.read_bytes() for p in (out / kv_split.name).iterdir()}

    calls = []

    def interrupted(i):
        calls.append(i)
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "_write_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate([SPEC.replace(seed=1)], out, overwrite=True, progress=False, tokenizer=deepseek)
    assert calls
    assert {p.name: p.read_bytes() for p in (out / kv_split.name).iterdir()} == before
    assert sorted(p.name for p in out.iterdir()) == [kv_split.name]  # no staging folder left


def test_overwrite_replaces_only_configs_it_made(tmp_path, deepseek):
    out = tmp_path / "split"
    foreign = out / SPEC.config_name
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    from phasebench.errors import OutputError

    with pytest.raises(OutputError, match="not a phasebench config"):
        generate([SPEC], out, overwrite=True, progress=False, tokenizer=deepseek)
    assert (foreign / "notes.txt").read_text() == "mine"
