"""The HTTP application: page endpoints, MCP endpoints, the browser client, demo and dashboard."""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from bridge.config import Settings
from bridge.hub import Hub
from bridge.mcp_adapter import McpRooms
from bridge.page_endpoints import PageEndpoints, origin_pattern

WEB_CLIENT = Path(__file__).resolve().parent.parent / "web_client"


def state(hub: Hub) -> dict:
    """What the dashboard shows: rooms, their pages and tools, calls in flight and recent calls.

    Pages appear by `page_id`, the first 6 characters of their session id: the whole id lets
    whoever holds it resume the session, so it is never published.
    """
    now = time.monotonic()
    rooms = []
    for room in hub.catalog.rooms():
        listing = room.listing()
        pages = [{"page_id": s.id[:6], "url": s.page.url, "title": s.page.title, "connected": s.connected,
                  "tools": [{"name": t.key, "tool": t.page_name, "deferred": t.key not in listing.keys}
                            for t in room.tools_of(s.id)]}
                 for s in hub.sessions.values() if s.room == room.name]
        rooms.append({"name": room.name, "search_mode": listing.search_mode, "tools": len(room),
                      "deferred": listing.deferred, "pages": pages})
    return {"rooms": rooms, "calls": [c.summary(now) for c in hub.calls.in_flight()], "recent": list(hub.calls.recent)}


def create_app(settings: Settings, hub: Hub | None = None) -> Starlette:
    hub = hub or Hub(settings)
    pages = PageEndpoints(hub)
    mcp = McpRooms(hub)

    @asynccontextmanager
    async def lifespan(app: Starlette):
        async with mcp.running():
            yield

    async def api_state(request: Request) -> JSONResponse:
        return JSONResponse(state(hub))

    def page(name: str):
        async def endpoint(request: Request) -> FileResponse:
            return FileResponse(WEB_CLIENT / name)
        return endpoint

    routes = [
        WebSocketRoute("/agui/ws", pages.websocket),
        Route("/agui/events", pages.events),
        Route("/mcp", mcp),
        Route("/rooms/{room}/mcp", mcp),
        Route("/api/state", api_state),
        Route("/", page("demo.html")),
        Route("/dashboard", page("dashboard.html")),
        Mount("/client", StaticFiles(directory=WEB_CLIENT, check_dir=False)),
    ]
    # Pages served from other local origins import the client module and open the event stream cross-origin.
    cors = Middleware(CORSMiddleware, allow_origin_regex=origin_pattern(settings.allowed_origins).pattern,
                      allow_methods=["GET"], allow_headers=["*"], expose_headers=["Mcp-Session-Id"])
    middleware = [cors]
    if settings.loopback_only:
        # A page on another site whose name an attacker re-points at 127.0.0.1 (DNS rebinding) still
        # sends its own Host header: refuse it, as the MCP endpoint does.
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "::1"]))
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.hub = hub
    app.state.mcp = mcp
    return app
