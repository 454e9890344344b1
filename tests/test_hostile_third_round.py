"""The third round of hostile probes (issues 41 and 43): a serving claim without its witness,
the Eval Results export writing outside ``--out``, two builds into one ``--out``, a cache that
leads out of itself, a submission's malformed field taken for a machine fault, samples that
repeat a prompt, and refusals that came only after the work. Each test is one probe of the
issue, failing on the code before the fix."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from phasebench.atomic import lock_folder
from phasebench.cli import main
from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all
from support.hostile import gzip_repeating
from support.submissions import REVISION, TASK, TASKS, make_submission, write_lmeval

SITE = "https://example.org/phasebench"
SERVING = {"engine": "vllm", "version": "0.28.0", "flags": ["prefix-caching"]}
_DROP = object()


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _rules(outcome) -> dict[str, str]:
    return {name: problems[0].rule for name, problems in outcome.refused}


def _served(root: Path, rows: list[dict], witness, model: str = "acme/served") -> Path:
    """A submission run through a server (``serving`` declared) whose samples carry
    ``witness(i, doc)`` as their ``served_verified`` value (``_DROP``: no key), with every hash
    and aggregate recomputed."""
    meta = {"backend": "local-completions", "serving": SERVING}
    folder = make_submission(root, rows, model=model, accuracy=[1.0] * 8, meta=meta)
    samples = next(folder.glob("samples_*"))
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    for i, rec in enumerate(records):
        value = witness(i, rec["doc"])
        if value is not _DROP:
            rec["served_verified"] = value
    for path in [*folder.glob("samples_*"), *folder.glob("results_*")]:
        path.unlink()
    write_lmeval(folder, records, backend=meta["backend"])
    present = [r["served_verified"] for r in records if "served_verified" in r]
    if present:
        share = sum(c is not None and c == label for label, c in present) / len(present)
        path = next(folder.glob("results_*"))
        data = json.loads(path.read_text())
        data["results"][TASK]["served_verified,none"] = share
        path.write_text(json.dumps(data))
    return folder


# -- (1) the serving witness -----------------------------------------------------------------------


def test_a_serving_claim_without_a_witness_is_shown_as_claimed_not_witnessed(
    tmp_path, submission_rows, regen_cache
):
    """``serving`` declared, no ``served_verified`` on any sample: accepted (the run may have
    gone through lm-eval's own API backend), but every place that shows the stack says it is
    claimed, not witnessed; a witnessed run says witnessed."""
    from phasebench.leaderboard.eval_results import entry_results
    from phasebench.leaderboard.render import board_page, build_site

    subs = tmp_path / "subs"
    _served(subs, submission_rows, lambda i, doc: _DROP, model="acme/claimed")
    _served(subs, submission_rows, lambda i, doc: [doc["length"], doc["length"]],
            model="acme/witnessed")  # fmt: skip
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.refused, outcome.report_lines()
    board = score(outcome)
    states = {r["model"]: r["serving_witness"] for r in board["rows"]}
    assert states == {"acme/claimed": "claimed, not witnessed", "acme/witnessed": "witnessed"}
    pages = {d["model"]: d["serving_witness"] for d in board["models"].values()}
    assert pages == states
    site = tmp_path / "site"
    build_site(board, site)
    row = next(r for r in board["rows"] if r["model"] == "acme/claimed")
    assert "claimed, not witnessed" in (site / board_page(row["board"])).read_text()
    assert "claimed, not witnessed" in (site / row["page"]).read_text()
    assert "claimed, not witnessed" in (site / "leaderboard.csv").read_text()
    notes = entry_results(board, "acme/phasebench", SITE)[row["page"]]
    assert "claimed, not witnessed" in notes[0]["notes"]


@pytest.mark.parametrize(
    ("witness", "words"),
    [
        (lambda i, doc: [doc["length"], doc["length"]] if i % 2 else _DROP, "every sample"),
        (lambda i, doc: [doc["length"], doc["length"] + 0.9], "whole number"),
    ],
    ids=["half a witness", "a count of 256.9"],
)
def test_half_a_witness_or_a_fractional_count_is_refused(
    tmp_path, submission_rows, regen_cache, witness, words
):
    subs = tmp_path / "subs"
    _served(subs, submission_rows, witness)
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.accepted
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "served" and words in problem.message, problem


def test_a_witness_without_counts_is_not_shown_as_verified(tmp_path, submission_rows, regen_cache):
    """``served_verified: [256, null]`` on every sample: the server reported no count, so the
    claim is not witnessed."""
    subs = tmp_path / "subs"
    _served(subs, submission_rows, lambda i, doc: [doc["length"], None])
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.refused, outcome.report_lines()
    board = score(outcome)
    assert {r["serving_witness"] for r in board["rows"]} == {"claimed, not witnessed"}


# -- (2) the Eval Results export -------------------------------------------------------------------


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


# -- (3) one build per --out; the cache stays inside itself ----------------------------------------


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


# -- (5) --previous --------------------------------------------------------------------------------


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


# -- (6) a submission's malformed field is its own refusal -----------------------------------------


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


# -- (4) a samples file that repeats a prompt ------------------------------------------------------


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


def _report_samples(folder: Path, lines: list[bytes], gz: bool = False) -> Path:
    run_dir = folder / "model"
    run_dir.mkdir(parents=True)
    name = "samples_phasebench_kv_2026-01-01T00-00-00.000000.jsonl"
    (run_dir / name).write_bytes(b"".join(lines))
    return run_dir


def _doc_line(b: int, r: int, acc: float, modulus: int = 8, **changes) -> bytes:
    doc = {"id": f"kv-4096-b{b:05d}-p{r}", "family": "kv", "length": 4096,
           "phase_modulus": modulus, "phase": r, "base_id": b, **changes}  # fmt: skip
    return (json.dumps({"doc": doc, "acc": acc, "filter": "none"}) + "\n").encode()


@pytest.mark.parametrize("repeat", ["same id", "same unit and phase"])
def test_report_refuses_a_repeated_sample(tmp_path, repeat):
    """One extra line repeating doc 0 (acc 1.0) among all-wrong answers was averaged in
    (phase 0 at 3.1%, an interval below 0): it is refused, naming both lines."""
    lines = [_doc_line(b, r, 0.0) for b in range(4) for r in range(8)]
    if repeat == "same id":
        lines.append(_doc_line(0, 0, 1.0))
    else:
        lines.append(_doc_line(0, 0, 1.0, id="kv-4096-b00000-p0-again"))
    folder = _report_samples(tmp_path, lines)
    code, _, err = run(["report", str(folder), "--n-boot", "0", "--n-perm", "0"])
    line = one_line(err)
    assert code == 2 and "sample 33" in line and "sample 1" in line, line


def test_report_refuses_an_absurd_modulus_before_any_work(tmp_path):
    lines = [_doc_line(b, r, 1.0, modulus=10**9) for b in range(2) for r in range(8)]
    code, _, err = run(["report", str(_report_samples(tmp_path, lines)), "--n-boot", "0",
                        "--n-perm", "0"])  # fmt: skip
    assert code == 2 and "4096" in one_line(err)


def test_report_caps_the_lines_of_a_gzip_of_newlines(tmp_path):
    """A small gzip of newlines (here 3 million; the probe used 1 GB) is refused by the line
    cap, naming it, instead of being read to the end."""
    run_dir = tmp_path / "model"
    run_dir.mkdir()
    gz = run_dir / "samples_phasebench_kv_2026-01-01T00-00-00.000000.jsonl.gz"
    gzip_repeating(gz, b"\n", 3_000_000)
    code, _, err = run(["report", str(run_dir), "--n-boot", "0", "--n-perm", "0"])
    assert code == 2 and f"more than {1 << 21} lines" in one_line(err)


# -- (7) read-only targets and limits, checked before the work -------------------------------------


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


@pytest.mark.parametrize(
    ("args", "words"),
    [(["--modulus", "1000000000"], "--modulus"), (["--modulus", "4097"], "--modulus"),
     (["--rounds", "1000000"], "--rounds"), (["--filler="], "--filler")],
    ids=["modulus 1e9", "modulus 4097", "rounds 1e6", "empty filler"],
)  # fmt: skip
def test_probe_limits_are_checked_before_any_work(tmp_path, monkeypatch, args, words):
    import phasebench.probe as probe

    prompt = tmp_path / "prompt.txt"
    prompt.write_text("{{shift}}\nThe answer is")
    monkeypatch.setattr(probe, "plan_for_model", lambda *a, **k: pytest.fail("planned"))
    code, _, err = run(["probe", str(prompt), "--model", "hf", "--model_args",
                        "pretrained=nowhere", "--expect", "8", *args])  # fmt: skip
    assert code == 2 and words in one_line(err)


def test_probe_out_that_cannot_be_written_is_refused_before_the_model_runs(tmp_path, monkeypatch):
    import phasebench.probe as probe

    if os.access("/proc/sys", os.W_OK):
        pytest.skip("needs a folder this user cannot write (/proc/sys)")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("{{shift}}\nThe answer is")
    monkeypatch.setattr(probe, "plan_for_model", lambda *a, **k: pytest.fail("planned"))
    code, _, err = run(["probe", str(prompt), "--model", "hf", "--model_args",
                        "pretrained=nowhere", "--expect", "8", "--out", "/proc/sys"])  # fmt: skip
    assert code == 2 and "--out" in one_line(err)


@pytest.mark.parametrize("modulus", ["1000000", "100000"])
def test_power_refuses_a_modulus_beyond_its_limit_at_once(modulus):
    code, _, err = run(["power", "--acc", "0.9", "--gap", "0.1", "--modulus", modulus])
    assert code == 2 and "--modulus" in one_line(err) and "4096" in err


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


# -- (8) card fields, the backend claim ------------------------------------------------------------


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


def test_a_backend_the_results_contradict_is_refused(tmp_path, submission_rows, regen_cache):
    """``backend: local-completions`` in submission.yaml, ``model_source: hf`` in the results:
    the model page would print a reproduction command for a run that never happened."""
    subs = tmp_path / "subs"
    folder = make_submission(subs, submission_rows, model="acme/claims",
                             meta={"backend": "local-completions"})  # fmt: skip
    path = next(folder.glob("results_*.json"))
    data = json.loads(path.read_text())
    data["model_source"] = "hf"
    path.write_text(json.dumps(data))
    honest = make_submission(subs, submission_rows, model="acme/honest",
                             meta={"backend": "local-completions"})  # fmt: skip
    path = next(honest.glob("results_*.json"))
    data = json.loads(path.read_text())
    data["model_source"] = "phasebench-local-completions"  # phasebench eval's witnessing name
    path.write_text(json.dumps(data))
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert [s.meta["model"] for s in outcome.accepted] == ["acme/honest"]
    ((_, (problem,)),) = outcome.refused
    assert problem.rule == "schema" and "model_source" in problem.message, problem


# -- (8) a killed build ----------------------------------------------------------------------------

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
    root = Path(__file__).resolve().parent
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
