"""A call's outcome as an MCP result (bridge.core.results), in both protocol eras."""

from __future__ import annotations

import pytest

from bridge.core.calls import Outcome
from bridge.core.results import to_call_tool_result


@pytest.mark.parametrize("value, modern, expected", [
    ("hi", False, {"content": [{"type": "text", "text": "hi"}]}),
    ({"a": 1}, False, {"content": [{"type": "text", "text": '{"a": 1}'}], "structuredContent": {"a": 1}}),
    (7, False, {"content": [{"type": "text", "text": "7"}]}),
    (7, True, {"content": [{"type": "text", "text": "7"}], "structuredContent": 7}),
    (None, True, {"content": [{"type": "text", "text": "null"}], "structuredContent": None}),
    ({"content": [{"type": "text", "text": "x"}], "isError": True, "other": 1}, False,
     {"content": [{"type": "text", "text": "x"}], "isError": True}),
])
def test_result_conversion(value, modern, expected):
    assert to_call_tool_result(Outcome(result=value), structured_may_be_any_json=modern) == expected


def test_error_outcome_conversion():
    assert to_call_tool_result(Outcome.failure("error", "nope"), structured_may_be_any_json=True) == {
        "content": [{"type": "text", "text": "nope"}], "isError": True}
