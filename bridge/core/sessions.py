"""A page's session: who it is, and the events waiting for its event stream.

Events get increasing ids per session. An invocation stays until its call ends, however
many other events come (so no waiting call is ever lost to a full buffer); other events
(cancels) stay in a bounded window. An event stream that reconnects with `Last-Event-ID`
gets what came after that id, minus invocations already answered; a fresh one gets the
invocations still waiting.

In shared mode events are numbered in Redis, not here: they arrive through `deliver`, and
this session only keeps what its event stream needs.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from bridge.core.messages import PageInfo
from bridge.core.prose import cut_text

OTHER_EVENTS_KEPT = 1000


def _shown(text: str, max_chars: int) -> str:
    """Page-given text inside the bridge's own words: on one line, cut, and with no square brackets,
    so that it cannot close the bridge's `[from …]` and write its own."""
    text = " ".join(text.split()).replace("[", "(").replace("]", ")")
    return cut_text(text, max_chars)


@dataclass(frozen=True, slots=True)
class PageEvent:
    id: int
    name: str  # the SSE event name, which is also the message's `type`
    data: dict[str, Any]


CLAIM_SHOWN_CHARS = 60  # of a page's title, as agents are told it
ORIGIN_SHOWN_CHARS = 100


class PageSession:
    def __init__(self, room: str, page: PageInfo, session_id: str | None = None, origin: str | None = None) -> None:
        self.id = session_id or secrets.token_urlsafe(18)
        self.room = room
        self.page = page  # what the page says of itself: a claim
        self.origin = origin  # the Origin header the bridge saw when the session opened (None: not a browser's)
        self.active_at = 0.0  # when its user last used it (see Pages.used), in seconds since the epoch
        self.connection = 0  # bumped per WebSocket, so a stale socket's close is ignored
        self.connected = False
        self.expiry: asyncio.TimerHandle | None = None
        self.closed = False
        self.streamed = False  # an event stream was opened once: a later one is a reconnect
        self.holder: str | None = None  # shared mode: the process holding its WebSocket
        self._events: dict[int, PageEvent] = {}  # by id; insertion order is id order
        self._invocations: dict[str, int] = {}  # call_id -> its invocation's event id, while the call waits
        self._others: deque[int] = deque()  # ids of the other events, oldest first
        self._ended: OrderedDict[str, None] = OrderedDict()  # calls ended lately, so none comes back
        self._delivered = False  # events arrive through deliver (shared mode)
        self._next_id = 1
        self._stream = 0  # bumped per event stream, so only the newest one is fed
        self._open_streams = 0
        self._wakeups: set[asyncio.Event] = set()  # one per open stream

    @property
    def label(self) -> str:
        """How agents are told which page this is: the title it claims, as a claim; the origin the
        bridge saw it connect from, as a fact (not the URL it claims); and its short id."""
        title = f" titled {json.dumps(_shown(self.page.title, CLAIM_SHOWN_CHARS), ensure_ascii=False)}" \
            if self.page.title else ""
        if self.origin is None:
            return f"page{title} (no web origin; id {self.id[:6]})"
        return f"page{title} at {_shown(self.origin, ORIGIN_SHOWN_CHARS)} (id {self.id[:6]})"

    @property
    def streaming(self) -> bool:
        return self._open_streams > 0

    @property
    def pending_calls(self) -> frozenset[str]:
        """The calls this page has been asked and that have not ended."""
        return frozenset(self._invocations)

    def buffered_events(self) -> list[PageEvent]:
        """The events kept for event streams, oldest first: the invocations of the calls that have
        not ended, and the latest other events."""
        return list(self._events.values())

    def push(self, data: dict[str, Any]) -> PageEvent:
        event = PageEvent(self._next_id, data["type"], data)
        self._keep(event)
        return event

    def deliver(self, event: PageEvent) -> None:
        """An event numbered elsewhere (shared mode); one already kept, or the invocation of a call
        that ended (a backlog read can cross the news of its end), is ignored."""
        self._delivered = True
        if event.id in self._events or event.data.get("call_id") in self._ended:
            return
        late = event.id < self._next_id  # a backlog read after live events
        self._keep(event)
        if late:  # insertion order must stay id order
            self._events = dict(sorted(self._events.items()))

    def _keep(self, event: PageEvent) -> None:
        data = event.data
        self._next_id = max(self._next_id, event.id + 1)
        self._events[event.id] = event
        if event.name == "agui.tool.invoke":
            self._invocations[data["call_id"]] = event.id
        else:
            self._others.append(event.id)
            if len(self._others) > OTHER_EVENTS_KEPT:
                del self._events[self._others.popleft()]
        self._wake()

    def settled(self, call_id: str) -> None:
        """The call ended: its invocation is never delivered again, not even on a resume."""
        if self._delivered:  # only events read from elsewhere can come back after their call ended
            self._ended[call_id] = None
            if len(self._ended) > OTHER_EVENTS_KEPT:
                self._ended.popitem(last=False)
        event_id = self._invocations.pop(call_id, None)
        if event_id is not None:
            del self._events[event_id]

    def close(self) -> None:
        self.closed = True
        self._wake()

    def supersede(self) -> None:
        """Another process serves this page now: its streams here end and its events are forgotten."""
        self._stream += 1
        self._events.clear()
        self._invocations.clear()
        self._others.clear()
        self._wake()

    def _wake(self) -> None:
        for wakeup in self._wakeups:
            wakeup.set()

    def _after(self, event_id: int) -> list[PageEvent]:
        """Events newer than `event_id`, oldest first; costs what is new, not what is kept."""
        fresh = []
        for newer in reversed(self._events):
            if newer <= event_id:
                break
            fresh.append(self._events[newer])
        fresh.reverse()
        return fresh

    async def stream(self, last_event_id: int | None = None, idle: float | None = None
                     ) -> AsyncIterator[PageEvent | None]:
        """Events for one event stream, until a newer stream opens or the session closes; None
        after every `idle` seconds without one, so the stream's owner can send a keep-alive."""
        self._stream += 1
        mine, wakeup = self._stream, asyncio.Event()
        self._wake()  # an older stream wakes up and sees it is superseded
        self._wakeups.add(wakeup)
        self._open_streams += 1
        loop = asyncio.get_running_loop()
        # One timer for the keep-alive, set again only when it has fired: moving it at every
        # event would cost a timer per call.
        quiet_for = idle if idle is not None else math.inf
        ping_at = loop.time() + quiet_for
        ping: asyncio.TimerHandle | None = None
        try:
            if last_event_id is None:
                backlog = [self._events[i] for i in self._invocations.values()]
            else:
                backlog = self._after(last_event_id)
            cursor = self._next_id - 1
            for event in backlog:
                yield event
            while True:
                # Cleared before looking, so an event pushed while we yield wakes the next wait.
                wakeup.clear()
                fresh = self._after(cursor)
                for event in fresh:
                    if self._stream != mine:
                        return
                    cursor = event.id
                    yield event
                if self.closed or self._stream != mine:
                    return  # what was pushed before closing (e.g. shutdown's cancels) went out first
                now = loop.time()
                if fresh:
                    ping_at = now + quiet_for
                    continue
                if now >= ping_at:
                    ping_at = now + quiet_for
                    yield None
                    continue
                if ping_at != math.inf and (ping is None or ping.when() <= now):
                    ping = loop.call_at(ping_at, wakeup.set)
                await wakeup.wait()
        finally:
            if ping is not None:
                ping.cancel()
            self._wakeups.discard(wakeup)
            self._open_streams -= 1
