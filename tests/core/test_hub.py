"""The hub (bridge.core.hub): a call's round trip, a page resuming within its grace, the pages of each room,
bad hellos and timeouts; a page leaving with many tools is gone at once, its index entries freed a slice at a
time."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from bridge.config import Settings
from bridge.core import messages
from bridge.core.catalog import Room
from bridge.core.hub import CATALOG_SLICE, PAGE_GONE, Hub
from bridge.core.messages import Hello, ProtocolError, ToolReturn


def hub(**overrides) -> Hub:
    return Hub(replace(Settings(), **overrides).hub_config())


async def test_hub_call_round_trip_and_page_gone():
    h = hub(page_grace=0.05)
    session, resumed = h.hello(Hello(type="agui.hello"))
    assert not resumed
    await h.handle(session, messages.RegisterTools(type="agui.tools.register", tools=[
        {"name": "t", "inputSchema": {"type": "object"}}]))
    tool = h.room("default").get("t")
    call = asyncio.create_task(h.call(tool, {"x": 1}, mcp_request_id=4))
    await asyncio.sleep(0)
    (invoke,) = [e.data for e in session.buffered_events()]
    assert invoke["params"] == {"x": 1} and invoke["mcp_request_id"] == 4
    await h.handle(session, ToolReturn(type="agui.tool.return", call_id=invoke["call_id"], result="done"))
    assert (await call).result == "done"

    pending = asyncio.create_task(h.call(tool, {}))
    await asyncio.sleep(0)
    h.disconnected(session, session.connection, deliberate=False)
    outcome = await asyncio.wait_for(pending, 1)
    assert outcome.kind == "page_gone" and outcome.error == PAGE_GONE
    assert h.room("default").get("t") is None and session.id not in h.sessions


async def test_hub_resume_within_grace_and_stale_socket_close_is_ignored():
    h = hub(page_grace=0.2)
    session, _ = h.hello(Hello(type="agui.hello"))
    first_connection = session.connection
    h.disconnected(session, first_connection, deliberate=False)
    again, resumed = h.hello(Hello(type="agui.hello", session_id=session.id))
    assert resumed and again is session
    h.disconnected(session, first_connection, deliberate=False)  # the old socket closing late
    await asyncio.sleep(0.3)
    assert session.id in h.sessions
    other_room, resumed = h.hello(Hello(type="agui.hello", session_id=session.id, room="elsewhere"))
    assert not resumed and other_room is not session


async def test_hub_knows_the_pages_of_each_room():
    h = hub(page_grace=0.05)
    a, _ = h.hello(Hello(type="agui.hello", room="a"))
    b1, _ = h.hello(Hello(type="agui.hello", room="b"))
    b2, _ = h.hello(Hello(type="agui.hello", room="b"))
    assert h.pages_in("a") == [a] and h.pages_in("b") == [b1, b2] and h.pages_in("c") == []
    h.drop(b1)
    h.drop(b1)  # twice: nothing more happens
    assert h.pages_in("b") == [b2]
    h.drop(a)
    assert h.pages_in("a") == [] and not h.has_pages("a") and h.has_pages("b")


async def test_hub_refuses_bad_hello():
    h = hub(token="t")
    with pytest.raises(ProtocolError, match="token"):
        h.hello(Hello(type="agui.hello", token="nope"))
    with pytest.raises(ProtocolError) as caught:
        h.hello(Hello(type="agui.hello", token="t", room="a/b"))
    assert caught.value.code == "bad_room"


async def test_hub_timeout_pushes_cancel():
    h = hub(call_timeout=0.05)
    session, _ = h.hello(Hello(type="agui.hello"))
    await h.handle(session, messages.RegisterTools(type="agui.tools.register", tools=[{"name": "t"}]))
    outcome = await h.call(h.room("default").get("t"), {})
    assert outcome.kind == "timeout"
    assert [e.name for e in session.buffered_events()] == ["agui.tool.cancel"]  # the answered invocation is gone
    assert len(h.calls) == 0


# --- a page leaving with many tools ------------------------------------------------------------


async def test_a_page_leaving_with_many_tools_is_gone_at_once_and_its_index_entries_freed_slice_by_slice():
    h = hub(max_tools_per_page=1000)
    resident, _ = h.hello(Hello(type="agui.hello"))
    await h.handle(resident, messages.RegisterTools(type="agui.tools.register", tools=[
        {"name": f"resident_{n}", "description": f"Export the report number {n}"} for n in range(60)]))
    leaving, _ = h.hello(Hello(type="agui.hello"))
    await h.handle(leaving, messages.RegisterTools(type="agui.tools.register", tools=[
        {"name": f"leaving_{n}", "description": f"Export the invoice report number {n}"} for n in range(300)]))
    room = h.room("default")
    found = await room.search("export invoice report", 5)
    assert {tool.session_id for tool, _ in found} == {leaving.id}
    room.activate(tool.key for tool, _ in found)
    gone = room.get("leaving_7")
    pending = asyncio.create_task(h.call(gone, {}))
    await asyncio.sleep(0)

    h.drop(leaving)
    # What agents see changes at once, before the loop turns: no tool of the page is listed, found,
    # named or callable, and its calls have failed; its index entries are only hidden so far.
    assert room.tools_of(leaving.id) == [] and room.get("leaving_7") is None and len(room) == 60
    assert not any(key.startswith("leaving_") for key in room.listing().keys)
    assert room.index.sweep(0) == 300
    found = await room.search("export invoice report", 5)
    assert len(found) == 5 and {tool.session_id for tool, _ in found} == {resident.id}
    assert (await pending).kind == "page_gone"
    assert (await h.call(gone, {})).kind == "page_gone"
    # They are freed a slice at a time, between turns of the loop.
    await asyncio.sleep(0)
    assert 0 < room.index.sweep(0) < 300
    back, _ = h.hello(Hello(type="agui.hello"))  # the page reloaded: its tools get their names back
    await h.handle(back, messages.RegisterTools(type="agui.tools.register", tools=[{"name": "leaving_7"}]))
    assert room.offered_by(back.id, "leaving_7").key == "leaving_7"
    while room.index.sweep(0):
        await asyncio.sleep(0)
    fresh = Room("fresh", room.policy)
    fresh.register(resident.id, None, [t.definition for t in room.tools_of(resident.id)])
    fresh.register(back.id, None, [t.definition for t in room.tools_of(back.id)])
    for query in ("export invoice report", "report 12", "leaving 7"):
        assert [hit for _, hit in await room.search(query, 10)] == [hit for _, hit in await fresh.search(query, 10)]


async def test_tools_a_page_unregisters_are_gone_at_once_and_their_index_entries_freed_slice_by_slice():
    h = hub(max_tools_per_page=1000)
    page, _ = h.hello(Hello(type="agui.hello"))
    await h.handle(page, messages.RegisterTools(type="agui.tools.register", tools=[
        {"name": f"report_{n}", "description": f"Export the report number {n}"} for n in range(300)]))
    room = h.room("default")
    replies = await h.handle(page, messages.UnregisterTools(
        type="agui.tools.unregister", tools=[f"report_{n}" for n in range(1, 300)]))
    assert len(replies[0]["tools"]) == 299
    assert [tool.key for tool in room.tools_of(page.id)] == ["report_0"] and len(room) == 1
    assert [tool.key for tool, _ in await room.search("export report", 5)] == ["report_0"]
    assert room.index.sweep(0) == 299  # hidden at once, freed between turns of the loop
    await asyncio.sleep(0)
    assert 0 < room.index.sweep(0) < 299
    while room.index.sweep(0):
        await asyncio.sleep(0)


async def test_pages_leaving_a_room_at_once_have_their_index_entries_freed_by_one_sweep():
    # A sweep for each would free a slice each a turn of the loop: the turn grows with the pages.
    h = hub(max_tools_per_page=1000)
    pages = []
    for n in range(3):
        page, _ = h.hello(Hello(type="agui.hello"))
        await h.handle(page, messages.RegisterTools(type="agui.tools.register", tools=[
            {"name": f"page{n}_tool_{i}", "description": f"Export the report number {i}"} for i in range(200)]))
        pages.append(page)
    room = h.room("default")
    for page in pages:
        h.drop(page)
    assert len(room) == 0 and room.index.sweep(0) == 600
    await asyncio.sleep(0)
    assert room.index.sweep(0) == 600 - CATALOG_SLICE
    while room.index.sweep(0):
        await asyncio.sleep(0)
