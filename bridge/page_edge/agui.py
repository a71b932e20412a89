"""The AG-UI edge: the frontend tools of an AG-UI app (`@ag-ui/client`, CopilotKit), served as MCP tools.

An app POSTs a `RunAgentInput` to `/agui/run` (room `default`) or `/rooms/{room}/agui/run` and
reads the run back as SSE `data:` frames. To the hub a thread is a page, nothing more:

- a run says `agui.hello` for its thread (the thread's session id is kept here, by room and
  thread id), registers the run's `tools` when they differ from the last run's, and hands the
  hub the answers in it (`ToolMessage`s, and `resume` entries for interrupts) as `ToolReturn`s;
- it then reads the session's events (`Hub.events`) and stays open, with keep-alive comments,
  until the hub has calls for the thread: each becomes TOOL_CALL_START / ARGS / END, a tool the
  app marked as needing its user also an interrupt, and RUN_FINISHED ends the run;
- cancels (the agent's, or a timeout) of calls the app holds are CUSTOM `agui.tool.cancel` events;
- when the run ends the thread is a page whose connection dropped: it has the grace period to
  come back with its next run (a thread paused on an interrupt has the call timeout).

docs/agui.md is the contract.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
)
from ag_ui.core.types import AudioPart, DataSource, ImagePart, TextPart, UrlSource
from ag_ui.encoder import EventEncoder
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.types import Receive, Scope, Send

from bridge.access import FailedAttempts, PageOrigins, bearer_token, client_address, tokens_match
from bridge.config import Settings
from bridge.core.hub import Hub
from bridge.core.messages import (
    Hello,
    PageInfo,
    ProtocolError,
    RegisterTools,
    ToolError,
    ToolReturn,
    UnregisterTools,
    validation_summary,
)
from bridge.core.room_names import room_name_problem
from bridge.core.sessions import PageEvent, PageSession
from bridge.page_edge._agui_input import Limit, Unreadable, read_run_input

log = logging.getLogger(__name__)

BRIDGE_KEY = "agui-mcp-bridge"  # the bridge's key in a tool's `metadata` and in `forwardedProps`
CANCEL_EVENT = "agui.tool.cancel"
REGISTERED_EVENT = "agui.tools.registered"
BODY_LIMIT_FACTOR = 16  # a run carries the app's whole history: 16 x --max-message-bytes
DECLINED = "The user declined to answer."
THREAD_DROPPED = "thread_dropped"  # cancel reason: the thread came back after the grace period
HELLO_REFUSALS = {"bad_room": 404, "too_many_rooms": 503}  # HTTP status of a refused agui.hello (else 400)


# --- what the app may say in a RunAgentInput besides the AG-UI fields --------------------------


class _Options(BaseModel):
    model_config = ConfigDict(extra="ignore")


class InterruptOptions(_Options):
    """`metadata["agui-mcp-bridge"].interrupt` as an object: what the interrupt carries."""

    message: str | None = None
    responseSchema: dict[str, Any] | None = None


class ToolOptions(_Options):
    """A tool's `metadata["agui-mcp-bridge"]`."""

    interrupt: bool | InterruptOptions = False  # answered by the user through an AG-UI interrupt
    title: str | None = None
    annotations: dict[str, Any] | None = None


class RunOptions(_Options):
    """`forwardedProps["agui-mcp-bridge"]`."""

    title: str | None = None  # how agents and the dashboard name this app


# --- what the bridge says in CUSTOM events ---------------------------------------------------


class ToolCancel(BaseModel):
    """CUSTOM `agui.tool.cancel`: stop working on this call, its answer will not be taken."""

    toolCallId: str
    reason: str


class RegisteredTool(BaseModel):
    tool: str  # the app's name
    name: str  # the MCP name agents see


class ToolsRegistered(BaseModel):
    """CUSTOM `agui.tools.registered`: the run's tools are registered, under these MCP names."""

    tools: list[RegisteredTool]


class Refused(Exception):
    """A request the endpoint answers with an HTTP error, before any run starts."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.body = status, {"code": code, "message": message, **extra}

    def response(self) -> JSONResponse:
        headers = {"Allow": "POST"} if self.status == 405 else None
        if "retry_after" in self.body:
            headers = {"Retry-After": str(max(1, round(self.body["retry_after"])))}
        return JSONResponse(self.body, self.status, headers=headers)


@dataclass(eq=False)
class Thread:
    """What the bridge remembers of one AG-UI thread between its runs."""

    room: str
    session_id: str
    tools_json: str | None = None  # the last tools registered without error, so a run repeating them costs nothing
    tool_names: list[str] = field(default_factory=list)
    interrupting: dict[str, InterruptOptions] = field(default_factory=dict)  # by the app's tool name
    cursor: int | None = None  # the last session event a run of this thread read
    handed: dict[str, dict[str, Any]] = field(default_factory=dict)  # call_id -> invocation, sent to the app
    received: set[str] = field(default_factory=set)  # handed calls the app's messages show it has
    interrupts: dict[str, Interrupt] = field(default_factory=dict)  # call_id -> its open interrupt
    run: Run | None = None  # the newest run; an older one still open stops

    def forget(self, call_id: str) -> None:
        self.handed.pop(call_id, None)
        self.received.discard(call_id)
        self.interrupts.pop(call_id, None)


@dataclass(eq=False)
class Run:
    input: RunAgentInput
    thread: Thread
    session: PageSession
    connection: int
    prelude: list[BaseEvent] = field(default_factory=list)  # events sent right after RUN_STARTED
    failure: RunErrorEvent | None = None
    events: asyncio.Queue[PageEvent | None] = field(default_factory=asyncio.Queue)
    reader: asyncio.Task[None] | None = None


class AguiEndpoint:
    """The ASGI app behind `POST /agui/run` and `POST /rooms/{room}/agui/run`."""

    def __init__(self, hub: Hub, settings: Settings, origins: PageOrigins, attempts: FailedAttempts) -> None:
        self.hub, self.settings, self.origins, self.attempts = hub, settings, origins, attempts
        self.encoder = EventEncoder()
        self._threads: dict[tuple[str, str], Thread] = {}
        self._limits = {
            "messages": Limit(settings.max_run_messages, "max_run_messages", "The bridge reads only the answers "
                              "to its calls: an app may send just the messages since its last run."),
            "tools": Limit(settings.max_tools_per_page, "max_tools_per_page", "A run's tools are one page's."),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        room = request.path_params.get("room", "default")
        try:
            run = self._open(room, *await self._read(request, room), page=self._page(request),
                             origin=request.headers.get("origin"))
        except Refused as exc:
            await exc.response()(scope, receive, send)
            return
        except ClientDisconnect:
            return
        try:
            run.reader = asyncio.create_task(self._read_events(run))  # opened now: the thread is listening again
            await self._prepare(run)
            response = StreamingResponse(self._stream(run), media_type=self.encoder.get_content_type(),
                                         headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
            await response(scope, receive, send)
        finally:
            self._close(run)

    # --- the request -----------------------------------------------------------------------

    async def _read(self, request: Request, room: str) -> tuple[RunAgentInput, str | None]:
        """The run's input and token; whatever can be refused without the body is refused before it is read."""
        if request.method != "POST":
            raise Refused(405, "method_not_allowed", "POST a RunAgentInput (JSON) here.")
        refusal = self.origins.refusal(request.headers.get("origin"))
        if refusal is not None:
            raise Refused(403, "forbidden_origin", refusal)
        token = bearer_token(request.headers)
        self._check_token(room, token, client_address(request.scope))
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise Refused(415, "unsupported_media_type", f"A run is a RunAgentInput sent as application/json, "
                          f"not {media_type or 'a body without Content-Type'}.")
        limit = BODY_LIMIT_FACTOR * self.settings.max_message_bytes
        declared = request.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise Refused(413, "too_large", f"The request declares {int(declared)} bytes, over the limit of {limit}.")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise Refused(413, "too_large", f"The request exceeds {limit} bytes.")
        try:
            return await read_run_input(body, self._limits), token
        except Unreadable as exc:
            raise Refused(exc.status, exc.code, str(exc), **exc.extra) from None

    def _check_token(self, room: str, token: str | None, address: str) -> None:
        """The room's page token, checked before the body is read; wrong ones slowed down per address
        as on the page WebSocket."""
        expected = self.hub.config.page_token(room) if room_name_problem(room) is None else ""
        if not expected:
            return
        wait = self.attempts.retry_after(address)
        if wait is not None:
            raise Refused(429, "too_many_attempts", f"Too many wrong tokens from this address; try again in "
                          f"{wait:.1f} s.", retry_after=round(wait, 1))
        if not tokens_match(token, expected):
            self.attempts.failed(address)
            problem = "is not the one it needs" if token else "is missing"
            raise Refused(401, "unauthorized", f"Room {room!r} needs a page token, and the one given {problem}. "
                          "An AG-UI app sends it as 'Authorization: Bearer <token>'.")

    @staticmethod
    def _page(request: Request) -> PageInfo:
        return PageInfo(url=request.headers.get("referer") or request.headers.get("origin"))

    def _open(self, room: str, run_input: RunAgentInput, token: str | None, *, page: PageInfo,
              origin: str | None) -> Run:
        """Say hello for the run's thread, which from now on is listening."""
        props = run_input.forwarded_props
        try:
            options = RunOptions.model_validate(props.get(BRIDGE_KEY) or {} if isinstance(props, dict) else {})
        except ValidationError as exc:
            raise Refused(422, "invalid_input", f"Invalid forwardedProps.{BRIDGE_KEY}: {validation_summary(exc)}",
                          errors=[{"field": f"forwardedProps.{BRIDGE_KEY}", "message": validation_summary(exc)}]
                          ) from None
        key = (room, run_input.thread_id)
        known = self._threads.get(key)
        try:
            session, resumed = self.hub.hello(Hello(
                type="agui.hello", room=room, session_id=known.session_id if known else None, token=token,
                page=PageInfo(url=page.url, title=options.title or "AG-UI app")), origin)
        except ProtocolError as exc:
            if exc.code == "unauthorized":
                raise Refused(401, exc.code, f"{exc.message} An AG-UI app sends it as "
                              "'Authorization: Bearer <token>'.") from None
            raise Refused(HELLO_REFUSALS.get(exc.code, 400), exc.code, exc.message) from None
        thread = known
        if thread is None or not resumed:
            thread = Thread(room, session.id)
            self._threads = {k: t for k, t in self._threads.items() if self.hub.session(t.session_id) is not None}
            self._threads[key] = thread
        run = Run(run_input, thread, session, session.connection)
        thread.run = run
        if known is not None and known is not thread:
            # The thread came back too late: the bridge dropped it and failed its calls.
            run.prelude += [_cancel(call_id, THREAD_DROPPED) for call_id in known.handed]
        return run

    # --- before the stream: answers and tools ----------------------------------------------

    async def _prepare(self, run: Run) -> None:
        await self._take_answers(run)
        await self._register_tools(run)

    async def _take_answers(self, run: Run) -> None:
        thread, session = run.thread, run.session
        waiting = self.hub.waiting_call_ids(session)
        for message in run.input.messages:
            if isinstance(message, AssistantMessage):
                thread.received |= {c.id for c in message.tool_calls or ()} & thread.handed.keys()
            elif isinstance(message, ToolMessage):
                call_id = message.tool_call_id
                if call_id in waiting:  # anything else is history: answered, cancelled or not ours
                    await self._answer(session, call_id, _tool_message_result(message))
                thread.forget(call_id)
        for entry in run.input.resume or ():
            call_id = entry.interrupt_id
            if call_id not in thread.interrupts:
                continue  # not an interrupt of this thread that is still open
            if call_id in waiting:
                declined = entry.status == "cancelled"
                text = DECLINED if declined else _as_text(entry.payload)
                await self._answer(session, call_id, ToolReturn(type="agui.tool.return", call_id=call_id,
                                                                result=text if declined else entry.payload))
                run.prelude.append(ToolCallResultEvent(message_id=f"{call_id}.result", tool_call_id=call_id,
                                                       content=text, role="tool"))
            thread.forget(call_id)

    async def _answer(self, session: PageSession, call_id: str, answer: ToolReturn) -> None:
        try:
            await self.hub.handle(session, answer)
        except ProtocolError:
            log.debug("AG-UI answer to %s came too late", call_id)

    async def _register_tools(self, run: Run) -> None:
        thread, session = run.thread, run.session
        tools = run.input.tools or []
        tools_json = json.dumps([t.model_dump(by_alias=True) for t in tools], sort_keys=True, default=str)
        if tools_json == thread.tools_json:
            return
        definitions, interrupting, problems = [], {}, []
        for tool in tools:
            metadata = tool.metadata or {}
            try:
                options = ToolOptions.model_validate(metadata.get(BRIDGE_KEY) or {})
            except ValidationError as exc:
                problems.append(f"Tool {tool.name!r} was not registered: metadata.{BRIDGE_KEY}: "
                                f"{validation_summary(exc)}")
                continue
            definition: dict[str, Any] = {"name": tool.name, "description": tool.description,
                                          "inputSchema": tool.parameters or {"type": "object"}}
            definition |= {k: v for k, v in (("title", options.title), ("annotations", options.annotations)) if v}
            definitions.append(definition)
            if options.interrupt:
                interrupting[tool.name] = (options.interrupt if isinstance(options.interrupt, InterruptOptions)
                                           else InterruptOptions())
        names = {d["name"] for d in definitions}
        gone = [n for n in thread.tool_names if n not in names]
        code = "invalid_tool" if problems else None
        try:
            if gone:
                await self.hub.handle(session, UnregisterTools(type="agui.tools.unregister", tools=gone))
            replies = (await self.hub.handle(session, RegisterTools(type="agui.tools.register", tools=definitions))
                       if definitions else [])
        except ProtocolError as exc:  # refused as a whole (a limit)
            replies = [exc.to_message()]
        registered = [RegisteredTool.model_validate(t) for r in replies if r["type"] == "agui.tools.registered"
                      for t in r["tools"]]
        errors = [r for r in replies if r["type"] == "agui.error"]
        problems += [r["message"] for r in errors]
        thread.tool_names = [t.tool for t in registered]
        thread.interrupting = interrupting
        run.prelude.append(CustomEvent(name=REGISTERED_EVENT, value=ToolsRegistered(tools=registered).model_dump()))
        if problems:
            run.failure = RunErrorEvent(message=" ".join(problems), code=code or errors[0]["code"])
        else:
            thread.tools_json = tools_json

    # --- the stream ------------------------------------------------------------------------

    async def _read_events(self, run: Run) -> None:
        try:
            async for event in self.hub.events(run.session, run.thread.cursor):
                run.events.put_nowait(event)
        finally:
            run.events.put_nowait(None)

    async def _stream(self, run: Run) -> AsyncIterator[str]:
        thread, session, encode = run.thread, run.session, self.encoder.encode
        yield encode(RunStartedEvent(thread_id=run.input.thread_id, run_id=run.input.run_id))
        for notice in run.prelude:
            yield encode(notice)
        if run.failure is not None:
            yield encode(run.failure)
            return
        calls: list[dict[str, Any]] = []
        if thread.run is run:  # calls handed over in a run the app did not see to its end go again
            waiting = self.hub.waiting_call_ids(session)
            calls = [c for i, c in thread.handed.items() if i not in thread.received and i in waiting]
        while not calls:
            try:
                first = await asyncio.wait_for(run.events.get(), self.settings.sse_ping)
            except TimeoutError:
                yield ": ping\n\n"
                continue
            if thread.run is not run:
                yield encode(RunErrorEvent(code="superseded", message="A newer run of this thread took over."))
                return
            if first is None:
                yield encode(RunErrorEvent(code="thread_closed", message="The bridge closed this thread (it is "
                                           "shutting down, or the thread was away too long); start a new run."))
                return
            batch = [first]
            while not run.events.empty():
                more = run.events.get_nowait()
                if more is None:  # the stream ended: seen at the next wait, after this batch's calls
                    run.events.put_nowait(None)
                    break
                batch.append(more)
            for notice in self._take_events(run, batch, calls):
                yield encode(notice)
        for handed in self._hand_over(run, calls):
            yield encode(handed)

    def _take_events(self, run: Run, events: list[PageEvent], calls: list[dict[str, Any]]) -> list[BaseEvent]:
        """Read session events: invocations join `calls`; returns cancel notices for calls the app holds."""
        thread, notices = run.thread, list[BaseEvent]()
        waiting = self.hub.waiting_call_ids(run.session)
        for event in events:
            thread.cursor = event.id
            call_id = event.data["call_id"]
            if event.name == "agui.tool.invoke":
                if call_id in waiting and call_id not in thread.handed and all(c["call_id"] != call_id for c in calls):
                    calls.append(event.data)
            elif event.name == "agui.tool.cancel":
                calls[:] = [c for c in calls if c["call_id"] != call_id]  # never handed over: nothing to say
                if call_id in thread.handed:
                    thread.forget(call_id)
                    notices.append(_cancel(call_id, event.data["reason"]))
        return notices

    def _hand_over(self, run: Run, calls: list[dict[str, Any]]) -> list[BaseEvent]:
        thread, events = run.thread, list[BaseEvent]()
        for call in calls:
            call_id, tool = call["call_id"], call["tool"]
            thread.handed[call_id] = call
            events += [ToolCallStartEvent(tool_call_id=call_id, tool_call_name=tool),
                       ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(call["params"], ensure_ascii=False)),
                       ToolCallEndEvent(tool_call_id=call_id)]
            options = thread.interrupting.get(tool)
            if options is not None and call_id not in thread.interrupts:
                thread.interrupts[call_id] = Interrupt(
                    id=call_id, reason="tool_call", tool_call_id=call_id, response_schema=options.responseSchema,
                    message=options.message or f"An agent calls {tool} with {json.dumps(call['params'])}.")
        # While an interrupt is open no run of the thread ends as a success (AG-UI 1.0).
        waiting = self.hub.waiting_call_ids(run.session)
        interrupts = [i for call_id, i in thread.interrupts.items() if call_id in waiting]
        outcome = (RunFinishedInterruptOutcome(interrupts=interrupts) if interrupts else
                   RunFinishedSuccessOutcome(pending_tool_call_ids=[c["call_id"] for c in calls]))
        events.append(RunFinishedEvent(thread_id=run.input.thread_id, run_id=run.input.run_id, outcome=outcome))
        return events

    def _close(self, run: Run) -> None:
        """The run is over: the thread has the grace period to come back (the call timeout while an interrupt
        waits for its user), then it is a page that went away."""
        if run.reader is not None:
            run.reader.cancel()
        thread = run.thread
        if thread.run is run:
            thread.run = None
        self.hub.disconnected(run.session, run.connection, deliberate=False)
        if thread.run is None and thread.interrupts:
            self.hub.pages.allow_absence(run.session, self.hub.config.call_timeout)


def _cancel(call_id: str, reason: str) -> CustomEvent:
    return CustomEvent(name=CANCEL_EVENT, value=ToolCancel(toolCallId=call_id, reason=reason).model_dump())


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool_message_result(message: ToolMessage) -> ToolReturn:
    """A ToolMessage as the page protocol's answer: text stays text, content parts become MCP content."""
    call_id, content = message.tool_call_id, message.content
    if isinstance(content, str):
        result: Any = content
        blocks = [{"type": "text", "text": content}] if content else []
    else:
        blocks = [_content_block(part, n) for n, part in enumerate(content)]
        result = {"content": blocks}
    if message.error is None:
        return ToolReturn(type="agui.tool.return", call_id=call_id, result=result)
    if not blocks:
        return ToolReturn(type="agui.tool.return", call_id=call_id, error=ToolError(message=message.error))
    # An error with content: the agent gets both, as an error result.
    return ToolReturn(type="agui.tool.return", call_id=call_id,
                      result={"content": [{"type": "text", "text": message.error}, *blocks], "isError": True})


def _content_block(part: Any, n: int) -> dict[str, Any]:
    """One AG-UI content part as an MCP content block."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    source = part.source
    if isinstance(source, DataSource):
        if isinstance(part, (ImagePart, AudioPart)):
            return {"type": part.type, "data": source.value, "mimeType": source.mime_type}
        return {"type": "resource", "resource": {"uri": f"agui-part:{n}", "mimeType": source.mime_type,
                                                 "blob": source.value}}
    if isinstance(source, UrlSource):
        link: dict[str, Any] = {"type": "resource_link", "uri": source.value, "name": source.value}
        return link | ({"mimeType": source.mime_type} if source.mime_type else {})
    provider = f" from {source.provider}" if source.provider else ""
    return {"type": "text", "text": f"[{part.type} file {source.value}{provider}]"}
