"""What a page's answer becomes for the agent: an MCP CallToolResult, as wire JSON.

- a string -> one text content;
- an object with a `content` list -> taken as an MCP result (validated by the MCP edge);
- any other JSON value -> `structuredContent` plus a text content holding its JSON
  (before protocol 2026-07-28 `structuredContent` must be an object, so other values
  travel as text only);
- an error -> `isError: true` with the message.

`_meta` keys under a prefix MCP reserves (`io.modelcontextprotocol/serverInfo`,
`related-task`, ...) are the bridge's to set: a page's are dropped, from the result,
its content blocks and their embedded resources; the page's own keys pass.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bridge.core.calls import Outcome

# MCP reserves a `_meta` prefix whose second label is `modelcontextprotocol` or `mcp` (2025-11-25 on:
# io.modelcontextprotocol/, dev.mcp/), and before that one with either as any label but the last (mcp.dev/).
_RESERVED_LABEL = re.compile(r"(?:modelcontextprotocol|mcp)", re.IGNORECASE)


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
        result: dict[str, Any] = {"content": [_without_reserved_meta(block) for block in value["content"]]}
        for key in ("structuredContent", "isError", "_meta"):
            if key in value:
                result[key] = value[key]
        return _without_reserved_meta(result)
    result = {"content": [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}]}
    if isinstance(value, dict) or structured_may_be_any_json:
        result["structuredContent"] = value
    return result


def _reserved_key(key: str) -> bool:
    """Whether a `_meta` key's prefix is one MCP reserves for itself."""
    prefix, slash, _ = key.rpartition("/")
    labels = prefix.replace("/", ".").split(".") if slash else []
    return ((len(labels) > 1 and _RESERVED_LABEL.fullmatch(labels[1]) is not None)
            or any(_RESERVED_LABEL.fullmatch(label) for label in labels[:-1]))


def _without_reserved_meta(part: Any) -> Any:
    """A result, content block or embedded resource as the page sent it, less the reserved `_meta` keys
    (a part that is not an object is left for MCP's check to refuse)."""
    if not isinstance(part, dict):
        return part
    meta, resource = part.get("_meta"), part.get("resource")
    if isinstance(meta, dict) and any(_reserved_key(key) for key in meta):
        part = {**part, "_meta": {key: value for key, value in meta.items() if not _reserved_key(key)}}
    if isinstance(resource, dict) and isinstance(resource.get("_meta"), dict):
        part = {**part, "resource": _without_reserved_meta(resource)}
    return part
