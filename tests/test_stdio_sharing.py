"""Several stdio agents, one bridge: the second `agui-mcp-bridge stdio` on a port a bridge holds
serves its agent through that bridge, and takes the port over when that bridge stops.

Real processes started by the MCP SDK's stdio client, a real page (websockets + SSE) on the one port.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from contextlib import AsyncExitStack

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from support import Page, PortOnly, free_port, tool, wait_for_http

ECHO = tool("echo", "Say it back.", {"text": {"type": "string"}}, ["text"])


def stdio_params(port: int, *flags: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "bridge.cli", "stdio", "--port", str(port),
                                                               "--log-level", "info", *flags])


async def listed(agent: Client, name: str) -> None:
    """Once the page's registration has reached the agent's bridge (asked again, as an agent would)."""
    for _ in range(100):
        if name in {t.name for t in (await agent.list_tools()).tools}:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} was never listed")


async def answer_next(page: Page, text: str) -> dict:
    invoke = await page.event()
    await page.answer(invoke["call_id"], text)
    return invoke


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_second_stdio_agent_is_served_through_the_bridge_on_the_port(era):
    port = free_port()
    async with AsyncExitStack() as stack:
        second_log = stack.enter_context(tempfile.TemporaryFile("w+"))
        first = await stack.enter_async_context(Client(stdio_params(port), mode="legacy"))
        await wait_for_http(f"http://127.0.0.1:{port}")
        second = await stack.enter_async_context(
            Client(stdio_client(stdio_params(port), errlog=second_log), mode=era))
        page = Page(PortOnly(port))
        await page.connect()
        stack.push_async_callback(page.close)
        await page.register(ECHO)
        for agent, text in ((first, "to the first"), (second, "to the second")):
            await listed(agent, "echo")
            call = asyncio.create_task(agent.call_tool("echo", {"text": text}))
            invoke = await answer_next(page, text)
            assert invoke["params"] == {"text": text}
            result = await asyncio.wait_for(call, 10)
            assert not result.is_error and result.content[0].text == text
        second_log.seek(0)
        said = second_log.read()
        assert f"port {port}" in said and "through" in said, said


async def test_when_the_holder_stops_the_call_gets_an_error_and_the_agent_moves_to_its_own_bridge():
    port = free_port()
    async with AsyncExitStack() as stack:
        quit_first = asyncio.Event()

        async def first_agent() -> None:  # its own task: it quits in the middle of the second one's life
            async with Client(stdio_params(port), mode="legacy"):
                await quit_first.wait()

        first = asyncio.create_task(first_agent())
        await wait_for_http(f"http://127.0.0.1:{port}")
        second = await stack.enter_async_context(Client(stdio_params(port), mode="legacy"))
        page = Page(PortOnly(port))
        await page.connect()
        await page.register(ECHO)
        await listed(second, "echo")
        call = asyncio.create_task(second.call_tool("echo", {"text": "lost"}))
        await page.event()  # the page was asked; its bridge goes before it answers
        quit_first.set()  # the first agent's client quits: its bridge stops
        await asyncio.wait_for(first, 15)
        result = await asyncio.wait_for(call, 15)
        assert result.is_error and ("shutting down" in result.content[0].text or "stopped" in result.content[0].text)
        # The second process takes the port; a page (reconnecting, as the browser client does) finds it there.
        await wait_for_http(f"http://127.0.0.1:{port}")
        page = Page(PortOnly(port))
        await page.connect()
        stack.push_async_callback(page.close)
        await page.register(ECHO)
        await listed(second, "echo")
        call = asyncio.create_task(second.call_tool("echo", {"text": "found"}))
        await answer_next(page, "found")
        result = await asyncio.wait_for(call, 10)
        assert not result.is_error and result.content[0].text == "found"


async def test_a_port_held_by_something_else_is_still_one_line_and_exit_2():
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli", "stdio", "--port", str(port), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
        assert process.returncode == 2 and b"already in use" in stderr and b"Traceback" not in stderr, stderr
    finally:
        server.close()
