"""The statistics of one submission's boards, from its validated samples: computed by the
validating process beside its answer (:mod:`phasebench.leaderboard.validate`) and, where that
was not done, by the scoring (:mod:`phasebench.leaderboard.score`). Both import it from here,
so neither imports the other's callers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from phasebench import metrics
from phasebench.samples import WARM_KEY, ScoredRecord

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["board_summaries", "board_summary"]


def board_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """Every number of one submission's samples for one (task, length): the scored records
    through :func:`phasebench.stats.summarize_samples`, the function the lm-eval aggregates
    and ``phasebench report`` use, with the same settings, so all three agree."""
    records = []
    for r in frame.itertuples(index=False):
        lp = getattr(r, "length_phase", None)  # NaN or None: the length axis did not run
        records.append(
            ScoredRecord(int(r.length), int(r.modulus), str(r.unit), int(r.phase), float(r.acc),
                         None if r.margin is None or r.margin != r.margin else float(r.margin),
                         int(r.pad), None if lp is None or lp != lp else int(lp))
        )  # fmt: skip
    from phasebench.stats import summarize_samples

    out = summarize_samples(records, n_boot=metrics.N_BOOT, n_perm=metrics.N_PERM,
                            seed=metrics.SEED)  # fmt: skip
    if "margin_sweeps" in out:
        out["margin_sweeps"]["phase_lock_stride"] = metrics.LOCK_STRIDE
    if WARM_KEY in frame and frame[WARM_KEY].notna().any():
        out["prefix_cache"] = _warm_vs_cold(frame, records)
    return out


def _warm_vs_cold(frame: pd.DataFrame, records: list[ScoredRecord]) -> dict[str, Any]:
    """A repeat run's warm reads against its cold ones (:func:`phasebench.stats.paired_agreement`,
    the comparison ``phasebench report`` prints)."""
    from phasebench.stats import ReadPair, paired_agreement

    pairs = [
        ReadPair(r.phase, r.length_phase, r.acc, float(w))
        for r, w in zip(records, frame[WARM_KEY], strict=True)
        if w == w and w is not None
    ]
    found = paired_agreement(pairs, records[0].modulus)
    return {"arm": "repeat", "first": "cold", "second": "warm", **found}


def board_summaries(samples: pd.DataFrame) -> dict[str, Any]:
    """:func:`board_summary` of each board of a submission's samples (``Submission.samples``),
    keyed ``task@length``: what a validating process computes beside its answer, so that boards
    are scored in parallel and a rebuild reuses them
    (:class:`~phasebench.leaderboard.validate.Submission` ``summaries``)."""
    return {
        f"{task}@{int(length)}": board_summary(frame)
        for (task, length), frame in samples.groupby(["task", "length"], sort=True)
    }
