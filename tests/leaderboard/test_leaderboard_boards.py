"""What a board compares and what its words mean: runs at another modulus are another board,
test fixtures are shown but not ranked, a design too small to see a 20-point gap is
preliminary and never the leader, and "worst phase", "lowest phase", "gap" and a flat profile
read the same in ``phasebench report``, on the site, in the exports and in the glossary."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from phasebench import formatting, metrics
from phasebench.cli import main
from phasebench.leaderboard.charts import Frame, place_labels
from phasebench.leaderboard.provenance import command
from phasebench.leaderboard.render import badge_path, board_page, build_site, filter_options
from phasebench.leaderboard.score import score
from phasebench.leaderboard.validate import validate_all
from phasebench.stats import detectable_gap
from support.submissions import TASKS, make_submission, split_rows

BUILT = "2026-01-02"


@pytest.fixture(scope="module")
def built(tmp_path_factory, submission_rows, regen_cache):
    tmp = tmp_path_factory.mktemp("boards")
    subs = tmp / "subs"
    rows4 = split_rows(tmp / "split4", modulus=4)
    make_submission(subs, submission_rows, model="acme/flat", accuracy=[1.0] * 8)
    make_submission(subs, submission_rows, model="acme/chunked", accuracy=[0.95, 0.2] * 4)
    make_submission(subs, rows4, model="acme/mod4", accuracy=[0.9, 0.5] * 2)
    make_submission(subs, submission_rows, model="acme/random", accuracy=[0.0] * 8,
                    meta={"fixture": True})  # fmt: skip
    outcome = validate_all(subs, tasks=TASKS, cache=regen_cache)
    assert not outcome.refused, outcome.report_lines()
    board = score(outcome)
    site = tmp / "site"
    build_site(board, site, built=BUILT, submissions=subs)
    return board, site, subs, tmp


def _row(board, model):
    return next(r for r in board["rows"] if r["model"] == model)


def test_a_board_is_one_task_length_and_modulus(built):
    board, site, _, _ = built
    mod4, mod8 = _row(board, "acme/mod4"), _row(board, "acme/flat")
    assert mod4["length"] == mod8["length"] and mod4["task"] == mod8["task"]
    assert mod4["board"] != mod8["board"] and mod4["modulus"] == 4 and mod8["modulus"] == 8
    for name in {r["board"] for r in board["rows"]}:
        members = [r for r in board["rows"] if r["board"] == name]
        assert len({(r["modulus"], r["axis"], r["n_phases"]) for r in members}) == 1
    page4 = (site / board_page(mod4["board"])).read_text()
    page8 = (site / board_page(mod8["board"])).read_text()
    assert "acme/mod4" in page4 and "acme/mod4" not in page8
    assert "acme/flat" in page8 and "acme/flat" not in page4
    assert "<b>modulus 4</b>, <b>4 phases</b>" in page4
    assert "<b>modulus 8</b>, <b>8 phases</b>" in page8
    index = (site / "index.html").read_text()
    assert "modulus 4" in index and "modulus 8" in index


def test_fixtures_are_not_ranked_and_small_designs_are_preliminary(built):
    board, site, _, _ = built
    fixture = _row(board, "acme/random")
    assert fixture["fixture"] and fixture["rank_worst"] is None and fixture["rank_average"] is None
    page = (site / board_page(fixture["board"])).read_text()
    row = page[page.index('href="../' + fixture["page"]) :]
    assert "test fixture, not ranked" in row[: row.index("</tr>")]
    # 16 base items x 8 phases cannot see a 20-point gap at 80% power
    need = detectable_gap(16, 8)
    assert need > metrics.PRELIMINARY_GAP
    flat = _row(board, "acme/flat")
    assert flat["preliminary"] is True and flat["detectable_gap"] == pytest.approx(need)
    assert flat["rank_worst"] == 1
    index = (site / "index.html").read_text()
    card = index[index.index(f'id="{Path(board_page(flat["board"])).stem}"') :]
    card = card[: card.index("</li>\n")]
    assert "No leader: every entry ranked first is preliminary" in card
    assert "Leader:" not in card
    # a design that can see the gap is not preliminary
    assert detectable_gap(512, 8) <= metrics.PRELIMINARY_GAP


def _cells(page: str, model_page: str) -> dict[str, str]:
    """The text of each statistic's cell in a board row, by statistic key."""
    row = page[page.index('href="../' + model_page) :]
    row = row[: row.index("</tr>")]
    return {
        key: re.sub(r"<[^>]+>", " ", body)
        for key, body in re.findall(
            r'<td data-v="[^"]*" data-label="[^"]*" class="s-([a-z_]+)">'
            r"(.*?)</td>",
            row,
        )  # fmt: skip
    }


def test_words_and_numbers_agree_in_report_site_exports_and_glossary(built):
    board, site, subs, tmp = built
    flat, chunked = _row(board, "acme/flat"), _row(board, "acme/chunked")
    # exports: the plain minimum is "lowest_phase"; the gap is best minus that lowest phase
    csv = pd.read_csv(site / "leaderboard.csv")
    assert "worst_phase" not in csv.columns and "lowest_phase" in csv.columns
    line = csv[csv["model"] == "acme/chunked"].iloc[0]
    assert line["gap"] == pytest.approx(line["best_phase"] - line["lowest_phase"])
    assert line["worst_phase_crossfit"] == pytest.approx(chunked["worst_phase_crossfit"])
    flat_line = csv[csv["model"] == "acme/flat"].iloc[0]
    assert pd.isna(flat_line["lowest_phase_index"])  # a flat profile names no weak phase
    # the site: each column headed by the statistic's label and qualifier, the same numbers
    page = (site / board_page(chunked["board"])).read_text()
    for key, label, qualifier in (("worst_phase_crossfit", "worst phase", "cross-fitted"),
                                  ("lowest_phase", "lowest phase", "plain minimum"),
                                  ("gap", "gap", "best − lowest phase")):  # fmt: skip
        assert re.search(rf'data-key="{key}"[^>]*><button[^>]*>{label} <small>{qualifier}', page)
    cells = _cells(page, chunked["page"])
    assert f"{100 * line['worst_phase_crossfit']:.1f}%" in cells["worst_phase_crossfit"]
    assert f"{100 * line['lowest_phase']:.1f}%" in cells["lowest_phase"]
    assert f"{100 * line['gap']:.1f} pp" in cells["gap"]
    assert metrics.FLAT in _cells(page, flat["page"])["lowest_phase"]
    # the glossary: the same words, and what the exports call them
    index = (site / "index.html").read_text()
    gap = index[index.index('id="g-gap"') :]
    assert "best phase minus lowest phase" in gap[: gap.index("</dd>")].lower()
    lowest = index[index.index('id="g-lowest_phase"') :]
    # one name: the glossary's entry, the row, the CSV column and the report key are lowest_phase
    assert lowest.startswith('id="g-lowest_phase">lowest phase <small>(plain minimum)')
    assert metrics.FLAT in index
    # phasebench report on the same logs: the same labels, numbers and flat reading
    for model, row in (("acme__chunked", chunked), ("acme__flat", flat)):
        (folder,) = (subs / model).glob("*")
        out = tmp / f"{model}.json"
        assert main(["report", str(folder), "--json", str(out)]) == 0
        (body,) = json.loads(out.read_text())["runs"].values()
        (lengths,) = body["tasks"].values()
        (entry,) = lengths.values()
        assert entry["gap"] == pytest.approx(row["gap"])
        assert entry["worst_phase_crossfit"] == pytest.approx(row["worst_phase_crossfit"])
        assert entry["lowest_phase"] == pytest.approx(row["lowest_phase"])
    from phasebench.report import build_report, load_runs, render_tables

    (folder,) = (subs / "acme__flat").glob("*")
    runs, _ = load_runs([folder])
    text = render_tables(build_report(runs))
    assert f"weak phase: {metrics.FLAT}" in text and "weak phase 0" not in text
    assert "worst phase" in text and "lowest phase" in text


def test_each_entry_links_its_logs_and_has_badges(built):
    board, site, subs, _ = built
    chunked = _row(board, "acme/chunked")
    html = (site / chunked["page"]).read_text()
    links = re.findall(r'<a href="\.\./(details/[^"]+)" download>', html)
    assert any("/samples_" in link for link in links) and any("/results_" in link for link in links)
    (folder,) = (subs / "acme__chunked").glob("*")
    for link in links:
        assert (site / link).read_bytes() == (folder / Path(link).name).read_bytes()
    slug = Path(board_page(chunked["board"])).stem
    badge = (site / badge_path(slug, chunked["page"])).read_text()
    worst = formatting.format_value(
        metrics.get("worst_phase_crossfit"), chunked["worst_phase_crossfit"]
    )
    assert badge.startswith("<svg") and f"worst phase {worst}" in badge and "preliminary" in badge
    assert "<script" not in badge and "href" not in badge
    assert "no leader: preliminary" in (site / badge_path(slug)).read_text()
    assert badge_path(slug, chunked["page"]) in html  # the page shows how to embed it


def test_the_command_passes_a_revision_only_for_a_hub_load():
    meta = {"model": "acme/m", "revision": "a" * 40, "backend": "hf", "chat_template": False,
            "tokenizer": {"name": "acme/m"}}  # fmt: skip
    results = {"config": {"model_args": {"pretrained": "acme/m", "dtype": "float32"}}}
    hub = command(SimpleNamespace(meta=meta), results, ["phasebench_kv"])
    assert f"revision={'a' * 40}" in hub and not hub.startswith("#")
    local = {"config": {"model_args": {"pretrained": "/data/m", "dtype": "float32"}}}
    folder = command(SimpleNamespace(meta=meta), local, ["phasebench_kv"])
    assert "revision=" not in folder and folder.startswith("# weights loaded from a local")
    assert "pretrained=acme/m," in folder and "/data/m" not in folder
    gguf = {"config": {"model_args": {"pretrained": "acme/m", "gguf_file": "m.Q4_1.gguf"}}}
    line = command(SimpleNamespace(meta=meta), gguf, ["phasebench_kv"])
    assert "revision=" not in line and "gguf_file=m.Q4_1.gguf" in line


@pytest.mark.parametrize("logged_as", ["dict", "string"])
def test_the_command_runs_only_the_declared_model(logged_as):
    """Hostile logged model arguments (a key lm-eval would split into a second ``pretrained``,
    ``trust_remote_code``, a shell metacharacter): the shown command, split as a shell does and
    parsed by lm-eval's own command line parser and by ``simple_parse_args_string``, names the
    submission.yaml model and revision and passes on only allow-listed arguments."""
    from phasebench.lmeval_compat import parse_model_args, parse_run_args

    revision = "b" * 40
    meta = {"model": "phasebench/tiny-random-llama", "revision": revision, "backend": "hf",
            "chat_template": False, "tokenizer": {"name": "phasebench-ref"}}  # fmt: skip
    hostile = {"pretrained": "phasebench/tiny-random-llama", "x,pretrained": "evil/other-model",
               "trust_remote_code": "True", "peft": "evil/adapter", "dtype": "float32",
               "max_length": 4096, "a=b": "c", "y": "$(touch /tmp/pwned)",
               "chunk_length": "4,pretrained=evil/m", "press": "chunk'kv"}  # fmt: skip
    logged = hostile if logged_as == "dict" else ",".join(f"{k}={v}" for k, v in hostile.items())
    results = {
        "config": {"model_args": logged},
        "configs": {"phasebench_kv": {"metadata": {"prefix_cache": "repeat", "seed": 0}}},
    }
    line = command(SimpleNamespace(meta=meta), results, ["phasebench_kv"])
    argv = shlex.split(line, comments=True)  # a string log names evil/...: a note line first
    assert argv[:2] == ["phasebench", "eval"]
    # a string log is read as lm-eval reads it: its last pretrained= (evil/...) is what was
    # loaded, not the Hub id, so no revision; its chunk_length=4 is a setting of its own
    pinned = {"revision": revision} if logged_as == "dict" else {"chunk_length": 4}
    parsed = parse_run_args(argv[2:])
    text = argv[argv.index("--model_args") + 1]
    for args in (parsed.model_args, parse_model_args(text)):
        assert args == {"pretrained": "phasebench/tiny-random-llama", **pinned,
                        "dtype": "float32", "max_length": 4096}  # fmt: skip
    assert parsed.model == "hf" and "trust_remote_code" not in line
    assert json.loads(parsed.metadata if isinstance(parsed.metadata, str) else
                      json.dumps(parsed.metadata))["prefix_cache"] == "repeat"  # fmt: skip


def test_labels_never_overlap_or_leave_the_plot():
    frame = Frame(360, 300, left=46, right=10, top=10, bottom=40)
    # ten points on one spot, and points in every corner of the plot
    points = [(frame.x(1.0), frame.y(1.0), str(i)) for i in range(1, 11)]
    points += [(frame.x(x), frame.y(y), str(20 + i)) for i, (x, y) in
               enumerate([(0, 0), (0, 1), (1, 0), (0.5, 0.5)])]  # fmt: skip
    spots = place_labels(points, frame)
    from phasebench.leaderboard.charts import _label_box, _overlaps

    boxes = [
        _label_box(spot[0], spot[1], point[2], spot[2])
        for point, spot in zip(points, spots, strict=True)
        if spot is not None
    ]
    assert all(spot is not None for spot in spots[10:])  # every lone point is labelled
    assert sum(spot is not None for spot in spots[:10]) >= 3  # a pile in a corner: some
    for i, a in enumerate(boxes):
        assert frame.left < a[0] and a[2] <= frame.width - frame.right
        assert frame.top <= a[1] and a[3] <= frame.height - frame.bottom
        assert not any(_overlaps(a, b) for b in boxes[i + 1 :])


def test_the_filter_keeps_what_differs():
    press = "kvpress 0.5.5 ChunkPress(press=KnormPress(compression_ratio=0.1), chunk_length="
    values = [press + "8)", press + "4)"]
    texts = [text for _, text in filter_options(values)]
    assert texts[0].endswith("chunk_length=4)") and texts[1].endswith("chunk_length=8)")
    assert not any(t.startswith("kvpress 0.5.5") for t in texts)
