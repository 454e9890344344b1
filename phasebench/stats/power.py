"""Deprecated: moved to :mod:`phasebench.design.power` (below both metrics and stats).

This old path is that module, with a DeprecationWarning, through phasebench 0.2
(:mod:`phasebench._moved`)."""

from phasebench._moved import alias

alias(__name__)
