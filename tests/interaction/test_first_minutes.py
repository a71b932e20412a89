"""What a new user's agent meets at the bridge's defaults: page tools reachable by clients that list
tools only once (before any page has connected), and instructions that say what to do.

A real uvicorn bridge at its defaults, real websockets pages and the real MCP SDK client.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client
from support import open_page, running_bridge, tool

from bridge import Settings

META = ["tool_search", "tool_describe", "call_tool"]
ECHO = tool("echo", "Say the text back.", {"text": {"type": "string"}}, ["text"])


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_client_that_never_lists_again_reaches_a_page_that_came_later(era):
    async with running_bridge(meta_tools="always") as b, Client(b.mcp_url(), mode=era) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert listed == META
        instructions = client.instructions
        if instructions is not None:
            assert "No web page has connected" in instructions and f"{b.url}/" in instructions
            assert "tool_search" in instructions and "no need to list tools again" in instructions
        p = await open_page(b, ECHO)
        try:
            found = await client.call_tool("tool_search", {"query": "say text back"})
            assert not found.is_error and found.structured_content["matches"][0]["name"] == "echo"
            call = asyncio.create_task(client.call_tool("call_tool", {"name": "echo", "arguments": {"text": "hi"}}))
            invoke = await p.event()
            assert invoke["tool"] == "echo" and invoke["params"] == {"text": "hi"}
            await p.answer(invoke["call_id"], "hi")
            result = await asyncio.wait_for(call, 10)
            assert not result.is_error and result.content[0].text == "hi"
        finally:
            await p.close()


def test_the_meta_tools_are_listed_by_default():
    assert Settings().meta_tools == "always"


async def test_search_mode_only_keeps_the_listing_to_the_pages_tools():
    async with running_bridge(meta_tools="search-mode") as b, Client(b.mcp_url(), mode="legacy") as client:
        assert (await client.list_tools()).tools == []
        p = await open_page(b, ECHO)
        try:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
        finally:
            await p.close()


async def test_instructions_follow_the_room():
    async with running_bridge(meta_tools="always") as b:
        p = await open_page(b, ECHO)
        try:
            async with Client(b.mcp_url(), mode="legacy") as client:
                instructions = client.instructions
                assert "1 tool(s)" in instructions and "No web page" not in instructions
                assert [t.name for t in (await client.list_tools()).tools] == ["echo", *META]
        finally:
            await p.close()


async def test_a_call_for_a_closed_tabs_tool_goes_to_a_live_page_offering_the_same_tool():
    async with running_bridge(page_grace=5) as b, Client(b.mcp_url(), mode="legacy") as client:
        closed = await open_page(b, ECHO)
        live = await open_page(b, ECHO)
        other = await open_page(b, tool("echo", "Another echo, with other parameters.", {"n": {"type": "integer"}}))
        try:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names[0] == "echo" and len(names) == 2  # tabs with the same tool share its plain name
            await closed.drop()  # the tab is gone without a word: its tools stay for the grace period
            call = asyncio.create_task(client.call_tool("echo", {"text": "still there?"}))
            invoke = await live.event(timeout=2)  # the live page with the same tool takes it at once
            assert invoke["name"] == "echo" and invoke["params"] == {"text": "still there?"}
            await live.answer(invoke["call_id"], "yes")
            result = await asyncio.wait_for(call, 5)
            assert not result.is_error and result.content[0].text == "yes"
            assert other.events.empty()  # a tool of the same name but another definition is not a stand-in
            assert [t.name for t in (await client.list_tools()).tools] == names  # the names agents see stay
        finally:
            await live.close()
            await other.close()
