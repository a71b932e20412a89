"""Property-based fuzzing of the bridge's three edges: page messages over a live WebSocket, the event
stream's query parameters, and MCP tool arguments from real SDK agents.

One bridge serves the whole module: it runs, with its pages and agents, on an event loop in a thread of
its own, and each example is a coroutine handed to that loop, so an example costs a round trip rather than
a bridge start. Each property ends by checking that the bridge still serves a good call end to end.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp import Client
from support import Page, RunningBridge, open_page, running_bridge, tool

FUZZ = settings(max_examples=100, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Replies a page may get to a message of its own (after its hello), and the documented error codes.
REPLY_TYPES = {"agui.error", "agui.tools.registered", "agui.tools.unregistered"}
ERROR_CODES = {"bad_json", "bad_message", "unknown_type", "hello_first", "unauthorized", "bad_room",
               "forbidden_origin", "too_large", "invalid_tool", "unknown_tool", "unknown_call", "too_many_rooms"}
PAGE_TYPES = ["agui.hello", "agui.tools.register", "agui.tools.unregister", "agui.tool.return", "agui.tool.progress"]


class LiveBridge:
    """A bridge, its pages and its agents, held by one task on a loop in a background thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="fuzzed bridge", daemon=True)
        self._thread.start()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._holder = asyncio.run_coroutine_threadsafe(self._hold(), self.loop)
        if not self._ready.wait(30):
            self._holder.result(1)  # raises what went wrong
            raise RuntimeError("the fuzzed bridge did not start")

    async def _hold(self) -> None:
        self._stop = asyncio.Event()
        async with running_bridge(page_grace=60) as b, \
                Client(b.mcp_url("mcpfuzz"), mode="legacy") as legacy, \
                Client(b.mcp_url("mcpfuzz"), mode="2026-07-28") as modern, \
                Client(b.mcp_url("pagefuzz"), mode="legacy") as page_agent:
            self.b: RunningBridge = b
            self.agents = {"legacy": legacy, "2026-07-28": modern}
            self.page_agent = page_agent
            self.fuzzed = await open_page(b, tool("fuzz_dup"), room="pagefuzz")
            self.victim = Page(b, room="streamfuzz")  # an event stream's session, never read by itself
            await self.victim.connect(listen=False)
            self.responder = await open_page(b, TYPED, FREE, *FILLERS, room="mcpfuzz")
            answering = asyncio.create_task(self._answer_everything())
            self._ready.set()
            try:
                await self._stop.wait()
            finally:
                answering.cancel()
                for p in (self.fuzzed, self.victim, self.responder):
                    try:
                        await p.close()
                    except Exception:
                        pass

    async def _answer_everything(self) -> None:
        while True:
            invoke = await self.responder.events.get()
            await self.responder.answer(invoke["call_id"], result={"got": invoke["params"]})

    def run(self, coroutine: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._holder.result(30)
            self.run(_cancel_the_rest())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()


async def _cancel_the_rest() -> None:
    """Tasks the bridge's libraries leave behind (sse-starlette's shutdown watchers) end with the loop."""
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


TYPED = {"name": "typed", "description": "Create a labelled item.", "inputSchema": {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 40, "pattern": "^[a-z ]*$"},
        "count": {"type": "integer", "minimum": 0, "maximum": 100},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "mode": {"enum": ["a", "b"]},
        "payload": {},
    },
    "required": ["title"],
    "additionalProperties": False,
}}
FREE = {"name": "free", "description": "Take anything.", "inputSchema": {"type": "object"}}
WORDS = ["calendar", "invoice", "weather", "cart", "dialog", "upload", "search", "map", "note", "photo"]
FILLERS = [tool(f"filler_{i}", f"Handle the {WORDS[i % 10]} of the {WORDS[(i * 7) % 10]} page, variant {i}.")
           for i in range(50)]  # the room is in search mode: the meta-tools are listed and deferred tools exist


@pytest.fixture(scope="module")
def live():
    bridge = LiveBridge()
    try:
        yield bridge
    finally:
        bridge.close()


# --- strategies -------------------------------------------------------------------------------

leaves = (st.none() | st.booleans() | st.integers(-(10 ** 30), 10 ** 30)
          | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=10)
message_ids = st.none() | st.text(max_size=6) | st.integers() | st.booleans() | json_values
property_schemas = json_values | st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "array", "object", "nope"])},
    optional={"pattern": st.text(max_size=8) | st.sampled_from(["^(a+)+$", "(?=a)", r"(a)\1", "[", "^[a-z]+$"]),
              "maxLength": st.integers(-1, 10), "items": json_values, "enum": st.lists(json_values, max_size=3),
              "$ref": st.sampled_from(["#", "#/nope", "https://evil.example/x", "#/properties/a"])})
schemas = json_values | st.fixed_dictionaries(
    {"type": st.sampled_from(["object", "object", "object", "array", 5])},
    optional={
        "properties": st.dictionaries(st.text(max_size=6), property_schemas, max_size=3),
        "required": st.lists(st.text(max_size=6), max_size=2) | json_values,
        "additionalProperties": st.booleans() | property_schemas,
        "patternProperties": st.dictionaries(st.text(max_size=6) | st.just("(?!x)"), property_schemas, max_size=2),
        "$ref": st.sampled_from(["#", "#/nope", "https://evil.example/x", "#/properties/a"]),
        "allOf": st.lists(st.just({"$ref": "#"}) | property_schemas, max_size=2),
        "$defs": st.dictionaries(st.text(max_size=4), property_schemas, max_size=2),
    })
tool_names = st.text(min_size=1, max_size=20) | st.sampled_from(["fuzz_echo", "tool_search", "a\x00b", "", "x" * 129])
tool_definitions = st.fixed_dictionaries(
    {"name": tool_names},
    optional={"description": st.text(max_size=40) | json_values, "inputSchema": schemas,
              "outputSchema": schemas, "title": st.text(max_size=10) | json_values,
              "annotations": json_values | st.fixed_dictionaries({}, optional={"readOnlyHint": json_values,
                                                                                "title": json_values}),
              "pinned": st.booleans() | json_values,
              "inputExamples": st.lists(st.dictionaries(st.text(max_size=4), json_values, max_size=2), max_size=2)
              | json_values})
call_ids = st.text(max_size=12) | st.just("c_AAAAAAAAAAAAAAAA") | json_values
numbers = st.integers() | st.floats(allow_nan=False, allow_infinity=False)


def _message(kind: str, required: dict, **optional) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"type": st.just(kind), **required}, optional={"id": message_ids, **optional})


page_messages = st.one_of(
    # Shaped like each page message, mostly valid ...
    _message("agui.hello", {}, room=st.text(max_size=8) | json_values, session_id=st.text(max_size=8) | json_values,
             token=json_values, page=json_values | st.fixed_dictionaries({}, optional={"url": json_values})),
    _message("agui.tools.register", {"tools": st.lists(tool_definitions | json_values, max_size=3)}),
    _message("agui.tools.unregister", {"tools": st.lists(tool_names, max_size=3) | json_values}),
    _message("agui.tool.return", {"call_id": call_ids}, result=json_values,
             error=json_values | st.fixed_dictionaries({"message": st.text(max_size=8) | json_values},
                                                       optional={"code": json_values})),
    _message("agui.tool.progress", {"call_id": call_ids, "progress": numbers | json_values},
             total=numbers | json_values, message=json_values),
    # ... and anything with a type.
    st.fixed_dictionaries(
        {"type": st.sampled_from(PAGE_TYPES + ["agui.nope", "agui.welcome", ""]) | json_values},
        optional={"id": message_ids, "tools": json_values, "call_id": json_values, "result": json_values,
                  "progress": json_values, "room": json_values}),
)
NOT_JSON = ['{"type": "agui.tool.return", "call_id": "c_x", "result": NaN}',
            '{"type": "agui.tool.progress", "call_id": "c_x", "progress": Infinity}',
            '{"type": "agui.tool.return", "result": ' + "1" * 5000 + "}",
            '{"type": "agui.tools.register", "tools": [' * 5000, "[" * 100_000]
frames = (page_messages.map(json.dumps) | json_values.map(json.dumps) | st.text(max_size=60)
          | st.binary(max_size=60) | st.sampled_from(NOT_JSON))


# --- page messages ----------------------------------------------------------------------------


def test_arbitrary_page_messages_are_answered_and_hurt_nothing(live):
    counter = iter(range(10 ** 9))

    async def exchange(frame: str | bytes) -> list[dict]:
        """Send `frame`, then a sentinel: the replies that came before the sentinel's."""
        p = live.fuzzed
        sentinel = f"sentinel-{next(counter)}"
        await p.ws.send(frame)  # bytes go as a binary frame
        await p.send({"type": "agui.tools.unregister", "id": sentinel, "tools": []})
        replies = []
        while (reply := await p.reply(timeout=5)).get("reply_to") != sentinel or reply["type"] != \
                "agui.tools.unregistered":
            replies.append(reply)
        assert reply["tools"] == []
        return replies

    @FUZZ
    @given(frame=frames)
    # Found by this property (tests/test_limits.py has it on its own): one name twice in one unregister.
    @example(frame=json.dumps({"type": "agui.tools.unregister", "tools": ["fuzz_dup", "fuzz_dup"]}))
    def each(frame):
        replies = live.run(exchange(frame))
        # Every message is answered (none of these is a return or progress for a call waiting).
        assert replies, frame
        for reply in replies:
            assert reply["type"] in REPLY_TYPES, (frame, reply)
            if reply["type"] == "agui.error":
                assert reply["code"] in ERROR_CODES, (frame, reply)
                assert isinstance(reply["message"], str) and reply["message"], (frame, reply)
        sent = _strict(frame)
        if isinstance(sent, dict) and "id" in sent:
            for reply in replies:
                if "reply_to" in reply:
                    assert reply["reply_to"] == sent["id"], (frame, reply)
            if isinstance(sent["id"], (str, int)) and not isinstance(sent["id"], bool):
                assert all("reply_to" in r for r in replies), (frame, replies)
        assert live.b.hub.session(live.fuzzed.session_id).connected

    each()

    async def still_serves() -> None:
        p = live.fuzzed
        await p.send({"type": "agui.tools.register", "id": "last", "tools": [tool("fuzz_echo", "Echo.")]})
        while (reply := await p.reply()).get("type") != "agui.tools.registered" or reply.get("reply_to") != "last":
            pass
        name = reply["tools"][0]["name"]
        await live.page_agent.list_tools()  # whatever was registered, the listing is valid MCP
        task = asyncio.create_task(live.page_agent.call_tool(name, {}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], result="survived")
        assert (await asyncio.wait_for(task, 10)).content[0].text == "survived"
        assert name in [t.name for t in (await live.page_agent.list_tools()).tools]  # listed, or activated
        assert live.b.hub.session(live.fuzzed.session_id).streaming

    live.run(still_serves())


def _strict(frame: str | bytes) -> Any:
    """The frame as the bridge reads it (UTF-8, no NaN), or None when it is not JSON."""
    def refuse(constant: str) -> None:
        raise ValueError(constant)
    try:
        return json.loads(frame.decode() if isinstance(frame, bytes) else frame, parse_constant=refuse)
    except (ValueError, RecursionError):
        return None


# --- the event stream's parameters ------------------------------------------------------------

VICTIM = "<the victim page's session id>"
ALLOWED = ["http://127.0.0.1:8080", "http://localhost:5173", "http://[::1]:3000"]
REFUSED = ["https://evil.example", "null", "http://localhost.evil.example"]
latin1 = st.text(st.characters(codec="latin-1", exclude_categories=["Cc"]), max_size=12)


def test_arbitrary_event_stream_parameters_never_fail(live):
    async def status(session: str | None, last: str | None, header: str | None, origin: str | None) -> int:
        """The status of one GET, sent over a raw connection: header bytes go as they are, and quickly."""
        params = {k: v for k, v in (("session", session), ("last_event_id", last)) if v is not None}
        target = httpx.URL("/agui/events", params=params).raw_path
        lines = [b"GET " + target + b" HTTP/1.1", f"Host: 127.0.0.1:{live.b.server.port}".encode()]
        if header is not None:
            lines.append(b"Last-Event-ID: " + header.encode("latin-1"))
        if origin is not None:
            lines.append(b"Origin: " + origin.encode())
        reader, writer = await asyncio.open_connection("127.0.0.1", live.b.server.port)
        try:
            writer.write(b"\r\n".join(lines) + b"\r\n\r\n")
            return int((await asyncio.wait_for(reader.readline(), 10)).split()[1])
        finally:
            writer.close()

    @settings(FUZZ, max_examples=200)
    @given(session=st.sampled_from([VICTIM]) | st.text(max_size=30) | st.none(),
           last=st.none() | st.text(max_size=12) | st.integers(-5, 10 ** 6).map(str),
           header=st.none() | latin1 | st.integers(0, 10 ** 6).map(str),
           origin=st.one_of(st.none(), st.none(), st.sampled_from(ALLOWED), st.sampled_from(REFUSED),
                            st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=20)))
    # Strings that str.isdigit() calls digits but int() does not take, or not below 4300 digits.
    @example(session=VICTIM, last="²", header=None, origin=None)
    @example(session=VICTIM, last="9" * 5000, header=None, origin=None)
    @example(session=VICTIM, last=None, header="³", origin=None)
    @example(session=VICTIM, last=None, header="9" * 5000, origin=None)
    def each(session, last, header, origin):
        real = live.victim.session_id if session == VICTIM else session
        got = live.run(status(real, last, header, origin))
        assert got in (200, 403, 404), (session, last, header, origin, got)
        if origin is None or origin in ALLOWED:
            assert got == (200 if session == VICTIM else 404), (session, last, header, origin, got)
        elif origin in REFUSED:
            assert got == 403

    each()
    assert live.b.hub.session(live.victim.session_id) is not None


# --- MCP arguments ----------------------------------------------------------------------------

# NaN and Infinity are left out: the SDK client sends them as null; tests/test_limits.py sends them raw.
mcp_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10 ** 30), 10 ** 30) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
valid_typed = st.fixed_dictionaries(
    {"title": st.text("abcxyz ", max_size=40)},
    optional={"count": st.integers(0, 100), "tags": st.lists(st.text(max_size=5), max_size=3),
              "mode": st.sampled_from(["a", "b"]), "payload": mcp_values})
typed_arguments = valid_typed | st.fixed_dictionaries(
    {"title": st.text(max_size=50) | st.text("abc ", max_size=45) | mcp_values},
    optional={"count": st.integers(-10, 200) | mcp_values, "tags": st.lists(st.text(max_size=5), max_size=5)
              | mcp_values, "mode": st.sampled_from(["a", "b", "c"]) | mcp_values, "payload": mcp_values,
              "other": mcp_values}) | st.dictionaries(
    st.sampled_from(["title", "count", "tags", "mode", "payload"]) | st.text(max_size=8), mcp_values, max_size=5)
real_names = st.sampled_from(["typed", "free", "filler_3", "filler_45", "tool_search"])
called_names = real_names | st.sampled_from(["nope", ""]) | st.text(max_size=12)
calls = st.one_of(
    st.tuples(st.just("typed"), typed_arguments),
    st.tuples(st.just("free"), st.dictionaries(st.text(max_size=8), mcp_values, max_size=5)),
    st.tuples(st.just("tool_search"), st.fixed_dictionaries(
        {"query": st.text(max_size=40) | st.sampled_from(["calendar invoice", "weather map", "labelled item"])},
        optional={"limit": st.integers(1, 20)})),
    st.tuples(st.just("tool_search"), st.fixed_dictionaries({}, optional={
        "query": st.text(max_size=40) | mcp_values, "limit": st.integers() | mcp_values})
        | st.dictionaries(st.text(max_size=6), mcp_values)),
    st.tuples(st.just("tool_describe"), st.fixed_dictionaries({"name": real_names})),
    st.tuples(st.just("tool_describe"), st.fixed_dictionaries({}, optional={"name": called_names | mcp_values})),
    st.tuples(st.just("call_tool"), st.fixed_dictionaries({"name": st.sampled_from(["typed", "free"]),
                                                           "arguments": valid_typed})),
    st.tuples(st.just("call_tool"), st.fixed_dictionaries({}, optional={
        "name": called_names | mcp_values, "arguments": typed_arguments | mcp_values})),
)


def test_arbitrary_mcp_arguments_get_a_result_never_a_failure(live):
    async def call(era: str, name: str, arguments: dict):
        return await asyncio.wait_for(live.agents[era].call_tool(name, arguments), 15)

    @FUZZ
    @given(era=st.sampled_from(["legacy", "2026-07-28"]), named_call=calls)
    def each(era, named_call):
        name, arguments = named_call
        result = live.run(call(era, name, arguments))  # any exception (transport or protocol) fails
        if result.is_error:
            assert result.content and result.content[0].text, result
            return
        # What the page received is what the agent sent.
        if name in ("typed", "free"):
            assert result.structured_content == {"got": arguments}, (arguments, result)
        elif name == "call_tool" and arguments.get("name") in ("typed", "free", "filler_3", "filler_45"):
            assert result.structured_content == {"got": arguments.get("arguments", {})}, (arguments, result)

    each()

    async def still_serves() -> None:
        for era, client in live.agents.items():
            result = await call(era, "typed", {"title": "still here", "count": 3})
            assert not result.is_error and result.structured_content == {"got": {"title": "still here", "count": 3}}
            listed = [t.name for t in (await client.list_tools()).tools]
            assert "typed" in listed and "tool_search" in listed

    live.run(still_serves())
