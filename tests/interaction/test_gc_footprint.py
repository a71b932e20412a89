"""What every full garbage collection walks, in a real bridge: what it keeps of a registration answered
and of a connection a client reset stays out of it.

A full collection stops every thread, the event loop too, for as long as it takes to walk every
object the collector tracks (bench/README.md, "Agents searching at once"). What the catalog keeps of a
tool read or called, the index of a tool, and the call table of a call ended are tested without a
server: tests/core/test_catalog.py, tests/search/test_index.py, tests/core/test_calls.py."""

from __future__ import annotations

import asyncio
import re
import socket
import struct

from gc_support import tracked
from support import eventually, page, running_bridge, tool


async def test_a_registration_is_not_kept_once_the_page_is_answered():
    # The page's socket waits for its next frame: the message it answered, 1,000 parsed
    # definitions, is no longer held.
    async with running_bridge() as b, page(b) as p:
        await p.register(tool("warm_up"))
        before = tracked()
        await p.register(*(tool(f"t{n}", f"Tool number {n}", {"id": {"type": "string"}}, ["id"])
                           for n in range(999)))
        assert (tracked() - before) / 999 < 2


async def reset_after_answer(port: int) -> None:
    """One request, its answer read, then the connection reset (RST), as MCP clients close theirs."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /api/state HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    length = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
    assert head.startswith(b"HTTP/1.1 200") and length is not None, head
    await reader.readexactly(int(length.group(1)))
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def test_a_connection_the_client_resets_is_let_go_at_once():
    # Not kept until the keep-alive timeout (30 s) with its request, transport and parser.
    async with running_bridge() as b:
        port = b.server.port
        for _ in range(5):
            await reset_after_answer(port)
        before = tracked()
        for _ in range(50):
            await reset_after_answer(port)
        await eventually(lambda: (tracked() - before) / 50 < 2)
