"""No one let in: every refusal of the bridge, through its real endpoints.

A real uvicorn bridge (tests/support.py), the real MCP SDK client, real WebSocket/SSE pages and
raw httpx requests where a client must be made to misbehave. The CLI is run as a user runs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
import httpx2
import pytest
import websockets
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from support import Page, eventually, free_port, open_page, page, pages_closed_after, running_bridge, tool

from bridge.app import Bridge
from bridge.config import InsecureSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
ERAS = ["legacy", "2026-07-28"]
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])


@asynccontextmanager
async def agent(url: str, token: str | None, mode: str = "legacy"):
    """The real MCP SDK client, sending `Authorization: Bearer <token>` on every request."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    # Headers go on the HTTP client, as the SDK's streamable_http_client says; its timeouts are the SDK's defaults.
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


async def call_and_answer(client: Client, p: Page, name: str, arguments: dict, result="ok"):
    task = asyncio.create_task(client.call_tool(name, arguments))
    invoke = await p.event()
    await p.answer(invoke["call_id"], result=result)
    return invoke, await asyncio.wait_for(task, 10)


async def hello(ws, **fields) -> dict:
    await ws.send(json.dumps({"type": "agui.hello", **fields}))
    return json.loads(await asyncio.wait_for(ws.recv(), 10))


# --- listening beyond loopback --------------------------------------------------------------


@pytest.mark.parametrize("how", ["serve --host", "stdio --host", "AGUI_BRIDGE_HOST"])
def test_listening_beyond_loopback_without_an_agent_token_refuses_to_start(how):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGUI_BRIDGE_")}
    args = {"serve --host": ["serve", "--host", "0.0.0.0"], "stdio --host": ["stdio", "--host", "0.0.0.0"],
            "AGUI_BRIDGE_HOST": ["serve"]}[how]
    if how == "AGUI_BRIDGE_HOST":
        env["AGUI_BRIDGE_HOST"] = "0.0.0.0"
    done = subprocess.run([sys.executable, "-m", "bridge.cli", *args, "--port", str(free_port())], cwd=ROOT,
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr and "demo http://" not in done.stderr
    # Why, and the two ways out.
    assert "0.0.0.0" in done.stderr and "without an agent token" in done.stderr, done.stderr
    assert "--agent-token" in done.stderr and "Authorization: Bearer" in done.stderr, done.stderr
    assert "127.0.0.1" in done.stderr, done.stderr


def test_the_bridge_refuses_non_loopback_settings_without_an_agent_token():
    for host in ("0.0.0.0", "::", "192.0.2.7"):
        with pytest.raises(InsecureSettings, match="--agent-token"):
            Bridge(Settings(host=host))
        with pytest.raises(InsecureSettings):
            Bridge(host=host)
    for host in ("127.0.0.1", "localhost", "::1"):
        Bridge(Settings(host=host))
    Bridge(Settings(host="0.0.0.0", agent_token="a-long-random-token"))


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1"])
async def test_host_and_origin_checks_stay_on_with_an_agent_token(host):
    token = "t0ken"
    auth = {"Authorization": f"Bearer {token}"}
    async with running_bridge(host=host, agent_token=token, public_hosts="bridge.example") as b, \
            page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http:
        port = b.server.port
        evil = {"Host": f"evil.example:{port}"}
        # A foreign Host (DNS rebinding) is refused on the MCP endpoints, even with the right token ...
        for path in ("/mcp", "/rooms/team/mcp"):
            refused = await http.post(b.url + path, json=INITIALIZE, headers=MCP_HEADERS | auth | evil)
            assert refused.status_code in (400, 421, 403), (path, refused.status_code, refused.text)
        # ... and on the page endpoints: event stream, the client module, the WebSocket.
        for path in (f"/agui/events?session={p.session_id}", "/client/agui-bridge.js", "/api/state"):
            refused = await http.get(b.url + path, headers=evil)
            assert refused.status_code in (400, 421, 403), (path, refused.status_code)
        with pytest.raises(websockets.InvalidStatus) as rejected:
            async with websockets.connect(f"ws://evil.example:{port}/agui/ws", host="127.0.0.1", port=port):
                pass
        assert rejected.value.response.status_code in (400, 403)
        # A foreign Origin on the MCP endpoint, with the right Host and token.
        foreign = await http.post(b.url + "/mcp", json=INITIALIZE,
                                  headers=MCP_HEADERS | auth | {"Origin": "https://evil.example"})
        assert foreign.status_code == 403, foreign.text
        assert b.hub.catalog.get("team") is None

        # A name in public_hosts is admitted, on MCP and page endpoints alike.
        public = {"Host": f"bridge.example:{port}"}
        admitted = await http.post(b.url + "/mcp", json=INITIALIZE, headers=MCP_HEADERS | auth | public)
        assert admitted.status_code == 200, admitted.text
        assert (await http.get(b.url + "/api/state", headers=public | auth)).status_code == 200
        async with websockets.connect(f"ws://bridge.example:{port}/agui/ws", host="127.0.0.1", port=port) as ws:
            assert (await hello(ws))["type"] == "agui.welcome"
        # And the agent that has the token works end to end.
        async with agent(b.mcp_url(), token) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm"]
            _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"}, result="yes")
            assert result.content[0].text == "yes" and not result.is_error


def every_endpoint(port: int, session: str) -> list[tuple[str, str, dict, dict | None]]:
    """(method, path, headers, JSON body): one request of each kind the bridge serves, those it serves
    directly (no Origin) and those it routes (with an Origin, each endpoint's origin policy)."""
    mcp = ("/mcp", MCP_HEADERS, INITIALIZE)
    return [
        ("POST", *mcp),
        ("POST", "/rooms/team/mcp", MCP_HEADERS, INITIALIZE),
        ("GET", "/mcp", {"Accept": "text/event-stream"}, None),
        # The rebinding page itself: its Origin is its own host, which is the request's Host.
        ("POST", "/mcp", MCP_HEADERS | {"Origin": f"http://evil.example:{port}"}, INITIALIZE),
        ("OPTIONS", "/mcp", {"Origin": f"http://evil.example:{port}", "Access-Control-Request-Method": "POST"}, None),
        ("GET", f"/agui/events?session={session}", {}, None),
        ("GET", f"/agui/events?session={session}", {"Origin": "http://localhost:5173"}, None),
        ("POST", "/agui/run", {"Origin": "http://localhost:5173"}, {}),
        ("POST", "/rooms/team/agui/run", {}, {}),
        ("GET", "/api/state", {}, None),
        ("POST", "/api/calls/c1/cancel", {"Origin": f"http://evil.example:{port}"}, None),
        ("GET", "/metrics", {}, None),
        ("GET", "/dashboard", {}, None),
        ("GET", "/", {}, None),
        ("GET", "/client/agui-bridge.js", {"Origin": "https://anywhere.example"}, None),
        ("GET", "/no/such/path", {}, None),
    ]


async def test_a_foreign_host_is_refused_on_every_endpoint_before_it_acts():
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http:
        port = b.server.port
        for method, path, headers, body in every_endpoint(port, p.session_id):
            refused = await http.request(method, b.url + path, json=body,
                                         headers=headers | {"Host": f"evil.example:{port}"})
            assert refused.status_code == 400, (method, path, headers, refused.status_code, refused.text)
            # Which setting would admit that name, for an operator whose proxy sends it.
            assert "--public-hosts evil.example " in refused.text, (method, path, refused.text)
        for origin in (None, "http://localhost:5173", f"http://evil.example:{port}"):
            with pytest.raises(websockets.InvalidStatus) as rejected:
                async with websockets.connect(f"ws://evil.example:{port}/agui/ws", host="127.0.0.1", port=port,
                                              origin=origin):
                    pass
            assert rejected.value.response.status_code == 400, origin
            assert b"--public-hosts evil.example" in rejected.value.response.body
        # Nothing acted: no room made, no session but the page's, the page's stream still its own.
        assert b.hub.catalog.get("team") is None and "team" not in b.bridge.mcp.served_rooms
        assert list(b.hub.sessions) == [p.session_id]
        async with Client(b.mcp_url(), mode="legacy") as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm"]
            _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"}, result="still here")
            assert result.content[0].text == "still here"


@pytest.mark.parametrize(("host", "admitted"), [
    ("bridge.example:443", True), ("BRIDGE.example:443", True), ("bridge.example:8443", False),
    ("bridge.example", False), ("a.apps.example", True), ("a.apps.example:8080", True), ("apps.example", False),
    ("localhost", True), ("[::1]:80", True), ("127.0.0.1.evil.example", False)])
async def test_a_public_host_is_admitted_on_its_port_only_on_every_endpoint(host, admitted):
    """`name:port` admits that port only, `name` any port or none; the same on MCP and page endpoints."""
    async with running_bridge(public_hosts="bridge.example:443,*.apps.example") as b, \
            httpx.AsyncClient(timeout=10) as http:
        port = b.server.port
        for method, path, headers, body in every_endpoint(port, "no-such-session"):
            if "Origin" in headers or path == "/mcp" and method == "GET":
                continue  # the Origin would not be the request's own; the GET stream stays open
            response = await http.request(method, b.url + path, json=body, headers=headers | {"Host": host})
            assert (response.status_code != 400) is admitted, (host, method, path, response.status_code, response.text)
        try:
            async with websockets.connect(f"ws://{host}/agui/ws", host="127.0.0.1", port=port) as ws:
                assert (await hello(ws))["type"] == "agui.welcome"
            assert admitted, host
        except websockets.InvalidStatus as rejected:
            assert not admitted and rejected.response.status_code == 400, host


# --- agents ---------------------------------------------------------------------------------


async def test_agents_need_the_bearer_token_on_every_mcp_endpoint():
    token = "s3cret-agent-token"
    async with running_bridge(agent_token=token) as b, page(b, CONFIRM) as p, \
            page(b, tool("team_tool"), room="team") as team_page, httpx.AsyncClient(timeout=10) as http:
        rooms_before = len(b.hub.catalog)
        for path in ("/mcp", "/rooms/team/mcp", "/rooms/elsewhere/mcp"):
            for presented in (None, "", "Bearer", "Bearer wrong", f"Bearer {token}x", f"Bearer {token[:-1]}",
                              f"Basic {token}", token, f"bearer{token}"):
                headers = MCP_HEADERS | ({"Authorization": presented} if presented is not None else {})
                for method in ("POST", "GET", "DELETE"):
                    response = await http.request(method, b.url + path, headers=headers,
                                                  json=INITIALIZE if method == "POST" else None)
                    assert response.status_code == 401, (path, presented, method, response.status_code)
                    assert response.headers["www-authenticate"].startswith("Bearer")
                    assert "Authorization: Bearer" in response.text
        # Refused requests make no room and start no MCP server.
        assert len(b.hub.catalog) == rooms_before and b.hub.catalog.get("elsewhere") is None
        assert "elsewhere" not in b.bridge.mcp.served_rooms

        # The real SDK client with a wrong token fails, rather than waiting.
        for mode in ERAS:
            with pytest.raises(BaseException) as failed:  # the SDK raises an ExceptionGroup around the 401
                async with asyncio.timeout(10):
                    async with agent(b.mcp_url(), "wrong", mode) as client:
                        await client.list_tools()
            assert not isinstance(failed.value, (TimeoutError, asyncio.CancelledError)), failed.value

        # With the token: list and call, both eras, both endpoints.
        for mode in ERAS:
            async with agent(b.mcp_url(), token, mode) as client, \
                    agent(b.mcp_url("team"), token, mode) as team_client:
                assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm"]
                assert [t.name for t in (await team_client.list_tools()).tools] == ["team_tool"]
                _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"}, result=f"ok {mode}")
                assert result.content[0].text == f"ok {mode}"
                _, result = await call_and_answer(team_client, team_page, "team_tool", {}, result="team")
                assert result.content[0].text == "team"


# --- pages ----------------------------------------------------------------------------------


async def test_a_cross_site_page_gets_neither_the_event_stream_nor_the_websocket():
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http:
        events = f"{b.url}/agui/events?session={p.session_id}"
        for origin in ("https://evil.example", "http://127.0.0.1.evil.example:80", "https://localhost.evil.example:443",
                       "null"):
            refused = await http.get(events, headers={"Origin": origin})
            assert refused.status_code == 403, (origin, refused.status_code)
            assert refused.json()["code"] == "forbidden_origin"
        async with http.stream("GET", events, headers={"Origin": "http://localhost:5173"}) as allowed:
            assert allowed.status_code == 200
        for origin in ("https://evil.example", "null"):
            async with websockets.connect(b.ws_url, origin=origin) as ws:
                error = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert error["type"] == "agui.error" and error["code"] == "forbidden_origin"
                assert "--allowed-origins" in error["message"]
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await asyncio.wait_for(ws.recv(), 10)
                assert closed.value.rcvd.code == 1008
        # A refused page never became a session.
        assert list(b.hub.sessions) == [p.session_id]


async def test_a_room_token_guards_its_room_and_no_other():
    async with running_bridge(room_tokens="secret=abc, vault=xyz", page_grace=30) as b:
        for token in (None, "", "wrong", "xyz", "abcd", "ABC", " abc"):
            async with websockets.connect(b.ws_url) as ws:
                refused = await hello(ws, room="secret", token=token, id="h")
                assert refused["type"] == "agui.error" and refused["code"] == "unauthorized", refused
                assert refused["reply_to"] == "h" and "secret" in refused["message"]
                assert ("missing" if not token else "is not the one") in refused["message"]
                await ws.wait_closed()  # one guess a socket
                assert ws.close_code == 1008
        assert b.hub.catalog.get("secret") is None and not b.hub.sessions
        async with websockets.connect(b.ws_url) as ws:
            welcome = await hello(ws, room="secret", token="abc")
            assert welcome["type"] == "agui.welcome" and welcome["room"] == "secret"
            secret_session = welcome["session_id"]
        # Rooms without a token of their own need none.
        for room in ("default", "other"):
            async with websockets.connect(b.ws_url) as ws:
                assert (await hello(ws, room=room))["type"] == "agui.welcome"
        # The session id alone does not let a page back into the room (nor into its session).
        async with websockets.connect(b.ws_url) as ws:
            refused = await hello(ws, room="secret", session_id=secret_session)
            assert refused["code"] == "unauthorized"
        async with websockets.connect(b.ws_url) as ws:
            moved = await hello(ws, room="other", session_id=secret_session)
            assert moved["type"] == "agui.welcome" and not moved["resumed"]
            assert moved["session_id"] != secret_session


async def test_a_room_token_overrides_the_bridge_token_for_its_room():
    async with running_bridge(token="everyone", room_tokens="secret=abc") as b:
        for room, token, expected in (("secret", "everyone", "agui.error"), ("secret", "abc", "agui.welcome"),
                                      ("other", "abc", "agui.error"), ("other", "everyone", "agui.welcome"),
                                      ("other", None, "agui.error")):
            async with websockets.connect(b.ws_url) as ws:
                reply = await hello(ws, room=room, token=token)
                assert reply["type"] == expected, (room, token, reply)


async def test_operator_endpoints_need_the_agent_token():
    token = "op-token"
    async with running_bridge(agent_token=token) as b, page(b, CONFIRM) as p, \
            agent(b.mcp_url(), token) as client, httpx.AsyncClient(timeout=10) as http:
        auth = {"Authorization": f"Bearer {token}"}
        for presented in ({}, {"Authorization": "Bearer wrong"}):
            assert (await http.get(b.url + "/metrics", headers=presented)).status_code == 401
        assert (await http.get(b.url + "/metrics", headers=auth)).status_code == 200
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}))
        call_id = (await p.event())["call_id"]
        cancel = f"{b.url}/api/calls/{call_id}/cancel"
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            assert (await http.post(cancel, headers=headers)).status_code == 401
        # A cross-site page's POST (CSRF) is refused even with the token.
        assert (await http.post(cancel, headers=auth | {"Origin": "https://evil.example"})).status_code == 403
        assert not task.done()
        assert (await http.post(cancel, headers=auth)).json() == {"cancelled": True}
        result = await asyncio.wait_for(task, 10)
        assert result.is_error
        assert (await p.event())["type"] == "agui.tool.cancel"


# --- rooms ----------------------------------------------------------------------------------


async def test_an_agent_never_reaches_another_rooms_tools():
    transfer = tool("transfer_funds", "Transfer money from the bank account to a payee.",
                    {"amount": {"type": "number"}})
    async with running_bridge() as b, page(b, tool("note_text", "Write a note."), room="a") as page_a, \
            page(b, transfer, room="b") as page_b, Client(b.mcp_url("a"), mode="legacy") as agent_a:
        assert [t.name for t in (await agent_a.list_tools()).tools] == ["note_text"]
        found = await agent_a.call_tool("tool_search", {"query": "transfer money bank account payee", "limit": 20})
        assert "transfer_funds" not in json.dumps(found.model_dump(mode="json"))
        described = await agent_a.call_tool("tool_describe", {"name": "transfer_funds"})
        assert described.is_error and "Transfer money" not in described.content[0].text
        called = await agent_a.call_tool("call_tool", {"name": "transfer_funds", "arguments": {"amount": 100}})
        assert called.is_error
        with pytest.raises(MCPError, match="Unknown tool"):
            await agent_a.call_tool("transfer_funds", {"amount": 100})
        # Nor by the name it would get if its name were taken, nor from a room named alike.
        with pytest.raises(MCPError, match="Unknown tool"):
            await agent_a.call_tool(f"transfer_funds__{page_b.session_id[:6]}", {"amount": 100})
        async with Client(b.mcp_url("B"), mode="legacy") as agent_upper:
            assert (await agent_upper.list_tools()).tools == []
        await asyncio.sleep(0.1)
        assert page_b.events.empty() and page_a.events.empty()


async def test_a_page_cannot_answer_or_report_progress_for_another_pages_call():
    # The neighbour, a tab of the same app, opens first: calls go to the tab used last, the owner.
    async with running_bridge(max_message_bytes=10_000) as b, page(b, CONFIRM, room="b") as neighbour, \
            page(b, CONFIRM, room="b") as owner, page(b, CONFIRM, room="a") as stranger, \
            Client(b.mcp_url("b"), mode="legacy") as client:
        seen: list[str | None] = []

        async def on_progress(progress, total, message):
            seen.append(message)

        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}, progress_callback=on_progress))
        invoke = await owner.event()
        call_id = invoke["call_id"]
        for intruder in (neighbour, stranger):
            await intruder.send({"type": "agui.tool.progress", "call_id": call_id, "progress": 9, "message": "forged"})
            refused = await intruder.reply()
            assert refused["code"] == "unknown_call" and refused["call_id"] == call_id
            await intruder.answer(call_id, result="forged answer")
            refused = await intruder.reply()
            assert refused["code"] == "unknown_call" and refused["call_id"] == call_id
            # Nor end it with an answer the bridge cannot read (which ends the sender's own call).
            await intruder.send('{"type": "agui.tool.return", "call_id": "' + call_id + '", "result": NaN}')
            assert (await intruder.reply())["code"] == "bad_json"
            await intruder.send({"type": "agui.tool.return", "call_id": call_id, "result": "x" * 20_000})
            assert (await intruder.reply())["code"] == "too_large"
        assert not task.done()
        await owner.send({"type": "agui.tool.progress", "call_id": call_id, "progress": 1, "message": "genuine"})
        await eventually(lambda: "genuine" in seen)
        await owner.answer(call_id, result="genuine answer")
        result = await asyncio.wait_for(task, 10)
        assert result.content[0].text == "genuine answer" and not result.is_error
        assert "forged" not in seen
        assert owner.replies.empty()


async def test_rooms_only_agents_used_are_freed():
    async with running_bridge(idle_room_seconds=2) as b, page(b, CONFIRM, room="kept") as p, \
            httpx.AsyncClient(timeout=10) as http:
        assert (await http.post(b.mcp_url("kept"), json=INITIALIZE, headers=MCP_HEADERS)).status_code == 200
        rooms_before, served_before = len(b.hub.catalog), len(b.bridge.mcp.served_rooms)
        most = 0
        for n in range(300):
            response = await http.post(b.mcp_url(f"r{n}"), json=INITIALIZE, headers=MCP_HEADERS)
            assert response.status_code == 200, response.text
            most = max(most, len(b.hub.catalog))
        assert most > rooms_before + 50  # they did exist (the first may be freed already)
        await eventually(lambda: len(b.hub.catalog) == rooms_before and len(b.bridge.mcp.served_rooms) == served_before)
        assert len(b.bridge.mcp.rooms_with_servers) == served_before
        assert all(b.hub.catalog.get(f"r{n}") is None for n in range(300))
        # A room with a page stays, and so do its tools.
        await asyncio.sleep(0.5)
        assert b.hub.catalog.get("kept") is not None and "kept" in b.bridge.mcp.served_rooms
        async with Client(b.mcp_url("kept"), mode="legacy") as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm"]
            _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"}, result="still here")
            assert result.content[0].text == "still here"
        # A freed room serves again when an agent comes back.
        async with Client(b.mcp_url("r7"), mode="legacy") as client:
            assert (await client.list_tools()).tools == []


async def test_rooms_pages_left_are_freed():
    async with running_bridge(page_grace=0.2) as b:
        rooms_before = len(b.hub.catalog)

        async def visit(n: int) -> None:
            async with websockets.connect(b.ws_url) as ws:
                welcome = await hello(ws, room=f"p{n}")
                assert welcome["type"] == "agui.welcome"
                if n % 3 == 0:  # some leave without a word: freed after the grace period
                    ws.transport.abort()

        for start in range(0, 300, 50):
            await asyncio.gather(*(visit(n) for n in range(start, start + 50)))
        await eventually(lambda: len(b.hub.catalog) == rooms_before and not b.hub.sessions)
        assert all(b.hub.catalog.get(f"p{n}") is None for n in range(300))


async def test_a_room_past_max_rooms_is_refused_to_pages_and_agents():
    async with running_bridge(max_rooms=3, idle_room_seconds=0.2) as b, httpx.AsyncClient(timeout=10) as http:
        pages = [await open_page(b, tool(f"t{n}"), room=f"room{n}") for n in range(3)]
        async with pages_closed_after(*pages):
            async with websockets.connect(b.ws_url) as ws:
                refused = await hello(ws, room="room3", id=1)
                assert refused["type"] == "agui.error" and refused["code"] == "too_many_rooms", refused
                assert refused["reply_to"] == 1
                assert "3 rooms" in refused["message"] and "--max-rooms" in refused["message"]
                # The socket is not lost: a hello to a room that exists is welcome.
                assert (await hello(ws, room="room0"))["type"] == "agui.welcome"
            # Rooms agents ask for without a page are bounded apart: three held open, a fourth is refused.
            async with AsyncExitStack() as holding:  # each handshake client keeps its event stream open
                for n in range(3):
                    await holding.enter_async_context(Client(b.mcp_url(f"agent{n}"), mode="legacy"))
                await eventually(lambda: all(b.bridge.mcp.agents(f"agent{n}")["requests_open"] for n in range(3)))
                response = await http.post(b.mcp_url("room4"), json=INITIALIZE, headers=MCP_HEADERS)
                assert response.status_code == 503, response.text
                assert "3 rooms" in response.text and "--max-rooms" in response.text
            assert b.hub.catalog.get("room3") is None and b.hub.catalog.get("room4") is None
            # Rooms that exist still serve their agents.
            async with Client(b.mcp_url("room1"), mode="legacy") as client:
                assert [t.name for t in (await client.list_tools()).tools] == ["t1"]
            # Once a room empties, the next one is admitted.
            await pages[2].close()
            await eventually(lambda: b.hub.catalog.get("room2") is None)
            async with Client(b.mcp_url("room4"), mode="2026-07-28") as client:
                assert (await client.list_tools()).tools == []


async def test_dashboard_state_needs_the_agent_token():
    """Page URLs and the arguments of calls in flight are users' data."""
    async with running_bridge(agent_token="tok") as b, httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(b.url + "/api/state")).status_code == 401
        assert (await http.get(b.url + "/api/state", headers={"Authorization": "Bearer nope"})).status_code == 401
        assert (await http.get(b.url + "/api/state", headers={"Authorization": "Bearer tok"})).status_code == 200
