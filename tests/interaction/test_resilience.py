"""Exactly once through faults, quick: `python bench/resilience.py --quick`, 10 pages x 5 calls, run as a
user runs it.

The bridge runs as `agui-mcp-bridge serve` in its own process; the pages (which drop their WebSocket,
their event stream, or reload) and the MCP SDK agents of both eras run in the benchmark's. What it
prints is each assertion's message; what it counted is read from its `--json` file. The full run
(100 pages, with memory) is `python bench/resilience.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ("ws drop", "stream drop", "reload")
SCENARIOS = {
    # Reloads: a fresh stream is sent every invocation still waiting, also one lost mid-run.
    "drops and reloads": FAULTS,
    # Without reloads nothing re-sends a lost invocation: resuming with Last-Event-ID must lose nothing.
    "drops only": ("ws drop", "stream drop"),
}


def quick_run(tmp_path: Path, *options: str) -> tuple[dict, str]:
    """The quick run without warm-up or settling: what it counted, and what it printed."""
    counts = tmp_path / "counts.json"
    done = subprocess.run(
        [sys.executable, "bench/resilience.py", "--quick", "--no-warmup", "--settle", "0", "--json", str(counts),
         *options], cwd=ROOT, capture_output=True, text=True, timeout=300)
    summary = done.stdout + done.stderr[-4000:]
    assert done.returncode == 0, summary  # 1: a call was lost, doubled, wrong or an error
    return json.loads(counts.read_text()), summary


@pytest.mark.parametrize("faults", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_every_call_is_answered_exactly_once_through_faults(faults, tmp_path):
    tally, summary = quick_run(tmp_path, "--faults", ",".join(kind.replace(" ", "-") for kind in faults))
    assert not tally["failed"], summary
    assert tally["calls"] == tally["ok"] == 50, summary
    assert not (tally["lost"] or tally["errors"] or tally["wrong"] or tally["doubled"]), summary
    assert all(tally["faults"].get(kind, 0) > 0 for kind in faults), summary
    assert sum(tally["faults"].values()) >= 10, summary
    assert tally["renamed"] == tally["not_resumed"] == 0, summary
    assert not tally["page_errors"], summary
    # Every second answer (sent again after a WebSocket drop) that got a reply was refused.
    assert tally["refused"] <= tally["resent"] + tally["replays"], summary


def test_every_call_crossing_processes_is_answered_exactly_once_through_faults(tmp_path):
    """Shared mode: the pages on one bridge process, the agents on another, through Redis."""
    tally, summary = quick_run(tmp_path, "--redis")
    assert not tally["failed"], summary
    assert tally["calls"] == tally["ok"] == 50, summary
    assert all(tally["faults"].get(kind, 0) > 0 for kind in FAULTS), summary
    assert tally["renamed"] == tally["not_resumed"] == 0 and not tally["page_errors"], summary
