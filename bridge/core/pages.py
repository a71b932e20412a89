"""Page presence: which pages the bridge serves, in which rooms, and whether each is here.

A page says hello on its WebSocket (its session opens, or resumes), streams its events, and
goes away: deliberately (dropped now) or not (a reload, a lost network: it has the grace
period to come back, then it is dropped). In shared mode a page may be held by another
process: this process keeps a mirror of it, kept current by the link. Every change of a
session's presence (`connected`, `holder`, `connection`, `streamed`, its expiry timer) is
made here; what else a page's arrival or departure means (its tools, its calls, other
processes) is the hub's, told through the callbacks given at construction.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from types import MappingProxyType
from typing import Any

from bridge.core.messages import PageInfo
from bridge.core.sessions import PageSession

log = logging.getLogger(__name__)


class TooManyRooms(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"The bridge serves at most {limit} rooms at once and all are in use; try again when a "
                         "room has emptied, or start it with a higher --max-rooms.")


class Pages:
    """The page sessions by id and by room, and their grace timers.

    `here` names this process (a page it holds has `holder == here`); `room_needed(name)` makes
    the room a page joins; `expired(session)` is told a page's grace period ran out (the link
    confirms, then drops it); `dropped(session, held_here)` is told a page is gone for good.
    """

    def __init__(self, *, here: str, grace: float, max_rooms: int, room_needed: Callable[[str], Any],
                 expired: Callable[[PageSession], None], dropped: Callable[[PageSession, bool], None]) -> None:
        self.here = here
        self.grace = grace
        self.max_rooms = max_rooms
        self._room_needed = room_needed
        self._expired = expired
        self._dropped = dropped
        self._sessions: dict[str, PageSession] = {}
        self._by_room: dict[str, dict[str, PageSession]] = {}  # each call asks whether its room has a page

    # --- the registry ----------------------------------------------------------------------

    def get(self, session_id: str) -> PageSession | None:
        return self._sessions.get(session_id)

    @property
    def by_id(self) -> MappingProxyType[str, PageSession]:
        """Every session this process knows (in shared mode, other processes' pages too), read-only."""
        return MappingProxyType(self._sessions)

    def __iter__(self) -> Iterator[PageSession]:
        return iter(list(self._sessions.values()))

    def __len__(self) -> int:
        return len(self._sessions)

    def in_room(self, room: str) -> list[PageSession]:
        return list(self._by_room.get(room, {}).values())

    def has_pages(self, room: str) -> bool:
        """Asked on every call: no list of the room's pages is built for it."""
        return room in self._by_room  # a room's entry goes with its last page

    def held_here(self) -> list[PageSession]:
        return [s for s in self._sessions.values() if s.holder == self.here]

    def held_elsewhere(self) -> list[PageSession]:
        """The pages other processes hold (shared mode)."""
        return [s for s in self._sessions.values() if s.holder not in (None, self.here)]

    def admit(self, room: str) -> None:
        """A page joins `room`; `TooManyRooms` when `max_rooms` rooms already have pages. Rooms that
        only agents asked for do not count: an agent cannot take a slot a page needs."""
        if room not in self._by_room and len(self._by_room) >= self.max_rooms:
            raise TooManyRooms(self.max_rooms)
        self._room_needed(room)

    def _add(self, session: PageSession) -> None:
        self._sessions[session.id] = session
        self._by_room.setdefault(session.room, {})[session.id] = session

    # --- a page's life ---------------------------------------------------------------------

    def hello(self, room: str, page: PageInfo, session_id: str | None, origin: str | None = None, *,
              active: bool = True) -> tuple[PageSession, bool]:
        """Open or resume a page's session in an admitted room; the caller then owns connection
        number `session.connection`. `origin`: the Origin header the page connected with; a session
        is resumed only from the origin that opened it, so that what agents are told of it stays true.
        `active`: its user is on the page now (see `used`)."""
        known = self._sessions.get(session_id or "")
        resumed = known is not None and known.room == room and known.origin == origin
        if known is not None and resumed:
            session = known
        else:
            session = PageSession(room, page, origin=origin)
            self._add(session)
            log.info("page %s joined room %s (%s)", session.id[:6], session.room, page.url or "no url")
        self.stop_expiry(session)
        session.connection += 1
        session.connected = True
        session.holder = self.here
        if active:
            self.used(session)
        return session, resumed

    def used(self, session: PageSession, at: float | None = None) -> bool:
        """Its user is on the page now (or was `at`, as its holder says in shared mode): of the tabs
        sharing a tool's name, calls go to the one used last. False if that changes nothing."""
        at = time.time() if at is None else at
        if at <= session.active_at:
            return False
        session.active_at = at
        return True

    def reachable(self, session: PageSession) -> bool:
        """A call sent to the page now reaches it: its WebSocket is open and its event stream too (here,
        or on the process holding it)."""
        return session.connected and (session.streaming or session.holder != self.here) and not session.closed

    def rooms(self) -> Iterator[str]:
        """The rooms with pages, in the order they got their first."""
        return iter(self._by_room)

    def disconnected(self, session: PageSession, connection: int, *, deliberate: bool) -> bool:
        """A page's WebSocket closed: dropped now if it meant to leave, else after the grace period.
        False when that socket no longer stood for the page (a newer one, or another process, took over)."""
        if session.connection != connection or session.closed:
            return False  # a newer socket took over this session
        if session.holder != self.here:
            return False  # it came back on another process meanwhile
        session.connected = False
        if deliberate:
            self.drop(session)
        else:
            self.expect_back(session)
        return True

    def stream_opened(self, session: PageSession, last_event_id: int | None) -> bool:
        """An event stream opens for the page; True when it reopens one (a resume)."""
        if session.connected:
            self.stop_expiry(session)
        reopened = last_event_id is not None or session.streamed
        session.streamed = True
        return reopened

    def stream_closed(self, session: PageSession) -> None:
        """A page whose stream is gone cannot be asked anything, even with its WebSocket open:
        unless a stream comes back within the grace period, the page is dropped."""
        if not session.streaming and not session.closed:
            self.expect_back(session)

    def expect_back(self, session: PageSession, seconds: float | None = None) -> None:
        """Drop the page unless it comes back within `seconds` (the grace period); a clock already
        running is kept, unless `seconds` says otherwise."""
        if session.expiry is not None and seconds is None:
            return
        self.stop_expiry(session)
        session.expiry = asyncio.get_running_loop().call_later(
            self.grace if seconds is None else seconds, self._expire, session)

    def allow_absence(self, session: PageSession, seconds: float) -> None:
        """Give a page that is away `seconds`, instead of the grace period, to come back: an AG-UI
        thread paused on an interrupt comes back when its user has answered."""
        if not (session.closed or session.connected):
            self.expect_back(session, seconds)

    def _expire(self, session: PageSession) -> None:
        session.expiry = None
        if not (session.connected and session.streaming):
            log.info("page %s did not come back in time", session.id[:6])
            self._expired(session)  # in shared mode it may have come back on another process

    @staticmethod
    def stop_expiry(session: PageSession) -> None:
        """The page is back (or the bridge is stopping): the clock started when it went away stops."""
        if session.expiry is not None:
            session.expiry.cancel()
            session.expiry = None

    def drop(self, session: PageSession, *, for_all: bool = False) -> None:
        """The page is gone: it leaves the registry and its session closes. `for_all`: this process
        drops it for every process (shared mode: its grace period ran out here)."""
        if self._sessions.pop(session.id, None) is None:
            return
        in_room = self._by_room[session.room]
        del in_room[session.id]
        if not in_room:
            del self._by_room[session.room]
        if for_all:
            session.holder = self.here
        session.close()
        self._dropped(session, session.holder == self.here)

    def close_all(self) -> None:
        """The bridge is stopping: no grace timer fires and every event stream ends."""
        for session in self._sessions.values():
            self.stop_expiry(session)
            session.close()

    # --- shared mode: pages other processes hold -------------------------------------------

    def mirror(self, session_id: str, room: str, page: str, holder: str, connected: bool, *,
               origin: str | None = None, active_at: float = 0.0) -> PageSession | None:
        """The local copy of a page another process holds (`page`: its PageInfo as JSON), made or
        brought up to date; None when it cannot be served here (`TooManyRooms`)."""
        session = self._sessions.get(session_id)
        if session is None:
            try:
                self.admit(room)
            except TooManyRooms:
                log.warning("page %s of room %s is not served here: too many rooms", session_id[:6], room)
                return None
            session = PageSession(room, PageInfo.model_validate_json(page), session_id, origin)
            self._add(session)
        elif session.holder == self.here:
            # The page came back on another process: what this one streamed for it ends.
            session.supersede()
        session.holder, session.connected = holder, connected
        self.used(session, active_at)
        self.stop_expiry(session)
        return session

    @staticmethod
    def away(session: PageSession) -> None:
        """Its holder says the page's WebSocket closed; the holder keeps its grace clock."""
        session.connected = False

    def unaccounted(self, session: PageSession) -> bool:
        """A mirrored page nobody vouches for any more (its process stopped, or Redis lost it): it
        has the grace period to come back somewhere. False if its clock already runs."""
        if session.expiry is not None:
            return False
        session.connected = False
        self.expect_back(session)
        return True
