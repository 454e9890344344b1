"""The statistical design every statistic shares, below both the declarations
(:mod:`phasebench.metrics`) and the computations (:mod:`phasebench.stats`): its settings
(:mod:`~phasebench.design.settings`: bootstrap and permutation sizes, the statistics' seed, the
levels, the power a design is judged by, the phase-lock stride), the checks of a level and a
modulus every computation makes first (:mod:`~phasebench.design.checks`), and the power of the
gap test (:mod:`~phasebench.design.power`: base items needed, and :func:`detectable_gap`, what
marks a run *preliminary*). It imports nothing of phasebench above the core (``specs`` for the
largest modulus), so every module that states a statistic or computes one reads it without an
import circle. ``phasebench.stats`` re-exports the power functions."""
