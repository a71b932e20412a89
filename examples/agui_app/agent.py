"""An agent (scripted, no LLM) that shops through an AG-UI app's frontend tools, and asks the user to order.

    python examples/agui_app/agent.py [--bridge http://127.0.0.1:8765] [--room default]

The tools are the AG-UI app's (examples/agui_app/app.mjs), served by the bridge as MCP tools: the agent
lists the products, fills the cart, reads it, and calls `place_order`, which the app's user confirms or
declines through an AG-UI interrupt. Exit status: 0 when the user answered (either way), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _agent_common import add_bridge_arguments, mcp_url, say, text_of, wait_for_tool  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_bridge_arguments(parser)
    args = parser.parse_args()

    url = mcp_url(args.bridge, args.room)
    say(f"Connecting to {url}")
    async with Client(url) as client:
        await wait_for_tool(client, "place_order", args.wait, hint="Start examples/agui_app/app.mjs (see its README).")
        products = json.loads(text_of(await client.call_tool("list_products", {})))
        print(f"products: {', '.join(f'{name} {price:.2f} €' for name, price in products.items())}")
        await client.call_tool("add_to_cart", {"product": "tea", "quantity": 2})
        await client.call_tool("add_to_cart", {"product": "mug", "quantity": 1})
        cart = json.loads(text_of(await client.call_tool("view_cart", {})))
        print(f"cart: {cart['items']}, total {cart['total']:.2f} €")
        say("Asking the user to confirm the order…")
        result = await client.call_tool("place_order", {"note": "Gift wrap, please."})
        if result.is_error:
            print(f"Could not place the order: {text_of(result)}")
            return 1
        if result.structured_content and result.structured_content.get("approved"):
            order = result.structured_content
            print(f"The user confirmed: order {order['order']}, {order['total']:.2f} €.")
        else:
            print(f"No order: {text_of(result)}")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
