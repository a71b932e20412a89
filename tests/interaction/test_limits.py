"""No input that hurts: every limit of the bridge, each answered with a clear error, through the
real endpoints (a uvicorn bridge, websockets/SSE pages, the real MCP SDK client)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
from contextlib import asynccontextmanager

import httpx
import pytest
import websockets
from mcp import Client
from support import Page, RunningBridge, eventually, page, running_bridge, tool

ECHO = tool("echo", "Echo.", {"text": {"type": "string"}})


async def errors_for(p: Page, *definitions: dict) -> tuple[dict, list[dict]]:
    """Register `definitions`; the `agui.tools.registered` reply and the `agui.error`s that follow it."""
    await p.send({"type": "agui.tools.register", "id": "reg", "tools": list(definitions)})
    registered = await p.reply()
    assert registered["type"] == "agui.tools.registered", registered
    errors = []
    while len(registered["tools"]) + len(errors) < len(definitions):
        errors.append(await p.reply())
    assert all(e["type"] == "agui.error" and e["reply_to"] == "reg" for e in errors), errors
    return registered, errors


async def refused(p: Page, definition: dict) -> str:
    """The invalid_tool message for one definition that must be refused."""
    registered, errors = await errors_for(p, definition)
    assert registered["tools"] == [] and len(errors) == 1, (registered, errors)
    assert errors[0]["code"] == "invalid_tool" and errors[0]["tool"] == definition["name"], errors[0]
    return errors[0]["message"]


async def still_serves(b: RunningBridge, p: Page, room: str = "default") -> None:
    """The page can still register a tool, and an agent's call of it round-trips."""
    await p.register(tool("still_alive"))
    async with Client(b.mcp_url(room), mode="legacy") as client:
        task = asyncio.create_task(client.call_tool("still_alive", {}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], result="alive")
        assert (await asyncio.wait_for(task, 10)).content[0].text == "alive"


def nested(levels: int) -> dict:
    """An object schema nesting `levels` schemas, each the only property of the one above it."""
    schema: dict = {"type": "string"}
    for _ in range(levels - 1):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


# --- tools ----------------------------------------------------------------------------------


async def test_tools_per_page_limit():
    async with running_bridge(max_tools_per_page=3) as b, page(b) as p, Client(b.mcp_url(), mode="legacy") as client:
        registered, errors = await errors_for(p, *(tool(f"t{i}") for i in range(5)))
        assert [t["tool"] for t in registered["tools"]] == ["t0", "t1", "t2"]
        assert [(e["code"], e["tool"]) for e in errors] == [("invalid_tool", "t3"), ("invalid_tool", "t4")]
        assert all("3 tools, the most a page may have" in e["message"] for e in errors), errors
        # Replacing a tool it has costs nothing; a new one is still refused.
        registered, errors = await errors_for(p, tool("t0", "Replaced."), tool("t5"))
        assert [t["tool"] for t in registered["tools"]] == ["t0"]
        assert errors[0]["tool"] == "t5" and "most a page may have" in errors[0]["message"]
        # After unregistering one, there is room again.
        await p.send({"type": "agui.tools.unregister", "tools": ["t1"]})
        assert (await p.reply())["tools"] == ["t1"]
        await p.register(tool("t6"))
        assert sorted(t.name for t in (await client.list_tools()).tools) == ["t0", "t2", "t6"]


async def test_tools_per_room_limit():
    async with running_bridge(max_tools_per_room=4) as b, page(b, tool("a0"), tool("a1"), tool("a2")), \
            page(b) as second, page(b, room="elsewhere") as other_room:
        registered, errors = await errors_for(second, tool("b0"), tool("b1"), tool("b2"))
        assert [t["tool"] for t in registered["tools"]] == ["b0"]
        assert [e["tool"] for e in errors] == ["b1", "b2"]
        assert all("room 'default' has 4 tools, the most a room may have" in e["message"] for e in errors), errors
        # The limit is per room.
        await other_room.register(*(tool(f"c{i}") for i in range(4)))


async def test_schema_too_large():
    async with running_bridge(max_schema_bytes=2000) as b, page(b) as p:
        big = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 100}
                                                for i in range(30)}}
        message = await refused(p, {"name": "big", "inputSchema": big})
        assert "inputSchema" in message and "over the limit of 2000" in message and "bytes" in message
        message = await refused(p, {"name": "big_out", "outputSchema": big})
        assert "outputSchema" in message and "over the limit of 2000" in message
        await still_serves(b, p)


async def test_schema_too_deep_and_100_levels_never_hurt_the_connection():
    async with running_bridge() as b, page(b) as p:
        message = await refused(p, {"name": "deep", "inputSchema": nested(40)})
        assert re.search(r"nests \d+ levels deep, over the limit of 32", message), message
        message = await refused(p, {"name": "deeper", "inputSchema": nested(100)})
        assert "over the limit of 32" in message
        # Nesting in arrays counts too.
        schema: dict = {"type": "string"}
        for _ in range(100):
            schema = {"allOf": [schema]}
        assert "over the limit" in await refused(p, {"name": "deep_all_of", "inputSchema": {"type": "object",
                                                                                             **schema}})
        # A frame nested past what a JSON parser takes is bad_json, nothing more.
        await p.send('{"type": "agui.tools.register", "tools": ' + "[" * 100_000 + "]" * 100_000 + "}")
        assert (await p.reply())["code"] == "bad_json"
        await p.register(tool("within", properties={"a": nested(15)}))  # 31 levels
        await still_serves(b, p)


async def test_description_too_long():
    async with running_bridge(max_description_chars=500) as b, page(b) as p:
        message = await refused(p, tool("chatty", "x" * 501))
        assert "description" in message and "501 characters, over the limit of 500" in message
        await p.register(tool("terse", "x" * 500))


@pytest.mark.parametrize("name", ["bad\x00name", "line\nbreak", "esc\x1b[31m", "del\x7f", "\ttab"])
async def test_control_characters_in_a_tool_name(name):
    async with running_bridge() as b, page(b) as p:
        message = await refused(p, tool(name))
        assert "control characters" in message
        await p.register(tool("naïve name ✓"))  # anything else printable is fine (the MCP name is made safe)


async def test_a_schema_that_refers_to_itself_without_end_is_refused():
    async with running_bridge() as b, page(b) as p:
        for schema in ({"type": "object", "allOf": [{"$ref": "#"}]},
                       {"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                        "anyOf": [{"$ref": "#/$defs/a"}]}):
            message = await refused(p, {"name": "loop", "inputSchema": schema})
            assert "refers to itself" in message
        # Recursion that ends with the instance is a legitimate schema.
        tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
        await p.register({"name": "tree", "inputSchema": tree})
        await still_serves(b, p)


async def test_a_ref_elsewhere_is_never_fetched():
    remote = {"type": "object", "properties": {"a": {"$ref": "https://evil.example/schema.json"}}}
    async with running_bridge() as b, page(b, {"name": "remote", "inputSchema": remote}) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await asyncio.wait_for(client.call_tool("remote", {"a": 1}), 10)
        assert result.is_error and "cannot be used" in result.content[0].text
        assert p.events.empty()


async def test_a_redos_pattern_is_matched_in_linear_time():
    redos = tool("match_word", properties={"word": {"type": "string", "pattern": "^(a+)+$"}}, required=["word"])
    async with running_bridge() as b, page(b, redos) as p, page(b, ECHO, room="other") as other, \
            Client(b.mcp_url(), mode="legacy") as agent, Client(b.mcp_url("other"), mode="legacy") as other_agent:
        # A backtracking engine would take longer than the universe's age on this; RE2 takes microseconds.
        evil = asyncio.create_task(agent.call_tool("match_word", {"word": "a" * 4999 + "b"}))
        meanwhile = asyncio.create_task(other_agent.call_tool("echo", {"text": "hi"}))
        invoke = await other.event()
        await other.answer(invoke["call_id"], result="answered")
        assert (await asyncio.wait_for(meanwhile, 10)).content[0].text == "answered"
        result = await asyncio.wait_for(evil, 10)
        assert result.is_error and "does not match" in result.content[0].text
        assert p.events.empty()
        task = asyncio.create_task(agent.call_tool("match_word", {"word": "a" * 5000}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], result="matched")
        assert (await asyncio.wait_for(task, 10)).content[0].text == "matched"


async def test_a_pattern_that_cannot_be_matched_in_linear_time_is_refused():
    async with running_bridge() as b, page(b) as p:
        for name, schema in (
                ("lookahead", {"type": "object", "properties": {"w": {"type": "string", "pattern": "(?=a)"}}}),
                ("backreference", {"type": "object", "properties": {"w": {"type": "string", "pattern": r"(a)\1"}}}),
                ("keys", {"type": "object", "patternProperties": {"(?!x)": {"type": "string"}}})):
            message = await refused(p, {"name": name, "inputSchema": schema})
            assert "linear time" in message, message
        await still_serves(b, p)


async def test_unregistering_a_name_twice_in_one_message_hurts_nothing():
    """Found by tests/interaction/test_fuzz.py: the second `del` of the same tool raised KeyError out of the WebSocket
    handler, which closed the page's socket and left the listing naming a tool that was gone."""
    async with running_bridge() as b, page(b, tool("x"), tool("y")) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        await p.send({"type": "agui.tools.unregister", "id": "u", "tools": ["x", "x"]})
        reply = await p.reply(timeout=3)
        assert reply["type"] == "agui.tools.unregistered" and reply["tools"] == ["x"], reply
        assert [t.name for t in (await client.list_tools()).tools] == ["y"]
        await still_serves(b, p)


# --- calls ----------------------------------------------------------------------------------


async def test_calls_in_flight_per_page_limit():
    async with running_bridge(max_calls_per_page=2) as b, page(b, ECHO) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        waiting = [asyncio.create_task(client.call_tool("echo", {"text": str(i)})) for i in range(2)]
        invokes = [await p.event(), await p.event()]
        refused_call = await asyncio.wait_for(client.call_tool("echo", {"text": "third"}), 5)
        assert refused_call.is_error
        assert "already has 2 calls waiting, the most a page may have" in refused_call.content[0].text
        assert not any(t.done() for t in waiting)
        await asyncio.sleep(0.1)
        assert p.events.empty()  # the refused call never reached the page
        for invoke in invokes:
            await p.answer(invoke["call_id"], result="ok")
        assert [(await t).content[0].text for t in waiting] == ["ok", "ok"]
        task = asyncio.create_task(client.call_tool("echo", {"text": "again"}))
        await p.answer((await p.event())["call_id"], result="room again")
        assert (await task).content[0].text == "room again"


async def test_calls_in_flight_per_room_limit():
    async with running_bridge(max_calls_per_room=3) as b, page(b, tool("one")) as first, \
            page(b, tool("two")) as second, page(b, tool("three"), room="elsewhere") as elsewhere, \
            Client(b.mcp_url(), mode="legacy") as client, Client(b.mcp_url("elsewhere"), mode="legacy") as other:
        waiting = [asyncio.create_task(client.call_tool(name, {})) for name in ("one", "one", "two")]
        invokes = [await first.event(), await first.event(), await second.event()]
        refused_call = await asyncio.wait_for(client.call_tool("two", {}), 5)
        assert refused_call.is_error
        assert "Room 'default' already has 3 calls waiting, the most it may have" in refused_call.content[0].text
        # Another room is not affected.
        task = asyncio.create_task(other.call_tool("three", {}))
        await elsewhere.answer((await elsewhere.event())["call_id"], result="elsewhere")
        assert (await task).content[0].text == "elsewhere"
        for p, invoke in zip((first, first, second), invokes):
            await p.answer(invoke["call_id"], result="ok")
        assert [(await t).content[0].text for t in waiting] == ["ok"] * 3


# --- page messages ----------------------------------------------------------------------------


async def test_the_message_limit_counts_bytes():
    async with running_bridge() as b, page(b) as p:  # 1 MiB
        emoji = "\U0001F600"  # 4 bytes in UTF-8, 1 character
        # Sent as UTF-8 (not as \u escapes): 300,000 characters, 1.2 MB.
        await p.send(json.dumps({"type": "agui.tools.register", "tools": [tool("big", emoji * 300_000)]},
                                ensure_ascii=False))
        error = await p.reply()
        assert error["code"] == "too_large", error
        assert "over the limit of 1048576" in error["message"] and "1200" in error["message"]
        # 200,000 of them (800 KB) are within the limit: the message is read (and its description refused).
        await p.send(json.dumps({"type": "agui.tools.register", "tools": [tool("big", emoji * 200_000)]},
                                ensure_ascii=False))
        assert (await p.reply())["type"] == "agui.tools.registered"
        assert (await p.reply())["code"] == "invalid_tool"
        await still_serves(b, p)


@pytest.mark.parametrize("names_call", [True, False], ids=["names its call", "names none, one call waiting"])
async def test_an_answer_over_the_limit_ends_its_call_at_once(names_call):
    async with running_bridge(max_message_bytes=10_000) as b, page(b, ECHO) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        task = asyncio.create_task(client.call_tool("echo", {"text": "x"}))
        call_id = (await p.event())["call_id"]
        frame = {"type": "agui.tool.return", **({"call_id": call_id} if names_call else {}), "result": "y" * 20_000}
        await p.send(frame)
        error = await p.reply()
        assert error["code"] == "too_large" and error["call_id"] == call_id, error
        result = await asyncio.wait_for(task, 5)  # not the 600 s call timeout
        assert result.is_error
        size = len(json.dumps(frame).encode())
        assert str(size) in result.content[0].text and "10000" in result.content[0].text, result.content[0].text
        # The call is over: a second answer is refused, and the page serves the next call.
        await p.answer(call_id, result="late")
        assert (await p.reply())["code"] == "unknown_call"
        await still_serves(b, p)


@pytest.mark.parametrize("names_call", [True, False], ids=["names its call", "names none, one call waiting"])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1" * 5000],
                         ids=["NaN", "Inf", "-Inf", "5000 digits"])
async def test_an_answer_that_is_not_json_ends_its_call_at_once(value, names_call):
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as client:
        task = asyncio.create_task(client.call_tool("echo", {"text": "x"}))
        call_id = (await p.event())["call_id"]
        named = f'"call_id": "{call_id}", ' if names_call else ""
        await p.send('{"type": "agui.tool.return", ' + named + '"result": {"n": ' + value + "}}")
        error = await p.reply()
        assert error["code"] == "bad_json" and error["call_id"] == call_id, error
        result = await asyncio.wait_for(task, 5)
        assert result.is_error and "could not be taken" in result.content[0].text
        assert "JSON" in result.content[0].text
        await still_serves(b, p)


async def test_an_unreadable_answer_naming_no_call_ends_none_of_two_waiting():
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as client:
        tasks = [asyncio.create_task(client.call_tool("echo", {"text": str(i)})) for i in range(2)]
        invokes = [await p.event(), await p.event()]
        await p.send('{"type": "agui.tool.return", "result": NaN}')
        error = await p.reply()
        assert error["code"] == "bad_json" and error.get("call_id") is None, error
        await asyncio.sleep(0.2)
        assert not any(t.done() for t in tasks)
        for invoke in invokes:
            await p.answer(invoke["call_id"], result=invoke["params"]["text"])
        assert [(await t).content[0].text for t in tasks] == ["0", "1"]


async def test_a_frame_over_four_times_the_limit_closes_the_socket_with_1009():
    async with running_bridge(max_message_bytes=10_000) as b, page(b, ECHO) as p:
        await p.send("z" * 39_000)  # under 4x: read, and refused
        assert (await p.reply())["code"] == "too_large"
        async with websockets.connect(b.ws_url) as ws:
            await ws.send(json.dumps({"type": "agui.hello"}))
            assert json.loads(await ws.recv())["type"] == "agui.welcome"
            await ws.send("z" * 50_000)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd.code == 1009
        await still_serves(b, p)


# --- a page that does not read ---------------------------------------------------------------


@asynccontextmanager
async def stalled_stream(b: RunningBridge, events_url: str):
    """An event stream whose client sends the GET and then never reads a byte."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", b.server.port))
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.transport.pause_reading()
    writer.write(f"GET {events_url} HTTP/1.1\r\nHost: 127.0.0.1:{b.server.port}\r\n"
                 "Accept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    try:
        yield
    finally:
        writer.transport.abort()


BLOB = tool("store", "Store a blob.", {"blob": {"type": "string"}}, ["blob"])
CALLS = 8


async def stall_then_resume(b: RunningBridge, client: Client) -> None:
    p = Page(b)
    welcome = await p.connect(listen=False)
    await p.register(BLOB)
    session = b.hub.session(p.session_id)
    async with stalled_stream(b, welcome["events_url"]):
        await eventually(lambda: session.streaming)
        tasks = [asyncio.create_task(client.call_tool("store", {"blob": str(i) * 500_000})) for i in range(CALLS)]
        await eventually(lambda: len(b.hub.calls) == CALLS)
        # The bridge gives up on the stream that does not read, well before any call times out.
        await eventually(lambda: not session.streaming, timeout=15)
        assert not any(t.done() for t in tasks)
    # The page comes back with Last-Event-ID (it read nothing) and is sent every invocation.
    await p.listen(welcome["events_url"], last_event_id=0)
    seen = []
    for _ in range(CALLS):
        invoke = await p.event()
        seen.append(invoke["params"]["blob"][:1])
        await p.answer(invoke["call_id"], result=f"stored {invoke['params']['blob'][:1]}")
    assert sorted(seen) == [str(i) for i in range(CALLS)]
    results = [await asyncio.wait_for(t, 10) for t in tasks]
    assert [r.content[0].text for r in results] == [f"stored {i}" for i in range(CALLS)]
    await p.close()


async def test_an_event_stream_that_does_not_read_is_closed_and_the_page_resumes_with_everything():
    async with running_bridge(stream_send_timeout=0.5, page_grace=30) as b, \
            Client(b.mcp_url(), mode="legacy") as client:
        await stall_then_resume(b, client)


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_closing_a_stream_that_does_not_read_is_not_an_error():
    """A page that stops reading is an expected event (a frozen tab): no 'Exception in ASGI application'."""
    errors = _Errors()
    async with running_bridge(stream_send_timeout=0.5, page_grace=30) as b, \
            Client(b.mcp_url(), mode="legacy") as client:
        # Attached once uvicorn has configured its logging (which drops the handlers of its loggers' children).
        loggers = [logging.getLogger(name) for name in ("uvicorn", "bridge", "sse_starlette")]
        for logger in loggers:
            logger.addHandler(errors)
        try:
            await stall_then_resume(b, client)
        finally:
            for logger in loggers:
                logger.removeHandler(errors)
    # uvicorn still notes that the response was never completed: the bridge cannot finish a response
    # whose reader is stuck (the final chunk would block too), and ASGI has no way to abort one.
    unexpected = [r for r in errors.records if r.getMessage() != "ASGI callable returned without completing response."]
    assert not unexpected, [f"{r.name}: {r.getMessage()} {r.exc_info[1]!r}" if r.exc_info else r.getMessage()
                            for r in unexpected]


# --- what agents send pages, and what pages send agents ----------------------------------------


def _strict_json(text: str):
    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def raw_tool_call(http: httpx.AsyncClient, url: str, name: str, arguments_json: str) -> dict:
    """A tools/call whose arguments are sent exactly as written: an agent whose JSON encoder writes NaN
    (Python's json.dumps does by default), which the SDK client would have turned into null."""
    init = await http.post(url, headers=MCP_HEADERS, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    headers = MCP_HEADERS | {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    response = await http.post(url, headers=headers, content='{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
                               f'"params": {{"name": "{name}", "arguments": {arguments_json}}}}}')
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1] if data else response.text)


def _strict_json(text: str):
    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_a_non_finite_number_from_an_agent_never_reaches_a_page_as_non_json(value):
    """A browser's JSON.parse throws on NaN/Infinity: a page could never read, hence never answer, such an
    invocation (the client reports `bad_event`), and the agent would wait for the call timeout. The bridge
    refuses non-finite numbers from pages; it must not send them to pages either: the agent gets isError at
    once, or the page gets JSON it can read."""
    free = tool("store_any", "Store anything.", {"value": {}})
    async with running_bridge() as b, httpx.AsyncClient(timeout=30) as http, httpx.AsyncClient(timeout=None) as sse:
        p = Page(b)
        welcome = await p.connect(listen=False)
        await p.register(free)
        raw: asyncio.Queue[str] = asyncio.Queue()

        async def read_raw() -> None:
            async with sse.stream("GET", b.url + welcome["events_url"]) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        await raw.put(line[5:].strip())

        reader = asyncio.create_task(read_raw())
        await eventually(lambda: b.hub.session(p.session_id).streaming)
        try:
            task = asyncio.create_task(raw_tool_call(http, b.mcp_url(), "store_any", '{"value": ' + value + "}"))
            got = asyncio.create_task(raw.get())
            done, _ = await asyncio.wait({task, got}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
            assert done, "neither an answer for the agent nor an invocation for the page"
            if got in done:
                data = got.result()
                call_id = re.search(r'"call_id": "([^"]+)"', data).group(1)
                try:
                    _strict_json(data)
                finally:
                    await p.answer(call_id, result="stored")  # let the call end whatever the verdict
                    await asyncio.wait_for(task, 10)
            else:
                got.cancel()
                answer = task.result()
                assert answer["result"]["isError"], answer
        finally:
            reader.cancel()
            await p.close()


@pytest.mark.parametrize("depth", [200, 300])
@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_an_answer_too_deep_for_mcp_ends_its_call_with_is_error(era, depth):
    """docs/protocol.md: "A result MCP would reject becomes isError saying why". 300 levels are past what the
    bridge's MCP serializer takes; 200 pass it but not the SDK client's parser (which stops at ~255 with
    the envelope)."""
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode=era) as client:
        task = asyncio.create_task(client.call_tool("echo", {"text": "x"}))
        call_id = (await p.event())["call_id"]
        await p.send('{"type": "agui.tool.return", "call_id": "' + call_id + '", "result": '
                     + '{"a": ' * depth + "1" + "}" * depth + "}")
        result = await asyncio.wait_for(task, 10)
        assert result.is_error and "deep" in result.content[0].text, result
        await still_serves(b, p)
