"""Places and rank intervals from paired comparisons (phasebench.stats.ranks), on random and
on the shipped boards, and the KV-cache labels the board shows (phasebench.leaderboard.presses)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phasebench.errors import StatsError
from phasebench.leaderboard.presses import describe_kv_cache
from phasebench.stats.ranks import paired_ranks


def _entry(rng: np.random.Generator, n: int, profile: list[float]) -> tuple[list, np.ndarray]:
    """``n`` base items at the phase accuracies ``profile`` (0/1 outcomes)."""
    matrix = (rng.random((n, len(profile))) < np.asarray(profile)).astype(float)
    return [f"b{i:03d}" for i in range(n)], matrix


def test_far_apart_entries_have_fixed_places_and_close_ones_share_a_place():
    rng = np.random.default_rng(1)
    strong = _entry(rng, 64, [0.95] * 8)
    weak = _entry(rng, 64, [1.0, 1.0, 0.3, 0.3] * 2)  # average 65%, worst phase 30%
    twin_a = _entry(rng, 64, [0.5] * 8)
    twin_b = _entry(rng, 64, [0.5] * 8)
    for statistic in ("worst_phase_crossfit", "acc"):
        out = paired_ranks([strong, weak, twin_a, twin_b], statistic, n_boot=200)
        assert out[0].place == 1 and out[0].interval == (1, 1)
        # two entries from one distribution: the paired test cannot separate them
        assert out[2].place == out[3].place
        assert out[2].interval[0] < out[2].interval[1]
        assert all(1 <= p.interval[0] <= p.place <= p.interval[1] <= 4 for p in out)
    # the weak phase puts the phase-sensitive entry last by worst phase, not by average
    assert paired_ranks([strong, weak, twin_a, twin_b], n_boot=200)[1].interval == (4, 4)
    by_average = paired_ranks([strong, weak, twin_a, twin_b], "acc", n_boot=200)[1]
    assert (by_average.place, by_average.interval) == (2, (2, 2))


def test_paired_ranks_are_deterministic_and_skip_entries_without_items():
    rng = np.random.default_rng(2)
    entries = [_entry(rng, 20, [0.7] * 4), _entry(rng, 20, [0.6] * 4), (["b000"], np.ones((1, 4)))]
    first = paired_ranks(entries, n_boot=100, seed=3)
    assert first == paired_ranks(entries, n_boot=100, seed=3)
    assert first[2] is None
    assert all(p.interval[1] <= 2 for p in first[:2])  # the skipped entry takes no place
    assert paired_ranks([]) == []
    with pytest.raises(StatsError, match="ranked by one of"):
        paired_ranks(entries, "gap")


def test_pairing_separates_entries_that_unpaired_intervals_cannot():
    """Two runs on the same hard and easy items, one a few points lower on every item: their
    own intervals overlap widely (item difficulty), their paired difference is clear."""
    rng = np.random.default_rng(5)
    n = 96
    difficulty = rng.random(n)[:, None]
    noise = rng.random((n, 8))
    a = (noise < 0.3 + 0.6 * difficulty).astype(float)
    b = (noise < 0.22 + 0.6 * difficulty).astype(float)  # the same items, 8 points lower
    units = [f"b{i:03d}" for i in range(n)]
    out = paired_ranks([(units, a), (units, b)], "acc", n_boot=400)
    assert (out[0].place, out[1].place) == (1, 2)
    assert out[1].better == 1 and out[0].worse == 1


def test_a_small_noisy_run_cannot_outrank_a_larger_run_with_a_higher_value():
    """The issue's case: a 32-item run with a lower worst phase than two 168-item runs was
    placed above them because its interval was wide. Places follow the statistic."""
    rng = np.random.default_rng(7)
    big_a = _entry(rng, 168, [0.35, 0.3] * 4)
    big_b = _entry(rng, 168, [0.34, 0.29] * 4)
    small = _entry(rng, 32, [0.3, 0.22] * 4)
    top = _entry(rng, 168, [0.9] * 8)
    entries = [top, big_a, small, big_b]
    out = paired_ranks(entries, n_boot=300)
    values = [_value(e) for e in entries]
    _check_board(values, out)


def _value(entry) -> float:
    from phasebench.stats.crossfit import crossfit_worst

    m = entry[1]
    return crossfit_worst(np.where(np.isnan(m), 0.0, m), ~np.isnan(m), n_boot=0)[0]


def _check_board(values, places) -> None:
    """Every place in its interval; down the list sorted by value, places never decrease;
    equal values share a place; the interval is [1 + better, N - worse]."""
    ranked = [(v, p) for v, p in zip(values, places, strict=True) if p is not None]
    total = len(ranked)
    for v, p in ranked:
        assert p.interval == (1 + p.better, total - p.worse)
        assert p.interval[0] <= p.place <= p.interval[1], (v, p)
    ordered = sorted(ranked, key=lambda vp: -vp[0])
    for (v1, p1), (v2, p2) in zip(ordered, ordered[1:], strict=False):
        assert p1.place <= p2.place
        if v1 == v2:
            assert p1.place == p2.place
    assert sum(p.better for _, p in ranked) == sum(p.worse for _, p in ranked)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    sizes=st.lists(st.sampled_from([8, 16, 24, 40]), min_size=1, max_size=6),
    statistic=st.sampled_from(["worst_phase_crossfit", "acc"]),
    shared=st.booleans(),
)
def test_random_boards_keep_places_inside_intervals_and_in_the_statistics_order(
    seed, sizes, statistic, shared
):
    """Random boards: entries of random sizes and profiles, sharing their first items (or
    prefixes of one split), some equal."""
    rng = np.random.default_rng(seed)
    entries = []
    for i, n in enumerate(sizes):
        profile = rng.choice([0.1, 0.4, 0.6, 0.9], size=4)
        if i and rng.random() < 0.3:
            entries.append(entries[-1])  # a duplicate entry: equal values
            continue
        matrix = (rng.random((n, 4)) < profile).astype(float)
        prefix = "b" if shared else f"e{i}-"
        entries.append(([f"{prefix}{j:03d}" for j in range(n)], matrix))
    places = paired_ranks(entries, statistic, n_boot=60, seed=seed)
    values = [_value(e) if statistic != "acc" else float(np.mean(e[1])) for e in entries]
    _check_board(values, places)
    assert places == paired_ranks(entries, statistic, n_boot=60, seed=seed)


@pytest.mark.parametrize(
    ("declared", "label", "parameters"),
    [
        (
            "kvpress 0.5.5 ChunkKVPress(press=KnormPress(compression_ratio=0.25), chunk_length=4)"
            " on the context; question and answer uncompressed",
            "ChunkKV(Knorm) · ratio 0.25 · chunk 4",
            {"compression_ratio": 0.25, "chunk_length": 4},
        ),
        (
            "kvpress 0.5.5 BlockPress(press=KnormPress(compression_ratio=0.25), block_size=8)",
            "Block(Knorm) · ratio 0.25 · block 8",
            {"compression_ratio": 0.25, "block_size": 8},
        ),
        (
            "none (full attention; phasebench-kvpress path without a press)",
            "none (full attention; phasebench-kvpress path without a press)",
            {},
        ),
        ("CSA window 8 stride 4; gate per slot", "CSA window 8 stride 4", {}),
        ("Broken(ratio=0.5", "Broken(ratio=0.5", {}),
    ],
)
def test_the_kv_cache_label_keeps_every_parameter(declared, label, parameters):
    described = describe_kv_cache(declared)
    assert described["label"] == label
    assert described["parameters"] == parameters


@pytest.mark.slow  # validates and scores every shipped submission (minutes, shared cache)
def test_every_shipped_board_reads_one_way(shipped_outcome):
    """On every board of the shipped leaderboard: each ranked row's place lies in its rank
    interval, places follow the ranking statistic (and the average's places the average), a
    gap is starred exactly when its interval's lower end is above 0 (and p <= alpha), and every
    paired difference of the compare pages is significant exactly when its interval excludes
    0 (and its p <= alpha)."""
    from phasebench import metrics
    from phasebench.leaderboard.score import score

    board = score(shipped_outcome())
    rows = board["rows"]
    checked = 0
    for name in sorted({r["board"] for r in rows}):
        members = [r for r in rows if r["board"] == name]
        for key, column in (("rank_worst", metrics.RANKING.column), ("rank_average", "acc")):
            ranked = [r for r in members if r[key] is not None]
            for r in ranked:
                lo, hi = r[f"{key}_interval"]
                assert 1 <= lo <= r[key] <= hi <= len(ranked), (name, r["variant"], key)
            ordered = sorted(ranked, key=lambda r: -r[column])
            for a, b in zip(ordered, ordered[1:], strict=False):
                assert a[key] <= b[key], (name, key, a["variant"], b["variant"])
            checked += len(ranked)
        for r in members:
            lower = r["gap_ci"][0]
            assert r["significant"] == (lower > 0) == (r["p_value"] <= metrics.ALPHA), (
                name, r["variant"], r["gap_ci"], r["p_value"])  # fmt: skip
    assert checked > 0
    differences = 0
    for pairs in board["comparisons"].values():
        for result in (pairs or {}).values():
            for key in ("gap", metrics.RANKING.key):
                part = result[key]
                lo, hi = part["difference_ci"]
                assert part["significant"] == (lo > 0 or hi < 0)
                assert part["significant"] == (part["p_value"] <= metrics.ALPHA)
                differences += 1
    assert differences > 0
