"""The page edge: where pages reach the bridge. A page's WebSocket (`/agui/ws`: hello,
registrations, answers) and event stream (`/agui/events`: the calls it is asked), and AG-UI apps'
runs (`/agui/run`), whose frontend tools are served as a page's::

    from bridge.page_edge import AguiEndpoint, PageEndpoints

    pages = PageEndpoints(hub, settings, origins, attempts)   # pages.websocket(ws), pages.events(request)
    agui = AguiEndpoint(hub, settings, origins, attempts)     # an ASGI endpoint for POST /agui/run

The modules: `endpoints` (WebSocket + SSE), `agui` (AG-UI runs), `_agui_input` (a run's body read
a slice of the event loop's time at a time).
"""

from bridge.page_edge.agui import AguiEndpoint
from bridge.page_edge.endpoints import PageEndpoints

__all__ = ["AguiEndpoint", "PageEndpoints"]
