"""Who registered which tool in which room, and which of them an agent sees.

A page's tool is listed under its own name when that name is free. Tabs of one app (the same
definition from the same origin) share that name: each call goes to the one the user used last
(see Hub). Another page's tool of that name gets `<name>__<tag>`, and its description says which
page it comes from; when the plain name's pages are all gone, a tool of the same definition
listed under such a name takes the plain name (the old one still reaches it).

A room's tools are listed plainly while they fit the inline limits; past them
the room is in search mode: pinned tools and then the first tools in registration
order stay inline, the rest are deferred behind the search index until a search or
a call activates them (at most `max_activated` at a time, the least recently used
leaving the listing first). Nothing here knows about sockets or MCP.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import chain
from typing import Any

from pydantic import ValidationError

from bridge.core.defaults import DEFAULTS
from bridge.core.messages import ToolDefinition, validation_summary
from bridge.core.prose import cut_text
from bridge.core.provenance import PROVENANCE_MARK, UNTRUSTED_CONTENT_META, as_told, hint_mark
from bridge.schemas import page_schemas as schemas
from bridge.schemas.page_schemas import SchemaLimits
from bridge.search import Embedder, EmbeddingBusy, IndexedTool, SearchHit, ToolIndex, embed_query

log = logging.getLogger(__name__)

MCP_NAME_MAX = 64
TAG_CHARS = 6  # of a page's session id, in the names given to its tools when their own is taken
# An unknown name an agent calls is told the names it resembles (difflib's ratio, 0 to 1): at most
# RESEMBLING_SHOWN of them; in a room of more than RESEMBLING_SCAN_MAX tools, of those a search finds.
RESEMBLANCE = 0.75
RESEMBLING_SHOWN = 3
RESEMBLING_SCAN_MAX = 500
RESEMBLING_SEARCHED = 20
_NOT_MCP_NAME_CHAR = re.compile(r"[^A-Za-z0-9_-]")
TOOL_NAME = re.compile(r"[^\x00-\x1f\x7f]{1,128}")  # the MCP name is made safe from it; see mcp_safe_name
# Where a listed tool carries its input examples: MCP's Tool has no field for them, and `_meta` keys
# are `prefix/name`.
INPUT_EXAMPLES_META = "agui-mcp-bridge/inputExamples"


def mcp_safe_name(name: str) -> str:
    """Some clients reject anything but `[A-Za-z0-9_-]{1,64}` in tool names."""
    return _NOT_MCP_NAME_CHAR.sub("_", name)[:MCP_NAME_MAX] or "tool"


def estimate_tokens(payload: Any) -> int:
    """Characters / 4 of the JSON an agent would read: coarse, model-independent."""
    return len(_as_read(payload)) // 4


def _as_read(payload: Any) -> str:
    """The JSON an agent would read, its keys sorted: as long as what is sent, and comparable."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class ListingPolicy:
    inline_max: int = DEFAULTS.inline_max
    inline_token_budget: int = DEFAULTS.inline_token_budget
    description_max_chars: int = DEFAULTS.description_max_chars  # in search mode, listed descriptions are cut
    reserved_names: frozenset[str] = frozenset()
    # Page text marked for agents browsing pages not their user's own, and every tool's page told (see
    # bridge.core.provenance).
    mark_page_text: bool = DEFAULTS.mark_page_text
    # What the meta-tools cost when listed; they count against both limits in search mode.
    meta_tools: int = 0
    meta_tool_tokens: int = 0
    # Deferred tools searches and calls list at once, at most; the least recently used leave first.
    max_activated: int = DEFAULTS.max_activated


class Tool:
    """A tool a page registered, as its room keeps it.

    The definition is kept as its JSON text and parsed when read, the last DEFINITIONS_PARSED
    read staying parsed, and its schemas' checks made when used, the last SCHEMA_CHECKS_KEPT
    staying made: a string is one object the garbage collector never walks, where a model and
    its schemas were seven or more and a check some twenty, and every full collection walks
    every object kept (with the event loop stopped)."""

    __slots__ = ("key", "page_name", "session_id", "app", "page_label", "origin", "seq", "description", "pinned",
                 "_definition_json")

    def __init__(self, key: str, page_name: str, session_id: str, definition: ToolDefinition, app: str | None,
                 page_label: str, seq: int, origin: str | None = None, definition_json: str | None = None) -> None:
        self.key = key  # the MCP name agents see
        self.page_name = page_name  # the name the page gave
        self.session_id = session_id
        self.app = app  # the page's title, which the index reads too
        self.page_label = page_label  # how agents tell this tool's page from another offering the same name
        self.origin = origin  # the web origin the bridge saw the page connect from (None: not a browser's)
        self.seq = seq  # registration order in the room (a shared name's: when it was first given)
        self.redefine(definition, definition_json)

    @property
    def definition(self) -> ToolDefinition:
        """The checked definition; shared with other tools of the same definition: never changed."""
        return _parsed_definition(self._definition_json)

    def redefine(self, definition: ToolDefinition, definition_json: str | None = None) -> None:
        """`definition_json`: the definition's JSON text, when at hand."""
        self._definition_json = definition_json or definition.model_dump_json()
        self.description, self.pinned = definition.description, definition.pinned  # read for every tool

    def alike(self, other: Tool) -> bool:
        """The same definition from the same origin: tabs of one app offering one tool."""
        return self._definition_json == other._definition_json and self.origin == other.origin

    @property
    def definition_json(self) -> str:
        """The checked definition as JSON text, as kept: what shared mode publishes, neither parsed
        nor written again."""
        return self._definition_json

    def describe(self, description_max_chars: int | None = None) -> dict[str, Any]:
        """The tool as an MCP tool definition (wire shape) in its page's words, optionally with a cut
        description (Room.describe adds the bridge's)."""
        d = self.definition
        description = d.description
        if description_max_chars is not None and len(description) > description_max_chars:
            description = cut_text(description, description_max_chars, rstrip=True)
        listed: dict[str, Any] = {"name": self.key, "description": description, "inputSchema": d.inputSchema}
        if d.title is not None:
            listed["title"] = d.title
        if d.outputSchema is not None:
            listed["outputSchema"] = d.outputSchema
        if d.annotations is not None:
            listed["annotations"] = d.annotations.model_dump(exclude_none=True)
        if d.execution is not None:
            listed["execution"] = d.execution.model_dump()
        meta: dict[str, Any] = {}
        if d.inputExamples:
            meta[INPUT_EXAMPLES_META] = d.inputExamples
        if self.untrusted_content:
            meta[UNTRUSTED_CONTENT_META] = True
        if meta:
            listed["_meta"] = meta
        return listed

    @property
    def untrusted_content(self) -> bool:
        """Its page says its output may hold text someone other than the page's author wrote."""
        annotations = self.definition.annotations
        return annotations is not None and bool(annotations.untrustedContentHint)

    @property
    def task_support(self) -> str:
        return self.definition.execution.taskSupport if self.definition.execution is not None else "forbidden"

    def argument_errors(self, arguments: dict[str, Any]) -> str | None:
        """A readable reason the arguments break the input schema, or None."""
        return self._schema_errors("inputSchema", arguments, "(arguments)")

    def result_errors(self, result: dict[str, Any]) -> str | None:
        """A readable reason a CallToolResult (wire JSON) breaks the output schema, or None.

        MCP requires the structured content of a tool with an output schema to match it;
        error results are exempt.
        """
        if self.definition.outputSchema is None or result.get("isError"):
            return None
        if "structuredContent" not in result:
            return "the tool has an outputSchema but its result has no structured content"
        return self._schema_errors("outputSchema", result["structuredContent"], "(result)")

    def result_mismatch(self, result: dict[str, Any], name: str) -> str | None:
        """What the agent is told when a page's CallToolResult (wire JSON) breaks the output schema (`result_errors`),
        `name` being the tool as the agent called it; None when it does not."""
        problem = self.result_errors(result)
        if problem is None:
            return None
        return f"The page's result for {name} does not match its output schema: {problem}"

    def _schema_errors(self, schema_field: str, instance: Any, whole: str) -> str | None:
        problem = _schema_check(self._definition_json, schema_field).errors(instance, whole)
        return problem and problem.replace("the schema cannot", f"the tool's {schema_field} cannot")

    def indexed(self, definition: ToolDefinition | None = None) -> IndexedTool:
        """What the index reads of the tool; `definition`: its definition when at hand, not parsed again."""
        d = definition or self.definition
        return IndexedTool(key=self.key, name=self.page_name, description=d.description, title=d.title,
                           app=self.app, input_schema=d.inputSchema)


# Definitions kept parsed and schema checks kept made: those of the tools agents are listing, finding
# and calling now. Parsing one again costs microseconds; keeping one costs every full collection.
DEFINITIONS_PARSED = 64
SCHEMA_CHECKS_KEPT = 64


@lru_cache(maxsize=DEFINITIONS_PARSED)
def _parsed_definition(text: str) -> ToolDefinition:
    return ToolDefinition.model_validate_json(text)


@lru_cache(maxsize=SCHEMA_CHECKS_KEPT)
def _schema_check(definition_json: str, schema_field: str) -> schemas.SchemaCheck:
    return schemas.SchemaCheck(getattr(_parsed_definition(definition_json), schema_field))


@dataclass(frozen=True)
class DefinitionLimits:
    max_description_chars: int = DEFAULTS.max_description_chars  # the longest a page may register
    schema: SchemaLimits = SchemaLimits()


def check_definition(raw: Any, limits: DefinitionLimits = DefinitionLimits(), reserved_names: Collection[str] = ()
                     ) -> ToolDefinition:
    """Parse one tool definition a page sent; ValueError says what is wrong with it. `reserved_names`:
    the meta-tools' names, which no title may pass for."""
    try:
        definition = ToolDefinition.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(validation_summary(exc)) from None
    if not TOOL_NAME.fullmatch(definition.name):
        raise ValueError("name: a tool name has no control characters")
    reserved = folded_names(frozenset(reserved_names))
    _check_page_text("description", definition.description)
    _check_page_text("title", definition.title, reserved)
    if len(definition.description) > limits.max_description_chars:
        raise ValueError(f"description: {len(definition.description)} characters, over the limit of "
                         f"{limits.max_description_chars}")
    for field_name in ("inputSchema", "outputSchema"):
        schema = getattr(definition, field_name)
        if schema is None:
            continue
        if schema.get("type") != "object":
            raise ValueError(f'{field_name} must be a JSON Schema with "type": "object" at its root')
        problem = schemas.schema_problem(schema, limits.schema)
        if problem is not None:
            raise ValueError(f"{field_name} is not a usable JSON Schema: {problem}")
    # Free JSON agents are shown as it is: bounded like a schema, so that no tools/list fails to
    # serialize (too deep) or grows without end (too large).
    if definition.annotations is not None:
        annotations = definition.annotations.model_dump(exclude_none=True)
        _check_free_json("annotations", annotations, limits.schema)
        _check_page_text("annotations.title", definition.annotations.title, reserved)
        for text in _texts(annotations):  # its other members' too
            _check_page_text("annotations", text)
    if definition.inputExamples:
        _check_free_json("inputExamples", definition.inputExamples, limits.schema, per_item=True)
        # The examples of a tool share one work budget: a page cannot buy more with more examples.
        steps = schemas.VALIDATION_STEPS // len(definition.inputExamples)
        check = schemas.SchemaCheck(definition.inputSchema, steps=steps)
        for number, example in enumerate(definition.inputExamples):
            problem = check.errors(example, "(example)")
            if problem is not None:
                raise ValueError(f"inputExamples[{number}] does not match the inputSchema: {problem}")
    return definition


@lru_cache(maxsize=8)
def folded_names(names: frozenset[str]) -> frozenset[str]:
    """`names` casefolded, made once per set (a room's reserved names, every title a page registers)."""
    return frozenset(name.casefold() for name in names)


def _check_page_text(field_name: str, text: str | None, reserved: frozenset[str] = frozenset()) -> None:
    """A page's text agents read beside its tool's name: it may not say what only the bridge says (which
    page a tool comes from), nor be a title passing for one of the bridge's own tools (`reserved`, casefolded)."""
    if not text:
        return
    if PROVENANCE_MARK.search(text):
        raise ValueError(f"{field_name}: '[from page' is how the bridge tells agents which page a tool comes "
                         "from; a page's own text may not say it")
    if text.strip().casefold() in reserved:
        raise ValueError(f"{field_name}: {json.dumps(text.strip())} is the name of one of the bridge's own tools; "
                         "a page's tool may not take it as its title")


def _texts(value: Any) -> Iterable[str]:
    """Every string of a JSON value (its members' names too), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _check_free_json(field_name: str, value: Any, limits: SchemaLimits, *, per_item: bool = False) -> None:
    """`per_item`: `value` is the protocol's own list, each item named in errors and bounded in depth."""
    size = len(json.dumps(value, separators=(",", ":")).encode())
    if size > limits.max_bytes:
        raise ValueError(f"{field_name}: {size} bytes, over the limit of {limits.max_bytes}")
    parts = [(f"{field_name}[{n}]", item) for n, item in enumerate(value)] if per_item else [(field_name, value)]
    for where, part in parts:
        depth = schemas.nesting(part)
        if depth > limits.max_depth:
            raise ValueError(f"{where}: nests {depth} levels deep, over the limit of {limits.max_depth}")


@dataclass(frozen=True)
class Listing:
    tools: list[dict[str, Any]]  # MCP tool definitions, in registration order
    search_mode: bool
    deferred: int  # tools in the room that are not listed
    fingerprint: str  # equal fingerprints mean an agent would see the same tools/list

    @cached_property
    def keys(self) -> frozenset[str]:
        return frozenset(t["name"] for t in self.tools)


def _fingerprint(search_mode: bool, tools_as_read: Iterable[str]) -> str:
    return "\n".join([json.dumps(search_mode), *tools_as_read])  # JSON text holds no raw line break


class Room:
    """The tools of one room, their MCP names, their index and what is listed."""

    def __init__(self, name: str, policy: ListingPolicy, embedder: Embedder | None = None,
                 sweep_later: Callable[[Room], None] | None = None) -> None:
        """`sweep_later(room)`: frees what unregister() left in the index (`index.sweep()`, a
        slice at a time between turns of its loop); None: unregister() frees it at once."""
        self.name = name
        self.policy = policy
        # A name passing for a meta-tool's whatever its case (`Tool_Search`) is no page's to take either.
        self._reserved = folded_names(policy.reserved_names)
        self._sweep_later = sweep_later
        self._tools: dict[str, Tool] = {}  # by MCP name: the tool listed under it, in registration order
        # MCP name -> the other pages' tools listed under it: tabs of one app (the same definition from
        # the same origin), the first of which is listed when the listed tool's page leaves.
        self._sharers: dict[str, list[Tool]] = {}
        self._by_page: dict[str, dict[str, Tool]] = {}  # session id -> page name -> tool, in registration order
        self._keys_by_name: dict[str, dict[str, None]] = {}  # page name -> the MCP names it is listed under
        self._aliases: dict[str, str] = {}  # a name a tool had before it took its plain name -> that name
        self._page_tools = 0  # the tools pages registered, a name several pages share counted for each
        self._activated: OrderedDict[str, None] = OrderedDict()  # least recently used first
        self._pinned: dict[str, None] = {}  # listed whatever the limits; kept apart so no listing scans every tool
        self.activation_changes = 0  # bumped when `activated` (its order too) changes
        self._index = ToolIndex(embedder=embedder)
        self._seq = 0
        self._listing: Listing | None = None
        # Search mode's listing in parts, so that a search activating a tool recomputes little: the
        # keys listed whatever agents activate (pinned, then the prefix that fits), and each listed
        # tool as listed and as read (see _as_read); both kept until the room's tools change.
        self._inline: list[str] | None = None
        self._listed: dict[str, tuple[dict[str, Any], str]] = {}
        self._listed_now: set[str] | None = None  # search mode's listed keys, until the listing changes
        self._listeners: list[Callable[[Room], None]] = []

    # --- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, key: str) -> Tool | None:
        return self._tools.get(key)

    def named(self, name: str) -> Tool | None:
        """The tool an agent reaches by `name`: its MCP name, or the name it had before it took its plain name."""
        return self._tools.get(self._aliases.get(name, name))

    def offered_by(self, session_id: str, page_name: str) -> Tool | None:
        """The tool a page registered under `page_name`, if it did."""
        return self._by_page.get(session_id, {}).get(page_name)

    def offering(self, tool: Tool) -> list[Tool]:
        """Every page's tool listed under `tool`'s name, the listed one first (several: tabs of one app);
        `tool` alone when its name lists another tool now (its page left meanwhile)."""
        listed, sharers = self._tools.get(tool.key), self._sharers.get(tool.key)
        return [listed, *sharers] if listed is not None and sharers and listed.alike(tool) else [tool]

    def tools_of(self, session_id: str) -> list[Tool]:
        return list(self._by_page.get(session_id, {}).values())

    @property
    def page_tools(self) -> int:
        """How many tools pages registered here; a name several pages share counts for each."""
        return self._page_tools

    def describe(self, tool: Tool, description_max_chars: int | None = None) -> dict[str, Any]:
        """The tool as agents see it listed: in its page's words, and the bridge's (see `told`)."""
        described = tool.describe(description_max_chars)
        described["description"] = self.told(tool, described["description"])
        return described

    def told(self, tool: Tool, description: str) -> str:
        """`description` (the tool's, or a part of it) as agents read it: marked as page text when the
        policy says so, and followed by which page it comes from when agents are told (see provenance)."""
        hint = hint_mark(tool.definition.annotations) if self.policy.mark_page_text else None
        return as_told(description, provenance=self.provenance(tool), hint=hint)

    def marks_result(self, tool: Tool) -> bool:
        """Whether the texts of the tool's results are marked as page text (bridge.core.provenance)."""
        return self.policy.mark_page_text and tool.untrusted_content

    def provenance(self, tool: Tool) -> str | None:
        """Which page a tool comes from, as agents are told: always when page text is marked, else
        when its name does not tell it alone (its page's name is listed under another name too, or
        this one is not the plain name: taken by a meta-tool, or by another of its page's names): the
        tools of the user's own app are not each told it, as the inline token budget counts every
        description. None when not told."""
        if (not self.policy.mark_page_text and len(self._keys_by_name.get(tool.page_name, ())) < 2
                and tool.key == mcp_safe_name(tool.page_name)):
            return None
        offering = self.offering(tool)
        others = len(offering) - 1
        return offering[0].page_label + (f" and {others} other page{'s' if others > 1 else ''} of that origin"
                                         if others else "")

    @property
    def index(self) -> ToolIndex:
        """The room's search index (for the hub's embedding step, bridge.search.semantic.embed_pending, and
        `sweep_later`)."""
        return self._index

    def use_embedder(self, embedder: Embedder) -> None:
        """Search by meaning too from now on: the room's tools wait for their vectors, each read
        as the embedding step takes it, and are found by words meanwhile as before (see
        ToolIndex.use_embedder)."""
        self._index.use_embedder(embedder, lambda key: self._tools[key].indexed())

    def is_deferred(self, key: str) -> bool:
        return key in self._tools and key not in self._listed_keys()

    @property
    def deferred(self) -> int:
        """How many of the room's tools are not listed (found through search only)."""
        return len(self._tools) - len(self._listed_keys())

    def _listed_keys(self) -> Collection[str]:
        """The keys the listing holds, without building it where search mode is certain: a search
        asks after each activation, and only telling agents of the change needs the listing."""
        if self._listing is not None or len(self._tools) <= self.policy.inline_max:
            return self.listing().keys
        return self._search_mode_keys()

    def _search_mode_keys(self) -> set[str]:
        """Search mode's listed keys: the inline part, then whatever agents activated, whatever the
        budget says (they asked for it; at most max_activated of them, see activate)."""
        if self._listed_now is None:
            if self._inline is None:
                self._inline = self._inline_keys()
            self._listed_now = {*self._inline, *(key for key in self._activated if key in self._tools)}
        return self._listed_now

    def listing(self) -> Listing:
        if self._listing is None:
            self._listing = self._compute_listing()
        return self._listing

    def _compute_listing(self) -> Listing:
        p = self.policy
        if len(self._tools) <= p.inline_max:
            everything = [self.describe(t) for t in self._tools.values()]
            as_read = [_as_read(described) for described in everything]
            if sum(len(text) // 4 for text in as_read) <= p.inline_token_budget:
                return Listing(everything, search_mode=False, deferred=0, fingerprint=_fingerprint(False, as_read))
        ordered = sorted(self._search_mode_keys(), key=lambda key: self._tools[key].seq)
        self._listed = {key: self._as_listed(self._tools[key]) for key in ordered}  # what is listed only
        return Listing([described for described, _ in self._listed.values()], search_mode=True,
                       deferred=len(self._tools) - len(ordered),
                       fingerprint=_fingerprint(True, (text for _, text in self._listed.values())))

    def _inline_keys(self) -> list[str]:
        """Search mode's tools listed whatever agents activate: pinned tools, whatever the limits
        say (the page asked); then a prefix of registration order that fits beside the meta-tools
        in what the pinned tools left."""
        p = self.policy
        keys = list(self._pinned)
        room_for = p.inline_max - p.meta_tools - len(keys)
        budget = p.inline_token_budget - p.meta_tool_tokens - sum(len(self._as_listed(self._tools[key])[1]) // 4
                                                                  for key in keys)
        for tool in self._tools.values():
            if tool.pinned:
                continue
            cost = len(self._as_listed(tool)[1]) // 4
            if room_for <= 0 or cost > budget:
                break
            keys.append(tool.key)
            room_for, budget = room_for - 1, budget - cost
        return keys

    def _as_listed(self, tool: Tool) -> tuple[dict[str, Any], str]:
        """The tool as search mode lists it, and as read (see _as_read)."""
        found = self._listed.get(tool.key)
        if found is None:
            described = self.describe(tool, self.policy.description_max_chars)
            found = self._listed[tool.key] = described, _as_read(described)
        return found

    # --- change ----------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[Room], None]) -> Callable[[], None]:
        """Call `listener(room)` after every change that may alter the listing."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _changed(self, tools: bool = False) -> None:
        """`tools`: tools came, went or changed (not only which are activated)."""
        if tools:
            self._inline = None
            self._listed.clear()
        self._listing = None
        self._listed_now = None
        for listener in list(self._listeners):
            listener(self)

    def register(self, session_id: str, app: str | None, definitions: Iterable[ToolDefinition],
                 page_label: str | None = None, keys: Iterable[str] = (), origin: str | None = None) -> list[Tool]:
        """Add or replace a page's tools; returns them with their MCP names. `origin`: the web origin
        the page connected from (tabs of one app share names). `keys`: the names another process gave
        them, kept where free (shared mode), so agents see one name."""
        page_label = page_label or f"page {session_id[:6]}"
        registered, given, indexed = [], iter(keys), []
        for definition in definitions:
            wanted = next(given, None)
            text = definition.model_dump_json()
            existing = self.offered_by(session_id, definition.name)
            if existing is not None and (existing.key not in self._sharers or existing.definition_json == text):
                existing.redefine(definition, text)
                existing.app = app
                if definition.pinned:
                    self._pinned[existing.key] = None
                    self._activated.pop(existing.key, None)  # listed anyway: it takes no activation slot
                else:
                    self._pinned.pop(existing.key, None)
                registered.append(existing)
                if self._tools[existing.key] is existing:
                    indexed.append(existing.indexed(definition))
                continue
            if existing is not None:  # a tab changed a tool it shared a name with other tabs: it leaves that name
                del self._by_page[session_id][definition.name]
                self._leave(existing)
            tool = self._add(session_id, app, definition, text, page_label, origin, wanted)
            registered.append(tool)
            if self._tools[tool.key] is tool:
                indexed.append(tool.indexed(definition))
        if indexed:
            self._index.add(indexed)
        if registered:
            self._changed(tools=True)
        return registered

    def _add(self, session_id: str, app: str | None, definition: ToolDefinition, text: str, page_label: str,
             origin: str | None, wanted: str | None) -> Tool:
        """A page's new tool: sharing the name of the same definition from the same origin, else listed
        under a free name (`wanted` when free)."""
        shared = None
        if wanted is not None and self._free(wanted, session_id):
            key = wanted
        else:
            shared = self._shared_name(definition.name, text, origin, wanted)
            key = shared or self._free_name(definition.name, session_id)
        if shared is not None:
            tool = Tool(key, definition.name, session_id, definition, app, page_label, self._tools[key].seq, origin,
                        text)
            self._sharers.setdefault(key, []).append(tool)
        else:
            self._seq += 1
            tool = Tool(key, definition.name, session_id, definition, app, page_label, self._seq, origin, text)
            self._tools[key] = tool
            self._keys_by_name.setdefault(definition.name, {})[key] = None
            if definition.pinned:
                self._pinned[key] = None
        self._by_page.setdefault(session_id, {})[definition.name] = tool
        self._page_tools += 1
        return tool

    def _shared_name(self, page_name: str, text: str, origin: str | None, wanted: str | None) -> str | None:
        """The name under which other pages list the same definition (`text`) from the same origin:
        tabs of one app. Another origin's copy of a tool does not pass for it."""
        for key in chain((wanted,) if wanted is not None else (), self._keys_by_name.get(page_name, ())):
            listed = self._tools.get(key)
            if listed is not None and listed.definition_json == text and listed.origin == origin:
                return key
        return None

    def _free_name(self, page_name: str, session_id: str) -> str:
        """The page's own name when free; else `<name>__<first 6 chars of the page's session id>`."""
        name = mcp_safe_name(page_name)
        if self._free(name, session_id):
            return name
        suffix = "__" + session_id[:TAG_CHARS]
        candidate = name[: MCP_NAME_MAX - len(suffix)] + suffix
        n = 2
        while not self._free(candidate, session_id):  # the same page registered two names that sanitize alike
            tail = f"{suffix}_{n}"
            candidate, n = name[: MCP_NAME_MAX - len(tail)] + tail, n + 1
        return candidate

    def _free(self, name: str, session_id: str) -> bool:
        """No tool, meta-tool or former name is `name`, and it does not pass for another page's tool."""
        return not (name in self._tools or name.casefold() in self._reserved or name in self._aliases
                    or self._tagged_as_another(name, session_id))

    def _tagged_as_another(self, name: str, session_id: str) -> bool:
        """`name` ends as the names given to another page of the room do (`__` and its tag)."""
        head, _, tag = name.rpartition("__")
        return bool(head) and len(tag) == TAG_CHARS and any(
            sid.startswith(tag) for sid in self._by_page if sid != session_id)

    def unregister(self, session_id: str, page_names: Iterable[str] | None = None) -> list[Tool]:
        """Remove the named tools of a page (all of them when `page_names` is None): gone from
        listings, searches and names at once. With `sweep_later`, their index entries are only
        hidden (ToolIndex.retire) and it frees them: at once, 1,000 tools leaving would hold the
        loop for tens of ms."""
        offered = self._by_page.get(session_id, {})
        if page_names is None:
            doomed = list(offered.values())
        else:
            doomed = [t for n in dict.fromkeys(page_names) if (t := offered.get(n)) is not None]
        freed: list[str] = []
        heirs: list[Tool] = []  # tools newly listed under a name: the index reads them again, in one batch
        for tool in doomed:
            del offered[tool.page_name]
            key = self._leave(tool, heirs)
            if key is not None:
                freed.append(key)
                former = self._promote(key, tool)
                if former is not None:
                    freed.append(former)
                    heirs.append(self._tools[key])
        if not offered:
            self._by_page.pop(session_id, None)
        if freed:
            if self._sweep_later is None:
                self._index.remove(freed)
            else:
                self._index.retire(freed)
                self._sweep_later(self)
        if heirs:  # by the names they have now (a heir may have moved to a freed name since)
            self._index.add([heir.indexed() for heir in {heir.key: heir for heir in heirs}.values()])
        if doomed:
            self._changed(tools=True)
        return doomed

    def _leave(self, tool: Tool, heirs: list[Tool] | None = None) -> str | None:
        """Take a tool off the name it is listed under; returns that name when no page offers it any more.
        A sharer listed in its stead whom the index must read again (another page title) joins `heirs`,
        for the caller to index in one batch; without `heirs` it is indexed at once."""
        self._page_tools -= 1
        sharers = self._sharers.get(tool.key)
        if sharers:
            if self._tools[tool.key] is tool:
                heir = self._tools[tool.key] = sharers.pop(0)
                if heir.app != tool.app:  # the index reads the page's title too
                    if heirs is None:
                        self._index.add([heir.indexed()])
                    else:
                        heirs.append(heir)
            else:
                sharers.remove(tool)
            if not sharers:
                del self._sharers[tool.key]
            return None
        del self._tools[tool.key]
        names = self._keys_by_name[tool.page_name]
        del names[tool.key]
        if not names:
            del self._keys_by_name[tool.page_name]
        self._activated.pop(tool.key, None)
        self._pinned.pop(tool.key, None)
        for alias in [alias for alias, key in self._aliases.items() if key == tool.key]:
            del self._aliases[alias]
        return tool.key

    def _promote(self, freed: str, left: Tool) -> str | None:
        """`freed` was the plain name of `left`'s tool, and no page lists it any more: the same
        definition listed under a name of its own (another origin's) takes it; that former name,
        kept as an alias, still reaches it. Returns the former name."""
        if freed != mcp_safe_name(left.page_name):
            return None
        former = next((key for key in self._keys_by_name.get(left.page_name, ())
                       if self._tools[key].definition_json == left.definition_json), None)
        if former is None:
            return None
        group = [self._tools.pop(former), *self._sharers.pop(former, ())]
        self._seq += 1
        for tool in group:
            tool.key, tool.seq = freed, self._seq
        self._tools[freed] = group[0]
        if len(group) > 1:
            self._sharers[freed] = group[1:]
        names = self._keys_by_name[left.page_name]
        del names[former]
        names[freed] = None
        self._aliases = {alias: freed if key == former else key for alias, key in self._aliases.items()}
        self._aliases[former] = freed
        for kept in (self._activated, self._pinned):
            if former in kept:
                del kept[former]
                kept[freed] = None
        return former

    # --- search and activation -------------------------------------------------------------

    def activate(self, keys: Iterable[str]) -> bool:
        """List deferred tools from now on, the last of `keys` as the most recently used; True
        when the listing changed. An activated tool named again only becomes the most recently
        used. Past `max_activated` activated tools, the least recently used leave the listing
        (they stay searchable and callable)."""
        added: set[str] = set()
        evicted = reordered = False
        for key in keys:
            if key in self._activated:
                if next(reversed(self._activated)) != key:
                    self._activated.move_to_end(key)
                    reordered = True
            elif key in self._tools and self.is_deferred(key):
                self._activated[key] = None
                added.add(key)
        while len(self._activated) > max(self.policy.max_activated, 0):
            oldest, _ = self._activated.popitem(last=False)
            if oldest in added:
                added.discard(oldest)
            else:
                evicted = True
        if added or evicted or reordered:
            self.activation_changes += 1
        if not (added or evicted):
            return False
        self._changed()
        return True

    @property
    def activated(self) -> list[str]:
        """The activated tools, least recently used first."""
        return list(self._activated)

    def resolve(self, key: str) -> Tool | None:
        """The tool by MCP name; a deferred one is activated, so calling it needs no search first."""
        tool = self.named(key)
        if tool is not None:
            self.activate([tool.key])
        return tool

    async def search(self, query: str, limit: int) -> list[tuple[Tool, SearchHit]]:
        """The best tools for `query`, best first, each with its hit (its score, and its tier:
        "lexical", by words, or "hybrid", by words and meaning). With the semantic tier the
        query is embedded off the event loop first (bridge.search.semantic.embed_query); when the
        model fails or is busy, the search is by words."""
        vector = None
        embedder = self._index.query_embedder(query)
        if embedder is not None:
            try:
                vector = await embed_query(embedder, query)
            except EmbeddingBusy:
                pass
            except Exception:
                log.exception("semantic tool search: the query could not be embedded; searching by words")
        # The index's model is still `embedder` (an index keeps its one: ToolIndex.use_embedder).
        return [(self._tools[hit.key], hit) for hit in self._index.search(query, limit, query_vector=vector)
                if hit.key in self._tools]

    def resembling(self, name: str, also: Iterable[str] = ()) -> list[str]:
        """The names of the room's tools, listed or deferred, and of `also` (the meta-tools), that `name`
        may be a slip for, closest first. A large room compares those a search for `name` finds."""
        if len(name) > 2 * MCP_NAME_MAX:
            return []
        if len(self._tools) <= RESEMBLING_SCAN_MAX:
            candidates: Iterable[str] = self._tools
        else:
            candidates = (hit.key for hit in self._index.search(name.replace("_", " "), RESEMBLING_SEARCHED))
        by_lowered = {key.lower(): key for key in chain(also, candidates)}
        return [by_lowered[alike] for alike in
                difflib.get_close_matches(name.lower(), by_lowered, RESEMBLING_SHOWN, RESEMBLANCE)]

    def search_tier(self, query: str) -> str:
        """How `query` would be searched now: "hybrid" once the room's tools are embedded, else "lexical"."""
        return "lexical" if self._index.query_embedder(query) is None else "hybrid"


class Catalog:
    """All rooms; a room exists while anything refers to it."""

    def __init__(self, policy: ListingPolicy, embedder: Embedder | None = None,
                 sweep_later: Callable[[Room], None] | None = None) -> None:
        """`sweep_later`: given to every room (see Room)."""
        self.policy = policy
        self.embedder = embedder  # given to rooms made from now on (see Room.use_embedder for the others)
        self._sweep_later = sweep_later
        self._rooms: dict[str, Room] = {}

    def __len__(self) -> int:
        return len(self._rooms)

    def get(self, name: str) -> Room | None:
        return self._rooms.get(name)

    def forget(self, name: str) -> None:
        self._rooms.pop(name, None)

    def room(self, name: str) -> Room:
        room = self._rooms.get(name)
        if room is None:
            room = self._rooms[name] = Room(name, self.policy, self.embedder, self._sweep_later)
        return room

    def rooms(self) -> list[Room]:
        return list(self._rooms.values())

    def use_embedder(self, embedder: Embedder) -> None:
        """Every room, and every room made from now on, searches by meaning too."""
        self.embedder = embedder
        for room in self._rooms.values():
            room.use_embedder(embedder)
