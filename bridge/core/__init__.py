"""The core: rooms, pages, calls and tasks, knowing neither sockets nor MCP (nothing here imports
starlette or mcp; a test checks it).

The edges hand the `Hub` what pages say and ask it to route and make agents' calls; the hub keeps
the catalog of rooms and tools (`catalog`), which pages are here (`pages`, `sessions`), the calls
in flight (`calls`), and is given where pages and calls live (`LocalLink`, or shared mode's link)::

    from bridge.core import Hub, Outcome

    hub = Hub()                                              # one process; HubConfig() defaults
    route = await hub.route("default", "confirm", {"question": "Delete?"}, pages_url=lambda: url)
    outcome = await hub.call(route.tool, route.arguments)   # agui.tool.invoke out, agui.tool.return in
    outcome.result                                           # the page's answer (Outcome.error if not)

The modules: `hub` (routing and calls), `catalog` (rooms, tools, names, listing), `meta_tools`
(search, describe, call-through), `pages` and `sessions` (page presence, event buffers), `calls`
(the call table), `results` (a page's answer as a CallToolResult), `provenance` (what agents are
told of what a page wrote: where a tool comes from, page text marked), `messages` (the typed page
protocol), `tasks` (calls kept as MCP tasks), `used_states` (input requests' states spent),
`room_names`, `defaults` (every default, once). Names are imported on first use, so that the
settings (`bridge.config`) read `defaults` and `room_names` without importing search or numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bridge.core.calls import CallTable, Outcome
    from bridge.core.catalog import Catalog, Room, Tool
    from bridge.core.defaults import DEFAULTS, HubConfig, TaskLimits
    from bridge.core.hub import Hub, HubLink, HubObserver, LinkDown, LocalLink
    from bridge.core.pages import Pages, TooManyRooms
    from bridge.core.sessions import PageEvent, PageSession
    from bridge.core.tasks import Task, TaskTable, TooManyTasks

__all__ = ["DEFAULTS", "CallTable", "Catalog", "Hub", "HubConfig", "HubLink", "HubObserver", "LinkDown", "LocalLink",
           "Outcome", "PageEvent", "PageSession", "Pages", "Room", "Task", "TaskLimits", "TaskTable", "Tool",
           "TooManyRooms", "TooManyTasks"]

_HOMES = {"CallTable": "calls", "Outcome": "calls", "Catalog": "catalog", "Room": "catalog", "Tool": "catalog",
          "DEFAULTS": "defaults", "HubConfig": "defaults", "TaskLimits": "defaults", "Hub": "hub", "HubLink": "hub",
          "HubObserver": "hub", "LinkDown": "hub", "LocalLink": "hub", "Pages": "pages", "TooManyRooms": "pages",
          "PageEvent": "sessions", "PageSession": "sessions", "Task": "tasks", "TaskTable": "tasks",
          "TooManyTasks": "tasks"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'bridge.core' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"bridge.core.{_HOMES[name]}"), name)
