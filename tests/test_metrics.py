"""The metrics' histogram (bridge.metrics): each bucket holds its bound and counts upwards. (/metrics
through a real bridge: tests/interaction/test_observability.py.)"""

from __future__ import annotations

from bridge.metrics import Histogram


def test_histogram_buckets_hold_their_bound_and_count_upwards():
    histogram = Histogram((0.005, 0.01, 1.0))
    for seconds in (0.005, 0.0051, 0.5, 1.0, 700.0):
        histogram.observe(seconds)
    assert histogram.cumulative() == [("0.005", 1), ("0.01", 2), ("1.0", 4), ("+Inf", 5)]
    assert histogram.sum == 0.005 + 0.0051 + 0.5 + 1.0 + 700.0
