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

An answer larger than the agent should read (`--result-max-chars`) is `cut` to that size, with a
closing note; a program (`run_code`) gets it whole.
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


def cut(result: dict[str, Any], max_chars: int, *, structured_repeats_text: bool, needs_structured: bool = False,
        code_tool: str | None = None) -> dict[str, Any]:
    """The result, its text cut to `max_chars` characters when the answer is larger, with a closing note saying how
    large it was (and that a program gets it whole). Its size is the text of its text blocks, and its structured
    content's JSON unless that repeats the text (`structured_repeats_text`: the bridge wrote the text from it).
    Structured content cannot be cut: a cut result has none, so for a tool that must give it (`needs_structured`,
    an output schema) the cut result is an error result."""
    content = result.get("content")
    if not isinstance(content, list):
        return result
    size = sum(len(block["text"]) for block in content if _is_text(block))
    if "structuredContent" in result and not structured_repeats_text:
        size += len(json.dumps(result["structuredContent"], ensure_ascii=False))
    if size <= max_chars:
        return result
    room, kept = max_chars, []
    for block in content:
        if not _is_text(block):
            kept.append(block)
        elif room > 0:
            kept.append({**block, "text": block["text"][:room]})
            room -= len(kept[-1]["text"])
    note = f"[cut: the answer is {size:,} characters, over the {max_chars:,} this bridge returns."
    if code_tool is not None:
        note += f" Call the tool inside {code_tool} to filter or total it: a program gets the whole answer."
    if needs_structured and result.get("isError") is not True:
        note += " Its structured content cannot be cut, so this is an error result."
        result = {**result, "isError": True}
    kept.append({"type": "text", "text": note + "]"})
    return {key: value for key, value in result.items() if key != "structuredContent"} | {"content": kept}


def _is_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
