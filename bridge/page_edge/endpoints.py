"""The page side: a WebSocket for what pages say, an event stream for what they are asked.

`/agui/ws` takes `agui.hello` first, then registrations, returns and progress;
`/agui/events?session=…` streams `agui.tool.invoke` and `agui.tool.cancel`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from bridge.access import FailedAttempts, PageOrigins, client_address
from bridge.config import Settings
from bridge.core.hub import Hub
from bridge.core.messages import Hello, ProtocolError, call_id_in, looks_like_return, parse_page_message, welcome
from bridge.core.sessions import PageEvent, PageSession

log = logging.getLogger(__name__)

EVENT_ID = re.compile(r"[0-9]{1,18}")
CLOSE_NORMAL = 1000  # the page called disconnect(): it leaves now, no grace
CLOSE_POLICY = 1008
CLOSE_REPLACED = 4000  # the same session connected again elsewhere
TOKEN_REFUSALS = ("unauthorized", "too_many_attempts")


class PageEndpoints:
    def __init__(self, hub: Hub, settings: Settings, origins: PageOrigins, attempts: FailedAttempts) -> None:
        self.hub = hub
        self.settings = settings
        self.origins = origins
        self.attempts = attempts
        self._sockets: dict[str, WebSocket] = {}

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        origin = ws.headers.get("origin")  # what agents are told of where the page is: the page's own claims are not
        refusal = self.origins.refusal(origin)
        if refusal is not None:
            await self._send(ws, ProtocolError("forbidden_origin", refusal).to_message())
            await ws.close(CLOSE_POLICY)
            return
        session: PageSession | None = None
        connection = 0
        close_code = 1006
        try:
            while True:
                if session is None:  # a socket that never says hello holds a file for nothing
                    try:
                        frame = await asyncio.wait_for(ws.receive(), self.settings.request_head_timeout)
                    except TimeoutError:
                        await self._send(ws, ProtocolError("hello_first", "No agui.hello within "
                                         f"{self.settings.request_head_timeout:g} s (--request-head-timeout).",
                                                           ).to_message())
                        await ws.close(CLOSE_POLICY)
                        return
                else:
                    frame = await ws.receive()
                if frame["type"] == "websocket.disconnect":
                    close_code = frame.get("code", 1006)
                    break
                text = frame.get("text")
                size = len(text.encode()) if text is not None else len(frame.get("bytes") or b"")
                if text is None:
                    text = (frame.get("bytes") or b"").decode("utf-8", "replace")
                try:
                    if size > self.settings.max_message_bytes:
                        raise ProtocolError("too_large", f"The message was {size} bytes, over the limit of "
                                            f"{self.settings.max_message_bytes}.")
                    if session is not None:
                        await self._handle(ws, session, text)
                        continue
                    hello = parse_page_message(text)
                    if not isinstance(hello, Hello):
                        raise ProtocolError("hello_first", "Send agui.hello before anything else.",
                                            reply_to=getattr(hello, "id", None))
                    session, resumed = self._hello(hello, client_address(ws.scope), origin)
                    connection = session.connection
                    await self._take_over(session.id, ws)
                    events_url = f"{ws.scope.get('root_path', '')}/agui/events?session={session.id}"
                    waiting = await self.hub.waiting_on(session) if resumed else []
                    await self._send(ws, welcome(session.id, session.room, events_url, resumed, waiting, hello.id))
                except ProtocolError as exc:
                    if session is not None and exc.code in ("too_large", "bad_json") and looks_like_return(text):
                        # Never silence: the call this answer was for ends now, with the reason.
                        ended = await self.hub.unreadable_answer(
                            session, call_id_in(text), f"The page's answer could not be taken: {exc.message}")
                        if ended is not None:
                            exc.fields.setdefault("call_id", ended)
                    await self._send(ws, exc.to_message())
                    if exc.code in TOKEN_REFUSALS:  # one guess a socket: a guesser pays a handshake per try
                        await ws.close(CLOSE_POLICY)
                        break
        except WebSocketDisconnect as exc:
            close_code = exc.code
        finally:
            if session is not None:
                if self._sockets.get(session.id) is ws:
                    del self._sockets[session.id]
                self.hub.disconnected(session, connection, deliberate=close_code == CLOSE_NORMAL)

    async def _handle(self, ws: WebSocket, session: PageSession, text: str) -> None:
        """Act on one message of a page that said hello, and send the replies. The parsed message
        lives as long as this call, not until the socket's next frame: a registration's
        definitions are hundreds of objects every full collection walks."""
        msg = parse_page_message(text)
        if isinstance(msg, Hello):
            raise ProtocolError("bad_message", "agui.hello is sent once, first.", reply_to=msg.id)
        for reply in await self.hub.handle(session, msg):
            await self._send(ws, reply)

    def _hello(self, msg: Hello, address: str, origin: str | None) -> tuple[PageSession, bool]:
        """The hub's hello, with token guessing slowed down per client address."""
        wait = self.attempts.retry_after(address)
        if wait is not None:
            raise ProtocolError("too_many_attempts", f"Too many wrong page tokens from this address; try again in "
                                f"{wait:.1f} s.", reply_to=msg.id, retry_after=round(wait, 1))
        try:
            return self.hub.hello(msg, origin)
        except ProtocolError as exc:
            if exc.code == "unauthorized":
                self.attempts.failed(address)
            raise

    async def _take_over(self, session_id: str, ws: WebSocket) -> None:
        """One socket per session: a page that reconnects replaces its old socket."""
        old = self._sockets.get(session_id)
        self._sockets[session_id] = ws
        if old is not None and old is not ws:
            try:
                await old.close(CLOSE_REPLACED)
            except RuntimeError:
                pass  # already closing

    @staticmethod
    async def _send(ws: WebSocket, message: dict) -> None:
        try:
            await ws.send_text(json.dumps(message))
        except (RuntimeError, WebSocketDisconnect):
            log.debug("page socket closed before a reply could be sent")

    async def events(self, request: Request):
        refusal = self.origins.refusal(request.headers.get("origin"))
        if refusal is not None:
            return JSONResponse(ProtocolError("forbidden_origin", refusal).to_message(), 403)
        session = self.hub.session(request.query_params.get("session", ""))
        if session is None:
            return JSONResponse({"type": "agui.error", "code": "unknown_session",
                                 "message": "No such page session; say agui.hello on the WebSocket first."}, 404)
        # The header is what a reconnecting EventSource sends; the query parameter lets a page that
        # opens a new EventSource in the same session say where it stopped.
        last = request.headers.get("last-event-id") or request.query_params.get("last_event_id", "")
        last_event_id = int(last) if EVENT_ID.fullmatch(last) else None  # not str.isdigit: "²" is a digit

        async def stream() -> AsyncGenerator[bytes, None]:
            # Keep-alives come from the session's own wait: no ping task per page.
            async for event in self.hub.events(session, last_event_id, idle=self.settings.sse_ping):
                yield PING if event is None else sse_event(event)

        return PageEventStream(stream(), send_timeout=self.settings.stream_send_timeout)


PING = b": ping\r\n\r\n"


def sse_event(event: PageEvent) -> bytes:
    """One event as `ServerSentEvent.encode()` writes it. `json.dumps` escapes every line break, so the
    data is one `data:` line, and ids and message types have none: nothing to split or clean."""
    return f"id: {event.id}\r\nevent: {event.name}\r\ndata: {json.dumps(event.data)}\r\n\r\n".encode()


class PageEventStream:
    """A page's event stream as one coroutine and one task watching for the page to leave.

    sse-starlette's `EventSourceResponse` would keep three tasks, a lock and a shutdown waiter per
    idle page (~24 KB). A page that stops reading would hold its events in the socket forever: past
    `send_timeout` on one send the stream closes (uvicorn notes the unfinished response), and the
    page's EventSource resumes from its Last-Event-ID.
    """

    HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store"),
               (b"connection", b"keep-alive"), (b"x-accel-buffering", b"no")]

    def __init__(self, chunks: AsyncGenerator[bytes, None], send_timeout: float) -> None:
        self.chunks, self.send_timeout = chunks, send_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.HEADERS})
        if scope["method"] == "HEAD":  # the headers a GET would get, and no stream to wait on
            await send({"type": "http.response.body", "body": b""})
            return
        loop = asyncio.get_running_loop()
        async with aclosing(self.chunks) as chunks:  # the session's stream ends however this does
            with anyio.CancelScope() as streaming:
                watcher = loop.create_task(_cancel_when_gone(receive, streaming))
                stuck = _SendWatchdog(self.send_timeout, streaming)
                try:
                    async for chunk in chunks:
                        stuck.since = loop.time()
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                        stuck.since = None
                    await send({"type": "http.response.body", "body": b""})
                finally:
                    watcher.cancel()
                    stuck.stop()
            if stuck.fired:  # the page stopped reading: closing is the remedy, not an error
                log.info("closed an event stream whose page stopped reading; the page resumes it")


class _SendWatchdog:
    """Cancels `scope` once a send has been blocked `timeout` seconds, with one timer for the
    stream, set again when it fires, rather than a timer for every send."""

    def __init__(self, timeout: float, scope: anyio.CancelScope) -> None:
        self.timeout, self.scope = timeout, scope
        self.since: float | None = None  # when the send in progress began
        self.fired = False
        self._loop = asyncio.get_running_loop()
        self._timer = self._loop.call_later(timeout, self._check)

    def _check(self) -> None:
        if self.since is not None and self._loop.time() - self.since >= self.timeout:
            self.fired = True
            self.scope.cancel()
            return
        started = self.since if self.since is not None else self._loop.time()
        self._timer = self._loop.call_at(started + self.timeout, self._check)

    def stop(self) -> None:
        self._timer.cancel()


async def _cancel_when_gone(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
