"""The settings (bridge.config): flags beat the environment, bounds that cannot bound are refused, and the
settings read the core's defaults without importing the hub."""

from __future__ import annotations

import argparse

import pytest

from bridge.config import Settings, UnusableSettings, add_arguments, from_arguments
from bridge.core.defaults import TaskLimits


def test_settings_from_flags_and_environment(monkeypatch):
    monkeypatch.setenv("AGUI_BRIDGE_CALL_TIMEOUT", "12.5")
    monkeypatch.setenv("AGUI_BRIDGE_INLINE_MAX", "7")
    parser = argparse.ArgumentParser()
    add_arguments(parser, "serve")
    settings = from_arguments(parser.parse_args(["--port", "9000", "--inline-max", "9"]))
    assert settings.port == 9000 and settings.call_timeout == 12.5
    assert settings.inline_max == 9  # a flag beats the environment
    assert settings.host == "127.0.0.1" and settings.search_tool_name == "tool_search"


def test_settings_do_not_import_the_hub():
    """The settings and the hub read the core's defaults from one place; neither builds on the other."""
    import subprocess
    import sys

    code = "import sys, bridge.config\nprint(sorted({'bridge.core.hub', 'bridge.core.pages'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_bounds_are_settings_that_refuse_what_cannot_bound(monkeypatch):
    monkeypatch.setenv("AGUI_BRIDGE_MAX_TASKS_PER_AGENT", "7")
    parser = argparse.ArgumentParser()
    add_arguments(parser, "serve")
    settings = from_arguments(parser.parse_args(["--max-task-bytes", "1048576"]))
    assert settings.task_limits() == TaskLimits(per_agent=7, bytes_total=1 << 20)
    for name in ("max_tasks", "max_tasks_per_agent", "max_tasks_per_room", "max_task_bytes",
                 "max_task_bytes_per_agent"):
        with pytest.raises(UnusableSettings, match=f"--{name.replace('_', '-')} 0 .*a whole number of at least 1"):
            Settings(**{name: 0}).check()
    monkeypatch.setenv("AGUI_BRIDGE_MAX_TASKS", "lots")
    with pytest.raises(UnusableSettings, match="AGUI_BRIDGE_MAX_TASKS='lots': --max-tasks takes a whole number"):
        add_arguments(argparse.ArgumentParser(), "serve")
