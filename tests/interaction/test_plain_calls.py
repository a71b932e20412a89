"""How agents' MCP requests are answered: 2026-07-28 calls without progress as one JSON body (cancelled
when the agent closes the request), everything else as the SDK's SSE mode; agents' requests skip the
middleware stack, browsers' get CORS headers. Real uvicorn bridge, real pages, real SDK clients."""

from __future__ import annotations

import asyncio
import json

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from support import eventually, page, running_bridge, tool

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])
MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Accept": "application/json, text/event-stream",
                  "Content-Type": "application/json", "Mcp-Method": "tools/call", "Mcp-Name": "user_confirm"}
ENVELOPE = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {},
            CLIENT_INFO_META_KEY: {"name": "test", "version": "1"}}


def modern_call(arguments: dict, **meta) -> dict:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "user_confirm", "arguments": arguments, "_meta": ENVELOPE | meta}}


class Recorder:
    """An agent's HTTP client that notes the content type of each answer, by JSON-RPC method."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.http = httpx2.AsyncClient(event_hooks={"response": [self._response]})

    async def _response(self, response) -> None:
        request = response.request
        if request.method == "POST":
            method = json.loads(request.content).get("method", "")
            self.seen.append((method, response.headers.get("content-type", "").split(";")[0]))

    def answers(self, method: str) -> list[str]:
        return [kind for m, kind in self.seen if m == method]


@pytest.mark.parametrize("era, without_progress, with_progress", [
    ("2026-07-28", "application/json", "text/event-stream"),
    ("legacy", "text/event-stream", "text/event-stream"),  # a session's mode is fixed: SSE, for its progress
])
async def test_calls_without_progress_are_plain_json_in_the_2026_era(era, without_progress, with_progress):
    recorder = Recorder()
    async with running_bridge(progress_interval=0.2) as b, page(b, CONFIRM) as p, recorder.http, \
            Client(streamable_http_client(b.mcp_url(), http_client=recorder.http), mode=era) as client:
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "plain"}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], "ok")
        assert (await asyncio.wait_for(task, 10)).content[0].text == "ok"
        assert recorder.answers("tools/call") == [without_progress]

        ticks = []

        async def on_progress(progress, total, message):
            ticks.append(message)

        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "slow"}, progress_callback=on_progress))
        invoke = await p.event()
        await eventually(lambda: ticks)  # the keep-alive progress reached the agent
        await p.answer(invoke["call_id"], "done")
        assert (await asyncio.wait_for(task, 10)).content[0].text == "done"
        assert recorder.answers("tools/call") == [without_progress, with_progress]


async def test_closing_a_plain_call_cancels_it_at_the_page():
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient(timeout=10) as http:
        request = asyncio.create_task(http.post(b.mcp_url(), json=modern_call({"title": "x"}), headers=MODERN_HEADERS))
        invoke = await p.event()
        request.cancel()  # 2026-07-28's cancel: the agent closes the request
        cancel = await p.event()
        assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"], "reason": "cancelled by the agent"}
        await eventually(lambda: len(b.hub.calls) == 0)
        assert b.hub.calls.recent[0]["outcome"] == "cancelled"

        # The same request left open is answered as one JSON body.
        request = asyncio.create_task(http.post(b.mcp_url(), json=modern_call({"title": "y"}), headers=MODERN_HEADERS))
        invoke = await p.event()
        await p.answer(invoke["call_id"], "yes")
        answer = await request
        assert answer.headers["content-type"] == "application/json"
        assert answer.json()["result"]["content"] == [{"type": "text", "text": "yes"}]


async def test_requests_that_are_not_plain_calls_get_the_sdk_answers():
    async with running_bridge() as b, page(b, CONFIRM), httpx.AsyncClient(timeout=10) as http:
        async def post(content: bytes | str, headers=MODERN_HEADERS) -> httpx.Response:
            return await http.post(b.mcp_url(), content=content, headers=headers)

        parse_error = await post(b"{not json")
        assert parse_error.status_code == 400 and parse_error.json()["error"]["code"] == -32700
        batch = await post(json.dumps([modern_call({"title": "x"})]))
        assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
        too_large = await post(json.dumps(modern_call({"title": "x" * (5 << 20)})))
        assert too_large.status_code == 413
        notification = await post(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                              "params": {"requestId": 1}}))
        assert notification.status_code == 202
        # A bad argument is still the call's own error, as a JSON answer.
        bad = await post(json.dumps(modern_call({"title": 5})))
        assert bad.status_code == 200 and bad.headers["content-type"] == "application/json"
        assert bad.json()["result"]["isError"] is True
        # An unknown tool: the SDK's JSON-RPC error.
        unknown = await post(json.dumps(modern_call({}) | {"params": {"name": "ghost", "_meta": ENVELOPE}}),
                             MODERN_HEADERS | {"Mcp-Name": "ghost"})
        assert unknown.json()["error"]["code"] == -32602 and "ghost" in unknown.json()["error"]["message"]


async def test_agents_skip_the_middleware_and_browsers_get_cors_headers():
    origin = "http://localhost:3000"  # a web-based agent the operator let in (other browser pages are refused)
    async with running_bridge(agent_origins=origin) as b, page(b, CONFIRM) as p, \
            httpx.AsyncClient(timeout=10) as http:
        for path in ("/mcp", "/rooms/team/mcp"):
            # A browser's call: the middleware adds the CORS headers its page needs to read the answer.
            browser = asyncio.create_task(http.post(b.url + path, json=modern_call({"title": "b"}),
                                                    headers=MODERN_HEADERS | {"Origin": origin}))
            agent = asyncio.create_task(http.post(b.url + path, json=modern_call({"title": "a"}),
                                                  headers=MODERN_HEADERS))
            if path == "/mcp":
                for _ in range(2):
                    invoke = await p.event()
                    await p.answer(invoke["call_id"], invoke["params"]["title"])
            browser_answer, agent_answer = await browser, await agent
            assert "access-control-allow-origin" not in agent_answer.headers
            assert browser_answer.headers["access-control-allow-origin"] == origin
            assert "Mcp-Session-Id" in browser_answer.headers["access-control-expose-headers"]
            if path == "/mcp":
                assert browser_answer.json()["result"]["content"][0]["text"] == "b"
                assert agent_answer.json()["result"]["content"][0]["text"] == "a"
            else:  # the room has no page: both are told the tool is unknown there
                assert browser_answer.json()["error"] == agent_answer.json()["error"]
                assert "user_confirm" in agent_answer.json()["error"]["message"]
        # A room name the router would refuse is refused on the fast path too.
        assert (await http.post(b.url + "/rooms/a%20b/mcp", json=modern_call({}), headers=MODERN_HEADERS)
                ).status_code == 404
        with anyio.fail_after(5):
            async with Client(b.mcp_url("team"), mode="legacy") as client:
                assert (await client.list_tools()).tools == []


async def test_page_event_streams_get_cors_headers_only_when_cross_origin():
    origin = "http://localhost:3000"
    async with running_bridge(allowed_origins=origin) as b, page(b, CONFIRM) as p, \
            httpx.AsyncClient(timeout=10) as http:
        events = f"{b.url}/agui/events?session={p.session_id}"
        same_origin = await http.head(events)
        assert same_origin.status_code == 200 and "access-control-allow-origin" not in same_origin.headers
        cross_origin = await http.head(events, headers={"Origin": origin})
        assert cross_origin.status_code == 200 and cross_origin.headers["access-control-allow-origin"] == origin
        assert (await http.head(events, headers={"Origin": "https://evil.example"})).status_code == 403
        assert (await http.post(events)).status_code == 405  # only GET and HEAD, as the route says
        assert (await http.head(f"{b.url}/agui/events?session=nope")).status_code == 404
