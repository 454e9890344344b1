"""Which rows of a board are ranked (phasebench.leaderboard.standing): one per configuration at
its strongest design, declared references only where their model has other entries, at-floor
rows by the family's chance level; hand-made rows, each rule on its awkward cases."""

from __future__ import annotations

from phasebench.leaderboard.standing import FLOOR_MARGIN, assign, at_floor, heads, order_key


def _row(variant: str, n_base: int, **fields) -> dict:
    row = {"board": "phasebench_niah@512/m8", "task": "phasebench_niah", "model": "org/m",
           "revision": "a" * 40, "backend": "phasebench-kvpress", "precision": "q4_1",
           "serving": None, "chat_template": False, "kv_cache": "ChunkPress(chunk_length=4)",
           "variant": variant, "n_base": n_base, "page": f"models/{variant}.html",
           "anchor": f"e-{variant}", "acc": 0.5, "acc_ci": [0.4, 0.6], "significant": True,
           "date": "2026-11-30", "fixture": False, "role": None}  # fmt: skip
    row.update(fields)
    return row


def test_one_ranked_row_per_configuration_at_its_strongest_design():
    rows = [_row("c4-n32", 32, significant=False), _row("c4-n168", 168), _row("c4-n128", 128),
            _row("c8", 32, kv_cache="ChunkPress(chunk_length=8)")]  # fmt: skip
    assign(rows, {})
    by = {r["variant"]: r for r in rows}
    assert [r["variant"] for r in rows if r["ranked"]] == ["c4-n168", "c8"]
    assert by["c4-n168"]["earlier_designs"] == ["e-c4-n128", "e-c4-n32"]
    assert by["c4-n32"]["standing"] == "earlier design"
    assert by["c4-n32"]["design_of"] == "e-c4-n168"
    # one design significant, another not: the ranked row says so
    assert by["c4-n168"]["designs_disagree"] and not by["c8"]["designs_disagree"]
    # a revision, precision or backend of its own is a configuration of its own
    other = [_row("x", 32), _row("y", 16, precision="bfloat16"), _row("z", 8, revision="b" * 40)]
    assign(other, {})
    assert all(r["ranked"] for r in other)
    # equal designs: the later run, then the page name, deterministically
    tied = [_row("p", 64, date="2026-01-01"), _row("q", 64, date="2026-02-01")]
    assign(tied, {})
    assert [r["variant"] for r in tied if r["ranked"]] == ["q"]
    # each configuration's earlier designs come right under its row, strongest first
    found = heads(rows)
    rows.sort(key=lambda r: order_key(r, found, "acc"))
    assert [r["variant"] for r in rows] == ["c4-n168", "c4-n128", "c4-n32", "c8"]


def test_a_reference_is_never_ranked_where_its_model_has_other_entries():
    rows = [_row("none", 168, role="reference", kv_cache="none", acc=0.99, significant=False),
            _row("c4", 168)]  # fmt: skip
    assign(rows, {})
    assert [r["standing"] for r in rows] == ["reference", "ranked"]
    # alone on a board (nothing to be the reference for) it is an entry like any other
    alone = [_row("none", 168, role="reference", kv_cache="none", significant=False)]
    assign(alone, {})
    assert alone[0]["standing"] == "ranked"
    # a fixture stays a fixture
    fixture = [_row("t", 16, fixture=True), _row("c4", 16)]
    assign(fixture, {})
    assert fixture[0]["standing"] == "test fixture" and not fixture[0]["ranked"]


def test_at_floor_is_an_average_that_cannot_be_told_from_chance_without_a_significant_gap():
    # niah: chance 0; Chunk c=2 averaged 2.3% [0.0, 6.2]
    assert at_floor({"acc": 0.023, "acc_ci": [0.0, 0.062], "significant": False}, 0.0)
    assert at_floor({"acc": 0.1, "acc_ci": [FLOOR_MARGIN, 0.2], "significant": False}, 0.0)
    assert not at_floor({"acc": 0.1, "acc_ci": [0.051, 0.2], "significant": False}, 0.0)
    # a significant gap is measured sensitivity, whatever the average
    assert not at_floor({"acc": 0.02, "acc_ci": [0.0, 0.05], "significant": True}, 0.0)
    # code: a two-way choice, chance 0.5; flat at 50% [25, 75] is at chance
    assert at_floor({"acc": 0.5, "acc_ci": [0.25, 0.75], "significant": False}, 0.5)
    assert not at_floor({"acc": 0.8, "acc_ci": [0.7, 0.9], "significant": False}, 0.5)
    rows = [_row("c2", 32, task="phasebench_code", acc=0.5, acc_ci=[0.3, 0.7], significant=False)]
    assign(rows, {"phasebench_code": 0.5})
    assert rows[0]["standing"] == "at floor" and not rows[0]["ranked"]
