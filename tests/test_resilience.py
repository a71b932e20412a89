"""Exactly once through faults, quick: bench/resilience.py's run with 10 pages x 5 calls.

The bridge runs as `agui-mcp-bridge serve` in its own process; the pages (which drop their WebSocket,
their event stream, or reload) and the MCP SDK agents of both eras run here. The full run
(100 pages, with memory) is `python bench/resilience.py`.
"""

from __future__ import annotations

import shutil

import pytest

from bench import resilience

SCENARIOS = {
    # Reloads: a fresh stream is sent every invocation still waiting, also one lost mid-run.
    "drops and reloads": resilience.FAULTS,
    # Without reloads nothing re-sends a lost invocation: resuming with Last-Event-ID must lose nothing.
    "drops only": ("ws drop", "stream drop"),
}


@pytest.mark.parametrize("faults", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_every_call_is_answered_exactly_once_through_faults(faults):
    cfg = resilience.Config.quick(faults=faults, warmup=False, settle=0)
    tally = await resilience.run(cfg)
    summary = resilience.report(cfg, tally)
    assert not tally.failed, summary
    assert tally.calls == tally.ok == 50, summary
    assert not (tally.lost or tally.errors or tally.wrong or tally.doubled), summary
    assert all(tally.faults[kind] > 0 for kind in faults), summary
    assert sum(tally.faults.values()) >= 10, summary
    assert tally.renamed == tally.not_resumed == 0, summary
    assert not tally.page_errors, summary
    # Every second answer (sent again after a WebSocket drop) that got a reply was refused.
    assert tally.refused <= tally.resent + tally.replays, summary


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs Debian's redis-server")
async def test_every_call_crossing_processes_is_answered_exactly_once_through_faults():
    """Shared mode: the pages on one bridge process, the agents on another, through Redis."""
    cfg = resilience.Config.quick(warmup=False, settle=0, redis=True)
    tally = await resilience.run(cfg)
    summary = resilience.report(cfg, tally)
    assert not tally.failed, summary
    assert tally.calls == tally.ok == 50, summary
    assert all(tally.faults[kind] > 0 for kind in resilience.FAULTS), summary
    assert tally.renamed == tally.not_resumed == 0 and not tally.page_errors, summary
