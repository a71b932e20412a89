"""The meta-tools a room in search mode shows — search, describe, call-through — and how a
`tools/call` by name is routed: to a meta-tool's answer, or to a page tool to invoke.

Definitions and answers are plain MCP wire JSON. Error texts name the meta-tools as
configured. The descriptions are written for the model that will read them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bridge.catalog import Room, Tool
from bridge.results import error_result

SEARCH_LIMIT_MAX = 20


@dataclass(frozen=True)
class MetaToolNames:
    search: str = "tool_search"
    describe: str = "tool_describe"
    call: str = "call_tool"

    def __iter__(self):
        return iter((self.search, self.describe, self.call))


@dataclass(frozen=True)
class Invoke:
    """The call goes to a page: `tool` with `arguments`."""

    tool: Tool
    arguments: dict[str, Any]


@dataclass(frozen=True)
class UnknownTool:
    """A direct call to a name the room does not have: a protocol error, as MCP says."""

    message: str


Route = dict[str, Any] | Invoke | UnknownTool


class MetaTools:
    def __init__(self, names: MetaToolNames) -> None:
        self.names = names
        self.definitions = _definitions(names)

    def route(self, room: Room, name: str, arguments: dict[str, Any], no_page: str | None) -> Route:
        """What a `tools/call` of `name` becomes. `no_page`, when set, says the room has no page
        connected and where to open one; it is added to every "not found" answer."""
        n = self.names
        if name == n.search:
            return self._search(room, arguments, no_page)
        if name == n.describe:
            target = arguments.get("name")
            if not isinstance(target, str):
                return error_result(f"{n.describe} needs a string 'name'.")
            return describe(room, target) or error_result(self._not_found(target, no_page))
        if name == n.call:
            target, target_arguments = arguments.get("name"), arguments.get("arguments", {})
            if not isinstance(target, str) or not isinstance(target_arguments, dict):
                return error_result(f"{n.call} needs a string 'name' and an object 'arguments'.")
            tool = room.resolve(target)
            return Invoke(tool, target_arguments) if tool else error_result(self._not_found(target, no_page))
        tool = room.resolve(name)
        if tool is None:
            return UnknownTool(f"Unknown tool: {name}." + (f" {no_page}" if no_page else ""))
        return Invoke(tool, arguments)

    def _search(self, room: Room, arguments: dict[str, Any], no_page: str | None) -> dict[str, Any]:
        query, limit = arguments.get("query"), arguments.get("limit", 5)
        if not isinstance(query, str) or not isinstance(limit, int) or isinstance(limit, bool):
            return error_result(f"{self.names.search} needs a string 'query' and an integer 'limit'.")
        if no_page and not len(room):
            return error_result(no_page)
        found = room.search(query, max(1, min(limit, SEARCH_LIMIT_MAX)))
        room.activate(t.key for t in found)
        matches = [_entry(room, t) for t in found]
        structured = {"matches": matches, "deferred": room.listing().deferred}
        if matches:
            lines = [f"{len(matches)} tool(s) found; call them by name:"]
            lines += [f"- {m['name']}: {m['description']}\n  input: {json.dumps(m['inputSchema'])}" for m in matches]
            text = "\n".join(lines)
        else:
            text = f"No tool matches {query!r}. Try other English keywords."
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}

    def _not_found(self, name: str, no_page: str | None) -> str:
        return no_page or f"No tool named {name!r}; search with {self.names.search}."


def _definitions(names: MetaToolNames) -> list[dict[str, Any]]:
    return [
        {
            "name": names.search,
            "description": (
                "Search all tools this page offers, including ones not listed yet. Use short English keywords "
                "for what you want to do (e.g. 'confirm transfer', 'read selected text'). Tools found here "
                f"become callable at once by their name, or through {names.call}."
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
            "name": names.describe,
            "description": "Show the full definition (description and input schema) of any tool by its name.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "the tool's name"}},
                "required": ["name"],
            },
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        },
        {
            "name": names.call,
            "description": (
                f"Call any tool by its name, including tools found with {names.search} that are "
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


def _entry(room: Room, tool: Tool) -> dict[str, Any]:
    described = room.describe(tool)
    return {"name": tool.key, "tool": tool.page_name, "description": described["description"],
            "inputSchema": described["inputSchema"]}


def describe(room: Room, name: str) -> dict[str, Any] | None:
    tool = room.get(name)
    if tool is None:
        return None
    full = room.describe(tool) | {"tool": tool.page_name, "deferred": room.is_deferred(name)}
    return {"content": [{"type": "text", "text": json.dumps(full, indent=1)}], "structuredContent": full}
