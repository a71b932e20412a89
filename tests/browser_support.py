"""Fixtures and helpers for the tests that drive real Chromium (tests/interaction/test_browser.py,
tests/interaction/test_examples.py, ...).

Chromium is the Debian package (`apt-get install chromium`, binary /usr/bin/chromium), driven by the
Python Playwright package; `playwright install` is never needed. The fixtures (`browser`, `bridge`) are
registered for every test module by tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import os
import shutil
import socket
import tempfile
import threading
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest_asyncio
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount
from support import RunningBridge, running_bridge

from bridge import Bridge, Settings

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("AGUI_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
TIMEOUT = 10
# The WebMCP runtimes npm ships, which the browser tests bridge (tests/webmcp: scripts/setup installs them).
WEBMCP_PACKAGES = ROOT / "tests" / "webmcp" / "node_modules" / "@mcp-b"
WEBMCP_POLYFILL = WEBMCP_PACKAGES / "webmcp-polyfill" / "dist" / "index.iife.js"


@pytest_asyncio.fixture(scope="module")
async def browser():
    """One headless Chromium per test module."""
    from playwright.async_api import async_playwright

    # Missing Chromium fails the browser tests rather than skipping them: scripts/setup --test installs it.
    assert Path(CHROMIUM).exists() or shutil.which(CHROMIUM), f"no Chromium at {CHROMIUM}: apt-get install chromium"
    async with async_playwright() as p:
        instance = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            await instance.close()


@pytest_asyncio.fixture
async def bridge():
    """A fresh bridge per test (it starts in milliseconds), so no test sees another's pages."""
    async with running_bridge() as running:
        yield running


class BrowserPage:
    """A Playwright page in its own context, remembering what its console said (shown when a test fails)."""

    def __init__(self, context, page) -> None:
        self.context, self.page = context, page
        self.console: list[str] = []
        self.sockets: list[str] = []  # the WebSockets it opened (connection attempts)
        self.relayed: list[RelayedSocket] = []  # its WebSockets to the bridge, newest last
        page.on("websocket", lambda ws: self.sockets.append(ws.url))
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.page, name)


class RelayedSocket:
    """A page's WebSocket to the bridge, passed through the test (Playwright's WebSocket route) so the
    test can drop it or speak on it as the network would, without reaching into the client."""

    def __init__(self, route) -> None:
        self.route = route
        self.to_bridge = route.connect_to_server()  # messages each way pass as they are

    async def drop(self, code: int = 4999, reason: str = "test drop") -> None:
        """Close the page's side as a lost connection would (the bridge's side closes too)."""
        await self.route.close(code=code, reason=reason)

    def send_to_bridge(self, message: dict) -> None:
        self.to_bridge.send(json.dumps(message))


async def watch_event_streams(page: BrowserPage) -> list[dict]:
    """The events the page's event streams deliver from now on, as Chromium's DevTools report them
    (`Network.eventSourceMessageReceived`: eventName, eventId, data), read beside the client, not from it."""
    received: list[dict] = []
    devtools = await page.context.new_cdp_session(page.page)
    devtools.on("Network.eventSourceMessageReceived", lambda message: received.append(message))
    await devtools.send("Network.enable")
    return received


@asynccontextmanager
async def open_page(browser, url: str, *, ready: str | None = "document.body.dataset.ready === 'true'",
                    relay: bool = False):
    """A page in its own browser context; with `relay`, its WebSockets to a bridge pass through the test
    (`page.relayed`; a relayed socket's closing handshake is the relay's, not the page's)."""
    context = await browser.new_context(viewport={"width": 1200, "height": 900})
    page = BrowserPage(context, await context.new_page())
    page.set_default_timeout(TIMEOUT * 1000)
    if relay:
        await page.route_web_socket("**/agui/ws", lambda route: page.relayed.append(RelayedSocket(route)))
    try:
        await page.goto(url)
        if ready:
            await page.wait_for_function(ready, timeout=TIMEOUT * 1000)
        yield page
    except BaseException:
        print("--- browser console ---", *page.console, sep="\n")
        raise
    finally:
        await context.close()


class MountedBridge:
    """A bridge mounted under a prefix in a host app: `url` is the prefix's URL (the demo page is `url + "/"`)."""

    def __init__(self, bridge: Bridge, origin: str, prefix: str) -> None:
        self.bridge, self.hub = bridge, bridge.hub
        self.url = origin + prefix

    def mcp_url(self, room: str = "default") -> str:
        return f"{self.url}/mcp" if room == "default" else f"{self.url}/rooms/{room}/mcp"


@asynccontextmanager
async def mounted_bridge(prefix: str = "/bridge", **overrides: Any):
    """A bridge mounted at `prefix` in a host Starlette app (as examples/embed_fastapi mounts it), on a free port."""
    bridge = Bridge(replace(Settings(page_grace=0.3, sse_ping=5, progress_interval=5), **overrides))
    host = Starlette(routes=[Mount(prefix, app=bridge)], lifespan=bridge.lifespan)
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(host, log_config=None, log_level="warning", ws_per_message_deflate=False,
                                           timeout_graceful_shutdown=2))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), "the host app stopped while starting"
            await asyncio.sleep(0.01)
        yield MountedBridge(bridge, f"http://127.0.0.1:{sock.getsockname()[1]}", prefix)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


@asynccontextmanager
async def mcp_client(bridge: RunningBridge | MountedBridge, room: str = "default", mode: str = "legacy"):
    from mcp import Client

    async with Client(bridge.mcp_url(room), mode=mode) as client:
        yield client


async def tool_names(client) -> set[str]:
    listing = await client.list_tools(cache_mode="bypass")
    return {t.name for t in listing.tools}


async def wait_for_tools(client, *names: str, absent: tuple[str, ...] = (), timeout: float = TIMEOUT) -> set[str]:
    """Poll tools/list until every name in `names` is listed and none in `absent` is."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        listed = await tool_names(client)
        if set(names) <= listed and not (set(absent) & listed):
            return listed
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"tools/list never had {sorted(names)} without {sorted(absent)}; "
                                 f"it has {sorted(listed)}")
        await asyncio.sleep(0.05)


def text_of(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def screenshot_path(name: str) -> str:
    ARTIFACTS.mkdir(exist_ok=True)
    return str(ARTIFACTS / name)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def static_server(directory: Path):
    """Serve a directory over HTTP on 127.0.0.1 (another origin than the bridge, as a real app would be)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_html(html: str, name: str = "index.html"):
    """Serve one HTML page from its own local origin; yields its URL."""
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, name).write_text(html, encoding="utf-8")
        with static_server(Path(directory)) as origin:
            yield f"{origin}/{name}"
