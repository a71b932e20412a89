"""Shared mode recovers: from a Redis restart, and from an agent's process that stops without a word.

Real redis-server processes, bridges in this process or as their own OS process (to kill -9 or
SIGSTOP one), a websockets page and the MCP SDK client.
"""

from __future__ import annotations

import asyncio
import signal
from contextlib import AsyncExitStack, asynccontextmanager

import httpx2
import redis
from mcp import Client
from redis_support import start_bridge_process, start_redis, stop, wait_for_port
from support import Page, eventually, free_port, open_page, running_bridge, tool

HEARTBEAT = 0.2
CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])
AGENT_GONE = {"type": "agui.tool.cancel", "reason": "the agent's bridge process stopped"}



@asynccontextmanager
async def bridges(redis_url: str, count: int, **overrides):
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(running_bridge(redis_url=redis_url, redis_heartbeat=HEARTBEAT,
                                                              **overrides))
               for _ in range(count)]


async def answer_every_call(p: Page) -> None:
    while True:
        event = await p.events.get()
        if event["type"] == "agui.tool.invoke":
            await p.answer(event["call_id"], "yes")


async def listed(client: Client, name: str) -> None:
    for _ in range(200):
        if name in [t.name for t in (await client.list_tools()).tools]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} not listed")


async def call_many(client: Client, count: int) -> list[str]:
    """`count` calls at once; the text of each one that failed."""
    results = await asyncio.wait_for(asyncio.gather(
        *(client.call_tool("user_confirm", {"title": str(i)}) for i in range(count))), 30)
    return [r.content[0].text for r in results if r.is_error]


async def test_calls_succeed_within_5_s_of_redis_coming_back():
    """redis-server killed and started again on the same port: 5 s after it is back, no call fails
    (the connections to the Redis that went away are not handed out again, and the link rejoins soon)."""
    port = free_port()
    server = start_redis(port)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        async with bridges(url, 2) as (a, b):
            p = await open_page(a, CONFIRM)
            answering = asyncio.create_task(answer_every_call(p))
            async with Client(b.mcp_url(), mode="2026-07-28") as client:
                await listed(client, "user_confirm")
                assert await call_many(client, 20) == []
                for link in (a.bridge.link, b.bridge.link):  # as after a busy moment: many connections in each pool
                    await asyncio.gather(*(link.redis.ping() for _ in range(30)))
                stop(server)  # kill -9, then back on the same port, empty
                await asyncio.sleep(1)
                server = start_redis(port)
                await asyncio.sleep(5)
                assert await call_many(client, 20) == []
            answering.cancel()
            await p.close()
    finally:
        stop(server)


@asynccontextmanager
async def bridge_process(redis_url: str):
    """A bridge in its own OS process, and its base URL."""
    port = free_port()
    process = start_bridge_process(port, redis_url, HEARTBEAT)
    try:
        await wait_for_port(port)
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a stopped process must be able to die
        stop(process)


async def calls_then_kill(base: str, p: Page, count: int, process, meanwhile=None) -> set[str]:
    """An agent of the bridge process at `base` makes `count` calls; once the page has been asked them
    all (and `meanwhile` has run), the process is killed (SIGKILL: only its heartbeat stops). Returns
    the calls' ids."""
    asked: set[str] = set()
    try:
        async with Client(base + "/mcp", mode="2026-07-28") as client:
            await listed(client, "user_confirm")
            calls = [asyncio.create_task(client.call_tool("user_confirm", {"title": str(i)})) for i in range(count)]
            asked = {(await p.event())["call_id"] for _ in calls}
            if meanwhile is not None:
                await meanwhile()
            process.kill()
            await asyncio.gather(*calls, return_exceptions=True)
    except* httpx2.TransportError:  # the requests the kill cut off end the client's task group
        pass
    assert len(asked) == count
    return asked


async def next_cancels(p: Page, call_ids: set[str], timeout: float) -> dict[str, dict]:
    """The cancel the page gets for each of `call_ids`, all within `timeout` seconds."""
    cancels: dict[str, dict] = {}
    deadline = asyncio.get_running_loop().time() + timeout
    while cancels.keys() != call_ids:
        event = await p.event(timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
        assert event["type"] == "agui.tool.cancel" and event["call_id"] in call_ids, event
        cancels[event["call_id"]] = event
    return cancels


async def test_calls_of_a_killed_agent_process_are_cancelled_at_their_page(redis_url):
    async with bridges(redis_url, 1, page_grace=10) as (holder,), bridge_process(redis_url) as (agent_process, base):
        p = await open_page(holder, CONFIRM)
        asked = await calls_then_kill(base, p, 10, agent_process)
        cancels = await next_cancels(p, asked, 3 * HEARTBEAT + 5)
        assert all(c == {**AGENT_GONE, "call_id": call_id} for call_id, c in cancels.items())
        await p.answer(next(iter(asked)), "too late")
        assert (await p.reply())["code"] == "unknown_call"
        await p.drop()
        back = Page(holder, session_id=p.session_id)
        welcome = await back.connect(last_event_id=p.event_ids[-1])
        assert welcome["resumed"] is True and welcome["waiting"] == []
        await asyncio.sleep(0.3)
        assert back.events.empty()  # no invocation comes back
        await back.close()


async def test_a_page_away_when_the_agent_process_died_is_not_asked_its_calls_again(redis_url):
    """The page's process stopped too, so no one noticed for it: the process it comes back on cancels
    those calls before listing what waits."""
    async with bridges(redis_url, 1, page_grace=10) as (other,), bridge_process(redis_url) as (agent_process, base), \
            AsyncExitStack() as holding:
        holder = await holding.enter_async_context(running_bridge(redis_url=redis_url, redis_heartbeat=HEARTBEAT,
                                                                  page_grace=10))
        p = await open_page(holder, CONFIRM)

        async def page_and_its_process_go() -> None:
            await p.drop()
            await holding.aclose()  # as on SIGTERM: the page may come back on another process

        asked = await calls_then_kill(base, p, 10, agent_process, page_and_its_process_go)
        beats = redis.Redis.from_url(redis_url)
        await eventually(lambda: beats.keys("agui:proc:*") == [f"agui:proc:{other.bridge.link.process_id}".encode()])
        back = Page(other, session_id=p.session_id)
        welcome = await back.connect(last_event_id=p.event_ids[-1])
        assert welcome["resumed"] is True and welcome["waiting"] == []
        cancels = await next_cancels(back, asked, 5)
        assert all(c == {**AGENT_GONE, "call_id": call_id} for call_id, c in cancels.items())
        await back.close()


async def test_an_agent_process_taken_for_stopped_ends_its_calls_with_the_reason(redis_url):
    """A process that misses its heartbeats (here: SIGSTOP) but lives has its calls cancelled at their
    page like a dead one's; once it runs again its agents are told why, not left waiting for the timeout."""
    async with bridges(redis_url, 1, page_grace=10) as (holder,), bridge_process(redis_url) as (agent_process, base):
        p = await open_page(holder, CONFIRM)
        async with Client(base + "/mcp", mode="2026-07-28") as client:
            await listed(client, "user_confirm")
            calls = [asyncio.create_task(client.call_tool("user_confirm", {"title": str(i)})) for i in range(3)]
            asked = {(await p.event())["call_id"] for _ in calls}
            agent_process.send_signal(signal.SIGSTOP)
            try:
                await next_cancels(p, asked, 3 * HEARTBEAT + 5)
            finally:
                agent_process.send_signal(signal.SIGCONT)
            results = await asyncio.wait_for(asyncio.gather(*calls), 10)
            assert all(r.is_error and "missed its heartbeats" in r.content[0].text for r in results)
            await listed(client, "user_confirm")  # and it serves again
            call = asyncio.create_task(client.call_tool("user_confirm", {"title": "again"}))
            invoke = await p.event()
            await p.answer(invoke["call_id"], "yes")
            assert (await asyncio.wait_for(call, 10)).content[0].text == "yes"
        await p.close()
