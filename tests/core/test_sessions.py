"""A page's session (bridge.core.sessions): its event stream replays the invocations that wait, resumes after
the last event id, never sends an answered invocation again, and keeps alive when idle."""

from __future__ import annotations

import asyncio

import pytest

from bridge.core import messages
from bridge.core.messages import PageInfo
from bridge.core.sessions import PageEvent, PageSession


async def test_session_stream_replays_waiting_invocations_then_follows():
    session = PageSession("r", PageInfo())
    session.push(messages.tool_invoke("c1", "t", "t", {}, 1))
    session.push(messages.tool_invoke("c2", "t", "t", {}, 2))
    session.push(messages.tool_cancel("c2", "timeout"))
    session.settled("c2")
    stream = session.stream(None)
    first = await anext(stream)
    assert first.data["call_id"] == "c1"
    session.push(messages.tool_invoke("c3", "t", "t", {}, 3))
    assert (await anext(stream)).data["call_id"] == "c3"


async def test_session_stream_after_last_event_id_and_superseded():
    session = PageSession("r", PageInfo())
    for i in range(3):
        session.push(messages.tool_invoke(f"c{i}", "t", "t", {}, i))
    old = session.stream(1)
    assert [(await anext(old)).id, (await anext(old)).id] == [2, 3]
    new = session.stream(3)
    waiting = asyncio.create_task(anext(new))
    await asyncio.sleep(0)
    with pytest.raises(StopAsyncIteration):  # only the newest stream is fed
        await asyncio.wait_for(anext(old), 1)
    session.push(messages.tool_cancel("c0", "timeout"))
    assert (await asyncio.wait_for(waiting, 1)).name == "agui.tool.cancel"


async def test_a_resumed_stream_never_gets_an_answered_invocation():
    session = PageSession("r", PageInfo())
    for i in range(4):
        session.push(messages.tool_invoke(f"c{i}", "t", "t", {}, i))
    session.settled("c1")
    session.settled("c2")
    resumed = session.stream(0)
    assert [(await anext(resumed)).data["call_id"] for _ in range(2)] == ["c0", "c3"]


async def test_events_numbered_elsewhere_keep_their_order_and_never_come_back_once_ended():
    session = PageSession("r", PageInfo())

    def numbered(n, data):
        return PageEvent(n, data["type"], data)

    session.deliver(numbered(7, messages.tool_invoke("c7", "t", "t", {}, 7)))  # live, before the backlog
    session.deliver(numbered(5, messages.tool_invoke("c5", "t", "t", {}, 5)))  # the backlog, read later
    session.deliver(numbered(5, messages.tool_invoke("c5", "t", "t", {}, 5)))  # twice: kept once
    session.settled("c6")
    session.deliver(numbered(6, messages.tool_invoke("c6", "t", "t", {}, 6)))  # ended before it was read
    assert session.pending_calls == {"c5", "c7"}
    resumed = session.stream(4)
    assert [(await anext(resumed)).id for _ in range(2)] == [5, 7]
    session.deliver(numbered(9, messages.tool_cancel("c5", "timeout")))
    assert (await anext(resumed)).id == 9


async def test_waiting_invocations_are_never_evicted_by_other_events():
    from bridge.core.sessions import OTHER_EVENTS_KEPT

    session = PageSession("r", PageInfo())
    for i in range(OTHER_EVENTS_KEPT + 300):
        session.push(messages.tool_invoke(f"c{i}", "t", "t", {}, i))
    for i in range(OTHER_EVENTS_KEPT + 50):  # more cancels than the window keeps
        session.push(messages.tool_cancel(f"gone{i}", "timeout"))
    fresh = session.stream(None)
    delivered = [(await anext(fresh)).data["call_id"] for _ in range(OTHER_EVENTS_KEPT + 300)]
    assert delivered == [f"c{i}" for i in range(OTHER_EVENTS_KEPT + 300)]
    others = [e.data["call_id"] for e in session.buffered_events() if e.name != "agui.tool.invoke"]
    assert others == [f"gone{i}" for i in range(50, OTHER_EVENTS_KEPT + 50)]  # the newest ones, no more


async def test_an_event_pushed_while_the_stream_yields_is_not_lost():
    """The stream's consumer is slow (a full socket): pushes made meanwhile still wake it."""
    session = PageSession("r", PageInfo())
    stream = session.stream(None)
    waiting = asyncio.create_task(anext(stream))
    await asyncio.sleep(0)
    session.push(messages.tool_invoke("a", "t", "t", {}, 1))
    assert (await asyncio.wait_for(waiting, 1)).data["call_id"] == "a"
    # The consumer is busy elsewhere while two more arrive, one at a time.
    session.push(messages.tool_invoke("b", "t", "t", {}, 2))
    await asyncio.sleep(0)
    session.push(messages.tool_invoke("c", "t", "t", {}, 3))
    got = [(await asyncio.wait_for(anext(stream), 1)).data["call_id"] for _ in range(2)]
    assert got == ["b", "c"]


async def test_keep_alive_comes_after_idle_seconds_without_an_event():
    session = PageSession("r", PageInfo())
    loop = asyncio.get_running_loop()
    stream = session.stream(None, idle=0.2)
    started = loop.time()
    assert await asyncio.wait_for(anext(stream), 1) is None  # nothing to send: a keep-alive
    assert loop.time() - started >= 0.19
    # Events every 0.1 s for 0.5 s: no keep-alive among them.
    got = []

    async def pushing():
        for i in range(5):
            await asyncio.sleep(0.1)
            session.push(messages.tool_invoke(f"c{i}", "t", "t", {}, i))

    pusher = asyncio.create_task(pushing())
    while len(got) < 5:
        got.append(await asyncio.wait_for(anext(stream), 1))
    await pusher
    assert all(e is not None for e in got)
    last = loop.time()
    assert await asyncio.wait_for(anext(stream), 1) is None  # silence again: a keep-alive
    assert loop.time() - last >= 0.15
    await stream.aclose()
