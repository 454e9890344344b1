"""Every statistic phasebench reports, declared once: the table every reader loops over.

A :class:`Statistic` says where its number lives in a summary (the dict
:func:`phasebench.stats.summarize_samples` returns, which is also an entry of the report JSON and
the ``summary`` of a leaderboard board), the interval that goes with it, the lm-eval metric it
becomes (and in which metric set, with which direction for lm-eval's table arrows), how tables
and the site label it and in which unit, and whether the leaderboard exports it. The lm-eval
task (:mod:`phasebench.lmeval.tasks`), ``phasebench report``, the leaderboard's rows, its CSV and
parquet exports and the site's templates all iterate over :func:`statistics`, so a statistic
added here reaches every one of them, and none can quietly lack it.

A statistic is one declaration: its key, label, unit, direction (``higher_is_better``),
interval, whether boards rank by it (``ranks``: :data:`RANKING`, the only one) and its
computation. Adding a statistic is one :func:`register` call (or one entry in :data:`BUILTIN`)
with the function that computes it (``compute``, given the phase matrices as
:class:`PhaseData`); :func:`phasebench.stats.summarize_samples` calls it and files the value
under the key, and every surface shows it. A built-in statistic computed together with others
(one paired bootstrap drives every interval, one permutation null gives the p-value and the null
gap) names instead the function of :mod:`phasebench.stats` that computes it (``computed_by``,
:meth:`Statistic.computation`); ``tests/test_metrics.py`` checks that each names one that exists
and that a summary holds every built-in statistic. Readers never spell a statistic's key where
they can ask its declaration: the ranking's readers ask :data:`RANKING`.

The bootstrap and permutation settings every computation shares (:data:`N_BOOT`,
:data:`N_PERM`, :data:`SEED`, :data:`ALPHA`), the power a design is judged by and the phase-lock
stride are defined in :mod:`phasebench.design.settings`, below both the declarations and the
statistics, and re-exported here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from phasebench.design.settings import (
    ALPHA,
    ALPHA_STRICT,
    LOCK_STRIDE,
    N_BOOT,
    N_PERM,
    POWER,
    PRELIMINARY_GAP,
    SEED,
)
from phasebench.errors import StatsError
from phasebench.registry import Registry

__all__ = [
    "ALPHA",
    "ALPHA_STRICT",
    "AXES",
    "BUILTIN",
    "LEVEL",
    "LOCK_STRIDE",
    "METRIC_SETS",
    "N_BOOT",
    "N_PERM",
    "SEED",
    "RENAMED_SINCE_FORMAT_1",
    "RENAMED_SINCE_FORMAT_2",
    "FLAT",
    "POWER",
    "PRELIMINARY_GAP",
    "current_metric",
    "get",
    "PhaseData",
    "RANKING",
    "Statistic",
    "length_axis",
    "on_axes",
    "register",
    "registered",
    "statistics",
]

#: The intervals' confidence level, ``1 - ALPHA``, as every surface writes it ("95%").
LEVEL = f"{1 - ALPHA:.0%}"
#: What every surface writes for the weak phase of a flat profile (every phase scored the same):
#: there is no weak phase to name. The exports leave the cell empty.
FLAT = "none (flat)"
#: Summary keys renamed since report format 1 (old -> new): a margin family's sweeps and
#: phase-lock rates were filed under the code family's name.
RENAMED_SINCE_FORMAT_1 = {"code": "margin_sweeps"}
#: Summary keys renamed since report format 2 (old -> new): the plain minimum was filed as
#: "worst phase", the name of the cross-fitted value.
RENAMED_SINCE_FORMAT_2 = {
    "worst_phase": "lowest_phase",
    "worst_phase_ci": "lowest_phase_ci",
    "worst_phase_index": "lowest_phase_index",
    "margin_worst_phase": "margin_lowest_phase",
}

MetricSet = Literal["compact", "full"]
METRIC_SETS: tuple[MetricSet, ...] = ("compact", "full")
#: How a value is shown: ``%`` accuracy (fraction 0..1 shown as a percentage), ``pp`` a
#: difference of two accuracies (percentage points), ``p`` a p-value, ``tokens`` a period,
#: ``phase`` a phase index, ``nats`` a log-probability margin, ``number`` a plain number,
#: ``flag`` a yes/no mark.
Unit = Literal["%", "pp", "p", "tokens", "phase", "nats", "number", "flag"]
#: Which phase axis a statistic describes: ``needle`` (the needle's phase, the default axis),
#: ``length`` (the total prompt length's phase, where a config ran the length axis), ``any``
#: (an average over every sample, whichever axis varied).
Axis = Literal["needle", "length", "any"]
#: Which axes a config varies: the needle phase (the default), the length phase alone, both.
AXES = ("needle", "length", "both")


@dataclass(frozen=True)
class PhaseData:
    """What a declared statistic's ``compute`` is given: the accuracy phase matrix (base items
    or paired units x phases, NaN where missing; 0/1 when ``binary``), the margin matrix for
    families with a margin (else None) and the shared settings."""

    matrix: Any
    margin_matrix: Any
    binary: bool
    n_boot: int
    n_perm: int
    seed: int
    alpha: float


@dataclass(frozen=True)
class Statistic:
    """One reported number and everything the package needs to know about it.

    ``key`` is its name in a summary, the report JSON, a leaderboard row and the exports
    (interval columns ``<key>_lo`` / ``<key>_hi``); ``interval`` the summary key of its
    ``(lo, hi)`` interval. ``metric`` is its lm-eval metric name (None: not an lm-eval metric);
    its interval there is ``<metric>_ci_low`` / ``<metric>_ci_high``, always in the full set.
    ``per_sample``: lm-eval itself averages the per-sample value (``acc``, ``margin``), so the
    pooled key is not a phase aggregate. ``per_phase``: one value per phase (the summary's
    ``per_phase`` list; lm-eval ``<metric>_<r>``, exports ``phase_<r>``).
    ``needs_margin``: only families with a margin have it. ``shown_with``: on the site and in
    the terminal table it is written beside that statistic rather than on its own, after
    ``symbol``. ``site``: a column of the site's table and a line of each model page.
    ``compute``: for statistics beyond the built-in summary, the function of :class:`PhaseData`
    that returns the value, or ``(value, (lo, hi))`` when ``interval`` is set. ``axis``: the
    phase axis it describes (:data:`Axis`); an lm-eval task reports the statistics of the axes
    its config varies (:func:`on_axes`). ``permutation``: a permutation p-value, which at its
    floor ``1 / (1 + n_perm)`` says only ``p < 1 / n_perm``
    (:func:`phasebench.formatting.format_p`).
    """

    key: str
    label: str
    unit: Unit
    metric: str | None = None
    metric_set: MetricSet = "full"
    higher_is_better: bool | None = True
    interval: str | None = None
    per_sample: bool = False
    per_phase: bool = False
    needs_margin: bool = False
    exported: bool = True
    site: bool = True
    terminal: bool = True
    shown_with: str | None = None
    symbol: str = ""
    help: str = ""
    compute: Callable[[PhaseData], Any] | None = None
    axis: Axis = "needle"
    #: Where the value sits in a summary when not at ``summary[key]``.
    read: Callable[[Mapping[str, Any]], Any] | None = None
    permutation: bool = False
    #: What tells this statistic from a neighbour of a similar name, under its label in a
    #: column heading ("cross-fitted", "best − lowest phase").
    qualifier: str = ""
    #: lm-eval metric names it had in earlier versions (``acc_worst_phase`` for the lowest
    #: phase): results files that carry them are still read (:func:`current_metric`), and no
    #: other statistic may take them.
    formerly: tuple[str, ...] = ()
    #: Whether boards rank by it: exactly one statistic does (:data:`RANKING`), and every
    #: reader of the ranking (the scoring, the site, the badges, the exports) asks for it.
    ranks: bool = False
    #: For a built-in statistic, the function of :mod:`phasebench.stats` that computes it, as
    #: ``"module.function"`` (resolved by :meth:`computation`, not imported here: the
    #: statistics import these declarations). Built-ins computed together (one bootstrap
    #: drives every interval, one permutation null gives the p-value and the null gap) name
    #: the function that computes them all.
    computed_by: str | None = None

    def computation(self) -> Callable[..., Any]:
        """The function that computes this statistic: its ``compute``, or the function of
        :mod:`phasebench.stats` that :attr:`computed_by` names."""
        if self.compute is not None:
            return self.compute
        if self.computed_by is None:
            raise StatsError(f"statistic {self.key!r} names no computation")
        module, _, name = self.computed_by.rpartition(".")
        return getattr(importlib.import_module(module), name)

    @property
    def column(self) -> str:
        """Its name in a leaderboard row and the exports: its key, as everywhere."""
        return self.key

    @property
    def column_interval(self) -> str | None:
        """The name of its interval in a leaderboard row (``None`` without an interval)."""
        return self.interval

    def value(self, summary: Mapping[str, Any]) -> Any:
        """This statistic's value in ``summary`` (None where the summary lacks it)."""
        if self.read is not None:
            return self.read(summary)
        if self.per_phase:
            return [p["acc"] for p in summary.get("per_phase") or []]
        return summary.get(self.key)

    def interval_of(self, summary: Mapping[str, Any]) -> tuple[Any, Any]:
        """``(lo, hi)`` of this statistic in ``summary``; ``(None, None)`` where it has none."""
        if self.interval is None:
            return (None, None)
        lo, hi = summary.get(self.interval) or (None, None)
        return lo, hi


def _weak_phase(summary: Mapping[str, Any]) -> Any:
    """The weak phase's index, or None for a flat profile (no phase is weaker: :data:`FLAT`)."""
    best, lowest = summary.get("best_phase"), summary.get("lowest_phase")
    if best is not None and lowest is not None and best == lowest:
        return None
    return summary.get("lowest_phase_index")


def _detectable(data: PhaseData) -> float:
    from phasebench.design.power import detectable_gap

    units, phases = data.matrix.shape
    return detectable_gap(int(units), int(phases))


def _preliminary(data: PhaseData) -> bool:
    return _detectable(data) > PRELIMINARY_GAP + 1e-9


def _lock_rate(summary: Mapping[str, Any]) -> Any:
    """The phase-lock rate at :data:`LOCK_STRIDE` (the summary holds every divisor's)."""
    rates = (summary.get("margin_sweeps") or {}).get("phase_lock_rate") or {}
    return rates.get(str(LOCK_STRIDE))


def length_axis(summary: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The length-phase axis of a summary: its ``length_axis`` when both axes ran, the summary
    itself when only the length axis ran (``axis``: ``"length"``), else None."""
    if summary.get("length_axis"):
        return summary["length_axis"]
    return summary if summary.get("axis") == "length" else None


def _on_length_axis(key: str) -> Callable[[Mapping[str, Any]], Any]:
    """A reader of the length axis's ``key`` (None where the length axis did not run)."""

    def read(summary: Mapping[str, Any]) -> Any:
        axis = length_axis(summary)
        return None if axis is None else axis.get(key)

    return read


def on_axes(stat: Statistic, axes: str) -> bool:
    """Whether a config varying ``axes`` (one of :data:`AXES`) reports ``stat``: the needle
    axis alone its needle statistics, the length axis alone its length statistics (its summary
    is the length axis), both axes both."""
    return stat.axis == "any" or axes == "both" or stat.axis == axes


#: The functions of :mod:`phasebench.stats` that compute the built-in statistics
#: (``computed_by``): the summary of one phase matrix computes most of them together.
_SUMMARY = "phasebench.stats.summary.summarize"
_PERMUTATION = "phasebench.stats.permutation.gap_test"
_PERIODS = "phasebench.stats.periods.consistent_periods"
_COCHRAN = "phasebench.stats.permutation.cochran_q"
_SAMPLES = "phasebench.stats.paired.summarize_samples"

#: The statistic boards rank by (the only one with ``ranks``): every reader of the ranking
#: asks for it here, and none spells its key.
RANKING = Statistic(
    "worst_phase_crossfit", "worst phase", "%", metric="acc_worst_phase_crossfit",
    metric_set="compact", interval="worst_phase_crossfit_ci", qualifier="cross-fitted",
    ranks=True, computed_by="phasebench.stats.crossfit.crossfit_worst",
    help="the accuracy of the weakest phase, measured without selection bias: the base items "
    "are split in half at random, the weakest phase is picked on one half and measured on "
    "the other (both ways, averaged over many splits). The leaderboard ranks by it; the "
    "lowest phase would reward small, noisy runs",
)  # fmt: skip

#: The built-in statistics, in the order tables, exports and the site show them.
BUILTIN: tuple[Statistic, ...] = (
    RANKING,
    Statistic(
        "acc", "average", "%", metric="acc", metric_set="compact", interval="acc_ci",
        per_sample=True, axis="any",
        help="accuracy over all prompts, every phase weighted equally: what a benchmark "
        "with uniformly placed facts would report",
        computed_by=_SUMMARY,
    ),
    Statistic(
        "gap", "gap", "pp", metric="phase_gap", metric_set="compact", higher_is_better=False,
        interval="gap_ci", qualifier="best − lowest phase",
        help="best phase minus lowest phase (both as measured, not cross-fitted), in percentage "
        "points; noise alone gives some gap (see null gap), so a gap counts only when it is "
        "significant. Its interval comes from the same phase shuffles as p (the gap plus or "
        "minus the test's critical value), so it excludes 0 exactly when the gap is "
        "significant",
        computed_by=_SUMMARY,
    ),
    Statistic(
        "significant", "significant", "flag", shown_with="gap", symbol="*",
        help=f"the gap clears the permutation null (p <= {ALPHA})",
        computed_by=_PERMUTATION,
    ),
    Statistic(
        "p_value", "p", "p", metric="phase_gap_p_value", metric_set="compact", permutation=True,
        higher_is_better=None, shown_with="gap", symbol="p =",
        help="the share of within-item phase shuffles whose gap is at least the observed one",
        computed_by=_PERMUTATION,
    ),
    Statistic(
        "null_gap_mean", "null gap", "pp", shown_with="gap", symbol="null gap",
        help="the gap expected with no phase effect at all: the mean gap over many shuffles of "
        "the phase labels within each base item",
        computed_by=_PERMUTATION,
    ),
    Statistic(
        "null_gap_q95", "null gap, 95% quantile", "pp", shown_with="gap", site=False,
        symbol="95% of null gaps below", help="the 95% quantile of those shuffled gaps",
        computed_by=_PERMUTATION,
    ),
    Statistic(
        "lowest_phase", "lowest phase", "%", metric="acc_lowest_phase", metric_set="compact",
        interval="lowest_phase_ci", qualifier="plain minimum", formerly=("acc_worst_phase",),
        help="the lowest of the per-phase accuracies as measured; the minimum of noisy "
        "estimates, so biased low, the more so the fewer the items (the worst phase is its "
        "cross-fitted counterpart). Its interval is a simultaneous band: every phase's accuracy "
        "within it at once, so it holds the true lowest phase whichever phase that is",
        computed_by=_SUMMARY,
    ),
    Statistic(
        "lowest_phase_index", "weak phase", "phase", shown_with="lowest_phase", symbol="weak",
        read=_weak_phase,
        help=f"which phase (0 to P-1) has the lowest accuracy; {FLAT} when every phase scored "
        "the same (the exports leave it empty); a constant prefix (BOS, chat template) renames "
        "phases cyclically, so this can move between setups while the lowest phase and the gap "
        "do not",
        computed_by=_SUMMARY,
    ),
    Statistic(
        "best_phase", "best phase", "%", metric="acc_best_phase", site=False,
        qualifier="plain maximum",
        help="the highest per-phase accuracy",
        computed_by=_SUMMARY,
    ),
    Statistic(
        "best_phase_index", "strong phase", "phase", shown_with="best_phase", site=False,
        symbol="strong", help="which phase has the highest accuracy",
        computed_by=_SUMMARY,
    ),
    Statistic(
        "dominant_period", "period", "tokens",
        help="the shortest stride, in tokens, whose repeating pattern explains the per-phase "
        "accuracies up to noise (Fourier analysis over the phases); named only for a "
        "significant gap. Chunked compression with stride S shows period S or a multiple of "
        "it (a chunk of 6 read at modulus 12 can show period 12); none where no pattern "
        "stands out beyond noise",
        computed_by=_PERIODS,
    ),
    Statistic(
        "detectable_gap", "detectable gap", "pp", higher_is_better=None, axis="any",
        compute=_detectable, qualifier=f"at {POWER:.0%} power",
        help=f"the smallest gap (best minus lowest phase) this run's design, its base items "
        f"times phases, detects with {POWER:.0%} power at level {ALPHA}, by the simulation of "
        f"phasebench power at 50% accuracy (where noise is largest); a run that cannot see a "
        f"gap of {100 * PRELIMINARY_GAP:.0f} points is preliminary",
    ),
    Statistic(
        "preliminary", "preliminary", "flag", axis="any", compute=_preliminary,
        shown_with="detectable_gap", symbol="preliminary",
        help=f"the design cannot detect a gap of {100 * PRELIMINARY_GAP:.0f} points with "
        f"{POWER:.0%} power (too few base items for its phases): its numbers are shown, marked, "
        "and never called the leader of a board",
    ),
    Statistic(
        "consistent_periods", "consistent periods", "tokens", shown_with="dominant_period",
        symbol="consistent with",
        help="every period the data are consistent with, the named one first: a second one "
        f"is shown where the rule names another period at the stricter level {ALPHA_STRICT}, i.e. "
        "where the data do not decide between the two (docs/stats.md measures how often)",
        computed_by=_PERIODS,
    ),
    Statistic(
        "cochran_q", "Cochran Q", "number", exported=False, site=False,
        help="Cochran's Q over the phases (0/1 outcomes, complete items)",
        computed_by=_COCHRAN,
    ),
    Statistic(
        "cochran_p", "Cochran p", "p", exported=False, site=False, shown_with="cochran_q",
        symbol="p =", help="p-value of Cochran's Q",
        computed_by=_COCHRAN,
    ),
    Statistic(
        "margin", "margin", "nats", metric="margin", interval="margin_ci", per_sample=True,
        needs_margin=True, exported=False, site=False,
        help="code: log p(right) minus log p(best distractor), phase-balanced mean",
        computed_by=_SAMPLES,
    ),
    Statistic(
        "margin_lowest_phase", "margin, lowest phase", "nats", metric="margin_lowest_phase",
        metric_set="compact", needs_margin=True, exported=False, site=False,
        formerly=("margin_worst_phase",),
        help="code: the lowest per-phase mean margin",
        computed_by=_SAMPLES,
    ),
    Statistic(
        "phase_lock_rate", "phase-lock rate", "%", metric="phase_lock_rate",
        needs_margin=True, site=False, terminal=False, read=_lock_rate,
        help=f"code: share of margin sign patterns over the padding sweep that repeat every "
        f"{LOCK_STRIDE} tokens",
        computed_by="phasebench.stats.periods.phase_lock_rate",
    ),
    Statistic(
        "per_phase", "phase", "%", metric="acc_phase", per_phase=True, terminal=False,
        site=False, help="accuracy at each phase",
        computed_by=_SUMMARY,
    ),
    Statistic(
        "length_worst_phase_crossfit", "worst length phase", "%",
        metric="acc_worst_length_phase_crossfit", metric_set="compact", axis="length",
        site=False, terminal=False, qualifier="cross-fitted",
        read=_on_length_axis(RANKING.key),
        help="the length-phase axis (total prompt length mod P, the needle fixed): the worst "
        "length phase, cross-fitted as the worst phase is, each needle phase paired",
        computed_by=_SAMPLES,
    ),
    Statistic(
        "length_lowest_phase", "lowest length phase", "%", metric="acc_lowest_length_phase",
        metric_set="compact", axis="length", site=False, terminal=False,
        qualifier="plain minimum", read=_on_length_axis("lowest_phase"),
        formerly=("acc_worst_length_phase",),
        help="the length-phase axis: the lowest per-length-phase accuracy as measured (biased "
        "low, as the lowest phase is), each needle phase paired",
        computed_by=_SAMPLES,
    ),
    Statistic(
        "length_gap", "length gap", "pp", metric="length_phase_gap", metric_set="compact",
        higher_is_better=False, axis="length", site=False, terminal=False,
        read=_on_length_axis("gap"),
        help="the length-phase axis: best length phase minus lowest, in percentage points",
        computed_by=_SAMPLES,
    ),
    Statistic(
        "length_p_value", "length p", "p", metric="length_phase_gap_p_value", permutation=True,
        metric_set="compact", higher_is_better=None, axis="length", site=False,
        terminal=False, shown_with="length_gap", symbol="p =",
        read=_on_length_axis("p_value"),
        help="the length-phase axis: the permutation p-value of its gap",
        computed_by=_SAMPLES,
    ),
    Statistic(
        "length_period", "length period", "tokens", metric="length_phase_period",
        metric_set="compact", higher_is_better=None, axis="length", site=False,
        terminal=False, read=_on_length_axis("dominant_period"),
        help="the length-phase axis: its period in tokens, named only for a significant gap "
        "(lm-eval reports 0 where there is none)",
        computed_by=_SAMPLES,
    ),
)  # fmt: skip


def _names(statistic: Statistic) -> tuple[str, ...]:
    """What a statistic is called: its summary key, its lm-eval metric name and the metric
    names it had before."""
    return (statistic.key, statistic.metric or "", *statistic.formerly)


if [stat.key for stat in BUILTIN if stat.ranks] != [RANKING.key]:  # a slip in the table above
    raise StatsError("exactly one built-in statistic ranks the boards: RANKING")

_REGISTRY: Registry[Statistic] = Registry("statistic", StatsError)
for _builtin in BUILTIN:
    _REGISTRY.add(_builtin, _names(_builtin))


def statistics() -> tuple[Statistic, ...]:
    """Every declared statistic, built-in first, in the order they are shown."""
    return tuple(_REGISTRY)


def register(statistic: Statistic) -> Statistic:
    """Declare one more statistic; it needs a ``compute`` (the built-in summary does not know
    it), a key and metric name no other statistic has (:class:`phasebench.registry.Registry`),
    and no ``ranks`` (boards rank by :data:`RANKING` alone). Returns it."""
    if statistic.compute is None:
        raise StatsError(f"statistic {statistic.key!r} needs a compute function")
    if statistic.ranks:
        raise StatsError(
            f"statistic {statistic.key!r} cannot rank the boards: {RANKING.key!r} does"
        )
    return _REGISTRY.add(statistic, _names(statistic))


@contextmanager
def registered(statistic: Statistic) -> Iterator[Statistic]:
    """:func:`register` for the length of a ``with`` block (tests, experiments)."""
    register(statistic)
    try:
        yield statistic
    finally:
        _REGISTRY.remove(statistic)


#: What follows a statistic's lm-eval metric name in the name of its interval.
_INTERVAL_SUFFIXES = ("_ci_low", "_ci_high")


def current_metric(name: str) -> str:
    """The current lm-eval metric name of ``name``, which may be one a statistic had before
    (:attr:`Statistic.formerly`; ``acc_worst_phase`` is now ``acc_lowest_phase``), its
    interval's (``..._ci_low``) included; any other name as it is. A results file written by
    an earlier version is read through this."""
    for stat in _REGISTRY:
        for old in stat.formerly:
            if name == old:
                return stat.metric or name
            for suffix in _INTERVAL_SUFFIXES:
                if name == old + suffix:
                    return f"{stat.metric}{suffix}"
    return name


def get(key: str) -> Statistic:
    """The declared statistic named ``key``."""
    for stat in _REGISTRY:
        if stat.key == key:
            return stat
    from phasebench.errors import StatsError

    raise StatsError(f"no statistic named {key!r} is declared")
