"""Code mode and the bridge's process: the sandbox's workers start with the first program and stop with the
bridge; in stdio mode a program's prints never reach stdout (the MCP stream); a `serve` process stopped with
SIGTERM, and a `stdio` process whose client closes stdin, exit with status 0 after serving programs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from code_mode_support import (
    AGGREGATE,
    OPEN_TOTAL,
    code_bridge,
    sandbox_workers,
    served_page,
    text_of,
)
from mcp import Client, StdioServerParameters
from support import PortOnly, eventually, free_port, wait_for_http
from test_cli import start_serve
from test_packaging import clean_env, installed  # noqa: F401 (a fixture)
from test_stdio import ended, send, started_stdio, stdio_command, stopped

PRINTS = "for n in range(100):\n    print(f'line {n}', 'x' * 100)\n" + AGGREGATE


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_bridge_starts_sandbox_workers_with_its_first_program_and_stops_them_with_itself():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, served_page(bridge):
        assert (await client.call_tool("get_order", {"order_id": 1})).structured_content["id"] == 1
        assert sandbox_workers() == [] and not bridge.bridge.programs.started  # direct calls start none
        assert (await client.call_tool("run_code", {"code": "1 + 1"})).structured_content == {"result": 2}
        workers = sandbox_workers()
        assert workers and bridge.bridge.programs.started
    assert not any(alive(worker) for worker in workers)
    assert sandbox_workers() == []


async def test_in_stdio_mode_what_a_program_prints_never_reaches_the_mcp_stream():
    port = free_port()
    command = stdio_command(port, "--log-level", "warning")
    unreadable: list[Exception] = []

    async def on_message(message: object) -> None:
        if isinstance(message, Exception):  # a line on stdout that is no JSON-RPC message
            unreadable.append(message)

    params = StdioServerParameters(command=command[0], args=command[1:], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        await wait_for_http(PortOnly(port).url)
        async with served_page(PortOnly(port)):
            result = await client.call_tool("run_code", {"code": PRINTS})
            assert not result.is_error, text_of(result)
            assert result.structured_content["result"] == OPEN_TOTAL
            printed = result.structured_content["printed"]
            assert printed.startswith("line 0 " + "x" * 100 + "\n") and printed.count("\n") == 100
            assert isinstance(await client.list_tools(), types.ListToolsResult)  # the stream still reads
    assert unreadable == []


async def test_a_stdio_process_that_served_programs_exits_0_when_its_client_closes_stdin():
    port = free_port()
    process = await started_stdio(port)
    try:
        await wait_for_http(PortOnly(port).url)
        async with served_page(PortOnly(port)):
            await send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                 "params": {"name": "run_code", "arguments": {"code": PRINTS}}})
            while True:  # every line on stdout is a JSON-RPC message
                message = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))
                if message.get("id") == 2:
                    break
            assert message["result"]["structuredContent"]["result"] == OPEN_TOTAL
            workers = sandbox_workers(process.pid)
            assert workers
        stderr = await ended(process)  # exit status 0, by itself
        assert "Traceback" not in stderr, stderr
        assert not any(alive(worker) for worker in workers)
    finally:
        await stopped(process)


async def test_a_serve_process_that_ran_programs_exits_0_on_sigterm():
    process, url, _ = await start_serve("--log-level", "warning", "--code-compute-seconds", "2")
    try:
        async with Client(f"{url}/mcp") as client, served_page(PortOnly(int(url.rsplit(":", 1)[1]))) as shop:
            done = await client.call_tool("run_code", {"code": AGGREGATE})
            assert done.structured_content == {"result": OPEN_TOTAL}
            # One program parked on a person, one computing, when the signal comes.
            waiting = asyncio.create_task(client.call_tool("run_code", {"code": "await confirm(question='Go?')"}))
            computing = asyncio.create_task(client.call_tool("run_code", {"code": "while True:\n    pass"}))
            await eventually(lambda: shop.held)
            workers = sandbox_workers(process.pid)
            assert workers
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 20) == 0
            for run in (waiting, computing):
                try:
                    await asyncio.wait_for(run, 10)
                except Exception:
                    pass  # the bridge went away: an error result, or the connection closed
        stderr = (await process.stderr.read()).decode()
        assert "Traceback" not in stderr and "Fatal" not in stderr, stderr
        assert not any(alive(worker) for worker in workers)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_program_runs_in_a_room_no_page_has_joined():
    """A program that calls no tool needs no page; one that calls a tool reads where to open one."""
    async with code_bridge() as bridge, Client(bridge.mcp_url("empty")) as client:
        result = await client.call_tool("run_code", {"code": "sorted({'b': 2, 'a': 1}.items())"})
        assert result.structured_content == {"result": [["a", 1], ["b", 2]]}
        missing = await client.call_tool("run_code", {"code": "await call_tool('anything', {})"})
        assert missing.is_error and 'No page is connected to room "empty"' in text_of(missing)



async def test_the_installed_package_serves_run_code(installed):  # noqa: F811 (the fixture, by name)
    """The wheel, installed: `run_code` is served, the sandbox needs nothing more than the package's dependencies
    (here this checkout's, as the fixture shares them; the sandbox's binary too, which pip puts beside the
    interpreter)."""
    process, url, _ = await start_serve_installed(installed, MONTY_BIN=str(Path(sys.executable).parent / "monty"))
    try:
        async with Client(f"{url}/mcp") as client:
            result = await client.call_tool("run_code", {"code": "sum(range(10))"})
            assert result.structured_content == {"result": 45}, text_of(result)
    finally:
        process.send_signal(signal.SIGTERM)
        status = await asyncio.wait_for(process.wait(), 20)
        print((await process.stderr.read()).decode())  # shown when the test fails
    assert status == 0


async def start_serve_installed(package: Any, **env: str) -> tuple[asyncio.subprocess.Process, str, str]:
    process = await asyncio.create_subprocess_exec(package.command, "serve", "--port", "0", cwd=package.workdir,
                                                   env=clean_env() | env, stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    said = ""
    while not (match := re.search(r"demo (http://127\.0\.0\.1:\d+)/", said)):
        line = (await asyncio.wait_for(process.stderr.readline(), 20)).decode()
        assert line, "the installed bridge exited before listening:\n" + said
        said += line
    return process, match.group(1), said
