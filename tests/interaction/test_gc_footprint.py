"""What every full garbage collection walks: what the bridge keeps of a tool read or called, of a
registration answered, of a call ended and of a connection a client reset stays out of it.

A full collection stops every thread, the event loop too, for as long as it takes to walk every
object the collector tracks (bench/README.md, "Agents searching at once")."""

from __future__ import annotations

import asyncio
import gc
import re
import socket
import struct

from bridge.core.calls import CallTable, Outcome
from bridge.core.catalog import ListingPolicy, Room, check_definition
from bridge.search.index import ToolIndex
from bridge.search._tool_text import IndexedTool
from support import eventually, page, running_bridge, tool


def tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


def followed() -> int:
    """The references a full collection follows: it visits each reference every tracked object
    holds, and a few objects holding many (a list of 10,000 keys) cost it more than themselves."""
    gc.collect()
    objects = gc.get_objects()
    return sum(len(gc.get_referents(found)) for found in objects if found is not objects)


def rich_definition(n: int) -> dict:
    return {"name": f"t{n}", "description": f"Tool number {n}", "annotations": {"readOnlyHint": True},
            "inputSchema": {"type": "object", "required": ["rows"], "properties": {
                "rows": {"type": "array", "items": {"type": "object", "properties": {"cell": {"type": "string"}}}},
                "mode": {"enum": ["a", "b"]}}},
            "outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}}}


def test_reading_and_checking_every_tool_of_a_room_keeps_few_objects():
    # Definitions parsed and schemas' checks made for the tools read and called: those kept are the
    # last few, not one of each for every tool ever read or called.
    room = Room("r", ListingPolicy())
    before = tracked()
    room.register("S", None, (check_definition(rich_definition(n)) for n in range(6000)))
    for t in room.tools_of("S"):
        assert room.describe(t)["outputSchema"] == rich_definition(0)["outputSchema"]
        assert t.argument_errors({"rows": [{"cell": "a"}], "mode": "b"}) is None
        assert t.result_errors({"structuredContent": {"count": 1}}) is None
    assert (tracked() - before) / 6000 < 2
    last = room.get("t5999")
    assert "rows" in last.argument_errors({"rows": [{"cell": 1}]})
    assert "count" in last.result_errors({"structuredContent": {"count": "many"}})


def test_the_index_adds_one_reference_a_tool_to_what_a_full_collection_follows():
    # Its term counts; what the index keeps by slot or by name (keys, names, a name's slots, the
    # names joined for the substring fallback) is where the collector does not look, and a slot
    # freed is reused.
    verbs, nouns = ["get", "send", "list", "track", "book"], ["invoice", "order", "flight", "parcel", "note", "photo"]

    def tools(start: int, count: int) -> list[IndexedTool]:  # a few words in all: postings that do not grow
        named = ((n, verbs[n % 5], nouns[n // 5 % 6]) for n in range(start, start + count))
        return [IndexedTool(key=f"{verb}_{noun}_{n // 30}", name=f"{verb}_{noun}",
                            description=f"{verb.title()} the {noun}.") for n, verb, noun in named]

    index = ToolIndex(tools(0, 30))
    assert index.search("calc") == []  # no word matches: the names are joined to look for it in them
    before = followed()
    index.add(tools(30, 3000))
    assert [hit.key for hit in index.search("book flight", 1)] == ["book_flight_0"]
    assert index.search("calc") == []
    assert (followed() - before) / 3000 < 1.5
    index.remove(tool.key for tool in tools(30, 3000))
    index.add(tools(30, 3000))
    assert index.search("calc") == []
    assert (followed() - before) / 3000 < 1.5


async def test_a_registration_is_not_kept_once_the_page_is_answered():
    # The page's socket waits for its next frame: the message it answered, 1,000 parsed
    # definitions, is no longer held.
    async with running_bridge() as b, page(b) as p:
        await p.register(tool("warm_up"))
        before = tracked()
        await p.register(*(tool(f"t{n}", f"Tool number {n}", {"id": {"type": "string"}}, ["id"])
                           for n in range(999)))
        assert (tracked() - before) / 999 < 2


async def test_calls_that_ended_keep_what_the_dashboard_shows():
    table = CallTable(history=100)

    def end_one(n: int) -> None:
        call = table.open(room="r", session_id="S1234567", tool_key="rows", arguments={"n": n},
                          on_note=[].append)
        outcome = Outcome(result={"rows": [{"id": j, "tags": ["a", "b"]} for j in range(20)]})
        assert table.settle(call.call_id, outcome)
        table.close(call, outcome)

    end_one(0)
    before = tracked()
    for n in range(1, 101):
        end_one(n)
    assert (tracked() - before) / 100 < 2
    (last, *_) = table.recent
    assert (last["tool"], last["page_id"], last["arguments"], last["outcome"], last["error"]) == \
        ("rows", "S12345", '{"n": 100}', "result", None)
    assert len(table.recent) == 100 and last["duration_s"] >= 0 and "age_s" not in last


async def reset_after_answer(port: int) -> None:
    """One request, its answer read, then the connection reset (RST), as MCP clients close theirs."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /api/state HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    length = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
    assert head.startswith(b"HTTP/1.1 200") and length is not None, head
    await reader.readexactly(int(length.group(1)))
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def test_a_connection_the_client_resets_is_let_go_at_once():
    # Not kept until the keep-alive timeout (30 s) with its request, transport and parser.
    async with running_bridge() as b:
        port = b.server.port
        for _ in range(5):
            await reset_after_answer(port)
        before = tracked()
        for _ in range(50):
            await reset_after_answer(port)
        await eventually(lambda: (tracked() - before) / 50 < 2)
