"""A FastAPI app that embeds the bridge: its own routes, and the bridge mounted under /bridge.

    cd examples/embed_fastapi && uvicorn app:app --port 8000

- http://127.0.0.1:8000/             this app's own page
- http://127.0.0.1:8000/api/tools    this app's own route, reading which tools pages registered
- http://127.0.0.1:8000/bridge/      the bridge's demo page (/bridge/dashboard: its dashboard)
- http://127.0.0.1:8000/bridge/mcp   the MCP endpoint agents connect to (room `default`;
                                     /bridge/rooms/<room>/mcp for another)

A mounted app's lifespan never runs, so the host runs the bridge's: `FastAPI(lifespan=bridge.lifespan)`.
A host with a lifespan of its own enters the bridge's inside it (see README.md).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from bridge import Bridge, Settings

# Settings are those of `agui-mcp-bridge serve` (see its --help) but for host and port, which are uvicorn's.
# `host` still tells the bridge whether it serves only this machine (it then refuses foreign Host headers).
bridge = Bridge(Settings(call_timeout=300))

app = FastAPI(title="Embedding agui-mcp-bridge", lifespan=bridge.lifespan)
app.mount("/bridge", bridge)


@app.get("/", response_class=HTMLResponse)
async def home() -> str:
    return """<!doctype html>
<title>An app with an agent bridge</title>
<h1>An app with an agent bridge</h1>
<ul>
  <li><a href="/bridge/">the bridge's demo page</a> — open it to give agents its tools</li>
  <li><a href="/bridge/dashboard">the bridge's dashboard</a></li>
  <li><a href="/api/tools">the tools pages registered, as this app sees them</a></li>
  <li>agents: <code>http://127.0.0.1:8000/bridge/mcp</code></li>
</ul>
"""


@app.get("/api/tools")
async def tools() -> dict[str, Any]:
    """The app can read the bridge's state: every room, its pages and their tools."""
    state = bridge.hub.state()
    return {room["name"]: sorted(tool["name"] for page in room["pages"] for tool in page["tools"])
            for room in state["rooms"]}
