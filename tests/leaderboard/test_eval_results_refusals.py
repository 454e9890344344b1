"""``leaderboard export-eval-results`` on edited boards: an entry whose name would leave the output
folder is refused alone, the site URL is checked, a broken entry or a board that is not one is
one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all
from support.cli import one_line, run
from support.submissions import TASKS, make_submission

SITE = "https://example.org/phasebench"


@pytest.fixture(scope="module")
def board_file(tmp_path_factory, submission_rows, regen_cache) -> Path:
    """A built board of two accepted revisions of one model (both are entries) and another."""
    from phasebench.leaderboard.render import build_site

    root = tmp_path_factory.mktemp("export")
    subs = root / "subs"
    make_submission(subs, submission_rows, model="acme/a")
    make_submission(subs, submission_rows, model="acme/a", revision="b" * 40)
    make_submission(subs, submission_rows, model="acme/other")
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert len(outcome.accepted) == 3, outcome.report_lines()
    build_site(score(outcome), root / "site")
    return root / "site" / "leaderboard.json"


def _export(board: Path, out: Path, site: str = SITE) -> tuple[int, str, str]:
    return run(["leaderboard", "export-eval-results", str(board), "--dataset", "acme/phasebench",
                "--site-url", site, "--out", str(out)])  # fmt: skip


def _edited(board_file: Path, tmp_path: Path, edit) -> Path:
    data = json.loads(board_file.read_text())
    edit(data)
    path = tmp_path / "board" / "leaderboard.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _files(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))


def test_two_revisions_of_one_model_are_both_exported(board_file, tmp_path):
    out = tmp_path / "out"
    code, _, err = _export(board_file, out)
    assert code == 0, err
    files = _files(out)
    assert len(files) == 3, files
    assert sum(f.startswith("acme__a/.eval_results/") for f in files) == 2


@pytest.mark.parametrize(
    ("field", "value"),
    [("variant", "x/../../../.."), ("model", ".."), ("model", "acme/a\nb"),
     ("model", "acme/\u202ea"), ("variant", "v\u202eA")],
    ids=["variant climbs out", "model ..", "newline", "bidi in model", "bidi in variant"],
)  # fmt: skip
def test_an_entry_whose_name_would_leave_out_is_refused_alone(board_file, tmp_path, field, value):
    """A board JSON edited so that one entry's model or variant is a path trick or an invisible
    character: that entry is refused in one line, the others are written, and nothing lands
    outside ``--out``."""
    data = json.loads(board_file.read_text())
    page = next(r["page"] for r in data["rows"] if r["model"] == "acme/other")

    def edit(board):
        if field == "model":
            board["models"][page]["model"] = value
        else:
            board["models"][page].setdefault("meta", {})["variant"] = value

    board = _edited(board_file, tmp_path, edit)
    out = tmp_path / "deep" / "er" / "out"
    out.parent.mkdir(parents=True)
    before = sorted(p for p in tmp_path.rglob("*") if "out" not in p.parts)
    code, _, err = _export(board, out)
    assert code == 1, err
    assert page in one_line(err)
    assert len(_files(out)) == 2 and all(f.startswith("acme__a/") for f in _files(out))
    after = sorted(p for p in tmp_path.rglob("*") if "out" not in p.parts)
    assert after == before


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "https://example.org/\nlicense: evil", "http://example.org",
     "https://", "ftp://example.org"],
)  # fmt: skip
def test_the_site_url_is_checked(board_file, tmp_path, url):
    out = tmp_path / "out"
    code, _, err = _export(board_file, out, url)
    assert code == 2 and "--site-url" in one_line(err)
    assert not out.exists()


@pytest.mark.parametrize(
    "edit",
    [
        lambda b: b["rows"][0].update(page="nowhere.html"),
        lambda b: b["rows"][0].update(worst_phase_crossfit="high"),
        lambda b: b["rows"][0].update(length="long"),
    ],
    ids=["page not in models", "score not a number", "length not a number"],
)
def test_a_broken_entry_is_refused_in_one_line(board_file, tmp_path, edit):
    board = _edited(board_file, tmp_path, edit)
    out = tmp_path / "out"
    code, _, err = _export(board, out)
    assert code == 1, err
    one_line(err)
    assert len(_files(out)) == 2


@pytest.mark.parametrize("text", ["[1, 2]", '{"rows": 3, "models": {}}', '{"rows": [7]}'])
def test_a_board_that_is_not_a_board_is_one_line(tmp_path, text):
    path = tmp_path / "leaderboard.json"
    path.write_text(text)
    code, _, err = _export(path, tmp_path / "out")
    assert code == 2 and "leaderboard.json" in one_line(err)
