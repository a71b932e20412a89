"""Which agents are at a room's MCP endpoint, as their HTTP requests show it.

A handshake-era agent's session opens with the answer to its `initialize` (the `Mcp-Session-Id` that
answer carries) and ends with its DELETE. An agent that quits without one (a one-shot command-line
client, a client that timed out) leaves its session open until the SDK's idle timeout, of which the
bridge hears nothing: so a session counts as active while a request of its is being answered (an open
notification stream is one) and for `active_seconds` after its last one. 2026-07-28 agents keep no
session: they show only as requests being answered (`McpRooms` counts those).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import Message, Scope, Send

from bridge.mcp_edge._plain_calls import PROTOCOL_VERSION_HEADER, header

SESSION_HEADER = b"mcp-session-id"


@dataclass(slots=True)
class _Session:
    requests: int = 0  # being answered now
    last_seen: float = 0.0  # when its last request ended (time.monotonic())


class SessionRequest:
    """One request of the handshake era: the session it names (counted while it is answered), and how
    it was answered."""

    __slots__ = ("_send", "_sessions", "counted", "method", "session_id", "status")

    def __init__(self, sessions: AgentSessions, scope: Scope, session_id: str | None, send: Send) -> None:
        self.session_id, self.method = session_id, scope["method"]
        self._sessions, self._send = sessions, send
        self.status = 0
        self.counted = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            if self.session_id is None and self.status == 200:
                # Known before the agent can name it: its next request may begin before this one ends.
                opened = header(message["headers"], SESSION_HEADER)
                if opened is not None:
                    self._sessions.opened(opened)
        await self._send(message)


class AgentSessions:
    """A room's open handshake sessions, the least recently used first; at most `bound` (the SDK's own
    limit): past it the oldest is forgotten."""

    def __init__(self, bound: int, active_seconds: float) -> None:
        self._open: OrderedDict[str, _Session] = OrderedDict()
        self.bound, self.active_seconds = bound, active_seconds

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, session_id: str) -> None:
        self._open[session_id] = _Session(last_seen=time.monotonic())
        if len(self._open) > self.bound:
            self._open.popitem(last=False)

    def started(self, scope: Scope, send: Send) -> SessionRequest | None:
        """A request to the room's endpoint begins; None for a 2026-07-28 one, which concerns no session."""
        headers = scope["headers"]
        session_id = header(headers, SESSION_HEADER)
        if session_id is None and (header(headers, PROTOCOL_VERSION_HEADER) or "") in MODERN_PROTOCOL_VERSIONS:
            return None
        request = SessionRequest(self, scope, session_id, send)
        if session_id is not None and (session := self._open.get(session_id)) is not None:
            session.requests += 1
            request.counted = True
            self._open.move_to_end(session_id)
        return request

    def finished(self, request: SessionRequest) -> bool:
        """The request is over; True if it ended its session (a DELETE the SDK took)."""
        ended = request.method == "DELETE" and request.status == 200
        if (session_id := request.session_id) is not None and (session := self._open.get(session_id)) is not None:
            if request.counted:
                session.requests -= 1
            session.last_seen = time.monotonic()
            if ended or request.status == 404:  # 404: the SDK no longer knows it (its idle timeout)
                del self._open[session_id]
        return ended

    def active(self) -> int:
        """Sessions with a request being answered, or one answered within `active_seconds`."""
        since = time.monotonic() - self.active_seconds
        return sum(1 for s in self._open.values() if s.requests or s.last_seen >= since)
