"""`agui-mcp-bridge stdio`: MCP on stdin/stdout, pages on the HTTP port of the same process."""

from __future__ import annotations

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client, StdioServerParameters
from support import Page, PortOnly, eventually, free_port, tool, wait_for_http

META_TOOLS = ["tool_search", "tool_describe", "call_tool", "run_code"]  # listed by default (run_code: code mode)
HANDSHAKE = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def stdio_command(port: int, *flags: str) -> list[str]:
    return [sys.executable, "-m", "bridge.cli", "stdio", "--port", str(port), "--log-level", "info", *flags]


async def started_stdio(port: int, *flags: str) -> asyncio.subprocess.Process:
    """`agui-mcp-bridge stdio` as a raw subprocess (its stdin ours to close: the SDK's client would send
    SIGTERM after its grace, hiding a process that does not end by itself), its handshake done."""
    process = await asyncio.create_subprocess_exec(*stdio_command(port, *flags), stdin=asyncio.subprocess.PIPE,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    await send(process, *HANDSHAKE)
    assert json.loads(await asyncio.wait_for(process.stdout.readline(), 20))["id"] == 1
    return process


async def send(process: asyncio.subprocess.Process, *messages: dict) -> None:
    for message in messages:
        process.stdin.write((json.dumps(message) + "\n").encode())
    await process.stdin.drain()


async def ended(process: asyncio.subprocess.Process) -> str:
    """Its stderr, once it ended by itself after its stdin closed (before any signal: it exits 0)."""
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 5)
    assert process.returncode == 0
    return (await process.stderr.read()).decode()


async def stopped(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
        await process.wait()


async def test_stdio_end_to_end():
    port = free_port()
    command = stdio_command(port)
    changes: list[object] = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changes.append(message)

    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        assert client.server_capabilities.tools.list_changed is True
        bridge = PortOnly(port)
        await wait_for_http(bridge.url)
        page = Page(bridge)
        await page.connect()
        await page.register(tool("user_confirm", "Ask the user.", {"title": {"type": "string"}}))
        await eventually(lambda: changes)
        assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm", *META_TOOLS]

        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "Pay?"}))
        invoke = await page.event()
        await page.answer(invoke["call_id"], "ok")
        result = await asyncio.wait_for(task, 10)
        assert result.content[0].text == "ok" and not result.is_error
        await page.close()


async def test_stdio_stdout_carries_only_mcp():
    port = free_port()
    process = await asyncio.create_subprocess_exec(*stdio_command(port), stdin=asyncio.subprocess.PIPE,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
        for request in requests:
            process.stdin.write((json.dumps(request) + "\n").encode())
        await process.stdin.drain()
        bridge = PortOnly(port)
        await wait_for_http(bridge.url)  # HTTP traffic would show in an access log
        page = Page(bridge)
        await page.connect()
        await page.register(tool("ping_tool"))
        process.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + "\n").encode())
        await process.stdin.drain()

        lines = []
        while not any('"id":2' in line.replace(" ", "") for line in lines):
            lines.append((await asyncio.wait_for(process.stdout.readline(), 10)).decode())
        await page.close()
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 10)
        lines += [line.decode() for line in (await process.stdout.read()).splitlines(keepends=True)]
        messages = [json.loads(line) for line in lines if line.strip()]  # every line is JSON ...
        assert all(m.get("jsonrpc") == "2.0" for m in messages)  # ... and JSON-RPC
        listed = next(m for m in messages if m.get("id") == 2)
        assert [t["name"] for t in listed["result"]["tools"]] == ["ping_tool", *META_TOOLS]
        stderr = (await process.stderr.read()).decode()
        assert "Uvicorn running" in stderr or "Application startup complete" in stderr  # logs went to stderr
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()



async def test_stdio_ends_by_itself_when_its_client_closes_stdin_while_a_page_is_connected():
    port = free_port()
    process = await started_stdio(port)
    try:
        page = Page(PortOnly(port))
        await page.connect()  # its event stream is open: it must not keep the process alive
        await page.register(tool("ping_tool"))
        said = await ended(process)
        assert "Traceback" not in said, said
        await page.drop()
    finally:
        await stopped(process)


async def test_stdio_holding_the_port_says_once_where_to_open_the_demo():
    port = free_port()
    process = await started_stdio(port)
    try:
        said = await ended(process)
        assert said.count(f"demo http://127.0.0.1:{port}/") == 1, said
    finally:
        await stopped(process)
