"""An agent (scripted, no LLM) facing a page with 300 tools: it finds the one it needs with `tool_search`.

    python examples/many_tools/agent.py [--query "convert an amount between currencies"]
                                        [--arguments '{"from": "USD", "to": "EUR", "amount": 100}']
                                        [--bridge http://127.0.0.1:8765]

The room is in search mode: `tools/list` shows a few tools and the meta-tools. The agent searches,
reads the best match's input schema (from the search result), and calls it by name.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _agent_common import add_bridge_arguments, mcp_url, text_of, wait_for_tool  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_bridge_arguments(parser)
    parser.add_argument("--query", default="convert an amount between currencies")
    parser.add_argument("--arguments", default='{"from": "USD", "to": "EUR", "amount": 100}')
    args = parser.parse_args()

    async with Client(mcp_url(args.bridge, args.room)) as client:
        await wait_for_tool(client, "tool_search", args.wait,
                            hint="Open examples/many_tools/index.html (see its README).")
        listing = await client.list_tools(cache_mode="bypass")
        print(f"tools/list shows {len(listing.tools)} tools, including "
              + ", ".join(t.name for t in listing.tools if t.name in ("tool_search", "tool_describe", "call_tool")))

        found = await client.call_tool("tool_search", {"query": args.query, "limit": 5})
        structured = found.structured_content or {}
        matches = structured.get("matches", [])
        print(f"tool_search {args.query!r}: {len(matches)} matches, {structured.get('deferred')} tools still deferred")
        for match in matches:
            print(f"  - {match['name']}: {match['description'][:80]}")
        if not matches:
            return 1

        best = matches[0]
        print(f"best match: {best['name']} (required: {list(best['required'])})")
        result = await client.call_tool(best["name"], json.loads(args.arguments))
        if result.is_error:
            print(f"{best['name']} failed: {text_of(result)}")
            return 1
        print(f"{best['name']} returned: {json.dumps(result.structured_content)}")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
