"""A room's MCP server (bridge.mcp_edge.room_server): its change notifications, driven directly (no HTTP):
coalescing and no lost change."""

from __future__ import annotations

import asyncio

from bridge.config import Settings
from bridge.core.catalog import check_definition
from bridge.core.hub import Hub
from bridge.mcp_edge.room_server import NOTIFY_DELAY, RoomServer


class SlowSession:
    """Stands in for a handshake client's session: each notification waits until released."""

    def __init__(self) -> None:
        self.sent = 0
        self.release = asyncio.Event()

    async def send_tool_list_changed(self) -> None:
        await self.release.wait()
        self.release.clear()
        self.sent += 1


async def test_a_change_made_while_notifying_is_notified_too():
    hub = Hub()
    room = hub.room("default")
    server = RoomServer(hub, room, Settings())
    session = SlowSession()
    server.legacy_sessions["s"] = session

    room.register("S", None, [check_definition({"name": "first"})])
    await asyncio.sleep(NOTIFY_DELAY + 0.01)  # the notifier is now waiting on the slow session
    room.register("S", None, [check_definition({"name": "second"})])  # changes while it waits
    session.release.set()
    await asyncio.sleep(NOTIFY_DELAY + 0.01)
    session.release.set()
    await asyncio.wait_for(server.notifications_sent(), 1)
    assert session.sent == 2  # the second change was not swallowed by the running notifier


async def test_changes_in_one_tick_notify_once_and_no_change_notifies_nothing():
    hub = Hub()
    room = hub.room("default")
    server = RoomServer(hub, room, Settings())
    session = SlowSession()
    session.release.set()
    server.legacy_sessions["s"] = session

    for name in ("a", "b", "c"):
        room.register("S", None, [check_definition({"name": name})])
    await asyncio.wait_for(server.notifications_sent(), 1)
    assert session.sent == 1
    session.release.set()
    room.register("S", None, [check_definition({"name": "a"})])  # same definition again: listing unchanged
    await asyncio.wait_for(server.notifications_sent(), 1)
    assert session.sent == 1
