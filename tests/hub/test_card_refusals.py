"""Publishing: a manifest path is checked before it is opened, card fields before anything is
published, and a card index with a forged license is refused."""

from __future__ import annotations

import json

import pytest

from support.cli import one_line, run


def test_select_configs_checks_a_manifest_path_before_opening_it(tmp_path):
    """A dataset folder whose config's ``manifest.json`` is a link to ``/etc/passwd``: refused
    by the path before the file is opened (the error named the file it had read)."""
    from phasebench.errors import PhasebenchError
    from phasebench.hub.load import select_configs

    config = tmp_path / "dataset" / "kv_128"
    config.mkdir(parents=True)
    (config / "manifest.json").symlink_to("/etc/passwd")
    with pytest.raises(PhasebenchError, match="link") as exc:
        select_configs(str(tmp_path / "dataset"))
    assert "readable" not in str(exc.value)


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--pretty-name", "X\nlicense: evil\n---\n<script>"), ("--pretty-name", "a <b>"),
     ("--pretty-name", "x" * 121), ("--license", "mit\nevil: 1"), ("--license", "my-own")],
    ids=["newline and markup", "html", "too long", "license with a newline", "unknown licence"],
)  # fmt: skip
def test_card_fields_are_validated_before_publishing(tmp_path, flag, value):
    from support.submissions import split_rows

    split_rows(tmp_path / "gen")
    out = tmp_path / "repo"
    code, _, err = run(["publish", str(tmp_path / "gen"), "--out", str(out), flag, value])
    assert code == 2 and flag in one_line(err)
    assert not out.exists()


def test_a_card_index_with_a_forged_license_is_refused():
    from phasebench.errors import HubError
    from phasebench.hub.repo import parse_index

    index = {"configs": [], "license": "mit\nevil: 1"}
    with pytest.raises(HubError, match="license"):
        parse_index(json.dumps(index).encode(), "phasebench.json")
