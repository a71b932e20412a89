"""A page's session: who it is, and the events waiting for its EventSource.

Events get increasing ids per session and stay in a bounded buffer, so an
EventSource that reconnects with `Last-Event-ID` misses nothing; one that
starts fresh is sent the invocations still waiting for an answer.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from bridge.messages import PageInfo


@dataclass(frozen=True)
class PageEvent:
    id: int
    name: str  # the SSE event name, which is also the message's `type`
    data: dict[str, Any]


class PageSession:
    def __init__(self, room: str, page: PageInfo, buffer: int = 1000) -> None:
        self.id = secrets.token_urlsafe(18)
        self.room = room
        self.page = page
        self.connection = 0  # bumped per WebSocket, so a stale socket's close is ignored
        self.connected = False
        self.expiry: asyncio.TimerHandle | None = None
        self._events: deque[PageEvent] = deque(maxlen=buffer)
        self._next_id = 1
        self._wakeup = asyncio.Event()
        self._stream = 0  # bumped per EventSource, so only the newest one is fed
        self.closed = False

    @property
    def label(self) -> str:
        """How agents are told which page this is: its title and URL, and its short id."""
        named = " ".join(filter(None, (repr(self.page.title) if self.page.title else None, self.page.url)))
        return f"page {named} (id {self.id[:6]})" if named else f"page {self.id[:6]}"

    def push(self, data: dict[str, Any]) -> PageEvent:
        event = PageEvent(self._next_id, data["type"], data)
        self._next_id += 1
        self._events.append(event)
        self._wakeup.set()
        return event

    def close(self) -> None:
        self.closed = True
        self._wakeup.set()

    async def stream(self, last_event_id: int | None, pending: Callable[[], set[str]]) -> AsyncIterator[PageEvent]:
        """Events for one EventSource, until a newer one opens or the session closes.

        `pending()` names the calls still waiting for this page; a fresh stream
        (no `Last-Event-ID`) replays only their invocations.
        """
        self._stream += 1
        mine = self._stream
        self._wakeup.set()  # an older stream wakes up and sees it is superseded
        if last_event_id is None:
            waiting = pending()
            backlog = [e for e in self._events if e.name == "agui.tool.invoke" and e.data["call_id"] in waiting]
        else:
            backlog = [e for e in self._events if e.id > last_event_id]
        cursor = self._next_id - 1
        for event in backlog:
            yield event
        while True:
            fresh = [e for e in self._events if e.id > cursor]
            for event in fresh:
                cursor = event.id
                yield event
            if self.closed or self._stream != mine:
                return
            self._wakeup.clear()
            await self._wakeup.wait()
