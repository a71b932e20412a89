"""The hub joins pages and agents: it routes an agent's call to the page offering the tool
and carries it out, and acts on what pages say.

Both edges talk to it through its methods: the page endpoints hand it parsed page
messages, the MCP adapter asks it how to route a tool call and to make one. Its parts:
the catalog (rooms and tools), `Pages` (which pages are here, their grace periods), the
call table, and its link (`LocalLink`, or shared mode's), given at construction, through
which invocations reach pages and answers reach calls. It runs on one asyncio loop and
does no I/O of its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from itertools import islice
from typing import Any, Protocol, TypeVar

from bridge.core import messages
from bridge.core.calls import Call, CallClock, CallTable, NoteSink, Outcome, ProgramCall
from bridge.core.catalog import Catalog, DefinitionLimits, ListingPolicy, Room, Tool, check_definition, estimate_tokens
from bridge.core.defaults import HubConfig
from bridge.core.messages import (
    Hello,
    PageActive,
    ProtocolError,
    RegisterTools,
    ToolDefinition,
    ToolInputRequest,
    ToolLog,
    ToolProgress,
    ToolReturn,
    UnregisterTools,
)
from bridge.core.meta_tools import MetaToolNames, MetaTools, Route, UnknownTool
from bridge.core.pages import Pages, TooManyRooms
from bridge.core.prose import prose_list
from bridge.core.room_names import room_name_problem
from bridge.core.sessions import PageEvent, PageSession
from bridge.schemas.definition_checks import Checks
from bridge.schemas.page_schemas import SchemaLimits, nesting
from bridge.search import BackgroundEmbedding, Embedder

log = logging.getLogger(__name__)

CATALOG_SLICE = 16  # tools a page's registration adds, or its leaving frees, between two turns of the loop
OPERATOR_CANCELLED = "An operator of the bridge cancelled this call from its dashboard before the page answered."
SHUTTING_DOWN = "The bridge is shutting down; the page's answer, if any, is lost. Call again once it is back."
PAGE_GONE = "The page that provides this tool went away (closed, reloaded or lost its connection) before answering."
AGENT_CANCELLED = "The agent cancelled the call."

Answers = TypeVar("Answers")  # what the agent's side answers the page's input requests with

RESULT_DEPTH_MAX = 64
REFUSALS = frozenset({"invalid_arguments", "too_many_calls"})
ROOMS_NAMED = 3  # rooms with pages an agent of a room without is told of, at most


class HubLink(Protocol):
    """Where the hub's pages and calls live: in this process (`LocalLink`), or shared with other
    processes (`bridge.shared_mode._link`), through which events and answers reach whichever process
    holds the other end. What other processes must learn of this one's pages and tools, a shared
    link hears as a `HubObserver`."""

    process_id: str

    def expired(self, session: PageSession) -> None: ...  # its grace period ran out here: confirm, then drop

    def push(self, session: PageSession, data: dict[str, Any]) -> None: ...

    # `program_call`: the call is a surviving program's (shared mode marks it so as it sends it).
    async def invoke(self, session: PageSession, call_id: str, data: dict[str, Any],
                     program_call: ProgramCall | None = None) -> None: ...

    # Take over a call a program's stopped process sent (its answer comes here from now on); False when it no
    # longer waits at its page, or is not that program's.
    async def adopt(self, session: PageSession, call_id: str, run_id: str) -> bool: ...

    def settled(self, session: PageSession, call_id: str) -> None: ...

    # A page's answer or note (progress, a log line) for a call it was asked, wherever its agent waits;
    # False if not waiting.
    async def answer(self, session: PageSession, call_id: str, outcome: Outcome) -> bool: ...

    async def note(self, session: PageSession, call_id: str, note: dict[str, Any]) -> bool: ...

    async def streaming(self, session: PageSession, last_event_id: int | None) -> None: ...

    async def waiting(self, session: PageSession) -> list[str]: ...


class LocalLink:
    """One process: the pages' own event buffers and the call table are all there is."""

    process_id = "local"

    def __init__(self, calls: CallTable, pages: Pages) -> None:
        self.calls = calls
        self.pages = pages

    def expired(self, session: PageSession) -> None:
        self.pages.drop(session)

    def push(self, session: PageSession, data: dict[str, Any]) -> None:
        session.push(data)

    async def invoke(self, session: PageSession, call_id: str, data: dict[str, Any],
                     program_call: ProgramCall | None = None) -> None:
        session.push(data)

    async def adopt(self, session: PageSession, call_id: str, run_id: str) -> bool:
        return False  # one process: no other process's calls to take over

    def settled(self, session: PageSession, call_id: str) -> None:
        session.settled(call_id)

    async def answer(self, session: PageSession, call_id: str, outcome: Outcome) -> bool:
        return self.calls.settle(call_id, outcome, session_id=session.id)

    async def note(self, session: PageSession, call_id: str, note: dict[str, Any]) -> bool:
        return self.calls.report(call_id, note, session_id=session.id)

    async def streaming(self, session: PageSession, last_event_id: int | None) -> None:
        pass

    async def waiting(self, session: PageSession) -> list[str]:
        return sorted(session.pending_calls)


class LinkDown(Exception):
    """A call cannot reach its page through shared mode; `kind` is the outcome, the message what the
    agent reads."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class HubObserver:
    """Told what happens (metrics count it, a shared link tells other processes); each method does
    nothing unless overridden. Called on the loop, so none may block."""

    def call_started(self, room: str) -> None:
        pass

    def call_finished(self, room: str, outcome: str, seconds: float) -> None:
        pass

    def searched(self, room: str, seconds: float) -> None:
        pass

    def stream_resumed(self, room: str) -> None:
        pass

    def page_held(self, session: PageSession) -> None:
        """The page's WebSocket is open here (new or resumed)."""

    def page_away(self, session: PageSession) -> None:
        """Its WebSocket closed; it may come back."""

    def page_left(self, session: PageSession) -> None:
        """A page held here is gone for good."""

    def page_used(self, session: PageSession) -> None:
        """Its user is on it now (see Pages.used)."""

    def tools_changed(self, session: PageSession, registered: list[Tool], removed: list[Tool]) -> None:
        pass

    def room_activated(self, room: Room) -> None:
        """A search or a call listed deferred tools of the room."""


class Hub:
    """Routes agents' calls to pages and carries them out; pages' presence is `pages`'s.

    `link`: where pages and calls live (this process alone when None); `observers`: told what
    happens (metrics, a shared link)."""

    def __init__(self, config: HubConfig | None = None, *, link: HubLink | None = None,
                 observers: Sequence[HubObserver] = ()) -> None:
        self.config = config = config or HubConfig()
        code = config.code if config.code.on else None
        self.meta = MetaTools(MetaToolNames(config.search_tool_name, config.describe_tool_name, config.call_tool_name,
                                            code.tool_name if code is not None else None), code)
        self.catalog = Catalog(ListingPolicy(
            inline_max=config.inline_max,
            inline_token_budget=config.inline_token_budget,
            description_max_chars=config.description_max_chars,
            reserved_names=frozenset(self.meta.names),
            mark_page_text=config.mark_page_text,
            meta_tools=len(self.meta.definitions),
            meta_tool_tokens=sum(map(estimate_tokens, self.meta.definitions)),
            max_activated=config.max_activated,
        ), sweep_later=self._sweep_later)
        # The semantic tier: the model loads in the background when the first room is made.
        self.semantic = BackgroundEmbedding(config.search_model, path=config.search_model_path,
                                            cache_dir=config.search_model_cache, on_loaded=self._embedder_loaded)
        self.calls = CallTable(timeout=self.config.call_timeout)
        self.pages = Pages(here=link.process_id if link is not None else LocalLink.process_id,
                           grace=config.page_grace, max_rooms=config.max_rooms, room_needed=self.room,
                           expired=self._expired, dropped=self._dropped)
        self.link: HubLink = link if link is not None else LocalLink(self.calls, self.pages)
        self.observers = tuple(observers)
        self.refused: deque[dict[str, Any]] = deque(maxlen=100)  # calls refused before reaching a page
        self._held: dict[str, int] = {}  # rooms an agent edge serves, and how many times
        self._sweeps: dict[Room, asyncio.Task[None]] = {}  # a room's index entries of tools gone, freed slice by slice
        self._definition_limits = DefinitionLimits(
            max_description_chars=config.max_description_chars,
            schema=SchemaLimits(max_bytes=config.max_schema_bytes, max_depth=config.max_schema_depth))

    def room(self, name: str) -> Room:
        """The room by name, made on first use (the edges bound how many: pages here, agents in theirs)."""
        room = self.catalog.get(name)
        if room is None:
            room = self.catalog.room(name)
            self.semantic.start()
        return room

    def _embedder_loaded(self, embedder: Embedder) -> None:
        self.catalog.use_embedder(embedder)
        for room in self.catalog.rooms():
            self.semantic.embed_later(room.index)

    def hold_room(self, name: str) -> Room:
        """An agent edge serves this room: it stays while held, even with no page."""
        room = self.room(name)
        self._held[name] = self._held.get(name, 0) + 1
        return room

    def release_room(self, name: str) -> None:
        self._held[name] -= 1
        if not self._held[name]:
            del self._held[name]
        self._free_if_unused(name)

    def _free_if_unused(self, name: str) -> None:
        """A room with no page and no agent edge is forgotten, so rooms cannot pile up."""
        if name not in self._held and not self.pages.has_pages(name):
            self.catalog.forget(name)

    # The page registry, as the edges and the dashboard read it (`pages` owns it).

    @property
    def sessions(self) -> Mapping[str, PageSession]:
        return self.pages.by_id

    def session(self, session_id: str) -> PageSession | None:
        return self.pages.get(session_id)

    def pages_in(self, room: str) -> list[PageSession]:
        return self.pages.in_room(room)

    def has_pages(self, room: str) -> bool:
        return self.pages.has_pages(room)

    def waiting_call_ids(self, session: PageSession) -> set[str]:
        """The calls this page has been asked and not yet answered (by agents of any process)."""
        return set(session.pending_calls)

    async def waiting_on(self, session: PageSession) -> list[str]:
        """For a page coming back: the calls still waiting for it. An answer it sent that never
        arrived (the connection, or the bridge process, died with it) can then be sent again."""
        return await self.link.waiting(session)

    def state(self) -> dict[str, Any]:
        """What the dashboard shows: rooms, their pages and tools, calls in flight and recent calls.

        Pages appear by `page_id`, the first 6 characters of their session id: the whole id lets
        whoever holds it resume the session, so it is never published. In shared mode `here` says
        whether this process holds the page (else another process does, and this one mirrors it).
        """
        now = time.monotonic()
        rooms = []
        for room in self.catalog.rooms():
            listing = room.listing()
            pages = [{"page_id": s.id[:6], "url": s.page.url, "title": s.page.title, "origin": s.origin,
                      "connected": s.connected, "here": s.holder == self.pages.here,
                      "tools": [{"name": t.key, "tool": t.page_name, "deferred": t.key not in listing.keys,
                                 # what the dashboard's filter reads; cut, as the state is polled
                                 "description": t.description[:200]}
                                for t in room.tools_of(s.id)]}
                     for s in self.pages.in_room(room.name)]
            rooms.append({"name": room.name, "search_mode": listing.search_mode, "tools": len(room),
                          "deferred": listing.deferred, "pages": pages})
        return {"rooms": rooms, "calls": [c.summary(now) for c in self.calls.in_flight()],
                "recent": self.calls.recent, "refused": list(self.refused)}

    # --- pages -----------------------------------------------------------------------------

    def hello(self, msg: Hello, origin: str | None = None) -> tuple[PageSession, bool]:
        """Open or resume a page's session; the caller then owns connection number `session.connection`.
        `origin`: the Origin header the page connected with (what agents are told of where it is)."""
        if (problem := room_name_problem(msg.room)) is not None:
            raise ProtocolError("bad_room", problem, reply_to=msg.id)
        token = self.config.page_token(msg.room)
        if token and not secrets.compare_digest((msg.token or "").encode(), token.encode()):
            problem = "is not the one it needs" if msg.token else "is missing: send it in agui.hello"
            raise ProtocolError("unauthorized", f"Room {msg.room!r} needs a page token, and the one given {problem}.",
                                reply_to=msg.id)
        try:
            self.pages.admit(msg.room)
        except TooManyRooms as exc:
            raise ProtocolError("too_many_rooms", str(exc), reply_to=msg.id) from None
        session, resumed = self.pages.hello(msg.room, msg.page, msg.session_id, origin, active=msg.active)
        for observer in self.observers:
            observer.page_held(session)
        return session, resumed

    def used(self, session: PageSession) -> None:
        """The page's user is on it now: of the tabs sharing a tool's name, calls go to it."""
        if self.pages.used(session):
            for observer in self.observers:
                observer.page_used(session)

    def disconnected(self, session: PageSession, connection: int, *, deliberate: bool) -> None:
        """A page's WebSocket closed: drop it now if it meant to leave, else after the grace period."""
        if self.pages.disconnected(session, connection, deliberate=deliberate) and not deliberate:
            for observer in self.observers:
                observer.page_away(session)

    async def events(self, session: PageSession, last_event_id: int | None, idle: float | None = None
                     ) -> AsyncIterator[PageEvent | None]:
        """A page's event stream (see `Pages.stream_closed` for when it ends)."""
        if self.pages.stream_opened(session, last_event_id):
            for observer in self.observers:
                observer.stream_resumed(session.room)
        await self.link.streaming(session, last_event_id)
        try:
            async for event in session.stream(last_event_id, idle):
                yield event
        finally:
            self.pages.stream_closed(session)

    def drop(self, session: PageSession) -> None:
        """The page is gone: its tools leave the catalog and its calls fail now."""
        self.pages.drop(session)

    def _expired(self, session: PageSession) -> None:
        self.link.expired(session)

    def _dropped(self, session: PageSession, held_here: bool) -> None:
        self.room(session.room).unregister(session.id)
        for call in self.calls.in_flight(session.id):
            self.calls.settle(call.call_id, Outcome.failure("page_gone", PAGE_GONE))
        if held_here:
            for observer in self.observers:
                observer.page_left(session)
        log.info("page %s left room %s", session.id[:6], session.room)
        self._free_if_unused(session.room)

    def _sweep_later(self, room: Room) -> None:
        """Free the index entries of the tools that left `room` (Room.unregister: every room's, the
        ones shared mode mirrors too) a slice at a time, as registration adds them; one sweep a room,
        so that pages leaving at once do not free a slice each a turn."""
        running = self._sweeps.get(room)
        if running is not None and not running.done():
            return  # it goes on until none is left, these too
        sweep = self._sweeps[room] = asyncio.get_running_loop().create_task(self._sweep(room))
        sweep.add_done_callback(lambda done: self._swept(room, done))

    @staticmethod
    async def _sweep(room: Room) -> None:
        while room.index.sweep(CATALOG_SLICE):
            await asyncio.sleep(0)

    def _swept(self, room: Room, sweep: asyncio.Task[None]) -> None:
        if self._sweeps.get(room) is sweep:
            del self._sweeps[room]

    def shutdown(self) -> None:
        """The bridge is stopping: every call in flight ends now with an error the agent reads,
        and every page is told (a cancel for each of its calls) and its event stream ends."""
        for call in self.calls.in_flight():
            if self.calls.settle(call.call_id, Outcome.failure("shutdown", SHUTTING_DOWN)):
                self._tell_page_ended(call, "shutdown")
        self.pages.close_all()
        self.semantic.close()

    async def handle(self, session: PageSession, msg: Any) -> list[dict[str, Any]]:
        """Act on one message from a connected page; returns the replies for its WebSocket."""
        if isinstance(msg, RegisterTools):
            return await self._register(session, msg)
        if isinstance(msg, UnregisterTools):
            removed = self.room(session.room).unregister(session.id, msg.tools)
            if removed:
                for observer in self.observers:
                    observer.tools_changed(session, [], removed)
            replies = [messages.tools_unregistered([t.page_name for t in removed], msg.id)]
            unknown = sorted(set(msg.tools) - {t.page_name for t in removed})
            if unknown:
                replies.append(ProtocolError("unknown_tool", f"This page has no tool named {', '.join(unknown)}.",
                                             reply_to=msg.id).to_message())
            return replies
        if isinstance(msg, PageActive):
            self.used(session)
            return []
        if isinstance(msg, ToolReturn):
            if msg.error is not None:
                outcome = Outcome.failure("error", msg.error.message)
            elif (depth := nesting(msg.result)) > RESULT_DEPTH_MAX:  # MCP's serializer would fail on it
                outcome = Outcome.failure("bad_answer", f"The page's answer nests {depth} levels deep, over the "
                                                        f"limit of {RESULT_DEPTH_MAX}.")
            else:
                outcome = Outcome(result=msg.result)
            if not await self.link.answer(session, msg.call_id, outcome):
                raise _unknown_call(msg)
            return []
        if isinstance(msg, ToolProgress | ToolLog):
            if not await self.link.note(session, msg.call_id, msg.note()):
                raise _unknown_call(msg)
            return []
        if isinstance(msg, ToolInputRequest):  # the call ends here; the page is invoked again with the answers
            asked = {"inputRequests": msg.model_dump(mode="json")["requests"], "requestState": msg.requestState}
            if not await self.link.answer(session, msg.call_id, Outcome(result=asked, kind="input_required")):
                raise _unknown_call(msg)
            return []
        raise ProtocolError("bad_message", "agui.hello is sent once, first.", reply_to=getattr(msg, "id", None))

    async def _register(self, session: PageSession, msg: RegisterTools) -> list[dict[str, Any]]:
        # Checking a tool's schemas against the meta-schema is dear: done in short turns the loop
        # serves others between, so a page bringing hundreds of tools does not stall it; the catalog
        # then takes them in slices for the same reason.
        definitions, errors = await _check_definitions(msg.tools, self._definition_limits,
                                                       self.catalog.policy.reserved_names)
        room, tools = self.room(session.room), []
        definitions, refused = self._within_tool_limits(session, room, definitions)
        errors += refused
        for start in range(0, len(definitions), CATALOG_SLICE):
            if session.closed:  # the page went away meanwhile: what it registered went with it
                room.unregister(session.id)
                return []
            tools += room.register(session.id, session.page.title, definitions[start:start + CATALOG_SLICE],
                                   session.label, origin=session.origin)
            await asyncio.sleep(0)
        self.semantic.embed_later(room.index)  # searchable by words now, by meaning once embedded
        if tools:
            for observer in self.observers:
                observer.tools_changed(session, tools, [])
        return [messages.tools_registered([(t.page_name, t.key) for t in tools], msg.id),
                *(ProtocolError("invalid_tool", f"Tool {name!r} was not registered: {problem}",
                                tool=name if isinstance(name, str) else None, reply_to=msg.id).to_message()
                  for name, problem in errors)]

    def _within_tool_limits(self, session: PageSession, room: Room, definitions: list[ToolDefinition]
                            ) -> tuple[list[ToolDefinition], list[tuple[Any, str]]]:
        """The definitions that fit the per-page and per-room limits; the rest, with the reason."""
        known = {t.page_name for t in room.tools_of(session.id)}
        page_room = self.config.max_tools_per_page - len(known)
        room_room = self.config.max_tools_per_room - room.page_tools
        kept, refused = [], []
        for definition in definitions:
            if definition.name not in known:  # a replacement costs nothing
                if page_room <= 0 or room_room <= 0:
                    limit = (f"this page has {self.config.max_tools_per_page} tools, the most a page may have"
                             if page_room <= 0 else
                             f"room {room.name!r} has {self.config.max_tools_per_room} tools, the most a room may have")
                    refused.append((definition.name, limit))
                    continue
                known.add(definition.name)
                page_room, room_room = page_room - 1, room_room - 1
            kept.append(definition)
        return kept, refused

    # --- agents ----------------------------------------------------------------------------

    async def route(self, room: str, name: str, arguments: dict[str, Any], *, pages_url: Callable[[], str]) -> Route:
        """What an agent's `tools/call` of `name` in `room` becomes (see `MetaTools.route`)."""
        no_page = None if self.has_pages(room) else self._no_page(room, pages_url)
        started = time.monotonic()
        target = self.room(room)
        changes = target.activation_changes
        route = await self.meta.route(target, name, arguments, no_page)
        if target.activation_changes != changes:  # a search or call listed a deferred tool: other processes too
            for observer in self.observers:
                observer.room_activated(target)
        if name == self.meta.names.search:
            for observer in self.observers:
                observer.searched(room, time.monotonic() - started)
        elif isinstance(route, UnknownTool):
            self.refused.appendleft({"room": room, "tool": name, "reason": route.message, "at": time.time()})
        return route

    def _no_page(self, room: str, pages_url: Callable[[], str]) -> str:
        """What an agent of a room without pages is told: where to open one, and which rooms have pages."""
        text = f"No page is connected to room {json.dumps(room)}, so it has no tools yet"
        elsewhere = self.pages_elsewhere(room)
        if elsewhere is None:
            return f"{text}: open a page that uses this bridge (the demo is at {pages_url()}) and try again."
        return (f"{text}. {elsewhere}; otherwise open a page that uses this bridge in room {json.dumps(room)} (the "
                f"demo is at {pages_url()}).")

    def pages_elsewhere(self, room: str) -> str | None:
        """For an agent of `room` when it has no page: which rooms have pages, at most ROOMS_NAMED of them
        named, and how to reach them (a page and an agent in different rooms is the likeliest mistake);
        None when `room` has a page or no room has one."""
        elsewhere = [] if self.pages.has_pages(room) else list(islice(self.pages.rooms(), ROOMS_NAMED + 1))
        if not elsewhere:
            return None
        quoted = [json.dumps(name) for name in elsewhere[:ROOMS_NAMED]]
        named = f"{'room' if len(quoted) == 1 else 'rooms'} {prose_list(quoted, 'and')}"
        others = " (and more)" if len(elsewhere) > ROOMS_NAMED else ""
        path = f"/rooms/{elsewhere[0]}/mcp" if elsewhere[0] != "default" else "/mcp"
        return (f"Pages are connected in {named}{others}: if this agent meant one of them, connect it to that room "
                f"(e.g. the MCP endpoint {path}, or --room {elsewhere[0]} for stdio)")

    def _too_busy(self, session: PageSession) -> str | None:
        in_room = self.calls.waiting_in(session.room)
        if in_room >= self.config.max_calls_per_room:
            return (f"Room {session.room!r} already has {in_room} calls waiting, the most it may have; "
                    "try again when some are answered.")
        mine = self.calls.waiting_for(session.id)
        if mine >= self.config.max_calls_per_page:
            return (f"The page already has {mine} calls waiting, the most a page may have; try again when some "
                    "are answered.")
        return None

    async def unreadable_answer(self, session: PageSession, call_id: str | None, problem: str) -> str | None:
        """The page sent a frame the bridge cannot take (too large, not JSON). When it names a call, or
        the page has exactly one call waiting, that call ends now with `problem` rather than waiting
        for a timeout. Returns the call ended, if any."""
        if call_id is None:
            waiting = session.pending_calls
            if len(waiting) != 1:
                return None
            call_id = next(iter(waiting))
        settled = await self.link.answer(session, call_id, Outcome.failure("bad_answer", problem))
        return call_id if settled else None

    async def call(self, tool: Tool, arguments: dict[str, Any], *, mcp_request_id: Any = None,
                   on_note: NoteSink | None = None, asked: dict[str, Any] | None = None,
                   clock: CallClock | None = None, program_call: ProgramCall | None = None) -> Outcome:
        """Send one call to the page that registered `tool` and wait for what ends it first.

        `asked`: what the agent's side tells the page with the call (`client_capabilities`, and answers
        to the page's input requests); the page's input requests the agent cannot answer end the call
        with "input_unsupported", and the page is told (agui.tool.cancel). `clock`: the agent's call's
        (`calls.clock()`), which each of its rounds keeps: its start, and its deadline. `program_call`: the
        call is a program's that may be resumed by another process (see `ProgramCall`)."""
        started = time.monotonic()
        tool = self._page_for(tool)  # listed under the same name as the tool asked for
        session = self.pages.get(tool.session_id)
        room = session.room if session else ""
        for observer in self.observers:
            observer.call_started(room)
        refused = self._refusal(tool, arguments, session)
        if refused is not None:
            self._finished(room, tool.key, tool.session_id, refused, time.monotonic() - started)
            return refused
        assert session is not None  # a call to a page that is gone is refused
        call = self.calls.open(room=session.room, session_id=session.id, tool_key=tool.key, arguments=arguments,
                               on_note=on_note, clock=clock)
        invoke = messages.tool_invoke(call.call_id, tool.page_name, tool.key, arguments, mcp_request_id, asked)
        return await self._carried_out(session, call, asked, started,
                                        lambda: self.link.invoke(session, call.call_id, invoke, program_call))

    async def adopt(self, session_id: str, call_id: str, tool_key: str, arguments: dict[str, Any], *, run_id: str,
                    asked: dict[str, Any] | None = None, clock: CallClock | None = None) -> Outcome | None:
        """Take over a call of run `run_id`'s program that its process, now stopped, sent: it still waits at its
        page, and its answer comes here from now on; wait for what ends it first, as `call` does. None when it
        no longer waits (the page answered it meanwhile, or it ended): its answer is lost."""
        started = time.monotonic()
        session = self.pages.get(session_id)
        if session is None:
            return None
        for observer in self.observers:
            observer.call_started(session.room)
        call = self.calls.open(room=session.room, session_id=session.id, tool_key=tool_key, arguments=arguments,
                               clock=clock, call_id=call_id)

        async def take_over() -> None:
            try:
                adopted = await self.link.adopt(session, call_id, run_id)
            except LinkDown:
                adopted = False
            if not adopted:
                self.calls.settle(call_id, Outcome.failure("lost", "The call's answer was lost."))

        outcome = await self._carried_out(session, call, asked, started, take_over)
        return None if outcome.kind == "lost" else outcome

    async def _carried_out(self, session: PageSession, call: Call, asked: dict[str, Any] | None, started: float,
                           send: Callable[[], Awaitable[None]]) -> Outcome:
        """`send` the call to its page (or take it over), then wait for what ends it first; the call is closed
        however the wait ends, the page told when it should stop working on it."""
        outcome = Outcome.failure("cancelled", AGENT_CANCELLED)
        try:
            await send()
            outcome = await call.future  # the call table answers it with a timeout, if nothing else does
            if outcome.kind == "timeout":
                self.link.push(session, messages.tool_cancel(call.call_id, "timeout"))
            elif outcome.kind == "input_required":
                outcome = self._answerable(outcome, (asked or {}).get("client_capabilities") or {})
                if outcome.kind == "input_unsupported":
                    self.link.push(session, messages.tool_cancel(call.call_id, outcome.error or ""))
        except LinkDown as exc:
            outcome = Outcome.failure(exc.kind, str(exc))
        except asyncio.CancelledError as cancelled:
            if not call.future.done() or call.future.cancelled():  # nothing had answered it
                self.link.push(session, messages.tool_cancel(call.call_id, messages.cancel_reason(cancelled)))
            raise
        finally:
            # Runs however the wait ends, including a legacy agent whose HTTP connection dropped.
            self.calls.close(call, outcome)
            self.link.settled(session, call.call_id)
            self._finished(session.room, call.tool_key, session.id, outcome, time.monotonic() - started)
        return outcome

    async def ask_agent(self, tool: Tool, arguments: dict[str, Any], clock: CallClock,
                        ask: Callable[[], Awaitable[Answers]]) -> Answers | Outcome:
        """The page asked the agent's side for input, and `ask` waits for the agent's answers (the page's
        call has ended: it is invoked again with them). Meanwhile the call stays in the table, shown
        waiting for the agent: it times out at the call's deadline and an operator may cancel it, which
        ends `ask` and returns that outcome; else the answers."""
        session = self.pages.get(tool.session_id)
        if session is None:
            return Outcome.failure("page_gone", PAGE_GONE)
        call = self.calls.open(room=session.room, session_id=session.id, tool_key=tool.key, arguments=arguments,
                               clock=clock, awaits="agent")
        asking = asyncio.ensure_future(ask())
        asking.add_done_callback(_retrieved)  # what it raises after the call ended elsewhere is of no use
        ended: Outcome | None = None  # how the call ended, if it ended here
        try:
            await asyncio.wait((asking, call.future), return_when=asyncio.FIRST_COMPLETED)
            if asking.done():
                return asking.result()
            ended = call.future.result()
            asking.cancel()  # the agent's side is told the question is withdrawn, before it reads the answer
            await asyncio.wait((asking,))
            return ended
        except asyncio.CancelledError:
            ended = Outcome.failure("cancelled", AGENT_CANCELLED)
            raise
        except Exception as exc:  # the agent's client refused the request, or the connection broke
            ended = Outcome.failure("error", f"The agent's side failed the page's request for input: {exc}")
            raise
        finally:
            asking.cancel()
            self.calls.close(call, ended)
            if ended is not None:
                self._finished(session.room, tool.key, tool.session_id, ended, time.monotonic() - call.started)

    @staticmethod
    def _answerable(outcome: Outcome, capabilities: dict[str, Any]) -> Outcome:
        """The page's input requests, or what the agent lacks to answer them (as `requiredCapabilities`)."""
        requests = outcome.result["inputRequests"].values()
        needed = {messages.INPUT_CAPABILITIES[request["method"]] for request in requests}
        missing = sorted(capability for capability in needed if not isinstance(capabilities.get(capability), dict))
        if not missing:
            return outcome
        return Outcome(result={"requiredCapabilities": {capability: {} for capability in missing}},
                       error=f"The page asked for input the agent did not declare it can give: {', '.join(missing)}.",
                       kind="input_unsupported")

    def _page_for(self, tool: Tool) -> Tool:
        """Of the pages offering `tool`'s name (tabs of one app share it), the one its user used last of
        those a call reaches now; when none does (all away, a reload may bring them back), the one used
        last. The names agents see stay as they are."""
        session = self.pages.get(tool.session_id)
        room = self.catalog.get(session.room) if session is not None else None
        if room is None:
            return tool
        offering = room.offering(tool)
        if len(offering) == 1:
            return offering[0]  # every call asks: the common case costs two lookups

        def preference(offered: Tool) -> tuple[bool, float]:
            page = self.pages.get(offered.session_id)
            return (page is not None and self.pages.reachable(page), page.active_at if page is not None else 0.0)

        return max(offering, key=preference)

    def _refusal(self, tool: Tool, arguments: dict[str, Any], session: PageSession | None) -> Outcome | None:
        """Why a call cannot go to its page, before anything is sent."""
        problem = tool.argument_errors(arguments) or _not_json(arguments)
        if problem is not None:
            return Outcome.failure("invalid_arguments", f"Invalid arguments for {tool.key}: {problem}")
        if session is None:
            return Outcome.failure("page_gone", PAGE_GONE)
        busy = self._too_busy(session)
        return Outcome.failure("too_many_calls", busy) if busy is not None else None

    def cancel_call(self, call_id: str) -> bool:
        """An operator ends a call from the dashboard: the agent reads why, the page is told."""
        call = self.calls.get(call_id)
        if call is None or not self.calls.settle(call_id, Outcome.failure("cancelled", OPERATOR_CANCELLED)):
            return False
        self._tell_page_ended(call, "cancelled by an operator")
        return True

    def _tell_page_ended(self, call: Call, reason: str) -> None:
        """A call the page was asked ends without its answer: the page stops working on it (a call that
        waits for the agent's input is no longer the page's)."""
        session = self.pages.get(call.session_id)
        if session is not None and call.awaits == "page":
            self.link.push(session, messages.tool_cancel(call.call_id, reason))

    def _finished(self, room: str, tool: str, session_id: str, outcome: Outcome, seconds: float) -> None:
        """One log line per call, the observers told, and refusals kept for the dashboard."""
        if log.isEnabledFor(logging.INFO):
            page = session_id[:6]
            log.info(f"call room={room} tool={tool} page={page} outcome={outcome.kind} duration={seconds:.3f}s",
                     extra={"call": {"room": room, "tool": tool, "page": page, "outcome": outcome.kind,
                                     "duration_s": round(seconds, 6)}})
        if outcome.kind in REFUSALS:
            self.refused.appendleft({"room": room, "tool": tool, "reason": outcome.error, "at": time.time()})
        for observer in self.observers:
            observer.call_finished(room, outcome.kind, seconds)


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


_STRICT_JSON = json.JSONEncoder(allow_nan=False)  # built once: json.dumps builds one per call for such options


def _not_json(arguments: dict[str, Any]) -> str | None:
    """Pages parse with JSON.parse, which refuses NaN and Infinity: such a call could never be answered."""
    try:
        _STRICT_JSON.encode(arguments)
    except ValueError:
        return "(arguments): a number is NaN or infinite, which JSON cannot carry to the page"
    return None


def _unknown_call(msg: ToolReturn | ToolProgress | ToolLog | ToolInputRequest) -> ProtocolError:
    return ProtocolError("unknown_call", f"No call {msg.call_id!r} is waiting for this page (unknown, already "
                         "answered, cancelled, timed out, or another page's).", call_id=msg.call_id, reply_to=msg.id)


async def _check_definitions(raw_tools: list[Any], limits: DefinitionLimits, reserved_names: frozenset[str]
                             ) -> tuple[list[ToolDefinition], list[tuple[Any, str]]]:
    """Each definition checked (in a checking thread, in short turns fair to other pages'
    registrations; see bridge.schemas.definition_checks); no title may be a meta-tool's name."""
    def check(raw: Any) -> ToolDefinition | tuple[Any, str]:
        try:
            return check_definition(raw, limits, reserved_names)
        except ValueError as exc:
            return raw.get("name") if isinstance(raw, dict) else None, str(exc)

    definitions, errors = [], []
    for checked in await Checks(raw_tools, check).run():
        if isinstance(checked, ToolDefinition):
            definitions.append(checked)
        else:
            errors.append(checked)
    return definitions, errors
