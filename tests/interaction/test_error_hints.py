"""Errors that point the way: an agent in a room without pages is told which rooms have them, an
unknown tool name gets the names it resembles (listed or deferred), and argument errors speak JSON.
Real bridge, real MCP client, real pages."""

from __future__ import annotations

import asyncio
import re

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from search_support import many_tools
from support import eventually, open_page, page, running_bridge, tool

ERAS = ["legacy", "2026-07-28"]
TRANSFER = tool("confirm_transfer", "Ask the user to confirm a money transfer.", {"amount": {"type": "number"}})


@pytest.mark.parametrize("era", ERAS)
async def test_an_agent_in_a_room_without_pages_is_told_the_rooms_that_have_them(era):
    async with running_bridge() as b, page(b, TRANSFER, room="shop"), Client(b.mcp_url(), mode=era) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("confirm_transfer", {"amount": 1})
        message = str(caught.value)
        assert 'No page is connected to room "default"' in message
        assert 'Pages are connected in room "shop"' in message and "/rooms/shop/mcp" in message
        assert f"{b.url}/" in message  # and where to open a page in this room instead
        for meta, arguments in (("tool_search", {"query": "transfer"}), ("tool_describe", {"name": "x"}),
                                ("call_tool", {"name": "confirm_transfer", "arguments": {}})):
            answer = await client.call_tool(meta, arguments)
            assert answer.is_error and 'in room "shop"' in answer.content[0].text, meta


async def test_a_few_rooms_are_named_at_most():
    rooms = ["r1", "r2", "r3", "r4", "r5"]
    async with running_bridge() as b, Client(b.mcp_url("empty"), mode="legacy") as client:
        pages = [await open_page(b, tool("t"), room=room) for room in rooms]
        try:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("t", {})
            named = re.findall(r'"(r\d)"', str(caught.value))
            assert named == ["r1", "r2", "r3"] and "(and more)" in str(caught.value)
            assert "/rooms/r1/mcp" in str(caught.value)
        finally:
            for p in pages:
                await p.close()


async def test_an_agent_of_an_empty_room_beside_the_default_one_is_pointed_at_its_endpoint():
    async with running_bridge() as b, page(b, TRANSFER), Client(b.mcp_url("team-a"), mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("confirm_transfer", {})
        assert 'Pages are connected in room "default"' in str(caught.value) and "endpoint /mcp" in str(caught.value)


@pytest.mark.parametrize("era", ERAS)
async def test_an_unknown_tool_name_gets_the_names_it_resembles(era):
    async with running_bridge() as b, page(b, TRANSFER, tool("read_selection")), \
            Client(b.mcp_url(), mode=era) as client:
        with pytest.raises(MCPError, match=r'Unknown tool: confirm_transfr\. Did you mean "confirm_transfer"\?'):
            await client.call_tool("confirm_transfr", {})
        with pytest.raises(MCPError, match=r'Did you mean "confirm_transfer"\?'):
            await client.call_tool("Confirm-Transfer", {})  # case and separators
        with pytest.raises(MCPError) as caught:
            await client.call_tool("open_the_pod_bay_doors", {})
        assert "Did you mean" not in str(caught.value)  # nothing alike: no guess
        called = await client.call_tool("call_tool", {"name": "read_selectoin", "arguments": {}})
        assert called.is_error and 'Did you mean "read_selection"?' in called.content[0].text
        described = await client.call_tool("tool_describe", {"name": "confirm_transfers"})
        assert described.is_error and 'Did you mean "confirm_transfer"?' in described.content[0].text
        with pytest.raises(MCPError, match=r"Did you mean \"tool_search\""):
            await client.call_tool("tool_serch", {"query": "x"})  # the meta-tools too


async def test_deferred_tools_and_suffixed_names_are_suggested():
    async with running_bridge(inline_max=5) as b, page(b, *many_tools(60)), \
            page(b, tool("agui_user_confirm", "One app's confirm.")) as first, \
            page(b, tool("agui_user_confirm", "Another app's confirm.")) as second, \
            Client(b.mcp_url(), mode="legacy") as client:
        assert "playlist_tool" not in {t.name for t in (await client.list_tools()).tools}  # deferred
        with pytest.raises(MCPError, match=r'Did you mean "playlist_tool"\?'):
            await client.call_tool("playlist_tools", {})
        # The plain name, once the page holding it has left, points to the other definition's name.
        await first.close()
        await eventually(lambda: first.session_id not in b.hub.sessions)
        suffixed = f"agui_user_confirm__{second.session_id[:6]}"
        with pytest.raises(MCPError) as caught:
            await client.call_tool("agui_user_confirm", {})
        assert f'Unknown tool: agui_user_confirm. Did you mean "{suffixed}"?' in str(caught.value)


async def test_a_room_of_many_tools_suggests_from_what_a_search_finds():
    async with running_bridge(max_tools_per_page=2000, max_tools_per_room=2000) as b, \
            page(b, *(tool(f"filler_{i}", f"Filler number {i}.") for i in range(600)), TRANSFER), \
            Client(b.mcp_url(), mode="legacy") as client:
        with pytest.raises(MCPError, match=r'Did you mean "confirm_transfer"\?'):
            await client.call_tool("confirm_transfr", {})
        with pytest.raises(MCPError, match="Unknown tool: " + "x" * 127):
            await client.call_tool("x" * 500, {})  # too long to resemble anything: no guess, and cut


NUMBERED = tool("count", "Count things.", {"n": {"type": "integer"}, "flag": {"type": "boolean"},
                                           "mode": {"enum": ["fast", "slow"]}, "tags": {"type": "array",
                                                                                      "items": {"type": "string"}},
                                           "point": {"type": "object", "additionalProperties": False}},
                ["n"])


@pytest.mark.parametrize("arguments, said", [
    ({"n": None}, 'n: null is not of type "integer"'),
    ({"n": True}, 'n: true is not of type "integer"'),
    ({"n": 1, "flag": "yes"}, 'flag: "yes" is not of type "boolean"'),
    ({"n": 1, "mode": "quick"}, 'mode: "quick" is not one of ["fast", "slow"]'),
    ({"n": 1, "tags": [None, False]}, 'tags/0: null is not of type "string"'),
    ({"n": 1, "point": {"x": None, "it's": True}}, '("it\'s", "x" were unexpected)'),
    ({"n": {"a": None}}, 'n: {"a": null} is not of type "integer"'),
    ({}, '(arguments): "n" is a required property'),
])
async def test_argument_errors_speak_json(arguments, said):
    async with running_bridge() as b, page(b, NUMBERED) as p, Client(b.mcp_url(), mode="legacy") as client:
        result = await client.call_tool("count", arguments)
        assert result.is_error and said in result.content[0].text, result.content[0].text
        assert not re.search(r"\b(None|True|False)\b|'", result.content[0].text.replace("it's", "")), \
            result.content[0].text
        await asyncio.sleep(0)
        assert p.events.empty()


async def test_a_search_that_finds_nothing_quotes_the_query_as_json():
    async with running_bridge() as b, page(b, TRANSFER), Client(b.mcp_url(), mode="legacy") as client:
        found = await client.call_tool("tool_search", {"query": 'zzqx\'s "qqzz"'})
        assert found.structured_content["matches"] == []
        assert found.content[0].text.startswith('No tool matches "zzqx\'s \\"qqzz\\"" (lexical search')
