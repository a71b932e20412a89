"""Several stdio agents, one bridge: the second `agui-mcp-bridge stdio` on a port a bridge holds
serves its agent through that bridge, and takes the port over when that bridge stops.

Real processes started by the MCP SDK's stdio client or as raw subprocesses (whose stdin a test closes),
a real page (websockets + SSE) on the one port. Each test has its own runtime directory, where bridges
keep the claims they prove themselves with (bridge._port_claim).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from contextlib import AsyncExitStack

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from support import Page, PortOnly, free_port, running_bridge, tool, wait_for_http
from test_stdio import ended, send, started_stdio, stdio_command, stopped

from bridge.server import HOLDER_WAIT_SECONDS

ECHO = tool("echo", "Say it back.", {"text": {"type": "string"}}, ["text"])


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path, monkeypatch):
    """This test's XDG_RUNTIME_DIR, for the bridges in this process and those it starts."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return tmp_path


def stdio_params(port: int, *flags: str) -> StdioServerParameters:
    # The SDK passes a child only a few variables: the runtime directory is passed on explicitly.
    command = stdio_command(port, *flags)
    return StdioServerParameters(command=command[0], args=command[1:],
                                 env={"XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]})


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


async def echoed_by_a_new_page(stack: AsyncExitStack, port: int, agent: Client, text: str) -> None:
    """A page (reconnecting, as the browser client does) connects to whoever holds the port and answers the
    agent's call of its echo tool with `text`."""
    page = Page(PortOnly(port))
    await page.connect()
    stack.push_async_callback(page.close)
    await page.register(ECHO)
    await listed(agent, "echo")
    call = asyncio.create_task(agent.call_tool("echo", {"text": text}))
    await answer_next(page, text)
    result = await asyncio.wait_for(call, 10)
    assert not result.is_error and result.content[0].text == text


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
        await echoed_by_a_new_page(stack, port, second, "found")


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


async def test_a_relayed_stdio_process_ends_by_itself_when_its_client_closes_stdin():
    async with running_bridge(free_port()) as holder:
        process = await started_stdio(holder.server.port)
        try:
            await send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert json.loads(await asyncio.wait_for(process.stdout.readline(), 10))["id"] == 2
            said = await ended(process)
            assert "served through" in said and "Traceback" not in said, said
        finally:
            await stopped(process)


async def test_a_relayed_stdio_process_says_where_pages_connect_and_logs_no_line_per_request():
    async with running_bridge(free_port()) as holder:
        port = holder.server.port
        process = await started_stdio(port)
        try:
            for request_id in (2, 3, 4):
                await send(process, {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
                assert json.loads(await asyncio.wait_for(process.stdout.readline(), 10))["id"] == request_id
        finally:
            await stopped(process)  # killed: what it said while serving, whatever it would say as it ends
        said = (await process.stderr.read()).decode()
    assert said.count("served through") == 1 and f"demo http://127.0.0.1:{port}/" in said, said
    assert "HTTP Request" not in said and "httpx" not in said, said


async def test_after_a_takeover_the_agent_keeps_its_session_and_pages_find_the_new_holder():
    port = free_port()
    async with AsyncExitStack() as stack:
        second_log = stack.enter_context(tempfile.TemporaryFile("w+"))
        first = await started_stdio(port)
        stack.push_async_callback(stopped, first)
        second = await stack.enter_async_context(Client(stdio_client(stdio_params(port), errlog=second_log),
                                                        mode="legacy"))
        await ended(first)  # the first agent's client quits: the second process takes the port
        await wait_for_http(f"http://127.0.0.1:{port}")
        # Well past the wait for a new holder, which once bounded the serving of the port too.
        await asyncio.sleep(HOLDER_WAIT_SECONDS + 3)
        await echoed_by_a_new_page(stack, port, second, "still here")
        second_log.seek(0)
        said = second_log.read()
        assert f"now serves port {port}" in said and f"demo http://127.0.0.1:{port}/" in said, said
        assert "Traceback" not in said, said


async def test_when_the_holder_is_killed_mid_call_the_call_gets_an_error_result():
    port = free_port()
    holder = await asyncio.create_subprocess_exec(sys.executable, "-m", "bridge.cli", "serve", "--port", str(port),
                                                  "--log-level", "warning", stderr=asyncio.subprocess.DEVNULL)
    try:
        await wait_for_http(f"http://127.0.0.1:{port}")
        async with Client(stdio_params(port), mode="legacy") as agent:
            page = Page(PortOnly(port))
            await page.connect()
            await page.register(ECHO)
            await listed(agent, "echo")
            call = asyncio.create_task(agent.call_tool("echo", {"text": "lost"}))
            await page.event()  # the page was asked; its bridge is killed before it answers
            holder.kill()
            result = await asyncio.wait_for(call, 15)
            assert result.is_error and "stopped before answering" in result.content[0].text, result
            await page.drop()
    finally:
        await stopped(holder)


async def test_three_agents_when_the_holder_quits_the_two_others_share_the_bridge_that_took_the_port():
    port = free_port()
    first = await started_stdio(port)
    others = [await started_stdio(port), await started_stdio(port)]
    try:
        await ended(first)  # one of the others takes the port; the other follows it
        await wait_for_http(f"http://127.0.0.1:{port}")
        page = Page(PortOnly(port))
        await page.connect()
        await page.register(ECHO)
        for process in others:
            for request_id in range(2, 100):  # a request in the move may get an error: asked again, as an agent would
                await send(process, {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
                answer = json.loads(await asyncio.wait_for(process.stdout.readline(), 20))
                if "echo" in {t["name"] for t in answer.get("result", {}).get("tools", [])}:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError(f"the page's tool never reached this agent: {answer}")
        await page.close()
        said = [await ended(process) for process in others]
        # (When the new holder's agent quits first, the last one takes the port in its turn.)
        assert any(f"now serves port {port}" in text for text in said), said
        assert all("Traceback" not in text for text in said), said
    finally:
        for process in [first, *others]:
            await stopped(process)
