"""Large AG-UI runs (bridge/page_edge/_agui_input.py): bounded, refused with the limit and its setting named, and
read without holding up the bridge's other clients.

Through a real bridge on 127.0.0.1: runs posted with httpx, or on a plain socket where the test must
choose the moment the body's last byte arrives; the other client is a plain HTTP/1.1 connection. (A run's
input read in slices, without a server: tests/page_edge/test_agui_input.py.)
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from agui_support import ADD, chat_messages, run, run_input
from support import TIMEOUT, eventually, running_bridge


def tools(count: int) -> list[dict[str, Any]]:
    return [{**ADD, "name": f"add_{n}"} for n in range(count)]


class Refusal:
    def __init__(self, response: httpx.Response, text: str) -> None:
        self.status_code, self.text = response.status_code, text

    def json(self) -> Any:
        return json.loads(self.text)


async def post(bridge, body: dict[str, Any]) -> Refusal:
    """A run the bridge should refuse; a run it lets in is read no further than its first line."""
    async with httpx.AsyncClient(timeout=TIMEOUT) as http, \
            http.stream("POST", bridge.url + "/agui/run", json=body) as response:
        if response.status_code == 200:
            return Refusal(response, await anext(response.aiter_lines()))
        return Refusal(response, (await response.aread()).decode())


async def test_a_run_with_more_messages_than_the_limit_is_refused_naming_the_setting():
    async with running_bridge() as b:
        refused = await post(b, run_input(messages=chat_messages(10_001)))  # the default limit is 10,000
        assert not b.hub.sessions, "nothing refused opened a thread"
    assert refused.status_code == 413, refused.text
    refusal = refused.json()
    assert refusal["code"] == "too_many_messages" and refusal["limit"] == 10_000
    assert refusal["setting"] == "--max-run-messages"
    assert "at most 10000 messages" in refusal["message"] and "--max-run-messages" in refusal["message"]
    assert "AGUI_BRIDGE_MAX_RUN_MESSAGES" in refusal["message"]

    async with running_bridge(max_run_messages=3) as b:
        assert (await post(b, run_input(messages=chat_messages(4)))).json()["limit"] == 3
        async with run(b, run_input(messages=chat_messages(3))) as at_the_limit:
            assert (await at_the_limit.next())["type"] == "RUN_STARTED"


async def test_a_run_with_more_tools_than_a_page_may_have_is_refused_naming_the_setting():
    async with running_bridge() as b:
        refused = await post(b, run_input(tools=tools(1_001)))  # --max-tools-per-page: 1,000 by default
        assert not b.hub.sessions
    assert refused.status_code == 413, refused.text
    refusal = refused.json()
    assert refusal["code"] == "too_many_tools" and refusal["limit"] == 1_000
    assert refusal["setting"] == "--max-tools-per-page" and "--max-tools-per-page" in refusal["message"]

    async with running_bridge(max_tools_per_page=2) as b:
        assert (await post(b, run_input(tools=tools(3)))).json()["code"] == "too_many_tools"
        async with run(b, run_input(tools=tools(2))) as at_the_limit:
            registered = await at_the_limit.until("CUSTOM")
        assert [t["tool"] for t in registered["value"]["tools"]] == ["add_0", "add_1"]


# --- the other clients are served while a large run is read --------------------------------------


async def request_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status, *fields = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in fields if line)
    return int(status.split()[1]), {name.lower(): value for name, value in headers.items()}


class Probe:
    """Another client of the bridge: `GET /api/state`, one after the other, on one kept-alive connection."""

    def __init__(self, host: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.host, self.reader, self.writer = host, reader, writer

    async def ask(self) -> int:
        self.writer.write(f"GET /api/state HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        status, headers = await request_head(self.reader)
        await self.reader.readexactly(int(headers["content-length"]))
        return status


async def test_other_clients_are_served_while_a_large_run_is_read():
    count = 50_000  # five times the default limit, let in here: read in slices, it holds no one up
    async with running_bridge(max_run_messages=count) as b:
        host = b.url.removeprefix("http://")
        address = host.rsplit(":", 1)
        probe = Probe(host, *await asyncio.open_connection(address[0], int(address[1])))
        assert await probe.ask() == 200
        run_reader, run_writer = await asyncio.open_connection(address[0], int(address[1]))
        body = json.dumps(run_input(messages=chat_messages(count))).encode()
        run_writer.write(f"POST /agui/run HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:-1])
        await eventually(lambda: run_writer.transport.get_write_buffer_size() == 0)
        await asyncio.sleep(0.2)  # the bridge reads what came (it shares this loop): the last byte starts the run
        run_writer.write(body[-1:])
        started = asyncio.create_task(request_head(run_reader))  # the run's answer, once its input is read
        answered_meanwhile = 0
        while True:
            asked = asyncio.create_task(probe.ask())
            done, _ = await asyncio.wait({asked, started}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
            assert done, "neither the run nor the other client was answered"
            if started.done():
                await asyncio.wait_for(asked, TIMEOUT)
                break
            assert asked.result() == 200
            answered_meanwhile += 1
        status, headers = started.result()
        assert status == 200 and headers["content-type"].startswith("text/event-stream")
        assert b"RUN_STARTED" in await asyncio.wait_for(run_reader.readuntil(b"RUN_STARTED"), TIMEOUT)
        # Read in one go, the run held the loop from its last byte to its answer: one or two of the other
        # client's requests, the first sent just after that byte, were answered around it, none after.
        assert answered_meanwhile >= 3, answered_meanwhile
        for writer in (run_writer, probe.writer):
            writer.close()
