"""Shared mode recovers from a Redis restart.

Real redis-server processes, bridges in this process, a websockets page and the MCP SDK client.
"""

from __future__ import annotations

import asyncio
import shutil
from contextlib import AsyncExitStack, asynccontextmanager

import pytest
from mcp import Client

from redis_support import start_redis, stop
from support import Page, free_port, open_page, running_bridge, tool

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs Debian's redis-server")

HEARTBEAT = 0.2
CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])


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
