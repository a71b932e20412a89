"""agui-mcp-bridge: serve the tools a browser page registers to AI agents as an MCP server.

The public API::

    from bridge import Bridge, Settings, serve, serve_stdio

`Bridge(settings)` is an ASGI app (see `bridge.app`); `serve()` and `serve_stdio()` run one
(see `bridge.server`). They are imported on first use, so the core modules (`catalog`,
`search`, `calls`, `results`, `sessions`, `hub`, `messages`) stay usable without starlette
or mcp: `from bridge.search.index import ToolIndex` imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"
__all__ = ["Bridge", "Settings", "serve", "serve_stdio", "__version__"]

if TYPE_CHECKING:
    from bridge.app import Bridge
    from bridge.config import Settings
    from bridge.server import serve, serve_stdio

_HOMES = {"Bridge": "bridge.app", "Settings": "bridge.config", "serve": "bridge.server",
          "serve_stdio": "bridge.server"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'bridge' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_HOMES[name]), name)
