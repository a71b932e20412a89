"""A scripted agent (no LLM): list a room's tools, find one with `tool_search`, and call it.

    python examples/agent_user_tools.py [--query "read the text the user selected"] [--arguments '{}']
                                        [--bridge http://127.0.0.1:8765] [--room default]

Open the bridge's demo page (http://127.0.0.1:8765/) first, select some text on it, then run this:
it searches for a tool that reads the selection, calls it, and prints what the user had selected.

`tool_search` is one of the bridge's meta-tools, listed in every room by default (with
`--meta-tools search-mode`, only once a room has too many tools to list).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _agent_common import add_bridge_arguments, mcp_url, say, text_of, wait_for_tool  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_bridge_arguments(parser)
    parser.add_argument("--query", default="read the text the user selected on the page",
                        help="what the agent wants to do, in English keywords")
    parser.add_argument("--arguments", default="{}", help="JSON arguments for the tool found")
    parser.add_argument("--expect", default="page_get_selected_text",
                        help="a tool to wait for before searching (the demo page's; '' not to wait)")
    args = parser.parse_args()

    async with Client(mcp_url(args.bridge, args.room)) as client:
        if args.expect:
            await wait_for_tool(client, args.expect, args.wait, hint=f"Open {args.bridge.rstrip('/')}/ in a browser.")

        listing = await client.list_tools(cache_mode="bypass")
        print(f"{len(listing.tools)} tools listed:")
        for tool in listing.tools:
            print(f"  - {tool.name}: {(tool.description or '').splitlines()[0][:90]}")

        found = await client.call_tool("tool_search", {"query": args.query, "limit": 3})
        matches = (found.structured_content or {}).get("matches", [])
        if found.is_error or not matches:
            print(f"tool_search found nothing for {args.query!r}: {text_of(found)}")
            return 1
        print(f"tool_search {args.query!r} ->", ", ".join(m["name"] for m in matches))

        chosen = matches[0]
        arguments = json.loads(args.arguments)
        say(f"Calling {chosen['name']} with {arguments}")
        result = await client.call_tool(chosen["name"], arguments)
        if result.is_error:
            print(f"{chosen['name']} failed: {text_of(result)}")
            return 1
        print(f"{chosen['name']} returned: {text_of(result)}")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
