"""The meta-tools a room in search mode shows — search, describe, call-through — and how a
`tools/call` by name is routed: to a meta-tool's answer, to a page tool to invoke, or (code mode)
to a program to run (`bridge.core.code_tool`, whose tool is listed and reserved beside them).

Definitions and answers are plain MCP wire JSON. Error texts name the meta-tools as
configured. The descriptions are written for the model that will read them.

A search answers with compact matches — what an agent needs to call a tool: its name, a
one-line description, its required parameters with their types, the names of the optional
ones, and its input examples — and says which tier ran ("lexical": words; "hybrid": words
and meaning). The full definition is `describe`'s answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bridge.code_mode import python_signature
from bridge.core.catalog import Room, Tool
from bridge.core.code_tool import RunProgram, run_code_definition
from bridge.core.defaults import DEFAULTS, CodeConfig
from bridge.core.prose import cut_text, prose_list
from bridge.core.results import error_result

SEARCH_LIMIT_MAX = 20
QUERY_MAX_CHARS = 1000  # a search query: keywords, not documents; longer ones are refused, never echoed
NAME_SHOWN_CHARS = 128  # of a name an agent gave, in an answer (a tool name is at most 64)
MATCH_DESCRIPTION_CHARS = 160  # a match's description: its first line, cut to this
ENUM_SHOWN_MAX = 8  # a parameter's allowed values are shown as its type when there are at most this many
TYPE_LABEL_CHARS = 80  # a longer type (a wide anyOf, long enum values) is cut: describe has it whole
# Definitions whose match parts stay computed, the least recently found dropped first: each
# holds its JSON text, up to a schema's size, after its tool is gone.
MATCH_PARTS_KEPT = 256
TIER_TEXT = {"lexical": "lexical search: by words", "hybrid": "hybrid search: by words and meaning"}


@dataclass(frozen=True)
class MetaToolNames:
    search: str = DEFAULTS.search_tool_name
    describe: str = DEFAULTS.describe_tool_name
    call: str = DEFAULTS.call_tool_name
    code: str | None = None  # code mode's `run_code`, when on

    def __iter__(self):
        return iter((self.search, self.describe, self.call) + ((self.code,) if self.code is not None else ()))


@dataclass(frozen=True)
class Invoke:
    """The call goes to a page: `tool` with `arguments`."""

    tool: Tool
    arguments: dict[str, Any]


@dataclass(frozen=True)
class UnknownTool:
    """A direct call to a name the room does not have: a protocol error, as MCP says."""

    message: str


Route = dict[str, Any] | Invoke | UnknownTool | RunProgram


class MetaTools:
    def __init__(self, names: MetaToolNames, code: CodeConfig | None = None) -> None:
        """`code`: code mode's settings, when on (`names.code` is then its tool's name)."""
        self.names = names
        self.definitions = _definitions(names)
        if code is not None:
            self.definitions.append(run_code_definition(code, search=names.search, describe=names.describe))

    async def route(self, room: Room, name: str, arguments: dict[str, Any], no_page: str | None) -> Route:
        """What a `tools/call` of `name` becomes. `no_page`, when set, says the room has no page
        connected and where to open one; it is added to every "not found" answer. Only a search
        awaits anything: the query's embedding, off the event loop (see Room.search)."""
        n = self.names
        if name == n.search:
            return await self._search(room, arguments, no_page)
        if name == n.describe:
            target = arguments.get("name")
            if not isinstance(target, str):
                return error_result(f"{n.describe} needs a string 'name'.")
            return (describe(room, target, python=n.code is not None)
                    or error_result(self._not_found(room, target, no_page)))
        if name == n.call:
            target, target_arguments = arguments.get("name"), arguments.get("arguments", {})
            if not isinstance(target, str) or not isinstance(target_arguments, dict):
                return error_result(f"{n.call} needs a string 'name' and an object 'arguments'.")
            tool = room.resolve(target)
            return Invoke(tool, target_arguments) if tool else error_result(self._not_found(room, target, no_page))
        if name == n.code:
            code = arguments.get("code")
            if not isinstance(code, str):
                return error_result(f"{n.code} needs the program as a string 'code'.")
            return RunProgram(code)
        tool = room.resolve(name)
        if tool is None:
            return UnknownTool(f"Unknown tool: {shown(name)}.{self._did_you_mean(room, name)}"
                               + (f" {no_page}" if no_page else ""))
        return Invoke(tool, arguments)

    async def _search(self, room: Room, arguments: dict[str, Any], no_page: str | None) -> dict[str, Any]:
        query, limit = arguments.get("query"), arguments.get("limit", 5)
        if not isinstance(query, str) or not isinstance(limit, int) or isinstance(limit, bool):
            return error_result(f"{self.names.search} needs a string 'query' and an integer 'limit'.")
        if len(query) > QUERY_MAX_CHARS:
            return error_result(f"{self.names.search} takes a query of at most {QUERY_MAX_CHARS} characters; this "
                                f"one has {len(query)}. Search with a few keywords.")
        if no_page and not len(room):
            return error_result(no_page)
        hits = await room.search(query, max(1, min(limit, SEARCH_LIMIT_MAX)))
        tier = hits[0][1].tier if hits else room.search_tier(query)
        found = [t for t, _ in hits]
        room.activate(t.key for t in reversed(found))  # the best match is the most recently used
        matches = [match(room, t) for t in found]
        structured = {"matches": matches, "deferred": room.deferred, "tier": tier}
        if matches:
            lines = [f"{len(matches)} tool(s) found ({TIER_TEXT.get(tier, tier)}); call them by name, or through "
                     f"{self.names.call}:"]
            lines += map(_match_text, matches)
            lines.append(f"{self.names.describe} shows a tool's full definition.")
            text = "\n".join(lines)
        else:
            text = (f"No tool matches {json.dumps(query, ensure_ascii=False)} ({TIER_TEXT.get(tier, tier)}). "
                    "Try other English keywords.")
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}

    def _not_found(self, room: Room, name: str, no_page: str | None) -> str:
        return no_page or (f"No tool named {json.dumps(shown(name), ensure_ascii=False)}."
                           f"{self._did_you_mean(room, name)} To find tools by what they do, search with "
                           f"{self.names.search}.")

    def _did_you_mean(self, room: Room, name: str) -> str:
        """The names, listed or deferred (each callable by its name), that `name` may be a slip for."""
        alike = room.resembling(name, self.names)
        if not alike:
            return ""
        quoted = [json.dumps(n) for n in alike]
        return f" Did you mean {prose_list(quoted, 'or')}?"


def shown(name: str) -> str:
    """A name an agent gave, cut for an answer: the agent sent it, it needs no echo at length."""
    return cut_text(name, NAME_SHOWN_CHARS)


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
                    "query": {"type": "string", "maxLength": QUERY_MAX_CHARS,
                              "description": "English keywords describing the task"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT_MAX, "default": 5,
                              "description": f"how many tools to return (at most {SEARCH_LIMIT_MAX})"},
                },
                "required": ["query"],
            },
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        },
        {
            "name": names.describe,
            "description": ("Show the full definition (description, input schema with every parameter, examples) of "
                            "any tool by its name"
                            + (f", and its Python signature in a {names.code} program." if names.code else ".")),
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


def match(room: Room, tool: Tool) -> dict[str, Any]:
    """A search match: enough to call the tool (the full schema is describe's answer).

    `required`: each required parameter's type ("string", "integer[]", "\"a\"|\"b\"", ...);
    `optional`: the names of the others; `examples`: the tool's input examples, if any."""
    description, required, optional, examples = _match_parts(tool.definition_json)
    entry: dict[str, Any] = {"name": tool.key, "tool": tool.page_name, "description": room.told(tool, description)}
    entry["required"] = dict(required)
    if optional:
        entry["optional"] = list(optional)
    if examples:
        entry["examples"] = json.loads(examples)
    return entry


MatchParts = tuple[str, tuple[tuple[str, str], ...], tuple[str, ...], str | None]


@lru_cache(maxsize=MATCH_PARTS_KEPT)  # strings and tuples of strings: nothing the collector tracks
def _match_parts(definition_json: str) -> MatchParts:
    """What a match shows of a definition (JSON text, as a tool keeps it): its description's
    first line, its required parameters' types, its optional parameters' names and its input
    examples (as JSON text). Read once for the tools searches find again, rather than the
    definition parsed and its schema walked for every match."""
    definition = json.loads(definition_json)
    required, optional = parameters(definition["inputSchema"])
    examples = definition["inputExamples"]
    return (one_line(definition["description"]), tuple(required.items()), tuple(optional),
            json.dumps(examples) if examples else None)


def one_line(description: str, max_chars: int = MATCH_DESCRIPTION_CHARS) -> str:
    """The first line of a description, spaces collapsed, cut to `max_chars`."""
    line = " ".join(next((line for line in description.splitlines() if line.strip()), "").split())
    return cut_text(line, max_chars, rstrip=True)


def parameters(schema: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """An input schema's required parameters with their types, and the names of the optional ones."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required_names = [n for n in schema.get("required", []) if isinstance(n, str)] \
        if isinstance(schema.get("required"), list) else []
    required = {name: cut_text(type_label(properties.get(name)), TYPE_LABEL_CHARS) for name in required_names}
    return required, [name for name in properties if name not in required]


def type_label(schema: Any) -> str:
    """A parameter's type in a few characters: "string", "integer[]", "\"eur\"|\"usd\"", "object", "any"."""
    if not isinstance(schema, dict):
        return "any"
    if "const" in schema:
        return json.dumps(schema["const"])
    values = schema.get("enum")
    if isinstance(values, list) and 0 < len(values) <= ENUM_SHOWN_MAX:
        return "|".join(json.dumps(value) for value in values)
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind) or "any"
    if kind == "array":
        items = schema.get("items")
        return f"{type_label(items)}[]" if isinstance(items, dict) and items else "array"
    if isinstance(kind, str):
        return kind
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return "|".join(type_label(option) for option in options)
    return "object" if "properties" in schema else "any"


def _match_text(entry: dict[str, Any]) -> str:
    arguments = ", ".join(f"{name}: {kind}" for name, kind in entry["required"].items())
    if entry.get("optional"):
        arguments += ("; " if arguments else "") + "optional: " + ", ".join(entry["optional"])
    text = f"- {entry['name']}({arguments}): {entry['description']}"
    for example in entry.get("examples", ()):
        text += f"\n  example: {json.dumps(example, ensure_ascii=False)}"
    return text


def describe(room: Room, name: str, *, python: bool = False) -> dict[str, Any] | None:
    """A tool's full definition; `python`: with its signature as a program calls it (code mode)."""
    tool = room.named(name)
    if tool is None:
        return None
    full = room.describe(tool)
    full.pop("_meta", None)  # the examples are shown as such
    if tool.definition.inputExamples:
        full["inputExamples"] = tool.definition.inputExamples
    if tool.pinned:
        full["pinned"] = True
    full |= {"tool": tool.page_name, "deferred": room.is_deferred(tool.key)}
    if python:
        full["python"] = python_signature(tool.key, full["inputSchema"])
    return {"content": [{"type": "text", "text": json.dumps(full, indent=1)}], "structuredContent": full}
