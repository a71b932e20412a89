"""What a page's answer becomes for the agent: an MCP CallToolResult, as wire JSON.

- a string -> one text content;
- an object with a `content` list -> taken as an MCP result (validated by the MCP edge);
- any other JSON value -> `structuredContent` plus a text content holding its JSON
  (before protocol 2026-07-28 `structuredContent` must be an object, so other values
  travel as text only);
- an error -> `isError: true` with the message.
"""

from __future__ import annotations

import json
from typing import Any

from bridge.calls import Outcome


def shaped_here(outcome: Outcome) -> bool:
    """Whether the result is built by the bridge alone (text and structured content from JSON values), so
    it is a valid CallToolResult; a page's own `content` list is not known to be one until checked."""
    value = outcome.result
    return outcome.error is not None or not (isinstance(value, dict) and isinstance(value.get("content"), list))


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def to_call_tool_result(outcome: Outcome, *, structured_may_be_any_json: bool) -> dict[str, Any]:
    if outcome.error is not None:
        return error_result(outcome.error)
    value = outcome.result
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        result: dict[str, Any] = {"content": value["content"]}
        for key in ("structuredContent", "isError", "_meta"):
            if key in value:
                result[key] = value[key]
        return result
    result = {"content": [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}]}
    if isinstance(value, dict) or structured_may_be_any_json:
        result["structuredContent"] = value
    return result
