"""The MCP side: one low-level MCP server per room, over Streamable HTTP or stdio.

Both protocol eras are served. Handshake-era clients (2024-11-05 .. 2025-11-25)
get `notifications/tools/list_changed` on their session; 2026-07-28 clients get
`ToolsListChanged` on the `subscriptions/listen` streams they open.

The life of one call: `_call_tool` asks `Hub.route` what the name means — a
meta-tool's answer, an unknown tool, or a page tool to invoke (a deferred one is
activated) — and hands the latter to `Hub.call`, which pushes
`agui.tool.invoke` to the page and waits for its `agui.tool.return`, the timeout,
the page going away or the agent cancelling, while `_call_tool` relays progress and
turns the outcome into a CallToolResult.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from bridge import __version__
from bridge.access import missing_agent_token, room_name_problem
from bridge.mcp_edge._agent_sessions import AgentSessions
from bridge.mcp_edge._answer_streams import AnswerStream
from bridge.core.calls import CallClock, MonotonicProgress, Outcome
from bridge.core.catalog import Listing, Room, Tool
from bridge.config import Settings
from bridge.core.hub import Hub, TooManyRooms
from bridge.core.messages import validation_summary
from bridge.mcp_edge._input import (INPUT_ROUNDS_MAX, LogLevels, answers_in, ask_client, client_capabilities,
                              input_required, modern, send_log, spend)
from bridge.mcp_edge._tasks import InputNeeded, PageTasks, SharedTasks, missing_capability, owner_of
from bridge.core.tasks import TaskTable
from bridge.core.meta_tools import Invoke, UnknownTool
from bridge.mcp_edge._plain_calls import PeekedRequest, answer_watching_disconnect, is_plain_call, may_ask_for_plain_call
from bridge.core.results import error_result, shaped_here, to_call_tool_result
from bridge.core.used_states import SharedMarks, UsedStates

log = logging.getLogger("bridge.mcp")
_tracer = trace.get_tracer("agui-mcp-bridge")

LEGACY_SESSIONS_MAX = 10_000  # as many as the session manager keeps open by default
# How long after its last request a handshake session still counts as an active agent (/api/state).
AGENT_ACTIVE_SECONDS = 60.0
NOTIFY_TIMEOUT = 1.0
# Changes within this long of the first go out as one notification: agents searching at once each
# activate tools, and each notification is sent to every session of the room.
NOTIFY_DELAY = 0.05
WAITING_FOR_THE_AGENT = "Waiting for the agent's answer to the page's request for input."
NOBODY_WAITS = "The agent's request was over before the page answered: the call was cancelled at the page."
# How a task's call may end other than with the page's answer (or the agent's cancel): the task fails.
TASK_FAILURES = frozenset({"timeout", "page_gone", "bad_answer", "shutdown", "too_many_calls", "unavailable"})


class _ToolsChangingServer(Server[Any]):
    """Advertises `tools.listChanged` to handshake clients, over HTTP and stdio alike; its
    instructions describe the room as it is when a client reads them (at initialize, or
    server/discover), never as it was at the last change: a page registering 1,000 tools changes
    the room 20 times, and describing it each time cost a listing each time."""

    def __init__(self, *args: Any, describe_room: Callable[[], str], **kwargs: Any) -> None:
        self._describe_room = describe_room
        super().__init__(*args, **kwargs)

    @property
    def instructions(self) -> str:
        return self._describe_room()

    @instructions.setter
    def instructions(self, given: str | None) -> None:
        """Server.__init__ sets them; the room's description is what clients read."""

    def create_initialization_options(self, notification_options=None, experimental_capabilities=None,
                                      extensions=None):
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions)


class RoomServer:
    """The MCP server of one room, and whom to tell when its tool list changes."""

    def __init__(self, hub: Hub, room: Room, settings: Settings, public_url: Callable[[], str] | None = None,
                 tasks: PageTasks | None = None, request_state: RequestStateSecurity | None = None,
                 used_states: UsedStates | None = None) -> None:
        self.hub, self.room, self.settings = hub, room, settings
        self.used_states = used_states or UsedStates(settings.task_ttl)
        self.tasks = tasks
        self.log_levels = LogLevels(LEGACY_SESSIONS_MAX)
        self.public_url = public_url or (lambda: settings.public_url)  # where people open the demo page
        self._bus = InMemorySubscriptionBus()
        # Handshake-era sessions by Mcp-Session-Id ("" for stdio). The SDK drops a notification to a
        # closed session silently, so a stale entry costs only memory, which the bound caps.
        self.legacy_sessions: OrderedDict[str, ServerSession] = OrderedDict()
        self._notified = room.listing().fingerprint
        self._notify_task: asyncio.Task[None] | None = None
        self._cached: tuple[str, list[types.Tool]] | None = None
        self.server = _ToolsChangingServer(
            "agui-mcp-bridge",
            version=__version__,
            describe_room=self._instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
            get_tool_input_schema=self._input_schema,
        )
        self.server.middleware.append(self._remember_legacy_session)
        # Input requests' state, sealed and bound to the tool and its arguments (the room, the agent and the
        # keys asked are bound within it: mcp_input).
        self.server.middleware.append(RequestStateBoundary(request_state or RequestStateSecurity.ephemeral(),
                                                           default_audience="agui-mcp-bridge"))
        self.server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.log_levels.set_level)
        if tasks is not None:
            for method in tasks.methods_for(room.name):
                self.server.add_request_handler(method.method, method.params_type, method.handler)
            self.server.extensions[tasks.identifier] = tasks.settings()
        self.unsubscribe = room.subscribe(self._room_changed)

    # --- listing and change notifications --------------------------------------------------

    def _listed_tools(self) -> list[types.Tool]:
        listing = self.room.listing()
        if self._cached is None or self._cached[0] != listing.fingerprint:
            shown = listing.tools + (self.hub.meta.definitions if self._lists_meta_tools(listing) else [])
            self._cached = (listing.fingerprint, [types.Tool.model_validate(t) for t in shown])
        return self._cached[1]

    async def _list_tools(self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None):
        return types.ListToolsResult(tools=self._listed_tools())

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.room.get(name)
        return tool.definition.inputSchema if tool is not None else None

    async def _remember_legacy_session(self, ctx: ServerRequestContext, call_next: CallNext):
        # Over HTTP the `initialize` POST has no session id yet; the client's next message has.
        key = ctx.request.headers.get("mcp-session-id") if ctx.request is not None else ""
        if key is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.legacy_sessions[key] = ctx.session
            self.legacy_sessions.move_to_end(key)
            if len(self.legacy_sessions) > LEGACY_SESSIONS_MAX:
                self.legacy_sessions.popitem(last=False)
        return await call_next(ctx)

    def forget_session(self, session_id: str | None) -> None:
        """Its client ended a handshake session."""
        if session_id is not None:
            self.log_levels.forget(session_id)
            self.legacy_sessions.pop(session_id, None)

    def _lists_meta_tools(self, listing: Listing) -> bool:
        return listing.search_mode or self.settings.meta_tools == "always"

    def _instructions(self) -> str:
        """Read by clients at initialize (and by those that read it again): what this room offers now."""
        listing, names, room = self.room.listing(), self.hub.meta.names, self.room.name
        if not len(self.room):
            page = self.public_url() + ("" if room == "default" else f"?room={room}")
            text = (f"No web page has connected to room '{room}' yet, so it has no tools yet. Ask the user to open "
                    f"{page} (or their app's page that uses this bridge) in a browser.")
            if self._lists_meta_tools(listing):
                text += (f" Then use {names.search} to find the page's tools and call them by name or through "
                         f"{names.call}: there is no need to list tools again.")
            return text
        text = f"Tools provided by the web pages connected to room '{room}': {len(self.room)} tool(s)."
        if listing.search_mode:
            text += (f" {listing.deferred} more tools are not listed: when a tool you need is not listed, search "
                     f"with {names.search} using short English keywords before giving up. Tools it finds are "
                     f"callable at once by their name, or through {names.call}.")
        elif self._lists_meta_tools(listing):
            text += (f" Tools pages add later are found with {names.search} and called through {names.call}, "
                     "even without listing tools again.")
        return text

    def _room_changed(self, room: Room) -> None:
        # Coalesced: a page registering 300 tools, or searches activating tools within NOTIFY_DELAY,
        # notify once.
        if self._notify_task is None or self._notify_task.done():
            self._notify_task = asyncio.get_running_loop().create_task(self._notify_if_changed())
            self._notify_task.add_done_callback(_log_failure)

    async def notifications_sent(self) -> None:
        """Returns once the notifications of the changes made so far have gone out."""
        if self._notify_task is not None:
            await asyncio.shield(self._notify_task)

    async def _notify_if_changed(self) -> None:
        # Looping catches a change made while the notifications were going out: `_room_changed`
        # starts no second task while this one runs.
        while True:
            await asyncio.sleep(NOTIFY_DELAY)
            fingerprint = self.room.listing().fingerprint
            if fingerprint == self._notified:
                return
            self._notified = fingerprint
            for session in list(self.legacy_sessions.values()):
                with anyio.move_on_after(NOTIFY_TIMEOUT):  # one stuck client must not hold up the rest
                    await session.send_tool_list_changed()
            await self._bus.publish(ToolsListChanged())

    # --- calls -----------------------------------------------------------------------------

    async def _call_tool(self, ctx: ServerRequestContext, params: types.CallToolRequestParams):
        route = await self.hub.route(self.room.name, params.name, params.arguments or {},
                                     pages_url=lambda: self._pages_url(ctx))
        if isinstance(route, UnknownTool):
            raise MCPError(types.INVALID_PARAMS, route.message)
        if not isinstance(route, Invoke):  # a meta-tool's own answer
            return _as_built(route)
        tool, arguments = route.tool, route.arguments
        retry = answers_in(ctx, room=self.room.name, agent=owner_of(ctx))
        asked = {"client_capabilities": client_capabilities(ctx), **(retry.asked if retry else {})}
        if retry is not None:
            await spend(retry, self.used_states)
        asks_first = tool.definition.inputBeforeTask and "input_responses" not in asked
        if self.tasks is not None and self.tasks.wants_task(ctx, tool.task_support, asks_first=asks_first):
            task = await self.tasks.start(ctx, self.room.name, tool.key, tool.task_support,
                                          lambda answers: self._task_step(tool, arguments, asked | answers))
            if task is not None:  # else no task can be kept now, and the tool may run without one
                return task
        # A task's call outlives its request; any other ends with it (see bridge.mcp_edge._answer_streams).
        with AnswerStream.of(ctx.request).within():
            return await self._call_in_rounds(ctx, tool, arguments, asked)
        return _as_built(error_result(NOBODY_WAITS))  # the request was over: this reaches no one

    async def _call_in_rounds(self, ctx: ServerRequestContext, tool: Tool, arguments: dict[str, Any],
                              asked: dict[str, Any]) -> dict[str, Any]:
        """The page's call, and in the handshake era each of its input requests put to the agent's client
        and the page called again with the answers: all within one clock (the call timeout) and one run of
        progress values."""
        clock, progress = self.hub.calls.clock(), MonotonicProgress()
        for _ in range(INPUT_ROUNDS_MAX):
            outcome = await self._page_outcome(ctx, tool, arguments, asked, clock, progress)
            if outcome.kind == "input_unsupported":
                raise missing_capability(outcome.result["requiredCapabilities"], outcome.error or "")
            if outcome.kind != "input_required":
                shaped = self._shaped(tool, outcome, modern=modern(ctx))
                return {**shaped, "resultType": "complete"} if modern(ctx) else shaped  # 2026-07-28 says what it is
            if modern(ctx):
                return input_required(outcome.result, room=self.room.name, agent=owner_of(ctx))
            ask = partial(self._answers_of_the_agent, ctx, outcome.result["inputRequests"], progress)
            answers = await self.hub.ask_agent(tool, arguments, clock, ask)
            if isinstance(answers, Outcome):  # the call timed out, or an operator cancelled it, meanwhile
                return self._shaped(tool, answers, modern=False)
            asked = asked | {"input_responses": answers, "request_state": outcome.result["requestState"]}
        return _as_built(error_result(f"The page asked for input more than {INPUT_ROUNDS_MAX} times in one call."))

    async def _answers_of_the_agent(self, ctx: ServerRequestContext, requests: dict[str, Any],
                                    progress: MonotonicProgress) -> dict[str, Any]:
        """Handshake era: the page's input requests go to the agent's client on the call's stream. An agent
        that asked for progress hears it tick meanwhile, as while the page works."""
        if progress_token_from_params(ctx.params) is None:
            return await ask_client(ctx, requests)
        async with anyio.create_task_group() as ticking:
            ticking.start_soon(self._keep_alive, ctx, progress)
            answers = await ask_client(ctx, requests)
            ticking.cancel_scope.cancel()
        return answers

    async def _keep_alive(self, ctx: ServerRequestContext, progress: MonotonicProgress) -> None:
        while True:
            await anyio.sleep(self.settings.progress_interval)
            await ctx.session.report_progress(*progress.tick(WAITING_FOR_THE_AGENT))

    async def _task_step(self, tool: Tool, arguments: dict[str, Any], asked: dict[str, Any]) -> dict[str, Any]:
        """One round of a task's call: its result (wire JSON), or InputNeeded."""
        outcome = await self._page_outcome(None, tool, arguments, asked)
        if outcome.kind == "input_unsupported":
            raise missing_capability(outcome.result["requiredCapabilities"], outcome.error or "")
        if outcome.kind == "input_required":
            raise InputNeeded(outcome.result["inputRequests"], outcome.result["requestState"])
        if outcome.kind in TASK_FAILURES:  # not the tool's answer: the task fails, as a JSON-RPC error would
            raise MCPError(types.INTERNAL_ERROR, outcome.error or outcome.kind)
        return self._shaped(tool, outcome, modern=True)

    async def _page_outcome(self, ctx: ServerRequestContext | None, tool: Tool, arguments: dict[str, Any],
                            asked: dict[str, Any], clock: CallClock | None = None,
                            progress: MonotonicProgress | None = None) -> Outcome:
        """Call the page, relaying its progress and log lines to the agent that asked for them. Without
        `ctx` (a task's call, which outlives its request) nothing is relayed. `clock`: the call's, whose
        deadline holds for each of its rounds; `progress`: the values the call's agent was sent so far."""
        # A child of the SDK's own span for the request, when the user installs an OpenTelemetry SDK.
        # Not made the current span: nothing below starts spans, and each call would keep a
        # context manager and a context token while it waits.
        span = _tracer.start_span("agui.tool.call", attributes={
            "agui.tool": tool.key, "agui.room": self.room.name, "agui.page": tool.session_id[:6]})
        try:
            wants_progress = ctx is not None and progress_token_from_params(ctx.params) is not None
            log_levels = self.log_levels.allowed(ctx) if ctx is not None else frozenset()
            if ctx is None or not (wants_progress or log_levels):  # nothing to relay: no relay to run
                outcome = await self.hub.call(tool, arguments, mcp_request_id=ctx.request_id if ctx else None,
                                              asked=asked, clock=clock)
            else:
                outcome = await self._call_relaying_notes(ctx, tool, arguments, asked, clock,
                                                          progress or MonotonicProgress(), wants_progress, log_levels)
            span.set_attribute("agui.outcome", outcome.kind)
            if outcome.error is not None:
                span.set_status(StatusCode.ERROR, outcome.kind)
        except BaseException as exc:  # the agent cancelled, or something broke: as start_as_current_span records
            span.record_exception(exc)
            span.set_status(StatusCode.ERROR, type(exc).__name__)
            raise
        finally:
            span.end()
        return outcome

    def _shaped(self, tool: Tool, outcome: Outcome, *, modern: bool) -> dict[str, Any]:
        """The CallToolResult (wire JSON) the agent gets; the SDK checks it again as it serialises it, so
        only a page's own `content` is checked here, where a fault can still be told to the agent."""
        result = to_call_tool_result(outcome, structured_may_be_any_json=modern)
        problem = tool.result_errors(result)
        if problem is not None:
            result = error_result(f"The page's result for {tool.key} does not match its output schema: {problem}")
        elif not shaped_here(outcome):
            return self._result(result).model_dump(mode="json", by_alias=True, exclude_none=True)
        result.setdefault("isError", False)
        return result

    def _pages_url(self, ctx: ServerRequestContext) -> str:
        """Where a person opens a page for this room: the bridge's own demo, behind any mount prefix."""
        base = str(ctx.request.base_url) if ctx.request is not None else self.settings.public_url
        return base if self.room.name == "default" else f"{base}?room={self.room.name}"

    async def _call_relaying_notes(self, ctx: ServerRequestContext, tool: Tool, arguments: dict[str, Any],
                                   asked: dict[str, Any], clock: CallClock | None, progress: MonotonicProgress,
                                   wants_progress: bool, log_levels: frozenset[str]):
        send_notes, receive_notes = anyio.create_memory_object_stream[dict[str, Any]](64)
        with send_notes, receive_notes:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._relay_notes, ctx, receive_notes, progress, wants_progress, log_levels)
                outcome = await self.hub.call(tool, arguments, mcp_request_id=ctx.request_id, asked=asked,
                                              on_note=lambda note: _offer(send_notes, note), clock=clock)
                # What the page reported before its answer reaches the agent before the answer; an
                # agent that stopped reading does not hold the answer up for long.
                send_notes.close()
                tg.cancel_scope.deadline = anyio.current_time() + NOTIFY_TIMEOUT
        return outcome

    async def _relay_notes(self, ctx: ServerRequestContext, page_notes, values: MonotonicProgress,
                           wants_progress: bool, log_levels: frozenset[str]) -> None:
        """Forward the page's progress and log lines as the agent asked for them, and tick while the page
        is quiet so clients with request timeouts keep waiting."""
        while True:
            with anyio.move_on_after(self.settings.progress_interval if wants_progress else math.inf) as quiet:
                try:
                    note = await page_notes.receive()
                except anyio.EndOfStream:
                    return  # the call ended and everything the page reported went out
            if quiet.cancelled_caught:
                await ctx.session.report_progress(*values.tick("Waiting for the page to answer."))
            elif "progress" in note and wants_progress:
                await ctx.session.report_progress(*values.page(*note["progress"]))
            elif "log" in note and note["log"]["level"] in log_levels:
                await send_log(ctx, note["log"])

    @staticmethod
    def _result(wire: dict[str, Any]) -> types.CallToolResult:
        try:
            return types.CallToolResult.model_validate(wire)
        except ValidationError as exc:
            return types.CallToolResult.model_validate(
                error_result(f"The page returned a malformed MCP result: {validation_summary(exc)}"))


def _as_built(result: dict[str, Any]) -> dict[str, Any]:
    """A CallToolResult the bridge built itself (wire JSON), with the fields a model of it would
    dump: the SDK validates it as it serialises it, so it is not validated and dumped here first."""
    return {"isError": False, **result, "resultType": "complete"}


def _offer(stream: Any, item: Any) -> None:
    try:
        stream.send_nowait(item)
    except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # progress is advisory: a flood or a finished call drops it


@dataclass(eq=False)
class _ServedRoom:
    server: RoomServer
    manager: StreamableHTTPSessionManager  # SSE mode: sessions, progress, listen streams
    plain_calls: StreamableHTTPSessionManager  # JSON mode: 2026-07-28 calls without progress (plain_calls.py)
    stop: anyio.CancelScope
    sessions: AgentSessions  # the handshake sessions agents opened and have not ended
    requests: int = 0  # in progress, including agents' open notification streams
    sessions_ended: bool = False  # a handshake client ended its session (DELETE)
    last_used: float = 0.0


class McpRooms:
    """Streamable HTTP for every room: `/mcp` is the default room, `/rooms/{room}/mcp` any other.

    Each room's session manager runs in the host app's lifespan task group, started on first use
    and stopped when the room has had no page and no request for `idle_room_seconds` (a
    handshake-era client of a freed room is told its session is gone and starts a new one).
    """

    def __init__(self, hub: Hub, settings: Settings, shared_tasks: SharedTasks | None = None,
                 shared_marks: SharedMarks | None = None) -> None:
        self.hub, self.settings = hub, settings
        self._servers: dict[str, RoomServer] = {}
        self._served: dict[str, _ServedRoom] = {}
        # Tasks outlive their room's server (freed when idle) and their agent's request.
        self.tasks = PageTasks(TaskTable(ttl=settings.task_ttl, poll_interval=settings.task_poll_interval,
                                         limits=settings.task_limits()), shared_tasks)
        self.request_state = RequestStateSecurity.ephemeral(ttl=settings.task_ttl)
        self.used_states = UsedStates(settings.task_ttl, shared_marks)  # each state is good for one retry
        self._task_group: anyio.abc.TaskGroup | None = None
        # Where people open the demo page, as agents reach the bridge (its port, any mount prefix): from
        # the first HTTP request; until then (stdio) from the settings.
        self._public_url: str | None = None
        self._lock = anyio.Lock()
        # Host and Origin are the bridge's to check (bridge.access, in front of every endpoint, MCP's
        # included): the SDK's own check of them would only repeat it on every request.
        self.security = TransportSecuritySettings(enable_dns_rebinding_protection=False)

    def agents(self, room: str) -> dict[str, Any]:
        """The agents at a room's MCP endpoint, as far as the transport shows them: requests being answered
        (agents' open notification streams included), and handshake sessions active now or within the
        last `active_window_s` seconds (one an agent left without ending it stops counting then)."""
        served = self._served.get(room)
        return {"requests_open": served.requests if served else 0,
                "sessions_active": served.sessions.active() if served else 0,
                "active_window_s": AGENT_ACTIVE_SECONDS}

    @property
    def served_rooms(self) -> frozenset[str]:
        """The rooms whose Streamable HTTP endpoint runs (their session managers started)."""
        return frozenset(self._served)

    @property
    def rooms_with_servers(self) -> frozenset[str]:
        """The rooms with an MCP server, each of which holds its room in the hub."""
        return frozenset(self._servers)

    def server(self, room: str) -> RoomServer:
        """The room's MCP server; it holds the room until the room is freed. At most `max_rooms` rooms
        without a page are served: past that the one least recently used with no request open is
        freed for this one, else `TooManyRooms`."""
        if room not in self._servers:
            if not self.hub.has_pages(room):
                self._make_room_for_an_agent()
            self._servers[room] = RoomServer(self.hub, self.hub.hold_room(room), self.settings,
                                             lambda: self._public_url or self.settings.public_url,
                                             self.tasks, self.request_state, self.used_states)
        return self._servers[room]

    def _make_room_for_an_agent(self) -> None:
        pageless = [name for name in self._servers if not self.hub.has_pages(name)]
        if len(pageless) < self.settings.max_rooms:
            return
        idle = [(served.last_used, name) for name in pageless
                if (served := self._served.get(name)) is not None and self._may_free(name, served)]
        if not idle:
            raise TooManyRooms(self.settings.max_rooms)
        self._free(min(idle)[1])

    def _may_free(self, name: str, served: _ServedRoom) -> bool:
        return name != "default" and not served.requests and not self.hub.has_pages(name)

    def _free(self, name: str) -> None:
        """Stop serving a room: its handshake sessions end (their clients are told the session is gone)."""
        served = self._served.pop(name)
        del self._servers[name]
        served.stop.cancel()
        served.server.unsubscribe()
        self.hub.release_room(name)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            tg.start_soon(self._free_idle_rooms)
            if self.tasks.shared is not None:
                self.tasks.shared.listen(self.tasks.carry_out)
                if secret := await self.tasks.shared.shared_secret():  # else Redis is unreachable: our own key
                    self.request_state = RequestStateSecurity(keys=[secret], ttl=self.settings.task_ttl)
            try:
                yield
            finally:
                self._task_group = None
                self.tasks.stop()
                if self.tasks.shared is not None:
                    await self.tasks.shared.close()
                await self.used_states.close()
                tg.cancel_scope.cancel()

    async def _served_room(self, room: str) -> _ServedRoom:
        served = self._served.get(room)
        if served is not None:  # the common case needs no lock
            return served
        async with self._lock:
            served = self._served.get(room)
            if served is None:
                if self._task_group is None:
                    raise LifespanNotEntered()
                server = self.server(room)
                manager = StreamableHTTPSessionManager(server.server, security_settings=self.security)
                plain_calls = StreamableHTTPSessionManager(server.server, security_settings=self.security,
                                                           json_response=True)
                stop = await self._task_group.start(_run_managers, (manager, plain_calls))
                served = self._served[room] = _ServedRoom(server, manager, plain_calls, stop,
                                                          AgentSessions(LEGACY_SESSIONS_MAX, AGENT_ACTIVE_SECONDS))
            return served

    async def _free_idle_rooms(self) -> None:
        idle = self.settings.idle_room_seconds
        while True:
            await anyio.sleep(max(idle / 4, 0.05))
            now = time.monotonic()
            for name, served in list(self._served.items()):
                if now - served.last_used > idle and self._may_free(name, served):
                    self._free(name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        room = scope.get("path_params", {}).get("room", "default")
        if self._public_url is None:
            self._public_url = str(Request(scope).base_url)
        refusal = self._refusal(scope, room)
        if refusal is None:
            try:
                served = await self._served_room(room)
            except LifespanNotEntered as exc:
                log.error("%s", exc)
                refusal = PlainTextResponse(str(exc), 503)
            except TooManyRooms as exc:
                refusal = PlainTextResponse(str(exc), 503)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        served.requests += 1
        session_request = served.sessions.started(scope, send)
        stream = AnswerStream.given(scope)
        try:
            await self._answer(served, scope, receive, send if session_request is None else session_request.send)
        finally:
            stream.end()  # a call still waiting for this request's answer can no longer be answered
            served.requests -= 1
            served.last_used = time.monotonic()
            if session_request is not None and served.sessions.finished(session_request):
                served.sessions_ended = True
                served.server.forget_session(session_request.session_id)
            # A room its handshake clients left is freed as their last request ends, not when idle.
            if (served.sessions_ended and not served.sessions and self._may_free(room, served)
                    and self._served.get(room) is served):
                self._free(room)

    @staticmethod
    async def _answer(served: _ServedRoom, scope: Scope, receive: Receive, send: Send) -> None:
        if may_ask_for_plain_call(scope):
            request = await PeekedRequest.read(receive)
            if is_plain_call(request):
                await answer_watching_disconnect(served.plain_calls.handle_request, scope, request, receive, send)
            else:
                await served.manager.handle_request(scope, request.replay(receive), send)
        else:
            await served.manager.handle_request(scope, receive, send)

    def _refusal(self, scope: Scope, room: str) -> PlainTextResponse | None:
        if (problem := room_name_problem(room)) is not None:
            return PlainTextResponse(problem, 404)
        return missing_agent_token(scope, self.settings.agent_token)


class LifespanNotEntered(RuntimeError):
    def __init__(self) -> None:
        super().__init__("The bridge's lifespan is not running: a host app that mounts the bridge must enter it, "
                         "e.g. Starlette(..., lifespan=bridge.lifespan) or FastAPI(lifespan=bridge.lifespan).")


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("notifying agents of a tool-list change failed", exc_info=task.exception())


async def _run_managers(managers: tuple[StreamableHTTPSessionManager, ...], *,
                        task_status=anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.CancelScope() as stop:
        async with AsyncExitStack() as running:
            for manager in managers:
                await running.enter_async_context(manager.run())
            task_status.started(stop)
            await anyio.sleep_forever()
