"""`Bridge`: the whole bridge as one ASGI app — page endpoints, MCP endpoints, the browser
client, the demo page and the dashboard.

Standalone, it runs its own lifespan. Mounted in a host app, the host enters it, because a
mounted app's lifespan never runs::

    bridge = Bridge(Settings(allowed_origins="https://app.example"))
    app = Starlette(routes=[Mount("/bridge", app=bridge)], lifespan=bridge.lifespan)

Every URL the bridge hands out (the page's event stream, the client's WebSocket, the demo's
MCP URL) follows the mount prefix and `root_path`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from sse_starlette.sse import AppStatus
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from bridge import __version__, client_config
from bridge._port_claim import NONCE, ClaimUnusable, PortClaim
from bridge.access import AgentOrigins, FailedAttempts, PageOrigins, TrustedHosts, missing_agent_token, origin_pattern
from bridge.config import Settings, UnusableSettings
from bridge.core.hub import Hub
from bridge.core.programs import Programs
from bridge.mcp_edge import McpRooms
from bridge.metrics import BridgeMetrics
from bridge.page_edge import AguiEndpoint, PageEndpoints


def _web_client() -> Path:
    """The browser client: inside the installed package (the wheel maps web_client/ to
    bridge/web_client/), else beside the package in a source checkout or editable install."""
    here = Path(__file__).resolve().parent
    installed = here / "web_client"
    return installed if installed.is_dir() else here.parent / "web_client"


WEB_CLIENT = _web_client()
SHUTDOWN_POLL_SECONDS = 0.5


def _from_a_browser(scope: Scope) -> bool:
    """A browser request that sends Origin goes through the router, where each endpoint's origin
    policy (CORS for pages, `AgentOrigins` for agents) applies; WebSockets have no CORS (the page
    endpoint checks their Origin itself)."""
    return scope["type"] == "http" and any(name == b"origin" for name, _ in scope["headers"])


def _shared_mode(settings: Settings) -> tuple[Any, Any, Any, Any]:
    """Shared mode's link, task store, marks of used input states and tasks' programs (which outlive their
    process); the 'redis' extra is imported only then."""
    try:
        from bridge.shared_mode import RedisLink, RedisMarks, RedisPrograms, RedisTasks
    except ImportError:
        raise UnusableSettings("--redis-url needs the 'redis' extra: pip install 'agui-mcp-bridge[redis]'") from None
    try:
        link = RedisLink(settings.redis_url, page_grace=settings.page_grace, call_timeout=settings.call_timeout,
                         heartbeat=settings.redis_heartbeat, prefix=settings.redis_prefix)
        tasks = RedisTasks(settings.redis_url, process_id=link.process_id, lives=link.lives,
                           prefix=settings.redis_prefix)
        return (link, tasks, RedisMarks(settings.redis_url, prefix=settings.redis_prefix),
                RedisPrograms(link, ttl=settings.task_ttl, shared_secret=tasks.shared_secret))
    except ValueError as exc:  # not a redis:// (rediss://, unix://) URL
        raise UnusableSettings(f"--redis-url {settings.redis_url!r}: {exc}") from None


class ClientFiles(StaticFiles):
    """The browser client's files; TypeScript declarations as TypeScript, whatever the system's MIME table says."""

    def file_response(self, full_path: Any, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(full_path, *args, **kwargs)
        if str(full_path).endswith(".ts"):
            response.headers["content-type"] = "application/typescript; charset=utf-8"
        return response


class Handler:
    """`handle(request) -> response` as an ASGI app, which a route takes as is, for any method (a plain
    function it would wrap itself, for GET only)."""

    def __init__(self, handle: Callable[[Request], Awaitable[Response]]) -> None:
        self.handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handle(Request(scope, receive))
        await response(scope, receive, send)


class PageSocket:
    """A page's WebSocket (`/agui/ws`)."""

    def __init__(self, pages: PageEndpoints) -> None:
        self.pages = pages

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.pages.websocket(WebSocket(scope, receive, send))


class Bridge:
    """The bridge as an ASGI app. `settings` or keyword overrides of `Settings` configure it."""

    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        self.settings = replace(settings or Settings(), **overrides)
        self.settings.check()
        # One process and shared mode differ only in the link the hub is given (None: this process alone).
        link, shared_tasks, shared_marks, surviving_programs = (_shared_mode(self.settings) if self.settings.redis_url
                                                                else (None, None, None, None))
        self.metrics = BridgeMetrics(state=lambda: self.hub.state())
        self.hub = Hub(self.settings.hub_config(), link=link,
                       observers=[self.metrics] if link is None else [self.metrics, link])
        if link is not None:
            link.attach(calls=self.hub.calls, catalog=self.hub.catalog, pages=self.hub.pages,
                        embed_later=self.hub.semantic.embed_later)
        self.link = link
        # Agents' programs (code mode): the sandbox's workers start with the first one, within the lifespan. In
        # shared mode a task's program outlives its process: another one resumes it.
        code = self.hub.config.code
        self.programs = Programs(self.hub, code, survivors=surviving_programs if code.on else None,
                                 pages_url=lambda room: self.mcp.pages_url(room))
        self.mcp = McpRooms(self.hub, self.settings, shared_tasks, shared_marks, self.programs)
        # FailedAttempts: wrong page tokens, per address.
        origins, attempts = PageOrigins(self.settings.allowed_origins), FailedAttempts()
        self.pages = PageEndpoints(self.hub, self.settings, origins, attempts)
        self.agui = AguiEndpoint(self.hub, self.settings, origins, attempts)
        self.hosts = TrustedHosts(self.settings)
        self.claim = PortClaim()  # proves to stdio processes that this bridge is their user's (bridge._port_claim)
        self.cli = client_config.executable()  # the demo page's config command names this installation
        # Requests without Origin skip the middleware stack and the router (their work on every request,
        # their frames held by every open connection): agents' MCP requests, page WebSockets and
        # same-origin event streams. The origin policies the router applies are for browsers.
        self._direct, routes = self._routes()
        self._app = Starlette(routes=routes, lifespan=self.lifespan)

    @asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncIterator[None]:
        """Runs the MCP session managers (and shared mode's link, and the sandbox of agents' programs once
        one comes); enter it from the host app's lifespan when mounted."""
        if self.link is not None:
            await self.link.start()
        try:
            # The sandbox stops last: the requests and tasks running programs are over by then.
            async with self.programs.serving(), self.mcp.running(), anyio.create_task_group() as watching:
                watching.start_soon(self._shut_down_with_the_server)
                yield
                watching.cancel_scope.cancel()
        finally:
            self.shutdown()
            self.claim.release()
            if self.link is not None:
                await self.link.close()

    async def _shut_down_with_the_server(self) -> None:
        """uvicorn ends the lifespan only once every connection has closed, and a page's event stream
        never closes by itself: when the server starts to exit (sse-starlette notes uvicorn's exit in
        `AppStatus`), the calls are answered and the streams end now, not a page grace later."""
        while not AppStatus.should_exit:
            await anyio.sleep(SHUTDOWN_POLL_SECONDS)
        self.shutdown()

    def shutdown(self) -> None:
        """Answer every call in flight with an error and tell the pages; for a host app's shutdown."""
        self.hub.shutdown()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            refusal = self.hosts.refusal(scope)  # before any endpoint, direct or routed
            if refusal is not None:
                await refusal(scope, receive, send)
                return
            if not _from_a_browser(scope):
                for route in self._direct:
                    match, found = route.matches(scope)
                    if match is Match.FULL:
                        # The endpoint and path parameters go into the scope in place, as the router
                        # puts them: a copy would be kept as long as a page stays connected.
                        scope.update(found)
                        await found["endpoint"](scope, receive, send)
                        return
        await self._app(scope, receive, send)

    def _routes(self) -> tuple[list[BaseRoute], list[BaseRoute]]:
        """The routes a request without Origin reaches directly, and every route of the bridge (each with
        its endpoint and the origin policy browser requests meet in the router), from one table."""
        s = self.settings
        pages, agents = self.pages.origins.pattern, origin_pattern(s.agent_origins)
        # Pages served from other allowed origins open the event stream cross-origin; AG-UI apps
        # POST their runs cross-origin.
        for_pages = [Middleware(CORSMiddleware, allow_origin_regex=pages.pattern, allow_methods=["GET", "POST"],
                                allow_headers=["*"])]
        for_agents = [Middleware(AgentOrigins, agents)]

        async def api_state(request: Request) -> Response:
            # Page URLs and the arguments of calls in flight are the users' data: the agent token guards them.
            refusal = missing_agent_token(request.scope, s.agent_token)
            if refusal is not None:
                return refusal
            state = {"version": __version__} | self.hub.state()  # a stdio agent tells a bridge from another server
            state["programs"] = self.programs.state()
            state["cli"] = self.cli
            for room in state["rooms"]:
                room["agents"] = self.mcp.agents(room["name"])
            return JSONResponse(state)

        async def holder(request: Request) -> Response:
            """A stdio process's challenge before it relays its agent here (no token: the answer proves
            who started this bridge and reveals nothing)."""
            nonce, server = request.query_params.get("nonce", ""), request.scope.get("server")
            if not NONCE.fullmatch(nonce):
                return JSONResponse({"error": "nonce: 16 to 128 letters, digits, '-' or '_'"}, 400)
            if server is None:
                return JSONResponse({"error": "this bridge is not reached through a socket"}, 503)
            try:
                proof = self.claim.prove(nonce, server[0], server[1])
            except ClaimUnusable as exc:
                return JSONResponse({"error": str(exc)}, 503)
            return JSONResponse({"version": __version__, "proof": proof})

        async def cancel_call(request: Request) -> Response:
            """The dashboard's cancel button: an operator ends a call the page is not answering."""
            if request.method != "POST":
                return PlainTextResponse("POST here to cancel the call.", 405, headers={"Allow": "POST"})
            refusal = missing_agent_token(request.scope, s.agent_token)
            if refusal is not None:
                return refusal
            if self.hub.cancel_call(request.path_params["call_id"]):
                return JSONResponse({"cancelled": True})
            return JSONResponse({"cancelled": False, "message": "No such call in flight."}, 404)

        async def metrics(request: Request) -> Response:
            refusal = missing_agent_token(request.scope, s.agent_token)
            return refusal or await self.metrics.endpoint(request)

        def page(name: str) -> Handler:
            async def serve(request: Request) -> Response:
                return FileResponse(WEB_CLIENT / name)
            return Handler(serve)

        # Every route: its path, endpoint and origin policy, and whether a request without Origin reaches
        # its endpoint directly (agents' requests first: one a call, where a page opens its two once).
        direct, routed = True, False
        table: list[tuple[BaseRoute, bool]] = [
            (Route("/mcp", self.mcp, middleware=for_agents), direct),
            (Route("/rooms/{room}/mcp", self.mcp, middleware=for_agents), direct),
            (Route("/agui/events", Handler(self.pages.events), methods=["GET"], middleware=for_pages), direct),
            # No CORS: the endpoint checks the page's Origin.
            (WebSocketRoute("/agui/ws", PageSocket(self.pages)), direct),
            (Route("/agui/run", self.agui, middleware=for_pages), routed),
            (Route("/rooms/{room}/agui/run", self.agui, middleware=for_pages), routed),
            (Route("/api/state", Handler(api_state), middleware=for_agents), routed),
            (Route("/api/holder", holder, methods=["GET"], middleware=for_agents), routed),
            (Route("/api/calls/{call_id}/cancel", Handler(cancel_call), middleware=for_agents), routed),
            (Route("/metrics", Handler(metrics), middleware=for_agents), routed),
            (Route("/", page("demo.html"), methods=["GET"]), routed),
            (Route("/dashboard", page("dashboard.html"), middleware=for_agents), routed),
            # The client is public code: any origin may import it, so a page the bridge refuses still
            # loads it and hears why (`forbidden_origin` names the setting that would admit it).
            (Mount("/client", CORSMiddleware(ClientFiles(directory=WEB_CLIENT, check_dir=False),
                                             allow_origins=["*"])), routed),
        ]
        return [route for route, is_direct in table if is_direct], [route for route, _ in table]
