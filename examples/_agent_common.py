"""What the example agents share: where the bridge is, and waiting for a page to offer a tool.

The agents are plain MCP clients (the MCP Python SDK's `Client`); nothing here is bridge-specific
except the URL layout: room `default` is at `<bridge>/mcp`, any other room at `<bridge>/rooms/<room>/mcp`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

DEFAULT_BRIDGE = "http://127.0.0.1:8765"


def add_bridge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bridge", default=os.environ.get("AGUI_BRIDGE_URL", DEFAULT_BRIDGE),
                        help=f"the bridge's base URL (env AGUI_BRIDGE_URL; default {DEFAULT_BRIDGE})")
    parser.add_argument("--room", default=os.environ.get("AGUI_ROOM", "default"), help="the room (default: default)")
    parser.add_argument("--wait", type=float, default=60.0,
                        help="seconds to wait for a page offering the tools (default 60)")


def mcp_url(bridge: str, room: str = "default") -> str:
    bridge = bridge.rstrip("/")
    return f"{bridge}/mcp" if room == "default" else f"{bridge}/rooms/{room}/mcp"


def say(*parts: Any) -> None:
    """Progress notes go to stderr; stdout holds only what the agent did."""
    print(*parts, file=sys.stderr, flush=True)


async def wait_for_tool(client, name: str, timeout: float, hint: str = "") -> None:
    """Wait until `tools/list` shows `name` (a page may open after the agent starts)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    told = False
    while True:
        listing = await client.list_tools(cache_mode="bypass")
        if any(tool.name == name for tool in listing.tools):
            return
        if not told:
            say(f"Waiting for a page that offers {name}…", hint)
            told = True
        if loop.time() > deadline:
            raise SystemExit(f"No page offered {name} within {timeout:g} s. {hint}")
        await asyncio.sleep(0.25)


def text_of(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
