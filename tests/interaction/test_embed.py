"""`Bridge` mounted in a host app (Starlette, and the FastAPI example), served by a real uvicorn, driven by a
real page (websockets + SSE, or Chromium) and the real MCP SDK client."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import socket
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest
import uvicorn
from browser_support import open_page, wait_for_tools
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from support import Page, tool

from bridge import Bridge, Settings
from bridge.app import WEB_CLIENT

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "embed_fastapi" / "app.py"
ERAS = ["legacy", "2026-07-28"]
CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])
JAVASCRIPT = {"text/javascript", "application/javascript"}
META_TOOLS = ["tool_search", "tool_describe", "call_tool", "run_code"]  # listed by default, beside the pages' tools
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def serving(app):
    """`app` served by uvicorn on a free port of 127.0.0.1 (its lifespan run as a host's would be)."""
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning", lifespan="on",
                                           ws_per_message_deflate=False, timeout_graceful_shutdown=2))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                await task
                raise AssertionError("the host app stopped while starting")
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


class Mounted:
    """Enough of a RunningBridge for `Page`, for a bridge mounted at `prefix`.

    `url` is the origin: `Page` fetches `url + events_url`, and the welcome's events_url is a path from the
    root that already carries the prefix (as a browser resolves it)."""

    def __init__(self, origin: str, prefix: str = "/bridge") -> None:
        self.url = origin
        self.ws_url = origin.replace("http://", "ws://") + prefix + "/agui/ws"
        self.mcp_url = origin + prefix + "/mcp"


async def home(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the host's own page")


def media_type(response: httpx.Response) -> str:
    return response.headers["content-type"].split(";")[0].strip()


@pytest.mark.parametrize("era", ERAS)
async def test_mounted_bridge_serves_a_page_tool_to_an_agent(era):
    bridge = Bridge(Settings(page_grace=0.3, sse_ping=5, progress_interval=5))
    app = Starlette(routes=[Route("/", home), Mount("/bridge", app=bridge)], lifespan=bridge.lifespan)
    async with serving(app) as origin:
        mounted = Mounted(origin)
        page = Page(mounted)
        try:
            welcome = await page.connect()
            assert welcome["events_url"].startswith("/bridge/agui/events")
            await page.register(CONFIRM)
            async with Client(mounted.mcp_url, mode=era) as client:
                assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm", *META_TOOLS]
                task = asyncio.create_task(client.call_tool("user_confirm", {"title": "Pay 10 €?"}))
                invoke = await page.event()
                assert invoke["type"] == "agui.tool.invoke" and invoke["tool"] == "user_confirm"
                assert invoke["params"] == {"title": "Pay 10 €?"}
                await page.answer(invoke["call_id"], "confirmed by the page")
                result = await asyncio.wait_for(task, 10)
            assert not result.is_error
            assert [c.text for c in result.content] == ["confirmed by the page"]
        finally:
            await page.close()
        async with httpx.AsyncClient(timeout=10) as http:
            own = await http.get(origin + "/")
            state = await http.get(origin + "/bridge/api/state")
        assert own.status_code == 200 and own.text == "the host's own page"
        assert state.status_code == 200 and [r["name"] for r in state.json()["rooms"]] == ["default"]


async def test_mounted_without_its_lifespan_mcp_is_a_clear_503():
    bridge = Bridge()
    app = Starlette(routes=[Route("/", home), Mount("/bridge", app=bridge)])  # no lifespan=bridge.lifespan
    async with serving(app) as origin:
        async with httpx.AsyncClient(timeout=10) as http:
            for _ in range(2):  # the host keeps running, and says the same thing again
                response = await http.post(origin + "/bridge/mcp", json=INITIALIZE, headers=MCP_HEADERS)
                assert response.status_code == 503
                assert "lifespan" in response.text
            rooms = await http.post(origin + "/bridge/rooms/other/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            assert rooms.status_code == 503 and "lifespan" in rooms.text
            own = await http.get(origin + "/")
        assert own.status_code == 200 and own.text == "the host's own page"


def load_example():
    """examples/embed_fastapi/app.py, imported as uvicorn would import it: a fresh module (and bridge) each time."""
    spec = importlib.util.spec_from_file_location("embed_fastapi_app", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_fastapi_example_serves_the_bridge_under_bridge():
    example = load_example()
    async with serving(example.app) as origin:
        async with httpx.AsyncClient(timeout=10) as http:
            demo = await http.get(origin + "/bridge/")
            client_js = await http.get(origin + "/bridge/client/agui-bridge.js")
            own = await http.get(origin + "/")
            no_tools = (await http.get(origin + "/api/tools")).json()

            page = Page(Mounted(origin))
            try:
                welcome = await page.connect()
                assert welcome["events_url"].startswith("/bridge/agui/events")
                await page.register(CONFIRM)
                async with Client(origin + "/bridge/mcp", mode="legacy") as client:
                    assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm", *META_TOOLS]
                tools = (await http.get(origin + "/api/tools")).json()
            finally:
                await page.close()

    assert demo.status_code == 200 and media_type(demo) == "text/html"
    assert demo.content == (WEB_CLIENT / "demo.html").read_bytes()
    assert client_js.status_code == 200 and media_type(client_js) in JAVASCRIPT
    assert client_js.content == (WEB_CLIENT / "agui-bridge.js").read_bytes()
    assert own.status_code == 200 and media_type(own) == "text/html" and "/bridge/mcp" in own.text
    assert no_tools == {}
    assert tools == {"default": ["user_confirm"]}


def page_references(html: str) -> list[str]:
    """What a browser fetches for the page: module imports, scripts, stylesheets (data: URLs aside)."""
    found = re.findall(r"""(?:\bfrom\s+|\bimport\s*\(\s*|\bsrc=|<link[^>]*\bhref=)["']([^"']+)["']""", html)
    return [ref for ref in found if not ref.startswith("data:")]


async def test_fastapi_example_demo_page_references_resolve_under_the_mount():
    example = load_example()
    async with serving(example.app) as origin:
        async with httpx.AsyncClient(timeout=10) as http:
            page_url = origin + "/bridge/"
            html = (await http.get(page_url)).text
            references = page_references(html)
            assert any(ref.endswith("agui-bridge.js") for ref in references), references
            statuses = {ref: (await http.get(urljoin(page_url, ref))).status_code for ref in references}
    assert statuses == dict.fromkeys(references, 200), f"the demo page at {page_url} fetches {statuses}"


async def test_fastapi_example_demo_page_in_a_browser_gives_agents_its_tools(browser):
    example = load_example()
    async with serving(example.app) as origin:
        async with open_page(browser, origin + "/bridge/", ready=None), \
                Client(origin + "/bridge/mcp", mode="legacy") as client:
            await wait_for_tools(client, "agui_user_confirm")


HOST_APP = """
from starlette.applications import Starlette
from starlette.routing import Mount
from bridge import Bridge

bridge = Bridge()
app = Starlette(routes=[Mount("/bridge", app=bridge)], lifespan=bridge.lifespan)
"""


async def test_a_host_app_stopping_ends_the_page_streams_at_once(tmp_path):
    """uvicorn waits for open connections before it ends the lifespan: the bridge must end its pages'
    event streams when the server starts to exit, not a page grace (10 s) later."""
    import os
    import signal
    import sys

    (tmp_path / "host_app.py").write_text(HOST_APP)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "uvicorn", "host_app:app", "--port", str(port), "--log-level", "warning",
        cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(tmp_path)})
    try:
        page = Page(Mounted(f"http://127.0.0.1:{port}", "/bridge"))
        for _ in range(200):
            try:
                await page.connect()
                break
            except OSError:
                await asyncio.sleep(0.05)
        started = asyncio.get_running_loop().time()
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 5) == 0
        assert asyncio.get_running_loop().time() - started < 3
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
