"""What agents are told: no page connected, meta-tool errors under configured names, which page a
shared tool name belongs to, and instructions that follow the room. Real bridge, real MCP client."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from search_support import many_tools
from support import page, running_bridge, tool

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_calling_with_no_page_connected_says_so_and_where_to_open_one(era):
    async with running_bridge() as b, Client(b.mcp_url(), mode=era) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("page_read_form", {})
        message = str(caught.value)
        assert 'No page is connected to room "default"' in message
        assert f"{b.url}/" in message  # where the demo page is

        searched = await client.call_tool("tool_search", {"query": "confirm"})
        assert searched.is_error and "No page is connected" in searched.content[0].text


async def test_no_page_message_names_the_room_and_its_page_url():
    async with running_bridge() as b, Client(b.mcp_url("team-a"), mode="legacy") as client:
        with pytest.raises(MCPError, match=r'room "team-a".*\?room=team-a'):
            await client.call_tool("anything", {})


async def test_meta_tool_errors_use_the_configured_names():
    names = {"search_tool_name": "find_tools", "describe_tool_name": "show_tool", "call_tool_name": "run_tool"}
    async with running_bridge(inline_max=5, **names) as b, page(b, *many_tools(12)), \
            Client(b.mcp_url(), mode="legacy") as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert {"find_tools", "show_tool", "run_tool"} <= set(listed)

        bad_search = await client.call_tool("find_tools", {"query": 3})
        assert bad_search.is_error and "find_tools needs a string 'query'" in bad_search.content[0].text
        missing = await client.call_tool("run_tool", {"name": "no_such_tool", "arguments": {}})
        assert missing.is_error and "search with find_tools" in missing.content[0].text
        assert "tool_search" not in missing.content[0].text


async def test_describe_without_a_name_is_an_argument_error():
    async with running_bridge(inline_max=5) as b, page(b, *many_tools(12)), \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await client.call_tool("tool_describe", {})
        assert result.is_error and result.content[0].text == "tool_describe needs a string 'name'."
        unknown = await client.call_tool("tool_describe", {"name": "None"})
        assert unknown.is_error and 'No tool named "None"' in unknown.content[0].text


async def test_a_tool_name_two_pages_share_says_which_page_each_belongs_to():
    async with running_bridge() as b, page(b, CONFIRM, title="Bank") as bank, \
            Client(b.mcp_url(), mode="legacy") as client:
        (alone,) = (await client.list_tools()).tools
        assert alone.description == CONFIRM["description"]  # nothing to tell apart yet

        async with page(b, CONFIRM | {"description": "Ask the shop's customer."}, title="Shop") as shop:
            listed = {t.name: t.description for t in (await client.list_tools()).tools}
            first, second = listed["user_confirm"], listed[f"user_confirm__{shop.session_id[:6]}"]
            assert first.startswith(CONFIRM["description"]) and '"Bank"' in first and bank.session_id[:6] in first
            assert '"Shop"' in second and shop.session_id[:6] in second
            assert '"Shop"' not in first


async def test_instructions_follow_the_room_into_search_mode():
    async with running_bridge(inline_max=5) as b:
        async with Client(b.mcp_url(), mode="legacy") as before:
            assert "tool_search" not in (before.instructions or "")
        async with page(b, *many_tools(12)), Client(b.mcp_url(), mode="legacy") as after:
            text = after.instructions or ""
            assert "more tools are not listed" in text and "tool_search" in text and "call_tool" in text
