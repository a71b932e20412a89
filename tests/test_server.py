"""The server's log lines (bridge.server): its line formatter writes what logging's own formatter would.
(One log line per call, through a real bridge: tests/interaction/test_observability.py.)"""

from __future__ import annotations

import sys


def test_log_lines_are_what_loggings_own_formatter_writes():
    """The line formatter formats a second's date once and joins the line itself; its lines, with
    tracebacks and stacks, are what logging's own formatter would write."""
    import logging

    from bridge.server import LINE_FORMAT, LineFormatter

    ours, standard = LineFormatter(), logging.Formatter(LINE_FORMAT)
    try:
        raise ValueError("broken\n")
    except ValueError:
        exc_info = sys.exc_info()
    for created in (1_700_000_000.0, 1_700_000_000.999, 1_700_000_001.004, 1_700_000_001.5, 1_699_999_999.25):
        for exc, stack, message in ((None, None, "call room=%s"), (exc_info, None, "failed %s"),
                                    (exc_info, "Stack (most recent call last):\n  here", "ends\n%s"),
                                    (None, "Stack:\n  there", "call %s")):
            records = [logging.LogRecord("bridge.core.hub", logging.INFO, __file__, 1, message, ("default",), exc,
                                         sinfo=stack) for _ in range(2)]
            for record in records:
                record.created, record.msecs = created, (created - int(created)) * 1000
            assert ours.format(records[0]) == standard.format(records[1])
    assert ours.formatTime(records[0], "%H") == standard.formatTime(records[1], "%H")
