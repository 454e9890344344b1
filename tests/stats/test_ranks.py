"""Rank intervals (phasebench.stats.ranks) and the KV-cache labels the board shows
(phasebench.leaderboard.presses)."""

from __future__ import annotations

import numpy as np
import pytest

from phasebench.leaderboard.presses import describe_kv_cache
from phasebench.stats.ranks import rank_intervals


def _entry(rng: np.random.Generator, n: int, profile: list[float]) -> tuple[list, np.ndarray]:
    """``n`` base items at the phase accuracies ``profile`` (0/1 outcomes)."""
    matrix = (rng.random((n, len(profile))) < np.asarray(profile)).astype(float)
    return [f"b{i:03d}" for i in range(n)], matrix


def test_far_apart_entries_have_fixed_places_and_close_ones_share_a_range():
    rng = np.random.default_rng(1)
    strong = _entry(rng, 64, [0.95] * 8)
    weak = _entry(rng, 64, [1.0, 1.0, 0.3, 0.3] * 2)  # average 65%, worst phase 30%
    twin_a = _entry(rng, 64, [0.5] * 8)
    twin_b = _entry(rng, 64, [0.5] * 8)
    for statistic in ("worst_phase_crossfit", "acc"):
        out = rank_intervals([strong, weak, twin_a, twin_b], statistic, n_boot=200)
        assert out[0] == (1, 1)
        # the two entries from one distribution swap places across resamples
        assert out[2][0] < out[2][1] and out[3][0] < out[3][1]
        assert all(1 <= lo <= hi <= 4 for lo, hi in out)
    # the weak phase puts the phase-sensitive entry last by worst phase, not by average
    assert rank_intervals([strong, weak, twin_a, twin_b], n_boot=200)[1] == (4, 4)
    assert rank_intervals([strong, weak, twin_a, twin_b], "acc", n_boot=200)[1] == (2, 2)


def test_rank_intervals_are_deterministic_and_skip_entries_without_items():
    rng = np.random.default_rng(2)
    entries = [_entry(rng, 20, [0.7] * 4), _entry(rng, 20, [0.6] * 4), (["b000"], np.ones((1, 4)))]
    first = rank_intervals(entries, n_boot=100, seed=3)
    assert first == rank_intervals(entries, n_boot=100, seed=3)
    assert first[2] is None
    assert rank_intervals([]) == []


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
