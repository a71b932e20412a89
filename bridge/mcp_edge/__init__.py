"""The MCP edge: each room's tools served to agents as an MCP server, over Streamable HTTP (`McpRooms`:
`/mcp`, `/rooms/{room}/mcp`) or stdio (a room's `RoomServer` on stdin/stdout), in both protocol eras::

    from bridge.mcp_edge import McpRooms

    rooms = McpRooms(hub, settings)                 # an ASGI endpoint; `rooms.running()` in the lifespan
    room = rooms.server("default").server           # the SDK's Server of one room, e.g. for stdio

The modules: `rooms` (Streamable HTTP, the rooms' session managers), `room_server` (one room's
server: listing, change notifications, the life of a call); privately, what a call needs of the
SDK's wire: `_plain_calls` (2026-07-28 calls answered as one JSON body), `_answer_streams`
(a call cancelled when nobody can read its answer), `_agent_sessions` (which handshake sessions
are open), `_input` (pages' input requests and log lines), `_tasks` (the tasks extension).
"""

from bridge.mcp_edge.room_server import RoomServer
from bridge.mcp_edge.rooms import LifespanNotEntered, McpRooms

__all__ = ["LifespanNotEntered", "McpRooms", "RoomServer"]
