"""Shared mode: two bridges joined by a real redis-server; pages on one, agents on the other.

Each bridge has its own link and process id, as two processes would; the kill -9 test at the
end uses real processes.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import mcp_types as types
import pytest
import redis
from mcp import Client

from support import Page, eventually, free_port, open_page, page, running_bridge, tool

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs Debian's redis-server")

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])
ERAS = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def redis_server():
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            import time
            time.sleep(0.05)
    yield url
    server.terminate()
    server.wait(5)


@pytest.fixture
def redis_url(redis_server):
    redis.Redis.from_url(redis_server).flushall()
    return redis_server


@asynccontextmanager
async def bridges(redis_url: str, count: int = 2, **overrides):
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(running_bridge(redis_url=redis_url, redis_heartbeat=0.2, **overrides))
               for _ in range(count)]


@pytest.mark.parametrize("era", ERAS)
async def test_a_page_on_one_process_is_called_by_an_agent_on_another(redis_url, era):
    async with bridges(redis_url) as (a, b), page(a, CONFIRM) as p, Client(b.mcp_url(), mode=era) as client:
        await eventually(lambda: b.hub.room("default").get("user_confirm"))
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == ["user_confirm"]
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "Send?"}))
        invoke = await p.event()
        assert invoke["params"] == {"title": "Send?"}
        await p.answer(invoke["call_id"], "yes")
        result = await asyncio.wait_for(task, 10)
        assert not result.is_error and result.content[0].text == "yes"
        await p.answer(invoke["call_id"], "twice")
        assert (await p.reply())["code"] == "unknown_call"
