"""The bridge end to end: a real uvicorn bridge, a real page (websockets + SSE), the real MCP SDK client."""

from __future__ import annotations

import asyncio
import json

import anyio
import httpx
import mcp_types as types
import pytest
import websockets
from mcp import Client
from mcp.shared.exceptions import MCPError
from support import Page, eventually, open_page, page, running_bridge, tool

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])
ERAS = ["legacy", "2026-07-28"]


async def call_and_answer(client: Client, p: Page, name: str, arguments: dict, result=None, error=None):
    """Call a tool; the page answers its invocation with `result` or `error`."""
    task = asyncio.create_task(client.call_tool(name, arguments))
    invoke = await p.event()
    assert invoke["type"] == "agui.tool.invoke"
    await p.answer(invoke["call_id"], result=result, error=error)
    return invoke, await asyncio.wait_for(task, 10)


@pytest.mark.parametrize("era", ERAS)
async def test_register_list_call_text_result(era):
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode=era) as client:
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == ["user_confirm"]
        assert listed[0].input_schema == CONFIRM["inputSchema"]
        assert listed[0].description == CONFIRM["description"]

        invoke, result = await call_and_answer(client, p, "user_confirm", {"title": "Send 100 €?"}, result="ok")

        assert invoke["tool"] == "user_confirm" and invoke["name"] == "user_confirm"
        assert invoke["params"] == {"title": "Send 100 €?"}
        assert isinstance(invoke["mcp_request_id"], int)
        assert not result.is_error
        assert [c.model_dump(exclude_none=True) for c in result.content] == [{"type": "text", "text": "ok"}]
        assert result.structured_content is None


async def test_tool_metadata_reaches_the_agent():
    rich = tool("get_cart", "Read the cart.", {"currency": {"type": "string"}},
                outputSchema={"type": "object", "properties": {"total": {"type": "number"}}},
                title="Shopping cart", annotations={"readOnlyHint": True, "openWorldHint": False})
    async with running_bridge() as b, page(b, rich), Client(b.mcp_url(), mode="legacy") as client:
        (listed,) = (await client.list_tools()).tools
        assert listed.title == "Shopping cart"
        assert listed.output_schema == rich["outputSchema"]
        assert listed.annotations.read_only_hint is True and listed.annotations.open_world_hint is False


@pytest.mark.parametrize("era", ERAS)
async def test_object_result_becomes_structured_content(era):
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode=era) as client:
        _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"}, result={"answer": "ok", "n": 2})
        assert result.structured_content == {"answer": "ok", "n": 2}
        assert json.loads(result.content[0].text) == {"answer": "ok", "n": 2}
        assert not result.is_error


@pytest.mark.parametrize("era, structured", [("legacy", None), ("2026-07-28", [1, "two", None])])
async def test_non_object_json_result(era, structured):
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode=era) as client:
        _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"}, result=[1, "two", None])
        assert json.loads(result.content[0].text) == [1, "two", None]
        # Before 2026-07-28 structuredContent must be an object, so an array travels as text only.
        assert result.structured_content == structured


async def test_mcp_content_result_passes_through_all_content_kinds():
    content = [
        {"type": "text", "text": "here"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "page://selection", "mimeType": "text/plain", "text": "hi"}},
    ]
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode="legacy") as client:
        _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"},
                                          result={"content": content, "structuredContent": {"k": 1}})
        assert [c.type for c in result.content] == ["text", "image", "audio", "resource"]
        assert result.content[1].data == "iVBORw0KGgo=" and result.content[1].mime_type == "image/png"
        assert result.content[3].resource.text == "hi"
        assert result.structured_content == {"k": 1}
        assert not result.is_error


async def test_malformed_mcp_content_becomes_an_error_result():
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode="legacy") as client:
        _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"},
                                          result={"content": [{"type": "image"}]})
        assert result.is_error
        assert "malformed MCP result" in result.content[0].text


@pytest.mark.parametrize("era", ERAS)
async def test_error_from_the_page(era):
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode=era) as client:
        _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"}, error="The user is away.")
        assert result.is_error
        assert result.content[0].text == "The user is away."


async def test_arguments_violating_the_schema_never_reach_the_page():
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode="legacy") as client:
        result = await client.call_tool("user_confirm", {"title": 42})
        assert result.is_error
        assert "title" in result.content[0].text and 'not of type "string"' in result.content[0].text
        assert p.events.empty()
        result = await client.call_tool("user_confirm", {})
        assert result.is_error and '"title" is a required property' in result.content[0].text


async def test_unknown_tool_is_a_protocol_error():
    async with running_bridge() as b, page(b, CONFIRM), Client(b.mcp_url(), mode="legacy") as client:
        with pytest.raises(MCPError, match="Unknown tool: nope"):
            await client.call_tool("nope", {})


async def test_two_pages_with_the_same_tool_name():
    async with running_bridge() as b, page(b, CONFIRM, title="Bank") as first, \
            page(b, CONFIRM | {"description": "Ask the shop's customer."}, title="Shop") as second, \
            Client(b.mcp_url(), mode="legacy") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        second_name = f"user_confirm__{second.session_id[:6]}"
        assert names == ["user_confirm", second_name]

        _, r1 = await call_and_answer(client, first, "user_confirm", {"title": "a"}, result="from bank")
        _, r2 = await call_and_answer(client, second, second_name, {"title": "b"}, result="from shop")
        assert (r1.content[0].text, r2.content[0].text) == ("from bank", "from shop")
        assert first.events.empty() and second.events.empty()


async def test_registered_reply_names_and_sanitizes():
    async with running_bridge() as b, page(b) as p:
        reply = await p.register(tool("files.read"), tool("x" * 80))
        assert reply["tools"] == [{"tool": "files.read", "name": "files_read"}, {"tool": "x" * 80, "name": "x" * 64}]
        again = await p.register(tool("files.read", "New description."))
        assert again["tools"] == [{"tool": "files.read", "name": "files_read"}]
        async with Client(b.mcp_url(), mode="legacy") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed["files_read"].description == "New description."


async def test_unregister_removes_tools():
    async with running_bridge() as b, page(b, CONFIRM, tool("other")) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        await p.send({"type": "agui.tools.unregister", "tools": ["user_confirm", "ghost"], "id": 7})
        assert await p.reply() == {"type": "agui.tools.unregistered", "tools": ["user_confirm"], "reply_to": 7}
        error = await p.reply()
        assert error["code"] == "unknown_tool" and "ghost" in error["message"] and error["reply_to"] == 7
        assert [t.name for t in (await client.list_tools()).tools] == ["other"]


@pytest.mark.parametrize("era", ERAS)
async def test_page_disconnect_mid_call_gives_an_error_quickly(era):
    async with running_bridge(page_grace=0.5) as b, Client(b.mcp_url(), mode=era) as client:
        p = await open_page(b, CONFIRM)
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}))
        await p.event()
        started = anyio.current_time()
        await p.drop()
        result = await asyncio.wait_for(task, 5)
        assert result.is_error and "went away" in result.content[0].text
        assert anyio.current_time() - started < 2
        assert [t.name for t in (await client.list_tools()).tools] == []


async def test_page_that_comes_back_within_grace_keeps_its_calls():
    async with running_bridge(page_grace=3) as b, Client(b.mcp_url(), mode="legacy") as client:
        p = await open_page(b, CONFIRM)
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}))
        first = await p.event()
        await p.drop()

        back = Page(b, session_id=p.session_id)
        welcome = await back.connect()  # a fresh EventSource: the unanswered invocation is sent again
        assert welcome["resumed"] is True and welcome["session_id"] == p.session_id
        again = await back.event()
        assert again["call_id"] == first["call_id"]
        await back.answer(again["call_id"], "ok")
        assert (await asyncio.wait_for(task, 5)).content[0].text == "ok"
        await back.answer(again["call_id"], "twice")
        assert (await back.reply())["code"] == "unknown_call"
        await back.close()


@pytest.mark.parametrize("how", ["header", "query"])
async def test_event_stream_resumes_after_last_event_id(how):
    async with running_bridge(page_grace=3) as b, Client(b.mcp_url(), mode="legacy") as client:
        p = await open_page(b, CONFIRM)
        first = asyncio.create_task(client.call_tool("user_confirm", {"title": "1"}))
        await p.event()
        seen = p.event_ids[-1]
        second = asyncio.create_task(client.call_tool("user_confirm", {"title": "2"}))
        await p.event()
        await p.drop()
        back = Page(b, session_id=p.session_id)
        if how == "header":  # an EventSource reconnecting by itself
            await back.connect(last_event_id=seen)
        else:  # a new EventSource in the same session
            welcome = await back.connect(listen=False)
            await back.listen(f"{welcome['events_url']}&last_event_id={seen}")
        replayed = await back.event()
        assert replayed["params"] == {"title": "2"}  # only what came after the last event seen
        assert back.events.empty()
        first.cancel()
        second.cancel()
        await back.close()


async def test_timeout_answers_the_agent_and_cancels_the_page():
    async with running_bridge(call_timeout=0.5) as b, page(b, CONFIRM) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await client.call_tool("user_confirm", {"title": "x"})
        assert result.is_error and "did not answer within 0.5 s" in result.content[0].text
        invoke, cancel = await p.event(), await p.event()
        assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"], "reason": "timeout"}
        await p.answer(invoke["call_id"], "too late")
        assert (await p.reply())["code"] == "unknown_call"


@pytest.mark.parametrize("era", ERAS)
async def test_mcp_cancel_reaches_the_page(era):
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode=era) as client:
        with anyio.move_on_after(0.5):  # cancelling the request sends notifications/cancelled (or closes it)
            await client.call_tool("user_confirm", {"title": "x"})
        invoke = await p.event()
        cancel = await p.event()
        assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"],
                          "reason": "cancelled by the agent"}
        await eventually(lambda: len(b.hub.calls) == 0)
        assert b.hub.calls.recent[0]["outcome"] == "cancelled"


@pytest.mark.parametrize("era", ERAS)
async def test_page_progress_reaches_the_agent_and_only_increases(era):
    async with running_bridge(progress_interval=0.3) as b, page(b, CONFIRM) as p, \
            Client(b.mcp_url(), mode=era) as client:
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}, progress_callback=on_progress))
        invoke = await p.event()
        await eventually(lambda: seen)  # a keep-alive while the page is quiet
        await p.send({"type": "agui.tool.progress", "call_id": invoke["call_id"], "progress": 5, "total": 10,
                      "message": "half"})
        await eventually(lambda: any(m == "half" for *_, m in seen))
        await p.send({"type": "agui.tool.progress", "call_id": invoke["call_id"], "progress": 1, "message": "back"})
        await eventually(lambda: any(m == "back" for *_, m in seen))
        await p.answer(invoke["call_id"], "done")
        assert (await task).content[0].text == "done"

        values = [v for v, *_ in seen]
        assert values == sorted(values) and len(set(values)) == len(values)
        assert (5, 10, "half") in seen
        assert seen[0][2] == "Waiting for the page to answer."


@pytest.mark.parametrize("era", ERAS)
async def test_progress_sent_just_before_the_answer_arrives_before_it(era):
    async with running_bridge(progress_interval=5) as b, page(b, CONFIRM) as p, \
            Client(b.mcp_url(), mode=era) as client:
        for attempt in range(5):  # the frames come back to back: any race would show within a few rounds
            seen: list[float] = []

            async def on_progress(progress, total, message):
                seen.append(progress)

            task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}, progress_callback=on_progress))
            invoke = await p.event()
            for step in (1, 2, 3):
                await p.send({"type": "agui.tool.progress", "call_id": invoke["call_id"], "progress": step,
                              "total": 3})
            await p.answer(invoke["call_id"], "done")
            assert (await task).content[0].text == "done"
            assert seen == [1, 2, 3], attempt


async def test_progress_for_an_unknown_call_is_refused():
    async with running_bridge() as b, page(b, CONFIRM) as p:
        await p.send({"type": "agui.tool.progress", "call_id": "c_nope", "progress": 1})
        error = await p.reply()
        assert error["code"] == "unknown_call" and error["call_id"] == "c_nope"


async def test_only_the_called_page_may_answer():
    async with running_bridge() as b, page(b, CONFIRM) as owner, page(b) as intruder, \
            Client(b.mcp_url(), mode="legacy") as client:
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}))
        invoke = await owner.event()
        await intruder.answer(invoke["call_id"], "hijacked")
        assert (await intruder.reply())["code"] == "unknown_call"
        await owner.answer(invoke["call_id"], "ok")
        assert (await task).content[0].text == "ok"


async def test_list_changed_reaches_both_eras():
    async with running_bridge() as b:
        legacy_changes = asyncio.Queue()

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                await legacy_changes.put(message)

        async with Client(b.mcp_url(), mode="legacy", message_handler=on_message) as legacy, \
                Client(b.mcp_url(), mode="2026-07-28") as modern:
            assert legacy.server_capabilities.tools.list_changed is True
            await legacy.list_tools()
            async with modern.listen(tools_list_changed=True) as changes:
                p = Page(b)
                await p.connect()
                await p.register(CONFIRM)  # a change: registered
                await asyncio.wait_for(changes.__anext__(), 5)
                await asyncio.wait_for(legacy_changes.get(), 5)
                assert [t.name for t in (await modern.list_tools()).tools] == ["user_confirm"]

                await p.send({"type": "agui.tools.unregister", "tools": ["user_confirm"]})  # unregistered
                assert (await p.reply())["type"] == "agui.tools.unregistered"
                await asyncio.wait_for(changes.__anext__(), 5)
                await asyncio.wait_for(legacy_changes.get(), 5)

                await p.register(CONFIRM)
                await asyncio.wait_for(changes.__anext__(), 5)
                await asyncio.wait_for(legacy_changes.get(), 5)
                await p.close()  # went away
                await asyncio.wait_for(changes.__anext__(), 5)
                await asyncio.wait_for(legacy_changes.get(), 5)
                assert (await legacy.list_tools()).tools == []


async def test_modern_client_discovers_list_changed():
    async with running_bridge() as b, Client(b.mcp_url(), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.tools.list_changed is True


async def test_one_registration_of_many_tools_notifies_once():
    async with running_bridge() as b:
        changes = []

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                changes.append(message)

        async with Client(b.mcp_url(), mode="legacy", message_handler=on_message) as client, page(b) as p:
            await client.list_tools()
            await p.register(*(tool(f"t{i}") for i in range(30)))
            await eventually(lambda: changes)
            await asyncio.sleep(0.3)
            assert len(changes) == 1


async def test_rooms_are_isolated():
    async with running_bridge() as b, page(b, CONFIRM) as default_page, \
            page(b, tool("secret_tool"), room="team-a") as team_page, \
            Client(b.mcp_url(), mode="legacy") as default_agent, \
            Client(b.mcp_url("team-a"), mode="2026-07-28") as team_agent:
        assert [t.name for t in (await default_agent.list_tools()).tools] == ["user_confirm"]
        assert [t.name for t in (await team_agent.list_tools()).tools] == ["secret_tool"]
        with pytest.raises(MCPError, match="Unknown tool"):
            await default_agent.call_tool("secret_tool", {})
        with pytest.raises(MCPError, match="Unknown tool"):
            await team_agent.call_tool("user_confirm", {"title": "x"})
        _, result = await call_and_answer(team_agent, team_page, "secret_tool", {}, result="team")
        assert result.content[0].text == "team"
        assert default_page.events.empty()


async def test_bad_room_names_are_refused():
    async with running_bridge() as b:
        async with websockets.connect(b.ws_url) as ws:
            await ws.send(json.dumps({"type": "agui.hello", "room": "has space"}))
            assert json.loads(await ws.recv())["code"] == "bad_room"
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{b.url}/rooms/has%20space/mcp", json={})
            assert response.status_code == 404


MALFORMED = [
    ("not json", "bad_json"),
    ("[1, 2]", "bad_message"),
    ('{"type": "agui.nope"}', "unknown_type"),
    ('{"no": "type"}', "unknown_type"),
    ('{"type": "agui.tools.register", "tools": "x"}', "bad_message"),
    ('{"type": "agui.tool.return"}', "bad_message"),
    ('{"type": "agui.tool.return", "call_id": "c_missing", "result": 1}', "unknown_call"),
    ('{"type": "agui.tool.progress", "call_id": "c_x", "progress": "lots"}', "bad_message"),
    ('{"type": "agui.hello"}', "bad_message"),
]


async def test_each_malformed_page_message_gets_an_error_and_loses_nothing():
    async with running_bridge(max_message_bytes=10_000) as b, page(b, CONFIRM) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        for frame, code in MALFORMED:
            await p.send(frame)
            error = await p.reply()
            assert error["type"] == "agui.error" and error["code"] == code, (frame, error)
            assert error["message"]
        await p.send("x" * 10_001)
        assert (await p.reply())["code"] == "too_large"
        # Everything else still works: the tool is listed and a call round-trips.
        assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm"]
        _, result = await call_and_answer(client, p, "user_confirm", {"title": "x"}, result="still fine")
        assert result.content[0].text == "still fine"


async def test_invalid_tool_definitions_are_refused_one_by_one():
    async with running_bridge() as b, page(b) as p, Client(b.mcp_url(), mode="legacy") as client:
        await p.send({"type": "agui.tools.register", "id": "r1", "tools": [
            tool("good"),
            {"name": "", "inputSchema": {"type": "object"}},
            {"name": "array_schema", "inputSchema": {"type": "array"}},
            {"name": "broken_schema", "inputSchema": {"type": "object", "properties": {"a": {"type": "nope"}}}},
            {"name": "bad_output", "inputSchema": {"type": "object"}, "outputSchema": {"type": "string"}},
            {"name": "bad_annotations", "annotations": {"readOnlyHint": "very"}},
            "not an object",
        ]})
        registered = await p.reply()
        assert registered == {"type": "agui.tools.registered", "tools": [{"tool": "good", "name": "good"}],
                              "reply_to": "r1"}
        errors = [await p.reply() for _ in range(6)]
        assert {e["code"] for e in errors} == {"invalid_tool"}
        assert [e.get("tool") for e in errors] == ["", "array_schema", "broken_schema", "bad_output",
                                                   "bad_annotations", None]
        assert all(e["reply_to"] == "r1" for e in errors)
        assert [t.name for t in (await client.list_tools()).tools] == ["good"]


async def test_messages_before_hello_and_token():
    async with running_bridge(token="s3cret") as b:
        async with websockets.connect(b.ws_url) as ws:
            await ws.send(json.dumps({"type": "agui.tools.register", "tools": []}))
            assert json.loads(await ws.recv())["code"] == "hello_first"
            await ws.send(json.dumps({"type": "agui.hello", "token": "wrong"}))
            assert json.loads(await ws.recv())["code"] == "unauthorized"
            await ws.wait_closed()  # one guess a socket
        async with websockets.connect(b.ws_url) as ws:
            await ws.send(json.dumps({"type": "agui.hello", "token": "s3cret"}))
            assert json.loads(await ws.recv())["type"] == "agui.welcome"


async def test_foreign_origin_is_refused():
    async with running_bridge() as b:
        async with websockets.connect(b.ws_url, origin="https://evil.example") as ws:
            error = json.loads(await ws.recv())
            assert error["code"] == "forbidden_origin"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd.code == 1008
        async with websockets.connect(b.ws_url, origin="http://localhost:5173") as ws:
            await ws.send(json.dumps({"type": "agui.hello"}))
            assert json.loads(await ws.recv())["type"] == "agui.welcome"


async def test_unknown_event_session_is_404():
    async with running_bridge() as b, httpx.AsyncClient() as http:
        response = await http.get(f"{b.url}/agui/events?session=nope")
        assert response.status_code == 404 and response.json()["code"] == "unknown_session"


async def test_call_ids_are_unique_across_agents():
    async with running_bridge() as b, page(b, CONFIRM) as p, Client(b.mcp_url(), mode="legacy") as one, \
            Client(b.mcp_url(), mode="legacy") as two:
        tasks = [asyncio.create_task(c.call_tool("user_confirm", {"title": "x"})) for c in (one, two)]
        invokes = [await p.event(), await p.event()]
        assert invokes[0]["mcp_request_id"] == invokes[1]["mcp_request_id"]  # same JSON-RPC id, two agents
        assert invokes[0]["call_id"] != invokes[1]["call_id"]
        for i, invoke in enumerate(invokes):
            await p.answer(invoke["call_id"], f"answer {i}")
        texts = sorted([(await t).content[0].text for t in tasks])
        assert texts == ["answer 0", "answer 1"]


async def test_deliberate_close_drops_the_page_at_once():
    async with running_bridge(page_grace=30) as b, Client(b.mcp_url(), mode="legacy") as client:
        p = await open_page(b, CONFIRM)
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}))
        await p.event()
        await p.close(1000)
        result = await asyncio.wait_for(task, 3)  # no 30 s grace for a page that said goodbye
        assert result.is_error and "went away" in result.content[0].text


async def test_foreign_host_header_is_refused():
    """A rebinding attacker's page reaches 127.0.0.1 with its own Host header."""
    async with running_bridge() as b, httpx.AsyncClient() as http:
        for path in ("/api/state", "/agui/events?session=x", "/client/agui-bridge.js"):
            assert (await http.get(b.url + path, headers={"Host": "evil.example:8765"})).status_code == 400
        assert (await http.get(b.url + "/api/state")).status_code == 200


async def test_state_never_publishes_session_ids():
    async with running_bridge() as b, page(b, CONFIRM) as p, httpx.AsyncClient() as http:
        state = (await http.get(b.url + "/api/state")).text
        assert p.session_id not in state and p.session_id[:6] in state


async def test_results_are_checked_against_the_output_schema():
    cart = tool("get_cart", "Read the cart.", outputSchema={
        "type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]})
    async with running_bridge() as b, page(b, cart) as p, Client(b.mcp_url(), mode="legacy") as client:
        _, good = await call_and_answer(client, p, "get_cart", {}, result={"total": 12.5})
        assert not good.is_error and good.structured_content == {"total": 12.5}
        _, wrong = await call_and_answer(client, p, "get_cart", {}, result={"total": "lots"})
        assert wrong.is_error and "does not match its output schema" in wrong.content[0].text
        assert 'total: "lots" is not of type "number"' in wrong.content[0].text
        _, text = await call_and_answer(client, p, "get_cart", {}, result="twelve")
        assert text.is_error and "no structured content" in text.content[0].text
        _, failed = await call_and_answer(client, p, "get_cart", {}, error="cart unavailable")
        assert failed.is_error and failed.content[0].text == "cart unavailable"  # errors are exempt
