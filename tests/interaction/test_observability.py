"""What operators see: /metrics, spans, one log line per call, and the dashboard's data and cancel
button — through a real bridge, real pages and the real MCP SDK client."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx
import pytest
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families
from support import eventually, free_port, open_page, page, running_bridge, tool

from bridge.metrics import CALL_BUCKETS

ECHO = tool("echo", "Echo the text back.", {"text": {"type": "string"}}, ["text"])


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def test_metrics_count_pages_tools_calls_and_searches():
    async with running_bridge(inline_max=4) as b, page(b, ECHO, *[tool(f"t{i}") for i in range(6)]) as p, \
            Client(b.mcp_url(), mode="legacy") as client, httpx.AsyncClient() as http:
        task = asyncio.create_task(client.call_tool("echo", {"text": "hi"}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], "hi")
        await task
        assert (await client.call_tool("echo", {"text": 3})).is_error  # refused: invalid arguments
        await client.call_tool("tool_search", {"query": "echo"})

        response = await http.get(b.url + "/metrics")
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
        got = samples(response.text)
        room = (("room", "default"),)
        assert got[("agui_bridge_pages_connected", room)] == 1
        listed = got[("agui_bridge_tools", (("room", "default"), ("state", "listed")))]
        deferred = got[("agui_bridge_tools", (("room", "default"), ("state", "deferred")))]
        assert listed + deferred == 7 and deferred > 0
        assert got[("agui_bridge_calls_started_total", room)] == 2
        assert got[("agui_bridge_calls_finished_total", (("outcome", "result"), ("room", "default")))] == 1
        assert got[("agui_bridge_calls_finished_total",
                    (("outcome", "invalid_arguments"), ("room", "default")))] == 1
        assert got[("agui_bridge_call_duration_seconds_count", room)] == 2
        assert got[("agui_bridge_search_duration_seconds_count", room)] == 1
        assert got[("agui_bridge_calls_in_flight", room)] == 0
        buckets = [value for (name, labels), value in got.items() if name == "agui_bridge_call_duration_seconds_bucket"]
        assert len(buckets) == len(CALL_BUCKETS) + 1 and max(buckets) == 2
        assert got[("agui_bridge_call_duration_seconds_bucket", (("le", "+Inf"), ("room", "default")))] == 2
        assert got[("agui_bridge_call_duration_seconds_sum", room)] > 0


async def test_metrics_count_event_stream_reconnects():
    async with running_bridge() as b, page(b, ECHO) as p, httpx.AsyncClient() as http:
        await p.stop_listening()
        await p.listen(f"/agui/events?session={p.session_id}", last_event_id=0)
        got = samples((await http.get(b.url + "/metrics")).text)
        assert got[("agui_bridge_event_stream_reconnects_total", (("room", "default"),))] == 1


async def test_metrics_are_behind_the_agent_token():
    async with running_bridge(agent_token="s3cret") as b, httpx.AsyncClient() as http:
        assert (await http.get(b.url + "/metrics")).status_code == 401
        ok = await http.get(b.url + "/metrics", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and "agui_bridge_calls_started" in ok.text


async def test_one_span_per_call_with_tool_room_and_outcome():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # once per process; the SDK's spans and ours both land here
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as client:
        task = asyncio.create_task(client.call_tool("echo", {"text": "x"}))
        await p.answer((await p.event())["call_id"], error="nope")
        await task
        task = asyncio.create_task(client.call_tool("echo", {"text": "y"}))
        await p.event()
        task.cancel()  # the agent gives up: its call's span ends too, marked as such
        assert (await p.event())["type"] == "agui.tool.cancel"

        def spans():
            return [s for s in exporter.get_finished_spans() if s.name == "agui.tool.call"]

        await eventually(lambda: len(spans()) == 2)
    span, cancelled = spans()
    assert not cancelled.status.is_ok and [e.name for e in cancelled.events] == ["exception"]
    assert span.attributes["agui.tool"] == "echo" and span.attributes["agui.room"] == "default"
    assert span.attributes["agui.outcome"] == "error"
    assert not span.status.is_ok
    parent = next((s for s in exporter.get_finished_spans()
                   if span.parent and s.context.span_id == span.parent.span_id), None)
    assert parent is not None, "the call's span is a child of the SDK's request span"


async def test_log_json_writes_one_line_per_call():
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bridge.cli", "serve", "--port", str(port), "--log-json", "--log-level", "info",
        stderr=asyncio.subprocess.PIPE, env=os.environ | {"PYTHONUNBUFFERED": "1"})
    try:
        while b"MCP" not in await asyncio.wait_for(process.stderr.readline(), 10):
            pass

        class Where:
            url, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/agui/ws"

        p = await open_page(Where, ECHO)
        async with Client(f"{Where.url}/mcp", mode="2026-07-28") as client:
            task = asyncio.create_task(client.call_tool("echo", {"text": "x"}))
            await p.answer((await p.event())["call_id"], "x")
            await task
        await p.close()
        while True:
            line = json.loads(await asyncio.wait_for(process.stderr.readline(), 10))
            if line.get("tool") == "echo":
                break
        assert line["room"] == "default" and line["outcome"] == "result" and line["page"] == p.session_id[:6]
        assert line["duration_s"] >= 0 and line["level"] == "INFO"
    finally:
        process.terminate()
        await process.wait()


async def test_dashboard_shows_arguments_agents_and_refusals_and_cancels_a_call():
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as client, \
            httpx.AsyncClient() as http:
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("no_such_tool", {})
        task = asyncio.create_task(client.call_tool("echo", {"text": "y" * 1000}))
        invoke = await p.event()

        state = (await http.get(b.url + "/api/state")).json()
        (call,) = state["calls"]
        assert call["arguments"].startswith('{"text": "yyy') and len(call["arguments"]) <= 200
        assert state["refused"][0]["tool"] == "no_such_tool" and "Unknown tool" in state["refused"][0]["reason"]
        (room,) = state["rooms"]
        assert room["agents"]["sessions_active"] == 1

        foreign = await http.post(f"{b.url}/api/calls/{call['call_id']}/cancel", headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403
        assert (await http.post(f"{b.url}/api/calls/{call['call_id']}/cancel")).json() == {"cancelled": True}
        result = await asyncio.wait_for(task, 5)
        assert result.is_error and "operator" in result.content[0].text
        assert await p.event() == {"type": "agui.tool.cancel", "call_id": invoke["call_id"],
                                   "reason": "cancelled by an operator"}
        assert (await http.post(f"{b.url}/api/calls/{call['call_id']}/cancel")).status_code == 404
