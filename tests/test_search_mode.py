"""Deferred tools and tool search, through a real bridge and the real MCP SDK client."""

from __future__ import annotations

import asyncio

import mcp_types as types
import pytest
from mcp import Client

from search_support import DOMAINS, META, many_tools
from support import eventually, page, running_bridge, tool

ERAS = ["legacy", "2026-07-28"]


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def search(client: Client, query: str, limit: int | None = None) -> types.CallToolResult:
    arguments = {"query": query} | ({"limit": limit} if limit is not None else {})
    return await client.call_tool("tool_search", arguments)


async def test_count_threshold_in_and_out_of_search_mode():
    async with running_bridge(inline_max=10) as b, Client(b.mcp_url(), mode="legacy") as client:
        async with page(b, *(tool(f"t{i}") for i in range(10))):
            assert await names(client) == [f"t{i}" for i in range(10)]  # at the threshold: plain
            async with page(b, tool("one_more")):
                listed = await names(client)
                assert listed[:7] == [f"t{i}" for i in range(7)]  # a prefix, leaving room for the meta-tools
                assert listed[7:] == META
            assert await names(client) == [f"t{i}" for i in range(10)]  # the page left: plain again


async def test_token_budget_threshold():
    wordy = [tool(f"w{i}", "A long description. " * 40) for i in range(3)]
    async with running_bridge(inline_max=40, inline_token_budget=400, description_max_chars=100) as b, \
            Client(b.mcp_url(), mode="legacy") as client, page(b, *wordy):
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed][-3:] == META
        page_tools = [t for t in listed if t.name not in META]
        assert 0 < len(page_tools) < 3
        assert all(len(t.description) <= 100 for t in page_tools)  # descriptions cut in search mode
        described = await client.call_tool("tool_describe", {"name": "w0"})
        assert described.structured_content["description"] == "A long description. " * 40  # full text kept


@pytest.mark.parametrize("era", ERAS)
async def test_search_returns_and_activates_with_list_changed(era):
    async with running_bridge() as b, page(b, *many_tools(60)):
        changes: asyncio.Queue = asyncio.Queue()

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                await changes.put(message)

        async with Client(b.mcp_url(), mode=era, message_handler=on_message) as client:
            before = await names(client)
            assert "invoice_tool" not in before and set(META) <= set(before)
            if era == "legacy":
                result = await search(client, "create an invoice for a customer")
                await asyncio.wait_for(changes.get(), 5)
            else:
                async with client.listen(tools_list_changed=True) as events:
                    result = await search(client, "create an invoice for a customer")
                    await asyncio.wait_for(events.__anext__(), 5)
            matches = result.structured_content["matches"]
            assert matches[0]["name"] == "invoice_tool" and matches[0]["tool"] == "invoice_tool"
            assert matches[0]["required"] == {} and matches[0]["optional"] == ["query"]  # compact: no schema
            assert "invoice_tool" in result.content[0].text
            assert result.structured_content["deferred"] == len(b.hub.room("default")) - len(await names(client)) + 3
            assert "invoice_tool" in await names(client)


async def test_call_tool_reaches_deferred_and_inline_tools():
    async with running_bridge() as b, page(b, *many_tools(60)) as p, Client(b.mcp_url(), mode="legacy") as client:
        listed = await names(client)
        inline = listed[0]
        assert "playlist_tool" not in listed
        for name in ("playlist_tool", inline):
            task = asyncio.create_task(client.call_tool("call_tool", {"name": name, "arguments": {}}))
            invoke = await p.event()
            assert invoke["name"] == name
            await p.answer(invoke["call_id"], f"ran {name}")
            assert (await task).content[0].text == f"ran {name}"
        bad = await client.call_tool("call_tool", {"name": "playlist_tool", "arguments": {"query": 5}})
        assert bad.is_error and "not of type 'string'" in bad.content[0].text
        missing = await client.call_tool("call_tool", {"name": "no_such_tool"})
        assert missing.is_error and "tool_search" in missing.content[0].text


async def test_direct_call_of_a_deferred_tool_activates_it():
    async with running_bridge() as b, page(b, *many_tools(60)) as p, Client(b.mcp_url(), mode="legacy") as client:
        assert "translate_tool" not in await names(client)
        task = asyncio.create_task(client.call_tool("translate_tool", {"query": "bonjour"}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], "hello")
        assert (await task).content[0].text == "hello"
        assert "translate_tool" in await names(client)


async def test_describe():
    async with running_bridge() as b, page(b, *many_tools(60)), Client(b.mcp_url(), mode="legacy") as client:
        described = await client.call_tool("tool_describe", {"name": "flight_tool"})
        assert described.structured_content["description"] == DOMAINS["flight"]
        assert described.structured_content["deferred"] is True
        assert described.structured_content["inputSchema"]["type"] == "object"
        unknown = await client.call_tool("tool_describe", {"name": "nope"})
        assert unknown.is_error


async def test_nonsense_query_returns_no_matches():
    async with running_bridge() as b, page(b, *many_tools(60)), Client(b.mcp_url(), mode="legacy") as client:
        before = await names(client)
        result = await search(client, "zzqx flibbertigibbet")
        assert result.structured_content["matches"] == [] and "No tool matches" in result.content[0].text
        assert await names(client) == before


async def test_zero_idf_word_falls_back_to_name_substring():
    # "panel" is in every tool's description, so BM25 gives it zero IDF and ranks nothing with it;
    # the fallback finds it in the names of the panel tools (and only there).
    panel_tools = [tool("panel_lights", "Panel control"), tool("doorpanel", "Panel control")]
    widgets = [tool(f"widget_{i}", "Panel control") for i in range(50)]
    async with running_bridge() as b, page(b, *widgets, *panel_tools), \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await search(client, "panel")
        assert {m["name"] for m in result.structured_content["matches"]} == {"panel_lights", "doorpanel"}
        result = await search(client, "idget_42")  # a name remembered in part: no word matches it
        assert result.structured_content["matches"][0]["name"] == "widget_42"


async def test_limit_is_capped_at_20():
    async with running_bridge() as b, page(b, *(tool(f"report_{i}", "Export a sales report") for i in range(60))), \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await search(client, "report", limit=100)
        assert 0 < len(result.structured_content["matches"]) <= 20
        result = await search(client, "report", limit=3)
        assert len(result.structured_content["matches"]) <= 3
        bad = await client.call_tool("tool_search", {"query": 5})
        assert bad.is_error


async def test_concurrent_activation_happens_once():
    async with running_bridge() as b, page(b, *many_tools(60)):
        changes = []

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                changes.append(message)

        async with Client(b.mcp_url(), mode="legacy", message_handler=on_message) as client:
            await client.list_tools()
            results = await asyncio.gather(*(search(client, "weather forecast for a city", 1) for _ in range(20)))
            assert all(r.structured_content["matches"][0]["name"] == "weather_tool" for r in results)
            await eventually(lambda: changes)
            await asyncio.sleep(0.3)
            assert len(changes) == 1
            assert (await names(client)).count("weather_tool") == 1


async def test_another_rooms_tool_is_never_found():
    async with running_bridge() as b, page(b, *many_tools(60)), \
            page(b, tool("secret_vault_opener", "Open the secret vault"), room="other"), \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await search(client, "secret vault opener")
        assert all(m["name"] != "secret_vault_opener" for m in result.structured_content["matches"])
        assert (await client.call_tool("call_tool", {"name": "secret_vault_opener"})).is_error


async def test_a_page_leaving_removes_its_tools_from_the_index():
    async with running_bridge() as b, page(b, *many_tools(60)), Client(b.mcp_url(), mode="legacy") as client:
        async with page(b, tool("submarine_sonar", "Ping the submarine sonar")):
            found = await search(client, "submarine sonar")
            assert found.structured_content["matches"][0]["name"] == "submarine_sonar"
        await eventually(lambda: b.hub.room("default").get("submarine_sonar") is None)
        gone = await search(client, "submarine sonar")
        assert gone.structured_content["matches"] == []
