"""Connections that send nothing, or send it slowly, cannot lock clients out.

The flood tests run a real `agui-mcp-bridge serve` process under `prlimit --nofile=1024:1024` (a
common default) and open 1,100 idle TCP connections to it from here; the others run an in-process
bridge with short deadlines and talk to it over raw sockets.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from mcp import Client
from support import Page, eventually, free_port, page, running_bridge, tool

NOFILE = 1024
FLOOD = 1100
SERVED_WITHIN = 3.0  # the bound the bridge promises a new agent and a new page during a flood
BRIDGE = Path(sys.executable).with_name("agui-mcp-bridge")
PROBE = tool("flood_probe", "Answers during a flood.")



def _room_for_the_flood() -> None:
    """This process holds the flood's sockets: its own open-file limit must be above it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FLOOD + 512
    if soft < wanted:
        assert hard == resource.RLIM_INFINITY or hard >= wanted, \
            f"the open-file hard limit ({hard}) is too low to hold {FLOOD} connections: raise it (ulimit -Hn)"
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


@contextmanager
def bridge_process(log: Path, env: dict[str, str] | None = None,
                   nofile: tuple[int, int] = (NOFILE, NOFILE)) -> Iterator[SimpleNamespace]:
    """`agui-mcp-bridge serve` with `nofile` (soft, hard) open files at most; yields its url and pid."""
    port = free_port()
    with log.open("wb") as stderr:
        # Missing prlimit fails the test rather than skipping it: util-linux is part of every Debian.
        assert shutil.which("prlimit"), "no prlimit: apt-get install util-linux"
        process = subprocess.Popen(["prlimit", f"--nofile={nofile[0]}:{nofile[1]}", str(BRIDGE), "serve",
                                    "--port", str(port)],
                                   stdout=subprocess.DEVNULL, stderr=stderr, env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + 30
        while b"MCP http" not in log.read_bytes():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the bridge did not start"
            time.sleep(0.05)
        yield SimpleNamespace(url=f"http://127.0.0.1:{port}", pid=process.pid)  # prlimit execs the bridge
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def flood(url: str, count: int = FLOOD) -> Iterator[list[socket.socket]]:
    """`count` TCP connections that never send a byte."""
    port = int(url.rsplit(":", 1)[1])
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        yield sockets
    finally:
        for s in sockets:
            s.close()


def _lines(log: Path) -> list[str]:
    return log.read_text(errors="replace").splitlines()


async def test_a_flood_of_idle_connections_does_not_lock_out_agents_and_pages(tmp_path):
    _room_for_the_flood()
    log = tmp_path / "bridge.log"
    with bridge_process(log) as bridge, flood(bridge.url):
        url = bridge.url
        await asyncio.sleep(0.5)  # the bridge has accepted what it can of the flood
        started = time.monotonic()
        probe = Page(SimpleNamespace(url=url, ws_url=url.replace("http", "ws") + "/agui/ws"))  # type: ignore[arg-type]
        await asyncio.wait_for(probe.connect(), SERVED_WITHIN)
        await asyncio.wait_for(probe.register(PROBE), SERVED_WITHIN)
        page_took = time.monotonic() - started
        try:
            started = time.monotonic()
            async with Client(url + "/mcp", mode="legacy") as agent:
                listed = await asyncio.wait_for(agent.list_tools(), SERVED_WITHIN)
            agent_took = time.monotonic() - started
        finally:
            await probe.close()
    assert "flood_probe" in [t.name for t in listed.tools]
    assert page_took < SERVED_WITHIN and agent_took < SERVED_WITHIN, (page_took, agent_took)
    lines = _lines(log)
    assert len(lines) < 100, "\n".join(lines[:20])
    assert any("closing the longest-idle" in line for line in lines), "\n".join(lines)


async def test_accept_failures_are_one_line_per_cause(tmp_path):
    """With the cap set above the open-file limit, accepting fails (EMFILE): asyncio's traceback for each
    failed accept becomes one line per interval."""
    _room_for_the_flood()
    log = tmp_path / "bridge.log"
    with bridge_process(log, env={"AGUI_BRIDGE_MAX_CONNECTIONS": "100000"}) as bridge, flood(bridge.url):
        await asyncio.sleep(2)  # asyncio retries the accept every second
    lines = _lines(log)
    assert len(lines) < 60, f"{len(lines)} lines:\n" + "\n".join(lines[:60])
    failures = [line for line in lines if "Too many open files" in line]
    assert len(failures) == 1 and "socket.accept() out of system resource" in failures[0], "\n".join(lines)


def test_the_open_file_limit_is_raised_to_the_hard_limit(tmp_path):
    with bridge_process(tmp_path / "bridge.log", nofile=(256, NOFILE)) as bridge:
        limits = Path(f"/proc/{bridge.pid}/limits").read_text()
    (line,) = [line for line in limits.splitlines() if line.startswith("Max open files")]
    assert line.split()[3:5] == [str(NOFILE), str(NOFILE)], line


async def _read_all(reader: asyncio.StreamReader) -> bytes:
    chunks = []
    while chunk := await reader.read(65536):
        chunks.append(chunk)
    return b"".join(chunks)


async def _trickle(writer: asyncio.StreamWriter, data: bytes, closed: asyncio.Task[bytes], every: float = 0.1) -> None:
    """Send `data` a byte at a time until it is all sent or the bridge closes the connection."""
    for i in range(len(data)):
        if closed.done():
            return
        try:
            writer.write(data[i:i + 1])
            await writer.drain()
        except ConnectionError:
            return
        await asyncio.sleep(every)


# Long enough that a test fails rather than hangs, far past the deadlines these tests set.
BOUND = 8


async def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout():
    async with running_bridge(request_head_timeout=0.5) as b:
        reader, writer = await asyncio.open_connection("127.0.0.1", b.server.port)
        assert await asyncio.wait_for(reader.read(), BOUND) == b""  # closed, and nothing said
        writer.close()


async def _quick_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"GET /client/agui-bridge.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    status = await asyncio.wait_for(reader.readuntil(b"\r\n"), BOUND)
    assert status.startswith(b"HTTP/1.1 200"), status
    headers = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), BOUND)
    length = next(int(line.partition(b":")[2]) for line in headers.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    await asyncio.wait_for(reader.readexactly(length), BOUND)


@pytest.mark.parametrize("kept_alive", [False, True], ids=["first-request", "after-a-request"])
async def test_a_request_head_sent_slowly_gets_408_after_the_head_timeout(kept_alive):
    """The deadline runs from when the connection opens, or on a kept-alive connection from the first
    byte of the next request: a quick request, then a pause longer than the deadline, is not cut."""
    async with running_bridge(request_head_timeout=0.5) as b:
        reader, writer = await asyncio.open_connection("127.0.0.1", b.server.port)
        if kept_alive:
            await _quick_request(reader, writer)
            await asyncio.sleep(1)  # idle between requests for twice the deadline
            await _quick_request(reader, writer)
        head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"." * 200 + b"\r\n\r\n"
        response = await _trickled(reader, writer, head)
    assert response.startswith(b"HTTP/1.1 408 "), response
    assert b"request head" in response and b"--request-head-timeout" in response, response


async def _trickled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> bytes:
    """Send `data` a byte every 50 ms until the bridge answers; the answer, once the connection closes."""
    answer = asyncio.create_task(_read_all(reader))
    sending = asyncio.create_task(_trickle(writer, data, answer, every=0.05))
    try:
        return await asyncio.wait_for(answer, BOUND)
    finally:
        sending.cancel()
        writer.close()


async def test_a_request_body_sent_slowly_gets_408_after_the_body_timeout():
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}' + b" " * 200
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body))
    async with running_bridge(request_body_timeout=0.5) as b:
        reader, writer = await asyncio.open_connection("127.0.0.1", b.server.port)
        writer.write(head + body[:10])
        response = await _trickled(reader, writer, body[10:])
    assert response.startswith(b"HTTP/1.1 408 "), response
    assert b"request body" in response and b"--request-body-timeout" in response, response


async def test_at_the_cap_idle_connections_make_room_but_streams_and_calls_in_flight_stay():
    """Past --max-connections the longest-idle connections are closed; a page's WebSocket and event
    stream and an agent's call waiting for the page are not."""
    async with running_bridge(max_connections=20, request_head_timeout=60) as b, page(b, PROBE) as p, \
            Client(b.mcp_url(), mode="legacy") as agent:
        call = asyncio.create_task(agent.call_tool("flood_probe", {}))
        invoke = await p.event()
        idle = [await asyncio.open_connection("127.0.0.1", b.server.port) for _ in range(40)]
        await eventually(lambda: sum(reader.at_eof() for reader, _ in idle) >= 20)
        for _, writer in idle:
            writer.close()
        await p.answer(invoke["call_id"], result="still here")
        result = await asyncio.wait_for(call, BOUND)
        assert result.content[0].text == "still here"
        assert "flood_probe" in [t.name for t in (await agent.list_tools()).tools]
        await p.register(tool("after_the_flood"))  # the WebSocket is still open
