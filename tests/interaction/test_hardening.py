"""What a web page on another origin, a room-hungry agent, a token guesser or an unauthenticated
uploader can do to a bridge at its defaults: nothing beyond a clear refusal.

A real uvicorn bridge (tests/support.py), raw HTTP where a client must misbehave, the real MCP SDK
client, and real WebSocket/SSE pages.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from mcp import Client
from support import eventually, open_page, running_bridge, tool

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
              "io.modelcontextprotocol/clientCapabilities": {}}}}
MODERN = MCP_HEADERS | {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
DEV_SERVER = "http://localhost:5173"  # an allowed page origin: any local dev server or npm demo
MEMO = tool("save_memo", "Save a memo.", {"memo": {"type": "string"}}, ["memo"])


async def hello(ws, **fields) -> dict:
    await ws.send(json.dumps({"type": "agui.hello", **fields}))
    return json.loads(await asyncio.wait_for(ws.recv(), 10))


# --- other origins are pages, never agents or operators -----------------------------------------


async def test_a_page_origin_can_neither_read_nor_act_on_agent_and_operator_endpoints():
    async with running_bridge() as b, httpx.AsyncClient(timeout=10) as http:
        p = await open_page(b, MEMO)
        async with Client(b.mcp_url(), mode="legacy") as agent:
            call = asyncio.create_task(agent.call_tool("save_memo", {"memo": "PIN 4711"}))
            invoke = await p.event()
            foreign = {"Origin": DEV_SERVER}
            for method, path, body in (("GET", "/api/state", None), ("GET", "/metrics", None),
                                       ("GET", "/dashboard", None),
                                       ("POST", f"/api/calls/{invoke['call_id']}/cancel", None),
                                       ("POST", "/mcp", {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                                         "params": {"name": "save_memo", "arguments": {"memo": "x"}}})):
                response = await http.request(method, b.url + path, headers=MCP_HEADERS | foreign, json=body)
                assert response.status_code == 403, (path, response.status_code, response.text)
                assert "--agent-origins" in response.text and "PIN" not in response.text
                assert "access-control-allow-origin" not in response.headers
                # Nor does a preflight grant anything.
                preflight = await http.options(b.url + path, headers=foreign | {
                    "Access-Control-Request-Method": method, "Access-Control-Request-Headers": "content-type"})
                assert "access-control-allow-origin" not in preflight.headers, path
            # The call was neither cancelled nor doubled: it waits for its page, which answers it.
            assert not call.done() and p.events.empty()
            await p.answer(invoke["call_id"], result="saved")
            assert (await asyncio.wait_for(call, 10)).content[0].text == "saved"
            # The bridge's own pages (same origin) and clients without Origin keep working.
            own = {"Origin": b.url}
            assert (await http.get(b.url + "/api/state", headers=own)).status_code == 200
            assert (await http.get(b.url + "/api/state")).status_code == 200
            assert (await http.post(b.url + "/api/calls/nope/cancel", headers=own)).status_code == 404
            # Page endpoints still answer page origins with CORS (the client's files any origin: public code).
            run = await http.options(b.url + "/agui/run", headers=foreign | {"Access-Control-Request-Method": "POST"})
            assert run.status_code == 200 and run.headers["access-control-allow-origin"] == DEV_SERVER
            client_js = await http.get(b.url + "/client/agui-bridge.js", headers=foreign)
            assert client_js.status_code == 200 and client_js.headers["access-control-allow-origin"] == "*"
        await p.close()


async def test_an_operator_may_let_a_web_based_agent_in():
    async with running_bridge(agent_origins="https://inspector.example") as b, httpx.AsyncClient(timeout=10) as http:
        opted_in = {"Origin": "https://inspector.example"}
        state = await http.get(b.url + "/api/state", headers=opted_in)
        assert state.status_code == 200 and state.headers["access-control-allow-origin"] == "https://inspector.example"
        preflight = await http.options(b.url + "/mcp", headers=opted_in | {
            "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,mcp-session-id"})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://inspector.example"
        listed = await http.post(b.url + "/mcp", headers=MODERN | opted_in, json=LIST_TOOLS)
        assert listed.status_code == 200, listed.text
        assert (await http.get(b.url + "/api/state", headers={"Origin": DEV_SERVER})).status_code == 403


# --- rooms: an agent cannot take the slot a page needs --------------------------------------------


async def test_rooms_agents_only_asked_about_do_not_lock_out_pages_or_agents():
    async with running_bridge(max_rooms=4, idle_room_seconds=300) as b, httpx.AsyncClient(timeout=10) as http:
        for n in range(6):  # sessionless requests to junk rooms, more than max_rooms
            response = await http.post(b.mcp_url(f"junk{n}"), headers=MODERN, json=LIST_TOOLS)
            assert response.status_code == 200, response.text
        async with Client(b.mcp_url("junk-handshake"), mode="legacy") as junk:
            await junk.list_tools()
            # New pages still get rooms, and new agents are served (the least recently used junk room goes).
            pages = [await open_page(b, tool(f"t{n}"), room=f"real{n}") for n in range(4)]
            async with Client(b.mcp_url("real0"), mode="2026-07-28") as agent:
                assert [t.name for t in (await agent.list_tools()).tools] == ["t0"]
            response = await http.post(b.mcp_url("fresh"), headers=MODERN, json=LIST_TOOLS)
            assert response.status_code == 200, response.text
            pageless = [r.name for r in b.hub.catalog.rooms() if not b.hub.has_pages(r.name)]
            assert len(pageless) <= 4, pageless
            # Only rooms with pages count against max_rooms for pages.
            async with websockets.connect(b.ws_url) as ws:
                refused = await hello(ws, room="real4")
                assert refused["code"] == "too_many_rooms", refused
            for p in pages:
                await p.close()
        # The handshake session was DELETEd as the client closed: its room is freed at once.
        await eventually(lambda: b.hub.catalog.get("junk-handshake") is None, timeout=2)
        assert "junk-handshake" not in [r["name"] for r in (await http.get(b.url + "/api/state")).json()["rooms"]]


# --- /agui/run refuses before reading the body ---------------------------------------------------


async def _post_head_only(port: int, path: str, headers: dict[str, str]) -> bytes:
    """A POST that declares a huge body and sends none of it: only a refusal that does not read it returns."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        writer.write(head.encode() + b"{")
        await writer.drain()
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    finally:
        writer.close()


async def test_agui_run_checks_the_token_and_declared_length_before_the_body():
    async with running_bridge(token="t0ken-of-128-bits-or-more") as b:
        big = {"Content-Type": "application/json", "Content-Length": str(12_500_000)}
        refused = await _post_head_only(b.server.port, "/agui/run", big)
        assert refused.startswith(b"HTTP/1.1 401"), refused
        refused = await _post_head_only(b.server.port, "/agui/run",
                                        big | {"Authorization": "Bearer wrong"})
        assert refused.startswith(b"HTTP/1.1 401"), refused
        # With the right token, a body declared over the limit is refused unread too.
        too_large = await _post_head_only(b.server.port, "/agui/run", big | {
            "Content-Length": str(17 << 20), "Authorization": "Bearer t0ken-of-128-bits-or-more"})
        assert too_large.startswith(b"HTTP/1.1 413"), too_large


# --- token guessing -------------------------------------------------------------------------------


async def test_wrong_page_tokens_close_the_socket_and_are_slowed_down():
    async with running_bridge(token="right") as b, httpx.AsyncClient(timeout=10) as http:
        for n in range(10):
            async with websockets.connect(b.ws_url) as ws:
                refused = await hello(ws, token=f"guess{n}")
                assert refused["code"] == "unauthorized"
                with pytest.raises(websockets.ConnectionClosed):
                    await asyncio.wait_for(ws.recv(), 5)
                assert ws.close_code == 1008
        # The burst is spent: this address waits, whatever it sends, and the AG-UI endpoint agrees.
        async with websockets.connect(b.ws_url) as ws:
            slowed = await hello(ws, token="right")
            assert slowed["code"] == "too_many_attempts" and 0 < slowed["retry_after"] <= 1, slowed
        run = await http.post(b.url + "/agui/run", json={}, headers={"Authorization": "Bearer guess"})
        assert run.status_code == 429 and "Retry-After" in run.headers
        await asyncio.sleep(1.1)
        async with websockets.connect(b.ws_url) as ws:
            assert (await hello(ws, token="right"))["type"] == "agui.welcome"


# --- default origins and hosts include the default port --------------------------------------------


@pytest.mark.parametrize("origin", ["http://localhost", "http://127.0.0.1", "http://[::1]"])
async def test_local_pages_on_port_80_are_pages(origin):
    async with running_bridge() as b:
        async with websockets.connect(b.ws_url, origin=origin) as ws:
            assert (await hello(ws))["type"] == "agui.welcome"


@pytest.mark.parametrize("origin", ["http://localhost.evil.example", "http://127.0.0.1.evil.example:80",
                                    "http://localhost:80@evil.example"])
async def test_look_alike_origins_are_refused(origin):
    async with running_bridge() as b:
        async with websockets.connect(b.ws_url, origin=origin) as ws:  # refused as it connects
            assert json.loads(await asyncio.wait_for(ws.recv(), 10))["code"] == "forbidden_origin"


async def test_a_host_header_without_a_port_is_served():
    async with running_bridge() as b, httpx.AsyncClient(timeout=10) as http:
        response = await http.post(b.mcp_url(), headers=MODERN | {"Host": "localhost"}, json=LIST_TOOLS)
        assert response.status_code == 200, response.text


async def test_a_page_socket_that_never_says_hello_is_closed():
    async with running_bridge(request_head_timeout=0.5) as b:
        async with websockets.connect(b.ws_url) as ws:
            refused = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert refused["code"] == "hello_first" and "--request-head-timeout" in refused["message"]
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 5)
            assert ws.close_code == 1008
        # One that says hello in time stays.
        async with websockets.connect(b.ws_url) as ws:
            assert (await hello(ws))["type"] == "agui.welcome"
            await asyncio.sleep(1)
            await ws.send(json.dumps({"type": "agui.tools.register", "tools": []}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "agui.tools.registered"
