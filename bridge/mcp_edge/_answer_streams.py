"""The one way a call's answer reaches its agent: the HTTP request the call came on.

The bridge keeps no event store, so once a handshake-era call's response stream closes (the agent's
client timed out and went away, its process ended, its session was deleted) the answer can never be
delivered, nor resumed by a later GET. `McpRooms` gives each MCP request an `AnswerStream` in its ASGI
scope and ends it when the request is over; `RoomServer` makes a call's rounds `within` the stream of
the request that brought it, so a request over before its answer cancels the call as the agent's own
cancel would (the page hears `agui.tool.cancel`, its dialog closes). The SDK watches 2026-07-28
requests answered as a stream itself, and `plain_calls` those answered as one JSON body. A task's call
is not made within its request: it outlives it by design.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from starlette.types import Scope

SCOPE_KEY = "agui.answer_stream"


class AnswerStream:
    """An agent's request, as the calls made for it see it: open, or over."""

    __slots__ = ("_waiting", "over")

    def __init__(self) -> None:
        self._waiting: set[anyio.CancelScope] = set()
        self.over = False

    @classmethod
    def given(cls, scope: Scope) -> AnswerStream:
        """A request's stream, kept in its scope (which the SDK hands its handlers as `ctx.request.scope`)."""
        stream = scope[SCOPE_KEY] = cls()
        return stream

    @classmethod
    def of(cls, request: Any) -> AnswerStream:
        """The stream of a handler's request (a Starlette request); over stdio, one that never ends."""
        stream = request.scope.get(SCOPE_KEY) if request is not None else None
        return stream if isinstance(stream, AnswerStream) else cls()

    @contextmanager
    def within(self) -> Iterator[anyio.CancelScope]:
        """Cancelled when the request is over (its `cancelled_caught` then says so)."""
        with anyio.CancelScope() as waiting:
            if self.over:
                waiting.cancel()
            self._waiting.add(waiting)
            try:
                yield waiting
            finally:
                self._waiting.discard(waiting)

    def end(self) -> None:
        """The request is over: whatever still waits within it can no longer be answered."""
        self.over = True
        for waiting in self._waiting:
            waiting.cancel()
