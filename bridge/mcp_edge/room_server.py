"""One room's MCP server (`RoomServer`): its tools listed, their calls carried to the page through
the hub, over Streamable HTTP (bridge.mcp_edge.rooms) or stdio alike.

Both protocol eras are served. Handshake-era clients (2024-11-05 .. 2025-11-25) get
`notifications/tools/list_changed` on their session; 2026-07-28 clients get `ToolsListChanged`
on the `subscriptions/listen` streams they open.

The life of one call: `_call_tool` asks `Hub.route` what the name means — a meta-tool's answer,
an unknown tool, a page tool to invoke (a deferred one is activated), or a program to run — and
hands a page tool to `Hub.call`, which pushes `agui.tool.invoke` to the page and waits for its
`agui.tool.return`, the timeout, the page going away or the agent cancelling, while `_call_tool`
relays progress and turns the outcome into a CallToolResult (cut past `--result-max-chars`).

A program (`run_code`) is the same life with `Programs.run` in place of `Hub.call`: it runs within
its request (the agent's cancel, or nobody left to read the answer, ends it and cancels its page
calls at the pages) or as a task (which, in shared mode, another process goes on with should this
one die), and the agent's progress token hears of each page call it makes finishing, and
keep-alive ticks.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from pydantic import ValidationError

from bridge import __version__
from bridge.code_mode import CallFinished
from bridge.config import Settings
from bridge.core.calls import CallClock, MonotonicProgress, NoteSink, Outcome
from bridge.core.catalog import Listing, Room, Tool
from bridge.core.code_tool import RunProgram
from bridge.core.hub import Hub
from bridge.core.messages import validation_summary
from bridge.core.meta_tools import Invoke, UnknownTool
from bridge.core.programs import Programs
from bridge.core.provenance import AGENT_NOTICE, marked_result
from bridge.core.results import cut, error_result, shaped_here, to_call_tool_result
from bridge.core.used_states import UsedStates
from bridge.mcp_edge._answer_streams import AnswerStream
from bridge.mcp_edge._input import (
    INPUT_ROUNDS_MAX,
    LogLevels,
    answers_in,
    ask_client,
    client_capabilities,
    input_required,
    modern,
    send_log,
    spend,
)
from bridge.mcp_edge._tasks import InputNeeded, PageTasks, missing_capability, owner_of

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("agui-mcp-bridge")
T = TypeVar("T")

LEGACY_SESSIONS_MAX = 10_000  # as many as the session manager keeps open by default
NOTIFY_TIMEOUT = 1.0
# Changes within this long of the first go out as one notification: agents searching at once each
# activate tools, and each notification is sent to every session of the room.
NOTIFY_DELAY = 0.05
WAITING_FOR_THE_AGENT = "Waiting for the agent's answer to the page's request for input."
NOBODY_WAITS = "The agent's request was over before the page answered: the call was cancelled at the page."
WAITING_FOR_THE_PAGE = "Waiting for the page to answer."
WAITING_FOR_THE_PAGES = "The program is waiting for the pages to answer."
NO_PROGRAMS = "This server runs no programs."
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
                 used_states: UsedStates | None = None, programs: Programs | None = None) -> None:
        self.hub, self.room, self.settings, self.programs = hub, room, settings, programs
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
        notice = f" {AGENT_NOTICE}" if self.room.policy.mark_page_text else ""  # told before any tool comes
        if not len(self.room):
            text = (f"No web page has connected to room '{room}' yet, so it has no tools yet. Ask the user to open "
                    f"{room_page(self.public_url(), room)} (or their app's page that uses this bridge) in a browser.")
            if self._lists_meta_tools(listing):
                text += (f" Then use {names.search} to find the page's tools and call them by name or through "
                         f"{names.call}: there is no need to list tools again.")
            elsewhere = self.hub.pages_elsewhere(room)
            text += (f" {elsewhere}." if elsewhere is not None else "") + notice
        else:
            text = f"Tools provided by the web pages connected to room '{room}': {len(self.room)} tool(s).{notice}"
            if listing.search_mode:
                text += (f" {listing.deferred} more tools are not listed: when a tool you need is not listed, "
                         f"search with {names.search} using short English keywords before giving up. Tools it finds "
                         f"are callable at once by their name, or through {names.call}.")
            elif self._lists_meta_tools(listing):
                text += (f" Tools pages add later are found with {names.search} and called through {names.call}, "
                         "even without listing tools again.")
        if names.code is not None and self._lists_meta_tools(listing):
            text += (f" For a task of several calls (loops, filters, totals), send {names.code} a short Python "
                     "program that calls the tools: only its value comes back.")
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
        if isinstance(route, RunProgram):
            return await self._run_program(ctx, params.name, route.code)
        if not isinstance(route, Invoke):  # a meta-tool's own answer
            return _as_built(route)
        tool, arguments = route.tool, route.arguments
        owner = owner_of(ctx)  # the agent, as its credential names it
        retry = answers_in(ctx, room=self.room.name, agent=owner)
        asked = {"client_capabilities": client_capabilities(ctx), **(retry.asked if retry else {})}
        if retry is not None:
            await spend(retry, self.used_states)
        asks_first = tool.definition.inputBeforeTask and "input_responses" not in asked
        if self.tasks is not None and self.tasks.wants_task(ctx, tool.task_support, asks_first=asks_first):
            task = await self.tasks.start(owner, self.room.name, tool.key, tool.task_support,
                                          lambda task, answers: self._task_step(tool, arguments, asked | answers))
            if task is not None:  # else no task can be kept now, and the tool may run without one
                return task
        # A task's call outlives its request; any other ends with it (see bridge.mcp_edge._answer_streams).
        with AnswerStream.of(ctx.request).within():
            return await self._call_in_rounds(ctx, tool, arguments, asked, owner)
        return _as_built(error_result(NOBODY_WAITS))  # the request was over: this reaches no one

    async def _run_program(self, ctx: ServerRequestContext, name: str, code: str) -> dict[str, Any]:
        """An agent's program: as a task when the agent declares the tasks extension (a program may wait on a
        person), else within its request, relaying progress to an agent that asked for it."""
        if self.programs is None:
            return _as_built(error_result(NO_PROGRAMS))
        run = partial(self.programs.run, self.room.name, code, pages_url=lambda: self._pages_url(ctx))
        if self.tasks is not None and self.tasks.wants_task(ctx, "optional"):
            # The task's id is its program's run id: in shared mode the program outlives this process.
            task = await self.tasks.start(owner_of(ctx), self.room.name, name, "optional",
                                          lambda task, answers: run(task_id=task.task_id))
            if task is not None:  # else no task can be kept now, and the program runs without one
                return task
        with AnswerStream.of(ctx.request).within():
            if progress_token_from_params(ctx.params) is None:
                result = await run()
            else:
                result = await self._relaying_notes(
                    ctx, lambda on_note: run(on_call_finished=partial(_call_finished, on_note)),
                    MonotonicProgress(), True, frozenset(), WAITING_FOR_THE_PAGES)
            return {**result, "resultType": "complete"} if modern(ctx) else result
        return _as_built(error_result(NOBODY_WAITS))  # the request was over: this reaches no one

    async def _call_in_rounds(self, ctx: ServerRequestContext, tool: Tool, arguments: dict[str, Any],
                              asked: dict[str, Any], owner: str) -> dict[str, Any]:
        """The page's call, and in the handshake era each of its input requests put to the agent's client
        and the page called again with the answers: all within one clock (the call timeout) and one run of
        progress values. `owner`: the agent (`owner_of`), whose input requests' state names it."""
        clock, progress = self.hub.calls.clock(), MonotonicProgress()
        for _ in range(INPUT_ROUNDS_MAX):
            outcome = await self._page_outcome(ctx, tool, arguments, asked, clock, progress)
            if outcome.kind == "input_unsupported":
                raise missing_capability(outcome.result["requiredCapabilities"], outcome.error or "")
            if outcome.kind != "input_required":
                shaped = self._shaped(tool, outcome, modern=modern(ctx))
                return {**shaped, "resultType": "complete"} if modern(ctx) else shaped  # 2026-07-28 says what it is
            if modern(ctx):
                return input_required(outcome.result, room=self.room.name, agent=owner)
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
        # No notes come while the agent is asked: only the keep-alive ticks.
        return await self._relaying_notes(ctx, lambda _: ask_client(ctx, requests), progress, True, frozenset(),
                                          WAITING_FOR_THE_AGENT)

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
                outcome = await self._relaying_notes(
                    ctx, lambda on_note: self.hub.call(tool, arguments, mcp_request_id=ctx.request_id, asked=asked,
                                                       on_note=on_note, clock=clock),
                    progress or MonotonicProgress(), wants_progress, log_levels, WAITING_FOR_THE_PAGE)
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
        if outcome.kind in ("result", "error") and self.room.marks_result(tool):  # the page's words, not the bridge's
            result = marked_result(result)
        mismatch = tool.result_mismatch(result, tool.key)
        if mismatch is not None:
            result = error_result(mismatch)
        elif not shaped_here(outcome):
            result = self._result(result).model_dump(mode="json", by_alias=True, exclude_none=True)
        result = cut(result, self.settings.result_max_chars, structured_repeats_text=shaped_here(outcome),
                     needs_structured=tool.definition.outputSchema is not None, code_tool=self.hub.meta.names.code)
        result.setdefault("isError", False)
        return result

    def _pages_url(self, ctx: ServerRequestContext) -> str:
        """Where a person opens a page for this room: the bridge's own demo, behind any mount prefix."""
        return room_page(str(ctx.request.base_url) if ctx.request is not None else self.settings.public_url,
                         self.room.name)

    async def _relaying_notes(self, ctx: ServerRequestContext, work: Callable[[NoteSink], Awaitable[T]],
                              progress: MonotonicProgress, wants_progress: bool, log_levels: frozenset[str],
                              waiting: str) -> T:
        """`work(on_note)` (a page call, a program), its notes relayed to the agent meanwhile; `waiting`: what
        keep-alive ticks say."""
        send_notes, receive_notes = anyio.create_memory_object_stream[dict[str, Any]](64)
        with send_notes, receive_notes:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._relay_notes, ctx, receive_notes, progress, wants_progress, log_levels, waiting)
                done = await work(lambda note: _offer(send_notes, note))
                # What the page reported before its answer reaches the agent before the answer; an
                # agent that stopped reading does not hold the answer up for long.
                send_notes.close()
                tg.cancel_scope.deadline = anyio.current_time() + NOTIFY_TIMEOUT
        return done

    async def _relay_notes(self, ctx: ServerRequestContext, page_notes, values: MonotonicProgress,
                           wants_progress: bool, log_levels: frozenset[str], waiting: str) -> None:
        """Forward the page's progress and log lines as the agent asked for them, and tick while the page
        is quiet so clients with request timeouts keep waiting."""
        while True:
            with anyio.move_on_after(self.settings.progress_interval if wants_progress else math.inf) as quiet:
                try:
                    note = await page_notes.receive()
                except anyio.EndOfStream:
                    return  # the call ended and everything the page reported went out
            if quiet.cancelled_caught:
                await ctx.session.report_progress(*values.tick(waiting))
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


def room_page(base: str, room: str) -> str:
    """Where a person opens a page of `room`, given where the bridge's demo page is served."""
    return base if room == "default" else f"{base}?room={room}"


def _as_built(result: dict[str, Any]) -> dict[str, Any]:
    """A CallToolResult the bridge built itself (wire JSON), with the fields a model of it would
    dump: the SDK validates it as it serialises it, so it is not validated and dumped here first."""
    return {"isError": False, **result, "resultType": "complete"}


def _call_finished(on_note: NoteSink, finished: CallFinished) -> None:
    """A program's page call finished: a progress note for its agent."""
    outcome = "" if finished.ok else " (failed)"
    on_note({"progress": [finished.finished, None, f"{finished.finished} of {finished.started} tool calls answered; "
                                                   f"last: {finished.name}{outcome}"]})


def _offer(stream: Any, item: Any) -> None:
    try:
        stream.send_nowait(item)
    except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # progress is advisory: a flood or a finished call drops it


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("notifying agents of a tool-list change failed", exc_info=task.exception())
