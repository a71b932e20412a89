"""Code mode's settings: each a flag and an AGUI_BRIDGE_ variable, checked at start like the others."""

from __future__ import annotations

import argparse

import pytest

from bridge.config import Settings, UnusableSettings, add_arguments, from_arguments
from bridge.core.defaults import CODE, CodeConfig


def parsed(*argv: str) -> Settings:
    parser = argparse.ArgumentParser()
    add_arguments(parser, "serve")
    return from_arguments(parser.parse_args(argv))


def test_the_defaults_and_the_flags_make_the_code_config():
    assert Settings().code_config() == CODE and Settings().hub_config().code == CODE
    settings = parsed("--code-mode", "off", "--code-tool-name", "python", "--code-compute-seconds", "2.5",
                      "--code-memory-mb", "32", "--code-max-calls", "10", "--code-max-calls-in-flight", "5",
                      "--code-max-printed-chars", "1000", "--code-max-value-chars", "2000", "--code-workers", "2",
                      "--result-max-chars", "5000")
    assert settings.code_config() == CodeConfig(mode="off", tool_name="python", compute_seconds=2.5, memory_mb=32,
                                                max_calls=10, max_calls_in_flight=5, max_printed_chars=1000,
                                                max_value_chars=2000, workers=2)
    assert settings.result_max_chars == 5000 and settings.hub_config().code.tool_name == "python"


def test_the_environment_sets_them_too(monkeypatch):
    monkeypatch.setenv("AGUI_BRIDGE_CODE_COMPUTE_SECONDS", "1.5")
    monkeypatch.setenv("AGUI_BRIDGE_CODE_MODE", "off")
    monkeypatch.setenv("AGUI_BRIDGE_RESULT_MAX_CHARS", "123")
    settings = parsed()
    assert (settings.code_compute_seconds, settings.code_mode, settings.result_max_chars) == (1.5, "off", 123)


@pytest.mark.parametrize(("overrides", "said"), [
    ({"code_mode": "maybe"}, "--code-mode 'maybe' (or AGUI_BRIDGE_CODE_MODE): it takes on or off."),
    ({"code_compute_seconds": 0.0}, "--code-compute-seconds"),
    ({"code_workers": 0}, "--code-workers"),
    ({"code_max_value_chars": 0}, "--code-max-value-chars"),
    ({"result_max_chars": 0}, "--result-max-chars"),
    ({"code_tool_name": "run code"}, "--code-tool-name"),
    ({"code_tool_name": "tool_search"}, "--code-tool-name 'tool_search' is a meta-tool's name"),
])
def test_a_code_setting_that_cannot_work_is_refused_naming_it(overrides, said):
    with pytest.raises(UnusableSettings) as refused:
        Settings(**overrides).check()
    assert said in str(refused.value)


def test_with_code_mode_off_its_name_may_be_a_meta_tools():
    Settings(code_mode="off", code_tool_name="tool_search").check()
