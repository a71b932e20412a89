"""The meta-tools a room in search mode shows: search, describe, call-through.

Their definitions and answers are plain MCP wire JSON; the MCP adapter routes
calls here. The descriptions are written for the model that will read them.
"""

from __future__ import annotations

import json
from typing import Any

from bridge.catalog import Room, Tool
from bridge.config import Settings

SEARCH_LIMIT_MAX = 20


def definitions(settings: Settings) -> list[dict[str, Any]]:
    return [
        {
            "name": settings.search_tool_name,
            "description": (
                "Search all tools this page offers, including ones not listed yet. Use short English keywords "
                "for what you want to do (e.g. 'confirm transfer', 'read selected text'). Tools found here "
                f"become callable at once by their name, or through {settings.call_tool_name}."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "English keywords describing the task"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT_MAX, "default": 5,
                              "description": f"how many tools to return (at most {SEARCH_LIMIT_MAX})"},
                },
                "required": ["query"],
            },
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        },
        {
            "name": settings.describe_tool_name,
            "description": "Show the full definition (description and input schema) of any tool by its name.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "the tool's name"}},
                "required": ["name"],
            },
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        },
        {
            "name": settings.call_tool_name,
            "description": (
                f"Call any tool by its name, including tools found with {settings.search_tool_name} that are "
                "not in your tool list."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the tool's name"},
                    "arguments": {"type": "object", "description": "the tool's arguments", "default": {}},
                },
                "required": ["name"],
            },
        },
    ]


def _entry(tool: Tool) -> dict[str, Any]:
    d = tool.definition
    return {"name": tool.key, "tool": tool.page_name, "description": d.description, "inputSchema": d.inputSchema}


def search(room: Room, query: str, limit: int) -> dict[str, Any]:
    """Find tools, activate the deferred ones among them, and answer as a CallToolResult."""
    found = room.search(query, max(1, min(limit, SEARCH_LIMIT_MAX)))
    room.activate(t.key for t in found)
    matches = [_entry(t) for t in found]
    structured = {"matches": matches, "deferred": room.listing().deferred}
    if matches:
        lines = [f"{len(matches)} tool(s) found; call them by name:"]
        lines += [f"- {m['name']}: {m['description']}\n  input: {json.dumps(m['inputSchema'])}" for m in matches]
        text = "\n".join(lines)
    else:
        text = f"No tool matches {query!r}. Try other English keywords."
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


def describe(room: Room, name: str) -> dict[str, Any] | None:
    tool = room.get(name)
    if tool is None:
        return None
    full = tool.describe() | {"tool": tool.page_name, "deferred": room.is_deferred(name)}
    return {"content": [{"type": "text", "text": json.dumps(full, indent=1)}], "structuredContent": full}
