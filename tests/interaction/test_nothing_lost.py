"""Every call answered exactly once through drops, resumes and shutdown: real bridge, real pages,
the real MCP SDK client."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import anyio
from mcp import Client
from support import Page, free_port, open_page, page, running_bridge, tool

ECHO = tool("echo", "Echo the text back.", {"text": {"type": "string"}}, ["text"])


async def test_an_answered_invocation_is_not_delivered_again_on_resume():
    async with running_bridge(page_grace=3) as b, Client(b.mcp_url(), mode="legacy") as client:
        p = await open_page(b, ECHO)
        answered = asyncio.create_task(client.call_tool("echo", {"text": "one"}))
        first = await p.event()
        await p.answer(first["call_id"], "one")
        assert (await asyncio.wait_for(answered, 5)).content[0].text == "one"
        waiting = asyncio.create_task(client.call_tool("echo", {"text": "two"}))
        second = await p.event()
        await p.drop()

        back = Page(b, session_id=p.session_id)
        await back.connect(last_event_id=0)  # claims to have seen nothing at all
        replayed = await back.event()
        assert replayed["call_id"] == second["call_id"]
        await asyncio.sleep(0.2)
        assert back.events.empty()  # "one" was answered: never sent again
        await back.answer(second["call_id"], "two")
        assert (await asyncio.wait_for(waiting, 5)).content[0].text == "two"
        await back.close()


async def test_a_second_return_for_a_call_is_refused_and_changes_nothing():
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as client:
        task = asyncio.create_task(client.call_tool("echo", {"text": "x"}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], "first")
        await p.answer(invoke["call_id"], "second")
        assert (await p.reply())["code"] == "unknown_call"
        assert (await asyncio.wait_for(task, 5)).content[0].text == "first"


async def test_a_page_whose_event_stream_is_gone_fails_its_calls_after_the_grace():
    async with running_bridge(page_grace=0.5) as b, page(b, ECHO) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        task = asyncio.create_task(client.call_tool("echo", {"text": "x"}))
        await p.event()
        await p.stop_listening()  # the WebSocket stays open
        started = anyio.current_time()
        result = await asyncio.wait_for(task, 5)
        assert result.is_error and "went away" in result.content[0].text
        assert anyio.current_time() - started < 3  # the grace, not the call timeout


async def test_an_event_stream_that_comes_back_within_the_grace_keeps_the_page():
    async with running_bridge(page_grace=1) as b, page(b, ECHO) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        task = asyncio.create_task(client.call_tool("echo", {"text": "x"}))
        invoke = await p.event()
        await p.stop_listening()
        await p.listen(f"/agui/events?session={p.session_id}")
        again = await p.event()
        assert again["call_id"] == invoke["call_id"]
        await asyncio.sleep(1.3)  # past the grace: the page is still there
        await p.answer(invoke["call_id"], "kept")
        assert (await asyncio.wait_for(task, 5)).content[0].text == "kept"


async def test_large_arguments_to_many_concurrent_calls_are_all_delivered():
    big = "x" * 300_000
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="2026-07-28") as client:
        calls = [asyncio.create_task(client.call_tool("echo", {"text": f"{i}:{big}"})) for i in range(40)]
        seen = set()
        for _ in range(40):  # nothing else is sent to the page meanwhile
            invoke = await p.event(timeout=20)
            seen.add(invoke["params"]["text"].split(":")[0])
            await p.answer(invoke["call_id"], invoke["params"]["text"][:8])
        results = await asyncio.wait_for(asyncio.gather(*calls), 20)
        assert seen == {str(i) for i in range(40)}
        assert sorted(r.content[0].text.split(":")[0] for r in results) == sorted(seen)


async def test_more_calls_waiting_than_the_event_window_all_reach_a_fresh_stream():
    """Driven through the hub (1,100 HTTP calls would make a slow test); the window is the session's."""
    from bridge.core.hub import Hub, HubConfig
    from bridge.core.messages import Hello, RegisterTools, ToolReturn
    from bridge.core.sessions import OTHER_EVENTS_KEPT

    count = OTHER_EVENTS_KEPT + 100
    hub = Hub(HubConfig(max_calls_per_page=count, max_calls_per_room=count))
    session, _ = hub.hello(Hello(type="agui.hello"))
    await hub.handle(session, RegisterTools(type="agui.tools.register", tools=[ECHO]))
    echo = hub.room("default").get("echo")
    calls = [asyncio.create_task(hub.call(echo, {"text": str(i)})) for i in range(count)]
    await asyncio.sleep(0)
    stream = hub.events(session, None)
    delivered = [await anext(stream) for _ in range(count)]
    assert sorted(int(e.data["params"]["text"]) for e in delivered) == list(range(count))
    for event in delivered:
        await hub.handle(session, ToolReturn(type="agui.tool.return", call_id=event.data["call_id"],
                                             result=event.data["params"]["text"]))
    outcomes = await asyncio.gather(*calls)
    assert sorted(int(o.result) for o in outcomes) == list(range(count))
    await stream.aclose()


async def test_sigterm_answers_calls_in_flight_tells_the_page_and_exits():
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bridge.cli", "serve", "--port", str(port), "--log-level", "warning",
        stderr=asyncio.subprocess.PIPE, env=os.environ | {"PYTHONUNBUFFERED": "1"})
    try:
        banner = await asyncio.wait_for(process.stderr.readline(), 10)
        assert b"MCP" in banner

        class Where:
            url, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/agui/ws"

        p = await open_page(Where, ECHO)
        async with Client(f"{Where.url}/mcp", mode="legacy") as legacy, \
                Client(f"{Where.url}/mcp", mode="2026-07-28") as modern:
            calls = [asyncio.create_task(c.call_tool("echo", {"text": "x"})) for c in (legacy, modern)]
            invokes = [await p.event(), await p.event()]
            process.send_signal(signal.SIGTERM)
            results = await asyncio.wait_for(asyncio.gather(*calls), 10)
            for result in results:
                assert result.is_error and "shutting down" in result.content[0].text
            cancels = [await p.event(), await p.event()]
            assert {c["call_id"] for c in cancels} == {i["call_id"] for i in invokes}
            assert {c["reason"] for c in cancels} == {"shutdown"}
        # uvicorn shuts down cleanly, then re-raises the signal so the exit status says what stopped it.
        assert await asyncio.wait_for(process.wait(), 10) in (0, -signal.SIGTERM)
        assert b"Traceback" not in await process.stderr.read()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_an_idle_event_stream_carries_keep_alive_comments():
    import httpx

    async with running_bridge(sse_ping=0.2) as b, page(b, ECHO) as p, httpx.AsyncClient(timeout=5) as http:
        await p.stop_listening()
        comments = 0
        async with http.stream("GET", f"{b.url}/agui/events?session={p.session_id}") as response:
            async for line in response.aiter_lines():
                comments += line.startswith(": ping")
                if comments == 2:
                    break
        assert comments == 2


async def test_the_event_stream_answers_head_with_its_headers_and_no_stream():
    import httpx

    async with running_bridge() as b, page(b, ECHO) as p, httpx.AsyncClient(timeout=5) as http:
        head = await http.head(f"{b.url}/agui/events?session={p.session_id}")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert head.headers["cache-control"] == "no-store"
        assert b.hub.session(p.session_id).streaming  # the page's own stream goes on
