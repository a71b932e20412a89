"""An agent (scripted, no LLM) that totals the demo shop's orders with one program instead of reading them all.

    python examples/code_mode/agent.py [--bridge http://127.0.0.1:8765] [--code "..."]

The demo page's `list_orders` answers with 40 orders. Called directly, all of them land in the agent's
context; inside a `run_code` program they stay in the bridge, and only the program's value comes back.
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

PROGRAM = """\
orders = (await list_orders())["orders"]
open_orders = [order for order in orders if order["status"] == "open"]
by_customer = {}
for order in open_orders:
    by_customer[order["customer"]] = round(by_customer.get(order["customer"], 0) + order["total"], 2)
{"open_orders": len(open_orders), "total_eur": round(sum(o["total"] for o in open_orders), 2),
 "by_customer": by_customer}
"""


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_bridge_arguments(parser)
    parser.add_argument("--code", default=PROGRAM, help="the program to run (default: open orders totalled)")
    args = parser.parse_args()

    async with Client(mcp_url(args.bridge, args.room)) as client:
        await wait_for_tool(client, "list_orders", args.wait,
                            hint=f"Open the demo page, {args.bridge.rstrip('/')}/ (see the README).")
        direct = await client.call_tool("list_orders", {})
        print(f"list_orders, called directly: {direct.structured_content['count']} orders, "
              f"{len(text_of(direct)):,} characters for the agent to read")

        result = await client.call_tool("run_code", {"code": args.code})
        if result.is_error:
            print(f"run_code failed: {text_of(result)}")
            return 1
        value = result.structured_content["result"]
        print(f"run_code, the same orders inside a program: {len(result.content[0].text):,} characters")
        print("program:")
        print("\n".join("  " + line for line in args.code.splitlines()))
        print(f"value: {json.dumps(value, ensure_ascii=False)}")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
