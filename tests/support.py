"""Real parts for tests: a uvicorn bridge on 127.0.0.1, and a page made of a websockets client plus an SSE reader."""

from __future__ import annotations

import asyncio
import json
import socket
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import httpx
import websockets

from bridge.app import Bridge
from bridge.config import Settings
from bridge.server import RunningServer, bind

TIMEOUT = 10


class RunningBridge:
    def __init__(self, server: RunningServer) -> None:
        self.server = server
        self.bridge = server.bridge
        self.settings = server.bridge.settings
        self.hub = server.bridge.hub
        self.url = f"http://127.0.0.1:{server.port}"
        self.ws_url = f"ws://127.0.0.1:{server.port}/agui/ws"

    def mcp_url(self, room: str = "default") -> str:
        return f"{self.url}/mcp" if room == "default" else f"{self.url}/rooms/{room}/mcp"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def running_bridge(port: int = 0, **overrides: Any):
    """A bridge on 127.0.0.1: on a free port, or on `port` to stop one bridge and start another in its place."""
    # Meta-tools only in search mode, so listings are the pages' own tools; tests/interaction/test_first_minutes.py
    # tests the default (always listed). Code mode off, for the same reason (its tool is listed beside the
    # meta-tools): tests/interaction/test_code_mode_*.py turn it on.
    settings = replace(Settings(port=port, page_grace=0.3, sse_ping=5, progress_interval=5, log_level="warning",
                                meta_tools="search-mode", code_mode="off"),
                       **overrides)
    server = RunningServer(Bridge(settings), bind(settings))
    await server.start()
    try:
        yield RunningBridge(server)
    finally:
        await asyncio.wait_for(server.stop(), 10)


def tool(name: str, description: str = "", properties: dict | None = None, required: list[str] | None = None,
         **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    return {"name": name, "description": description or f"The {name} tool.", "inputSchema": schema, **extra}


class Page:
    """A page as the protocol sees it: WebSocket for what it says, SSE for what it is asked."""

    def __init__(self, bridge: RunningBridge, room: str = "default", title: str = "Test page",
                 session_id: str | None = None, origin: str | None = None, **hello: Any) -> None:
        """`origin`: the Origin header its WebSocket sends (a browser page's); `hello`: fields of its hello."""
        self.bridge, self.room, self.title = bridge, room, title
        self.session_id = session_id
        self.origin, self.hello_fields = origin, hello
        self.replies: asyncio.Queue[dict] = asyncio.Queue()
        self.events: asyncio.Queue[dict] = asyncio.Queue()
        self.event_ids: list[int] = []
        self._tasks: list[asyncio.Task] = []
        self._http = httpx.AsyncClient(timeout=None)

    async def connect(self, *, listen: bool = True, last_event_id: int | None = None) -> dict:
        self.ws = await websockets.connect(self.bridge.ws_url, origin=self.origin)
        await self.ws.send(json.dumps({"type": "agui.hello", "room": self.room, "session_id": self.session_id,
                                       "page": {"url": "http://127.0.0.1/test", "title": self.title},
                                       **self.hello_fields}))
        welcome = json.loads(await asyncio.wait_for(self.ws.recv(), TIMEOUT))
        assert welcome["type"] == "agui.welcome", welcome
        self.session_id = welcome["session_id"]
        self._tasks.append(asyncio.create_task(self._read_socket()))
        if listen:
            await self.listen(welcome["events_url"], last_event_id)
        return welcome

    async def listen(self, events_url: str, last_event_id: int | None = None) -> None:
        opened = asyncio.Event()
        self._events_task = asyncio.create_task(self._read_events(events_url, last_event_id, opened))
        self._tasks.append(self._events_task)
        await asyncio.wait_for(opened.wait(), TIMEOUT)

    async def stop_listening(self) -> None:
        """Lose the event stream only; the WebSocket stays open."""
        self._events_task.cancel()
        self._tasks.remove(self._events_task)
        await self._http.aclose()
        self._http = httpx.AsyncClient(timeout=None)

    async def _read_socket(self) -> None:
        try:
            async for frame in self.ws:
                await self.replies.put(json.loads(frame))
        except websockets.ConnectionClosed:
            pass

    async def _read_events(self, events_url: str, last_event_id: int | None, opened: asyncio.Event) -> None:
        headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else {}
        async with self._http.stream("GET", self.bridge.url + events_url, headers=headers) as response:
            assert response.status_code == 200
            opened.set()
            fields: dict[str, str] = {}
            async for line in response.aiter_lines():
                if line == "":
                    if "data" in fields:
                        self.event_ids.append(int(fields.get("id", 0)))
                        data = json.loads(fields["data"])
                        assert data["type"] == fields.get("event"), fields
                        await self.events.put(data)
                    fields = {}
                elif not line.startswith(":"):
                    key, _, value = line.partition(":")
                    fields[key] = fields.get(key, "") + value.removeprefix(" ")

    async def send(self, message: dict | str) -> None:
        await self.ws.send(message if isinstance(message, str) else json.dumps(message))

    async def reply(self, timeout: float = TIMEOUT) -> dict:
        return await asyncio.wait_for(self.replies.get(), timeout)

    async def event(self, timeout: float = TIMEOUT) -> dict:
        return await asyncio.wait_for(self.events.get(), timeout)

    async def register(self, *tools: dict) -> dict:
        await self.send({"type": "agui.tools.register", "tools": list(tools)})
        reply = await self.reply()
        assert reply["type"] == "agui.tools.registered", reply
        return reply

    async def answer(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        message: dict[str, Any] = {"type": "agui.tool.return", "call_id": call_id}
        if error is not None:
            message["error"] = {"message": error}
        else:
            message["result"] = result
        await self.send(message)

    async def close(self, code: int = 1000) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()
        await self.ws.close(code)
        await self._http.aclose()

    async def drop(self) -> None:
        """Lose the connection without saying goodbye, as a crashed tab or network would."""
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()
        self.ws.transport.abort()
        await self._http.aclose()
        self._http = httpx.AsyncClient(timeout=None)


async def open_page(bridge: RunningBridge, *tools: dict, **kwargs: Any) -> Page:
    """A connected page that registered `tools`; the caller closes or drops it."""
    p = Page(bridge, **kwargs)
    await p.connect()
    if tools:
        await p.register(*tools)
    return p


@asynccontextmanager
async def page(bridge: RunningBridge, *tools: dict, **kwargs: Any):
    p = await open_page(bridge, *tools, **kwargs)
    try:
        yield p
    finally:
        try:
            await p.close()
        except Exception:
            pass


async def eventually(predicate, timeout: float = TIMEOUT, interval: float = 0.02):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(interval)


class PortOnly:
    """Enough of a RunningBridge for `Page`: where the page endpoints are."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.ws_url = f"ws://127.0.0.1:{port}/agui/ws"


async def wait_for_http(url: str) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(200):
            try:
                if (await http.get(url + "/api/state")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError("the stdio bridge never served pages")


@asynccontextmanager
async def pages_closed_after(*pages: Page):
    """The pages are closed when the block ends, however it ends (one already closed is fine)."""
    try:
        yield
    finally:
        for p in pages:
            try:
                await p.close()
            except Exception:
                pass
