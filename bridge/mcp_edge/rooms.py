"""Streamable HTTP for every room (`McpRooms`): `/mcp` is the default room, `/rooms/{room}/mcp` any
other, each served by its `RoomServer` through the SDK's session managers, started on first use
and stopped when the room is idle."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.request_state import RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from bridge.access import missing_agent_token
from bridge.config import Settings
from bridge.core.hub import Hub, TooManyRooms
from bridge.core.programs import Programs
from bridge.core.room_names import room_name_problem
from bridge.core.tasks import TaskTable
from bridge.core.used_states import SharedMarks, UsedStates
from bridge.mcp_edge._agent_sessions import AgentSessions
from bridge.mcp_edge._answer_streams import AnswerStream
from bridge.mcp_edge._plain_calls import (
    PeekedRequest,
    answer_watching_disconnect,
    is_plain_call,
    may_ask_for_plain_call,
)
from bridge.mcp_edge._tasks import PageTasks, SharedTasks
from bridge.mcp_edge.room_server import LEGACY_SESSIONS_MAX, RoomServer, room_page

log = logging.getLogger(__name__)

# How long after its last request a handshake session still counts as an active agent (/api/state).
AGENT_ACTIVE_SECONDS = 60.0


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
                 shared_marks: SharedMarks | None = None, programs: Programs | None = None) -> None:
        self.hub, self.settings, self.programs = hub, settings, programs
        self._servers: dict[str, RoomServer] = {}
        self._served: dict[str, _ServedRoom] = {}
        # Tasks outlive their room's server (freed when idle) and their agent's request; in shared mode a
        # program's task outlives its process too.
        survivors = programs if programs is not None and programs.survivors is not None else None
        self.tasks = PageTasks(TaskTable(ttl=settings.task_ttl, poll_interval=settings.task_poll_interval,
                                         limits=settings.task_limits()), shared_tasks, survivors)
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

    def pages_url(self, room: str) -> str:
        """Where a person opens a page of `room`: the demo, as agents reach the bridge."""
        return room_page(self._public_base(), room)

    def _public_base(self) -> str:
        """Where the demo page is served, as agents reach the bridge."""
        return self._public_url or self.settings.public_url

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
                                             self._public_base,
                                             self.tasks, self.request_state, self.used_states, self.programs)
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
                if self.tasks.survivors is not None:
                    tg.start_soon(self.tasks.adopting, self.settings.redis_heartbeat)
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


async def _run_managers(managers: tuple[StreamableHTTPSessionManager, ...], *,
                        task_status=anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.CancelScope() as stop:
        async with AsyncExitStack() as running:
            for manager in managers:
                await running.enter_async_context(manager.run())
            task_status.started(stop)
            await anyio.sleep_forever()
