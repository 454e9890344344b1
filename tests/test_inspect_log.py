"""The Inspect log reader's bounds: what arrives from outside is refused in one line before
Inspect's own reader parses it. (A real log read back: ``tests/inspectai/``.)"""

from __future__ import annotations

import zipfile

import pytest

from phasebench.errors import LogError
from phasebench.inspect_log import InspectLimits, is_inspect_log, read_inspect_log


def test_a_file_that_is_no_zip_is_refused(tmp_path):
    path = tmp_path / "run.eval"
    path.write_text("not a zip")
    with pytest.raises(LogError, match="not an Inspect .eval log"):
        read_inspect_log(path)


def test_a_symlink_and_an_oversized_log_are_refused(tmp_path):
    real = tmp_path / "real.eval"
    with zipfile.ZipFile(real, "w") as archive:
        archive.writestr("header.json", "{}")
    link = tmp_path / "link.eval"
    link.symlink_to(real)
    with pytest.raises(LogError, match="symlinks are refused"):
        read_inspect_log(link)
    with pytest.raises(LogError, match="an Inspect log may have 10"):
        read_inspect_log(real, InspectLimits(max_bytes=10))


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    path = tmp_path / "bomb.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("samples/1_epoch_1.json", b"0" * (1 << 20))
    with pytest.raises(LogError, match="packs over 10:1"):
        read_inspect_log(path, InspectLimits(max_ratio=10))
    with pytest.raises(LogError, match="unpacks to"):
        read_inspect_log(path, InspectLimits(max_unpacked=1000))
    with pytest.raises(LogError, match="files inside"):
        read_inspect_log(path, InspectLimits(max_members=0))


@pytest.mark.slow  # imports inspect_ai
def test_a_zip_that_is_no_inspect_log_is_one_line(tmp_path):
    path = tmp_path / "other.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", '{"not": "a log"}')
    with pytest.raises(LogError, match="not a readable Inspect log"):
        read_inspect_log(path)


@pytest.mark.slow
def test_report_refuses_a_broken_log_in_one_line(tmp_path, capsys):
    from phasebench.cli import main

    path = tmp_path / "run.eval"
    path.write_bytes(b"PK\x03\x04 broken")
    assert is_inspect_log(path) and not is_inspect_log(tmp_path / "run.json")
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not an Inspect .eval log" in err[0], err
