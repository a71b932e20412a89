"""The instructions an agent reads at initialize in a room with no page name the rooms that have pages (a page
and an agent in different rooms is the likeliest mistake), as calls and searches there already do. Real
bridge, real MCP client (handshake era: the one that reads instructions at initialize), real pages.
"""

from __future__ import annotations

from mcp import Client
from support import page, running_bridge, tool

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.")


async def test_an_empty_rooms_instructions_name_the_rooms_with_pages():
    async with running_bridge() as b, page(b, CONFIRM, room="shop"), page(b, CONFIRM, room="team-a"), \
            Client(b.mcp_url(), mode="legacy") as client:
        instructions = client.instructions or ""
        assert "No web page has connected to room 'default' yet" in instructions
        assert 'Pages are connected in rooms "shop" and "team-a"' in instructions, instructions
        assert "/rooms/shop/mcp" in instructions and "--room shop" in instructions


async def test_they_name_no_room_when_no_room_has_pages_nor_the_agents_own():
    async with running_bridge() as b:
        async with Client(b.mcp_url(), mode="legacy") as alone:
            assert "Pages are connected" not in (alone.instructions or "")
        # A room whose page has no tool yet: the agent is in the right room, and is not sent elsewhere.
        async with page(b, room="shop"), page(b, CONFIRM, room="team-a"), \
                Client(b.mcp_url("shop"), mode="legacy") as client:
            assert "Pages are connected" not in (client.instructions or "")


async def test_a_room_with_tools_is_described_as_before():
    async with running_bridge() as b, page(b, CONFIRM, room="shop"), page(b, CONFIRM), \
            Client(b.mcp_url(), mode="legacy") as client:
        instructions = client.instructions or ""
        assert "1 tool(s)" in instructions and "Pages are connected" not in instructions
