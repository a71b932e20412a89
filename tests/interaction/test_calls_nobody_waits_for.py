"""Calls nobody waits for end: an agent whose response stream closed, whose session was deleted, or whose
relayed stdio process died has its call cancelled at the page (the bridge keeps no event store, so such an
answer could never be delivered); a task outlives its request. Sessions ended right after `initialize`
free their rooms; /api/state counts the agents that are there; an input request nobody answers ends with
the call's timeout, visible and cancellable meanwhile.

Real uvicorn bridge, real pages (websockets + SSE), raw HTTP agents (httpx), the real MCP SDK client, a
real second `agui-mcp-bridge stdio` process."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client
from modern_agent import Agent, envelope
from support import Page, eventually, free_port, page, running_bridge, tool

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"],
               execution={"taskSupport": "optional"})
HANDSHAKE = "2025-06-18"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
MODERN_HEADERS = MCP_HEADERS | {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                "Mcp-Name": "user_confirm"}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": HANDSHAKE, "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "0"}}}
ASK_NAME = {"name": {"method": "elicitation/create",
                     "params": {"mode": "form", "message": "Your name?",
                                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                                                    "required": ["name"]}}}}


def call_body(title: str, request_id: int = 1, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "user_confirm", "arguments": {"title": title}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def open_session(http: httpx.AsyncClient, url: str, *, initialized: bool = True) -> dict[str, str]:
    """A handshake-era session opened by hand; the headers its requests carry."""
    init = await http.post(url, headers=MCP_HEADERS, json=INITIALIZE)
    assert init.status_code == 200, init.text
    headers = MCP_HEADERS | {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": HANDSHAKE}
    if initialized:
        await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


async def cancelled_at_the_page(p: Page, invoke: dict[str, Any]) -> dict[str, Any]:
    cancel = await p.event(timeout=5)  # a few seconds at most, not the call timeout
    assert cancel["type"] == "agui.tool.cancel" and cancel["call_id"] == invoke["call_id"], cancel
    return cancel


# --- 3. calls whose answer can reach nobody ---------------------------------------------------------------


@pytest.mark.parametrize("meta", [{}, {"progressToken": "p1"}], ids=["plain", "with-progress"])
async def test_a_handshake_call_whose_response_stream_closes_is_cancelled_at_the_page(meta):
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http:
        headers = await open_session(http, b.mcp_url())
        agent = httpx.AsyncClient(timeout=None)  # the agent's connection for the call, which it drops
        call = asyncio.create_task(agent.post(b.mcp_url(), headers=headers, json=call_body("Pay?", **meta)))
        invoke = await p.event()
        assert invoke["type"] == "agui.tool.invoke"
        call.cancel()
        await agent.aclose()  # the client timed out and went away: nobody reads the answer
        await cancelled_at_the_page(p, invoke)
        await eventually(lambda: not b.hub.calls.in_flight())
        assert b.hub.calls.recent[0]["outcome"] == "cancelled"

        # The session itself is not over: its next call is answered as usual.
        call = asyncio.create_task(http.post(b.mcp_url(), headers=headers, json=call_body("Again?", 2)))
        invoke = await p.event()
        await p.answer(invoke["call_id"], "yes")
        assert "yes" in (await asyncio.wait_for(call, 10)).text


async def test_a_2026_call_with_progress_whose_request_closes_is_cancelled_at_the_page():
    async with running_bridge() as b, page(b, CONFIRM) as p:
        agent = httpx.AsyncClient(timeout=None)
        body = call_body("Pay?", **envelope({}), progressToken="p1")
        call = asyncio.create_task(agent.post(b.mcp_url(), headers=MODERN_HEADERS, json=body))
        invoke = await p.event()
        call.cancel()
        await agent.aclose()
        await cancelled_at_the_page(p, invoke)
        await eventually(lambda: not b.hub.calls.in_flight())


async def test_deleting_a_session_cancels_its_call_in_flight():
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http:
        headers = await open_session(http, b.mcp_url())
        call = asyncio.create_task(http.post(b.mcp_url(), headers=headers, json=call_body("Pay?")))
        invoke = await p.event()
        async with httpx.AsyncClient(timeout=10) as other:
            assert (await other.delete(b.mcp_url(), headers=headers)).status_code == 200
        await cancelled_at_the_page(p, invoke)
        await asyncio.wait_for(call, 10)  # its stream ends with the session
        await eventually(lambda: not b.hub.calls.in_flight())


async def test_a_relayed_stdio_agent_whose_process_dies_mid_call_has_its_call_cancelled():
    port = free_port()
    async with running_bridge(port=port) as b, page(b, CONFIRM) as p:
        agent = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli", "stdio", "--port", str(port), "--log-level", "warning",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        try:
            assert agent.stdin is not None and agent.stdout is not None

            async def send(message: dict[str, Any]) -> None:
                agent.stdin.write(json.dumps(message).encode() + b"\n")
                await agent.stdin.drain()

            await send(INITIALIZE)
            initialized = json.loads(await asyncio.wait_for(agent.stdout.readline(), 30))
            assert initialized["id"] == 0 and "result" in initialized, initialized
            await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await send(call_body("Pay?"))
            invoke = await p.event(timeout=30)
            assert invoke["type"] == "agui.tool.invoke"
            agent.kill()  # the agent's process ends mid-call, and its relay with it
            await agent.wait()
            await cancelled_at_the_page(p, invoke)
            await eventually(lambda: not b.hub.calls.in_flight())
        finally:
            if agent.returncode is None:
                agent.kill()
                await agent.wait()


async def test_a_task_outlives_the_request_that_started_it():
    async with running_bridge() as b, page(b, CONFIRM) as p:
        async with httpx.AsyncClient(timeout=10) as http:
            created = (await Agent(b.mcp_url(), http).call("user_confirm", {"title": "Later?"}))["result"]
        assert created["resultType"] == "task"
        invoke = await p.event()
        assert invoke["type"] == "agui.tool.invoke"
        async with httpx.AsyncClient(timeout=10) as http:
            agent = Agent(b.mcp_url(), http)
            await p.answer(invoke["call_id"], "done")  # not cancelled: the page's answer is taken
            done = await agent.task_reaching(created["taskId"], "completed")
            assert done["result"]["content"][0]["text"] == "done"


async def test_bad_answer_streams_are_refused_and_lose_nothing():
    """Malformed or foreign requests next to a call in flight leave it alone."""
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http:
        headers = await open_session(http, b.mcp_url())
        call = asyncio.create_task(http.post(b.mcp_url(), headers=headers, json=call_body("Pay?")))
        invoke = await p.event()
        unknown = await http.post(b.mcp_url(), headers=headers | {"Mcp-Session-Id": "not-a-session"},
                                  json=call_body("x", 2))
        assert unknown.status_code == 404
        assert (await http.post(b.mcp_url(), headers=headers, content=b"{not json")).status_code == 400
        assert (await http.delete(b.mcp_url(), headers=headers | {"Mcp-Session-Id": "nope"})).status_code == 404
        await p.answer(invoke["call_id"], "still here")
        assert "still here" in (await asyncio.wait_for(call, 10)).text


# --- 4. rooms of sessions that ended right after initialize -----------------------------------------------


async def test_sessions_deleted_right_after_initialize_leave_no_rooms():
    async with running_bridge(idle_room_seconds=300) as b, httpx.AsyncClient(timeout=10) as http:
        for n in range(40):
            url = b.mcp_url(f"brief{n}")
            headers = await open_session(http, url, initialized=False)
            assert (await http.delete(url, headers=headers)).status_code == 200
        await eventually(lambda: not b.bridge.mcp.served_rooms)
        state = (await http.get(b.url + "/api/state")).json()
        assert not [room["name"] for room in state["rooms"] if room["name"].startswith("brief")]
        assert not [name for name in b.bridge.mcp.rooms_with_servers if name.startswith("brief")]

        # A room whose other session is still open stays.
        url = b.mcp_url("shared")
        staying = await open_session(http, url, initialized=False)
        leaving = await open_session(http, url, initialized=False)
        assert (await http.delete(url, headers=leaving)).status_code == 200
        assert "shared" in b.bridge.mcp.served_rooms
        assert (await http.post(url, headers=staying, json={"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
                ).status_code == 200
        assert (await http.delete(url, headers=staying)).status_code == 200
        await eventually(lambda: "shared" not in b.bridge.mcp.served_rooms)


# --- 5. agents that are there ------------------------------------------------------------------------------


async def test_api_state_counts_the_agents_that_are_there(monkeypatch):
    monkeypatch.setattr("bridge.mcp_edge.rooms.AGENT_ACTIVE_SECONDS", 1.0)
    async with running_bridge() as b, page(b, CONFIRM), httpx.AsyncClient(timeout=10) as http:
        def agents() -> dict[str, Any]:
            return b.bridge.mcp.agents("default")

        for _ in range(5):  # one-shot agents that quit without ending their session
            headers = await open_session(http, b.mcp_url())
            assert (await http.post(b.mcp_url(), headers=headers,
                                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).status_code == 200
        assert agents()["sessions_active"] == 5
        await eventually(lambda: agents()["sessions_active"] == 0)  # a second after their last request
        assert agents()["requests_open"] == 0

        async with Client(b.mcp_url(), mode="legacy") as client:  # keeps its notification stream open
            await client.list_tools()
            await eventually(lambda: agents()["sessions_active"] == 1 and agents()["requests_open"] >= 1)
            await asyncio.sleep(1.5)  # past the window: its open stream still counts it
            assert agents()["sessions_active"] == 1
            room = (await http.get(b.url + "/api/state")).json()["rooms"][0]
            assert room["agents"]["sessions_active"] == 1 and room["agents"]["active_window_s"] == 1.0
            assert "handshake_sessions_seen" not in room["agents"]
        await eventually(lambda: agents()["sessions_active"] == 0)  # it ended its session


# --- 39.3 input requests nobody answers --------------------------------------------------------------------


GIVEN_UP: list[str] = []  # the questions whose request the bridge withdrew from the agent's client


async def never_answers(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        GIVEN_UP.append(params.message)
        raise
    raise AssertionError("unreachable")


async def ask_the_agent(p: Page) -> dict[str, Any]:
    invoke = await p.event()
    await p.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"], "requests": ASK_NAME,
                  "requestState": "step-1"})
    return invoke


async def waiting_on_the_agent(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    """The call as /api/state shows it while the agent's answer is awaited."""
    async def shown() -> dict[str, Any] | None:
        calls = (await http.get(url + "/api/state")).json()["calls"]
        return calls[0] if calls and calls[0].get("waiting_for") == "agent" else None

    for _ in range(200):
        if (call := await shown()) is not None:
            return call
        await asyncio.sleep(0.05)
    raise AssertionError("the call waiting for the agent's input is not in /api/state")


async def test_an_input_request_nobody_answers_ends_with_the_call_timeout():
    async with running_bridge(call_timeout=3, progress_interval=0.2) as b, page(b, CONFIRM) as p, \
            httpx.AsyncClient(timeout=10) as http, \
            Client(b.mcp_url(), mode="legacy", elicitation_callback=never_answers) as client:
        ticks: list[str | None] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            ticks.append(message)

        call = asyncio.create_task(client.call_tool("user_confirm", {"title": "Pay?"}, progress_callback=on_progress))
        await ask_the_agent(p)
        shown = await waiting_on_the_agent(http, b.url)
        assert shown["tool"] == "user_confirm" and shown["arguments"] == '{"title": "Pay?"}'
        await eventually(lambda: any(m and "agent" in m for m in ticks))  # keep-alive while the agent is asked
        result = await asyncio.wait_for(call, 15)  # far less than forever
        assert result.is_error and "3 s" in result.content[0].text, result
        await eventually(lambda: "Your name?" in GIVEN_UP)  # the client was told (notifications/cancelled)
        assert not b.hub.calls.in_flight()
        assert b.hub.calls.recent[0]["outcome"] == "timeout"


async def test_an_operator_cancels_a_call_waiting_for_the_agents_input():
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http, \
            Client(b.mcp_url(), mode="legacy", elicitation_callback=never_answers) as client:
        call = asyncio.create_task(client.call_tool("user_confirm", {"title": "Pay?"}))
        await ask_the_agent(p)
        shown = await waiting_on_the_agent(http, b.url)
        assert (await http.post(f"{b.url}/api/calls/{shown['call_id']}/cancel")).json() == {"cancelled": True}
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and "operator" in result.content[0].text
        assert (await http.post(f"{b.url}/api/calls/{shown['call_id']}/cancel")).status_code == 404
        assert b.hub.calls.recent[0]["outcome"] == "cancelled"


async def test_the_agent_cancels_a_call_waiting_for_its_own_input():
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http, \
            Client(b.mcp_url(), mode="legacy", elicitation_callback=never_answers) as client:
        call = asyncio.create_task(client.call_tool("user_confirm", {"title": "Pay?"}))
        await ask_the_agent(p)
        await waiting_on_the_agent(http, b.url)
        call.cancel()  # the SDK client sends notifications/cancelled
        await eventually(lambda: not b.hub.calls.in_flight())
        assert b.hub.calls.recent[0]["outcome"] == "cancelled"


async def test_an_agent_that_answers_in_time_goes_on_to_the_next_round():
    async def answers(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with running_bridge(call_timeout=30) as b, page(b, CONFIRM) as p, \
            Client(b.mcp_url(), mode="legacy", elicitation_callback=answers) as client:
        call = asyncio.create_task(client.call_tool("user_confirm", {"title": "Pay?"}))
        first = await ask_the_agent(p)
        again = await p.event()
        assert again["call_id"] != first["call_id"] and again["input_responses"]["name"]["content"] == {"name": "Ada"}
        (round_two,) = b.hub.calls.in_flight()
        (round_one,) = [c for c in b.hub.calls.recent if c["call_id"] == first["call_id"]]
        assert round_two.clock.started_at == round_one["started_at"]  # one call, one clock, across its rounds
        await p.answer(again["call_id"], "Hello, Ada!")
        assert (await asyncio.wait_for(call, 10)).content[0].text == "Hello, Ada!"
        assert [c["outcome"] for c in b.hub.calls.recent] == ["result", "input_required"]
