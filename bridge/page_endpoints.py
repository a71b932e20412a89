"""The page side: a WebSocket for what pages say, an event stream for what they are asked.

`/agui/ws` takes `agui.hello` first, then registrations, returns and progress;
`/agui/events?session=…` streams `agui.tool.invoke` and `agui.tool.cancel`.
"""

from __future__ import annotations

import json
import logging
import re

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from bridge.hub import Hub
from bridge.messages import Hello, ProtocolError, parse_page_message, welcome
from bridge.sessions import PageSession

log = logging.getLogger("bridge.pages")

CLOSE_NORMAL = 1000  # the page called disconnect(): it leaves now, no grace
CLOSE_POLICY = 1008
CLOSE_REPLACED = 4000  # the same session connected again elsewhere


def origin_pattern(patterns: str) -> re.Pattern[str]:
    """`http://localhost:*,https://app.example` -> one regex; `*` matches anything."""
    alternatives = [re.escape(p.strip()).replace(r"\*", ".*") for p in patterns.split(",") if p.strip()]
    return re.compile("|".join(alternatives) or "(?!)")


class PageEndpoints:
    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.settings = hub.settings
        self.allowed_origin = origin_pattern(self.settings.allowed_origins)
        self._sockets: dict[str, WebSocket] = {}

    def origin_allowed(self, origin: str | None) -> bool:
        # Browsers always send Origin; other clients (agents' tooling, tests) may not.
        return origin is None or self.allowed_origin.fullmatch(origin) is not None

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        if not self.origin_allowed(ws.headers.get("origin")):
            await self._send(ws, ProtocolError("forbidden_origin", f"Origin {ws.headers.get('origin')} may not "
                                               "connect; start the bridge with --allowed-origins.").to_message())
            await ws.close(CLOSE_POLICY)
            return
        session: PageSession | None = None
        connection = 0
        close_code = 1006
        try:
            while True:
                frame = await ws.receive()
                if frame["type"] == "websocket.disconnect":
                    close_code = frame.get("code", 1006)
                    break
                text = frame.get("text")
                if text is None:
                    text = (frame.get("bytes") or b"").decode("utf-8", "replace")
                try:
                    if len(text) > self.settings.max_message_bytes:
                        raise ProtocolError("too_large", f"Message of {len(text)} characters exceeds the limit of "
                                            f"{self.settings.max_message_bytes}.")
                    msg = parse_page_message(text)
                    if isinstance(msg, Hello):
                        if session is not None:
                            raise ProtocolError("bad_message", "agui.hello is sent once, first.", reply_to=msg.id)
                        session, resumed = self.hub.hello(msg)
                        connection = session.connection
                        await self._take_over(session.id, ws)
                        await self._send(ws, welcome(session.id, session.room,
                                                     f"/agui/events?session={session.id}", resumed, msg.id))
                    elif session is None:
                        raise ProtocolError("hello_first", "Send agui.hello before anything else.",
                                            reply_to=getattr(msg, "id", None))
                    else:
                        for reply in await self.hub.handle(session, msg):
                            await self._send(ws, reply)
                except ProtocolError as exc:
                    await self._send(ws, exc.to_message())
        except WebSocketDisconnect as exc:
            close_code = exc.code
        finally:
            if session is not None:
                if self._sockets.get(session.id) is ws:
                    del self._sockets[session.id]
                self.hub.disconnected(session, connection, deliberate=close_code == CLOSE_NORMAL)

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
        session = self.hub.sessions.get(request.query_params.get("session", ""))
        if session is None:
            return JSONResponse({"type": "agui.error", "code": "unknown_session",
                                 "message": "No such page session; say agui.hello on the WebSocket first."}, 404)
        # The header is what a reconnecting EventSource sends; the query parameter lets a page that
        # opens a new EventSource in the same session say where it stopped.
        last = request.headers.get("last-event-id") or request.query_params.get("last_event_id", "")
        last_event_id = int(last) if last.isdigit() else None

        def pending() -> set[str]:
            return {c.call_id for c in self.hub.calls.in_flight(session.id)}

        async def stream():
            async for event in session.stream(last_event_id, pending):
                yield ServerSentEvent(data=json.dumps(event.data), event=event.name, id=str(event.id))

        return EventSourceResponse(stream(), ping=self.settings.sse_ping, headers={"Cache-Control": "no-store"})
