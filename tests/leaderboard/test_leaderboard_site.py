"""The static site's pages and exports as files: one page per board, identity (model + variant)
in every label and export, build date and version everywhere, p-values at the permutation floor,
flat rows, links and the citation. The same site in a real browser: test_leaderboard_browser.py."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from phasebench import __version__
from phasebench.leaderboard.presses import describe_kv_cache
from phasebench.leaderboard.render import board_page, build_site, identity
from phasebench.leaderboard.score import load_reported, score
from phasebench.leaderboard.validate import validate_all
from support.submissions import REVISION, TASKS, make_submission

ROOT = Path(__file__).resolve().parents[2]
BUILT = "2026-01-02"


def _variant(root: Path, rows, name: str | None, accuracy) -> None:
    meta = {"kv_cache": f"kvpress {name} " + "with a long description " * 3}
    if name:
        meta["variant"] = name
    made = make_submission(root, rows, model="acme/m", meta=meta, accuracy=accuracy, seed=1)
    if name:
        made.rename(made.parent / f"{REVISION}+{name}")


@pytest.fixture(scope="module")
def board(tmp_path_factory, submission_rows, regen_cache) -> dict:
    subs = tmp_path_factory.mktemp("subs")
    _variant(subs, submission_rows, "kvpress-snapkv-r0.25", [0.95, 0.95, 0.2, 0.2] * 2)
    _variant(subs, submission_rows, "kvpress-knorm-r0.25", [0.6] * 8)
    make_submission(subs, submission_rows, model="acme/flat", accuracy=[1.0] * 8)
    scored = score(validate_all(subs, tasks=TASKS, cache=regen_cache), load_reported())
    # a second board of the same entries, so that a page holding every row would show
    second = copy.deepcopy(scored["rows"])
    for row in second:
        row["board"], row["length"] = "phasebench_kv@512", 512
    scored["rows"] = scored["rows"] + second
    return scored


@pytest.fixture(scope="module")
def site(board, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    build_site(board, out, built=BUILT)
    return out


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_one_page_per_board_and_an_index_of_leaders(board, site):
    names = sorted({r["board"] for r in board["rows"]})
    assert len(names) == 2
    index = (site / "index.html").read_text()
    for name in names:
        page = (site / board_page(name)).read_text()
        members = [r for r in board["rows"] if r["board"] == name]
        assert page.count('<tr data-order="') == len(members)  # only this board's rows
        slug = Path(board_page(name)).stem
        assert f'id="{slug}"' in index and f'href="{board_page(name)}"' in index
        assert "ranked by worst phase (cross-fitted)" in page
    assert '<tr data-order="' not in index  # the index lists boards, not rows
    first = next(r for r in board["rows"] if r["rank_worst"] == 1)
    assert identity(first) in index
    # 16 base items: ranked first, but preliminary, so never called the leader
    assert first["preliminary"] and "Leader:" not in index
    assert "No leader: every entry ranked first is preliminary" in index


def test_identity_names_the_variant_everywhere(board, site):
    labels = {identity(r) for r in board["rows"]}
    assert {"acme/m · kvpress-snapkv-r0.25", "acme/m · kvpress-knorm-r0.25", "acme/flat"} == labels
    page = (site / board_page(board["rows"][0]["board"])).read_text()
    chart = page[page.index('<svg class="chart scatter"') :]
    for label in labels:
        assert re.search(rf"<title>\d+\. {re.escape(label)}: average", chart)  # model and variant
    for detail in board["models"].values():
        html = (site / [p for p, d in board["models"].items() if d is detail][0]).read_text()
        title = re.search(r"<title>(.*?)</title>", html).group(1)
        h1 = re.search(r"<h1>(.*?)</h1>", html).group(1)
        assert title.startswith(identity(detail)) and h1 == identity(detail)
        assert (
            'class="chart profile"' in html
            and f'<title id="profile-1-title">{identity(detail)}' in html
        )
    # the table shows the label read from the declared KV cache, whole (never cut, no
    # tooltip a phone cannot reach); the model page has the declared text
    long = next(r["kv_cache"] for r in board["rows"] if r.get("variant"))
    table = page[page.index('<table id="leaderboard"') :]
    assert f'title="{long}"' not in table and "…" not in table
    assert f">{describe_kv_cache(long)['label']}<" in table
    # the filter names the whole of what differs
    assert f">{long}</option>" in page


def test_exports_carry_the_variant(site):
    flat = pd.read_parquet(site / "leaderboard.parquet")
    assert "variant" in flat.columns
    assert set(flat["variant"].dropna()) == {"kvpress-snapkv-r0.25", "kvpress-knorm-r0.25"}
    csv = pd.read_csv(site / "leaderboard.csv")
    assert list(csv.columns) == list(flat.columns)
    per_phase = pd.read_parquet(site / "per_phase.parquet")
    key = ["model", "revision", "variant", "task", "length", "phase"]
    assert not per_phase.duplicated(subset=key).any()
    data = json.loads((site / "leaderboard.json").read_text())
    assert {r.get("variant") for r in data["rows"]} == {None, "kvpress-snapkv-r0.25",
                                                       "kvpress-knorm-r0.25"}  # fmt: skip


def test_build_date_version_and_links_on_every_page(site, board):
    data = json.loads((site / "leaderboard.json").read_text())
    assert data["built"] == BUILT and data["phasebench_version"] == __version__
    for path in _pages(site):
        html = path.read_text()
        assert f'<time datetime="{BUILT}">{BUILT}</time> with phasebench {__version__}' in html, (
            path
        )
        assert 'href="https://arxiv.org/abs/2609.36322"' in html, path
        assert 'class="skip" href="#main"' in html and 'id="main"' in html, path
        assert re.search(r'href="https://github\.com/[^"]+">source repository', html), path
    for page, detail in board["models"].items():
        assert f'href="https://huggingface.co/{detail["model"]}"' in (site / page).read_text()


def test_citation_block_is_the_readme_entry(site):
    readme = (ROOT / "README.md").read_text()
    start = readme.index("@misc{periodicweakspots2026")
    entry = readme[start : readme.index("\n}", start) + 2]
    for name in ("index.html", "about.html"):
        html = (site / name).read_text()
        assert entry in html.replace("&#34;", '"'), name


def test_p_values_at_the_floor_and_flat_rows(site, board):
    n_perm = board["method"]["n_perm"]
    floor = next(r for r in board["rows"] if r["p_value"] <= 1 / (1 + n_perm) + 1e-12)
    text = "".join(p.read_text() for p in _pages(site))
    assert "p &lt; 0.001" in text and f"{floor['p_value']:.3g}" not in text
    flat = next(r for r in board["rows"] if r["model"] == "acme/flat")
    assert flat["best_phase"] == flat["lowest_phase"] and flat["lowest_phase_index"] is None
    page = (site / board_page(flat["board"])).read_text()
    row = page[page.index(f'href="../{flat["page"]}"') :]
    row = row[: row.index("</tr>")]
    assert "weak phase: none (flat)" in row and "weak phase 0" not in row
    model = (site / flat["page"]).read_text()
    assert "weak phase: none (flat)" in model and "weak phase 0" not in model


def test_published_figures_have_their_own_page_and_columns(site):
    html = (site / "reported.html").read_text()
    head = html[html.index("<thead>") : html.index("</thead>")]
    for column in ("model", "task", "KV cache / compression", "average", "lowest phase",
                   "best phase", "gap", "period", "detail", "source"):  # fmt: skip
        assert f">{column}" in head, column
    assert "DeepSeek-V4-Flash-Base" in html
    for path in (site / "boards").glob("*.html"):
        assert "DeepSeek-V4-Flash-Base" not in path.read_text()


def test_worst_above_average_is_explained(site, board):
    index = (site / "index.html").read_text()
    assert 'id="g-above"' in index and "above the average" in index
    above = [r for r in board["rows"] if r["worst_phase_crossfit"] > r["acc"]]
    assert above, [(r["worst_phase_crossfit"], r["acc"]) for r in board["rows"]]
    page = (site / board_page(above[0]["board"])).read_text()
    assert 'class="above-mark" title="above the average' in page  # the mark and its tooltip


def test_findings_periods_rank_intervals_and_comparisons_reach_the_pages(board, site):
    """Score's findings, consistent periods, rank intervals and paired differences are in the
    JSON, the CSV and on the pages that show them; the pages compute none of them."""
    rows = [r for r in board["rows"] if r["board"] == "phasebench_kv@128/m8"]
    sensitive = next(r for r in rows if r["variant"] == "kvpress-snapkv-r0.25")
    assert sensitive["significant"] and sensitive["consistent_periods"]
    assert sensitive["consistent_periods"][0] == sensitive["dominant_period"]
    csv = pd.read_csv(site / "leaderboard.csv", dtype=str, keep_default_na=False)
    assert "consistent_periods" in csv.columns
    assert ";".join(map(str, sensitive["consistent_periods"])) in set(csv["consistent_periods"])
    # the finding names the entry with the largest significant gap, first on the index
    found = next(f for f in board["findings"] if f["board"] == sensitive["board"])
    assert found["largest"]["anchor"] == sensitive["anchor"] and found["n_significant"] == 1
    index = (site / "index.html").read_text()
    lead = index[index.index('class="lead"') :]
    assert lead.index(f"#{sensitive['anchor']}") < lead.index("</p>")
    # rank intervals: every ranked row has one, holding its rank's neighbourhood
    for row in rows:
        lo, hi = row["rank_worst_interval"]
        assert 1 <= lo <= hi <= len(rows)
    page = (site / board_page(sensitive["board"])).read_text()
    assert f'id="{sensitive["anchor"]}"' in page and "consistent with —" not in page
    # one split, three entries: three pairs in both orders, each with compare_runs' keys, on
    # the compare page; A - B in one order is B - A in the other, sign for sign
    pairs = board["comparisons"][sensitive["board"]]
    assert len(pairs) == 6
    for key, result in pairs.items():
        a, b = key.split("|")
        assert {a, b} <= {r["anchor"] for r in rows}
        assert set(result) >= {"n_base", "gap", "worst_phase_crossfit"}
        swapped = pairs[f"{b}|{a}"]
        for stat in ("gap", "worst_phase_crossfit"):
            assert result[stat]["difference"] == pytest.approx(-swapped[stat]["difference"])
            assert result[stat]["after"] == swapped[stat]["before"]
    compare = (site / "compare" / f"{Path(board_page(sensitive['board'])).stem}.html").read_text()
    assert all(key in compare for key in pairs)


def test_bidi_controls_in_a_response_are_shown_escaped(board, tmp_path):
    """A response holding U+202E (and the other bidi overrides and isolates): before, written
    raw on the samples page (the text after it reads backwards); now each is its escape."""
    hostile = copy.deepcopy(board)
    detail = next(d for d in hostile["models"].values() if any(b["samples"] for b in d["boards"]))
    shown = next(b for b in detail["boards"] if b["samples"])
    controls = "\u202e\u202d\u2066\u2067\u2068\u2069\u200f\u061c"
    first = shown["samples"][0]
    first["response"] = f"42{controls}gnp.exe"
    out = tmp_path / "site"
    build_site(hostile, out, built=BUILT)
    text = next(out.glob("models/*-samples.html")).read_text(encoding="utf-8")
    assert not set(controls) & set(text)
    assert "42" + "".join(ascii(c)[1:-1] for c in controls) + "gnp.exe" in text
