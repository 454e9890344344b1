"""``leaderboard build`` and ``validate`` against bad places and stale state: a second build into
the same folder, a cache inside the submissions or the site, a cache entry replaced by a link or
edited, a missing previous board, dates out of range, repeated samples, a killed build."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from phasebench.atomic import lock_folder
from phasebench.leaderboard.validate import validate_all
from support.cli import one_line, run
from support.submissions import REVISION, TASKS, make_submission, write_lmeval


def _rules(outcome) -> dict[str, str]:
    return {name: problems[0].rule for name, problems in outcome.refused}


def _build(subs: Path, site: Path, cache: Path | None, *extra: str) -> tuple[int, str, str]:
    argv = ["leaderboard", "build", str(subs), "--out", str(site), "--quiet", "--no-reported"]
    return run(argv + (["--cache", str(cache)] if cache else []) + list(extra))


def test_a_second_build_into_the_same_out_is_refused(tmp_path, submission_rows, monkeypatch):
    """While one build holds ``--out`` (the folder lock ``generate`` takes), another is refused
    at once, before validating anything."""
    from phasebench.leaderboard import validate

    subs, site = tmp_path / "subs", tmp_path / "site"
    make_submission(subs, submission_rows, model="acme/m")
    site.mkdir()

    def never(*args, **kwargs):
        raise AssertionError("validated although --out is being written")

    monkeypatch.setattr(validate, "validate_all", never)
    with lock_folder(site):
        code, _, err = _build(subs, site, None)
    assert code == 2 and "another phasebench process" in one_line(err)
    assert list(site.iterdir()) == []


def test_an_empty_submissions_folder_is_refused_and_no_site_is_built(tmp_path):
    """Before, ``leaderboard build`` on an empty folder printed "accepted: 0  refused: 0", exit 0,
    and built a site whose index said no board had a significant gap, with no board at all."""
    subs, site = tmp_path / "subs", tmp_path / "site"
    (subs / ".cache").mkdir(parents=True)  # hidden entries are no submissions either
    (subs / "README.md").write_text("submit here\n")
    code, out, err = _build(subs, site, None)
    assert code == 1 and out == "", out
    assert one_line(err) == (
        f"phasebench: no submissions under {str(subs)!r} (expected ORG__MODEL/REVISION folders, "
        "as `phasebench leaderboard pack` writes them); no site built"
    )
    assert not site.exists()


@pytest.mark.parametrize("where", ["in submissions", "in out", "is out", "is submissions"])
def test_a_cache_inside_the_submissions_or_the_site_is_refused(
    tmp_path, submission_rows, monkeypatch, where
):
    from phasebench.leaderboard import validate

    subs, site = tmp_path / "subs", tmp_path / "site"
    make_submission(subs, submission_rows, model="acme/m")
    cache = {"in submissions": subs / "cache", "in out": site / "cache", "is out": site,
             "is submissions": subs}[where]  # fmt: skip
    monkeypatch.setattr(validate, "validate_all", lambda *a, **k: pytest.fail("validated"))
    code, _, err = _build(subs, site, cache)
    assert code == 2 and "--cache" in one_line(err)
    assert not site.exists() and not (subs / "cache").exists()


def test_a_cache_entry_replaced_by_a_symlink_is_never_followed(tmp_path, submission_rows):
    """Every folder inside the cache replaced by a link to a folder outside it: the build
    writes nothing outside ``--cache`` and gives the same board."""
    subs, site, cache = tmp_path / "subs", tmp_path / "site", tmp_path / "cache"
    make_submission(subs, submission_rows, model="acme/m")
    code, _, err = _build(subs, site, cache)
    assert code == 0, err
    first = json.loads((site / "leaderboard.json").read_text())["rows"]
    outside = tmp_path / "outside"
    outside.mkdir()
    for folder in [*sorted((cache / "validated").iterdir()), cache / "splits"]:
        shutil.rmtree(folder)
        folder.symlink_to(outside, target_is_directory=True)
    code, _, err = _build(subs, site, cache)
    assert code == 0, err
    assert list(outside.iterdir()) == []
    again = json.loads((site / "leaderboard.json").read_text())["rows"]
    assert [r["acc"] for r in again] == [r["acc"] for r in first]


def test_an_edited_cached_verdict_is_revalidated(tmp_path, submission_rows):
    """The cache is trusted like the site, and each kept answer carries a content hash: an
    answer edited in place (a score changed, the key left alone) is not used; the build
    validates the submission again."""
    subs, site, cache = tmp_path / "subs", tmp_path / "site", tmp_path / "cache"
    make_submission(subs, submission_rows, model="acme/m")
    assert _build(subs, site, cache)[0] == 0
    first = json.loads((site / "leaderboard.json").read_text())["rows"][0]["acc"]
    (entry,) = (cache / "validated").rglob("*.json")
    stored = json.loads(entry.read_text())
    rows = stored["answer"]["accepted"]["samples"]["rows"]
    acc = stored["answer"]["accepted"]["samples"]["columns"].index("acc")
    for row in rows:
        row[acc] = 1.0
    stored["answer"]["accepted"]["summaries"] = None
    entry.write_text(json.dumps(stored))
    code, _, err = _build(subs, site, cache, "--quiet")
    assert code == 0, err
    assert json.loads((site / "leaderboard.json").read_text())["rows"][0]["acc"] == first


@pytest.mark.parametrize("command", ["build", "validate"])
def test_a_previous_board_that_does_not_exist_is_an_error(
    tmp_path, submission_rows, monkeypatch, command
):
    from phasebench.leaderboard import validate

    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/m")
    monkeypatch.setattr(validate, "validate_all", lambda *a, **k: pytest.fail("validated"))
    missing = tmp_path / "sitee" / "leaderboard.json"
    argv = ["leaderboard", command, str(subs), "--quiet", "--previous", str(missing)]
    if command == "build":
        argv += ["--out", str(tmp_path / "site"), "--no-reported"]
    code, _, err = run(argv)
    assert code == 2 and "--previous" in one_line(err) and "sitee" in err


@pytest.mark.parametrize("date", [1e20, -1e20, 10.0**300])
def test_a_date_out_of_range_refuses_only_its_submission(
    tmp_path, submission_rows, regen_cache, date
):
    subs = tmp_path / "subs"
    bad = make_submission(subs, submission_rows, model="hostile/date")
    path = next(bad.glob("results_*.json"))
    data = json.loads(path.read_text())
    data["date"] = date
    path.write_text(json.dumps(data))
    make_submission(subs, submission_rows, model="acme/good")
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/good"], outcome.report_lines()
    assert set(_rules(outcome)) == {f"hostile__date/{REVISION}"}


def test_a_repeated_sample_is_refused_by_validation(tmp_path, submission_rows, regen_cache):
    subs = tmp_path / "subs"
    folder = make_submission(subs, submission_rows, model="acme/repeat")
    samples = next(folder.glob("samples_*"))
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    for path in [*folder.glob("samples_*"), *folder.glob("results_*")]:
        path.unlink()
    write_lmeval(folder, records + [records[0]])
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.accepted
    assert _rules(outcome) == {f"acme__repeat/{REVISION}": "count"}


def test_validate_report_on_a_read_only_place_is_refused_before_validating(
    tmp_path, submission_rows, monkeypatch
):
    from phasebench.leaderboard import validate

    if os.access("/proc/sys", os.W_OK):
        pytest.skip("needs a folder this user cannot write (/proc/sys)")
    subs = tmp_path / "subs"
    make_submission(subs, submission_rows, model="acme/m")
    monkeypatch.setattr(validate, "validate_all", lambda *a, **k: pytest.fail("validated"))
    code, _, err = run(["leaderboard", "validate", str(subs), "--quiet", "--report",
                        "/proc/sys/phasebench-report.json"])  # fmt: skip
    assert code == 2 and "--report" in one_line(err)


KILLED_BUILD = """
import sys
import phasebench.leaderboard.validate as validate
from phasebench.cli import main
validate.WORKER = "support.workers:answers_late"
main(sys.argv[1:])
"""


@pytest.fixture(scope="session")
def short_tmp():
    """A temporary folder with a short path, kept until the session ends: the builds' forkserver
    puts its socket there (an AF_UNIX path has at most 107 bytes, and pytest-xdist's tmp_path can
    be longer), and multiprocessing keeps using the folder it first made there for the rest of
    the process."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="pbk-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_a_killed_build_leaves_no_scratch_folder_and_no_traceback(
    tmp_path, submission_rows, signal_name, monkeypatch, short_tmp
):
    """A build killed while a submission is being validated: the validating process, whose
    answer finds no parent, ends without a traceback, and the scratch folder the killed build
    made in the temporary folder is removed by the next build."""
    import signal
    import subprocess
    import sys
    import time

    subs, marks = tmp_path / "subs", tmp_path / "marks"
    tmp = short_tmp / signal_name
    tmp.mkdir()
    make_submission(subs, submission_rows, model="acme/m")
    marks.mkdir()
    root = Path(__file__).resolve().parents[1]  # tests/
    env = {**os.environ, "PYTHONPATH": f"{root.parent}{os.pathsep}{root}", "TMPDIR": str(tmp),
           "PHASEBENCH_TEST_MARKS": str(marks), "HF_HUB_OFFLINE": "1"}  # fmt: skip
    build = ["leaderboard", "build", str(subs), "--out", str(tmp_path / "site"), "--quiet",
             "--no-reported"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", KILLED_BUILD, *build], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 120
    while not any(marks.iterdir()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert any(marks.iterdir()), proc.communicate(timeout=60)
    proc.send_signal(getattr(signal, signal_name))
    _, err = proc.communicate(timeout=60)  # the pipe closes when the validating process ends
    assert proc.returncode < 0
    assert "Traceback" not in err.decode(), err.decode()
    # the next build, in a process of its own (this one's multiprocessing keeps its first
    # temporary folder, so the short folder is only ever used by child processes)
    again = subprocess.run([sys.executable, "-m", "phasebench", *build], env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    left = [p.name for p in tmp.iterdir() if p.name.startswith("phasebench-lb-")]
    assert again.returncode == 0 and not left, (again.stderr, left)


@pytest.mark.slow
def test_odd_kv_cache_settings_never_stop_the_build(tmp_path, submission_rows, regen_cache):
    """Entries of one model whose declared press reads ``chunk_length`` as 4, 8, ``1e999``,
    ``four``, ``NaN`` or a 250-digit number: the site is built, the methods reading lines up
    the finite numbers only, and an odd setting is shown as the text declared (never rounded)."""
    import dataclasses

    from phasebench.leaderboard.render import build_site
    from phasebench.leaderboard.score import score

    subs, site = tmp_path / "subs", tmp_path / "site"
    make_submission(subs, submission_rows, model="acme/m", seed=1)
    validated = validate_all(subs, tasks=TASKS, cache=regen_cache)
    (entry,) = validated.accepted
    long = "9" * 250
    odd = {"c4": "4", "c8": "8", "inf": "1e999", "four": "four", "nan": "NaN", "long": long}
    outcome = dataclasses.replace(validated, accepted=[
        dataclasses.replace(entry, name=f"{entry.name}+{name}", meta={
            **entry.meta, "variant": name, "backend": "phasebench-kvpress",
            "kv_cache": f"ChunkPress(chunk_length={chunk}, compression_ratio=0.25)"})
        for name, chunk in odd.items()
    ])  # fmt: skip
    board = score(outcome)
    build_site(board, site, built="2026-12-07", submissions=subs)
    labels = {r["variant"]: r["kv_label"] for r in board["rows"]}
    assert labels["inf"] == "Chunk · chunk 1e999 · ratio 0.25" and labels["four"].startswith(
        "Chunk · chunk four"
    )
    assert labels["nan"].startswith("Chunk · chunk NaN") and f"chunk {long} " in labels["long"]
    (series,) = [s for s in board["settings"] if s["axis"] == "chunk_length"]
    assert series["values"] == [4, 8]
    html = "".join(p.read_text() for p in site.rglob("*.html"))
    assert long in html and "1e999" in html
