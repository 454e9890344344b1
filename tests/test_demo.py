"""``phasebench demo``'s forecast: before, each model's line gave its own time alone, and the
demo ran 9 minutes on a shared machine against the README's "about a minute"."""

from __future__ import annotations

from phasebench.demo import _forecast


def test_each_models_line_forecasts_the_others_at_the_pace_so_far():
    assert _forecast(30.0, 1, 6) == "; the other 5 about 2 min at this pace"
    assert _forecast(10.0, 1, 6) == "; the other 5 about 50 s at this pace"
    assert _forecast(120.0, 3, 6) == "; the other 3 about 2 min at this pace"
    assert _forecast(300.0, 6, 6) == ""  # the last model: nothing left to forecast
