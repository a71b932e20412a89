"""An agent (scripted, no LLM) that asks the user to confirm a money transfer, and acts on the answer.

    python examples/confirm_dialog/agent.py --amount 100 --to "Alice Martin" [--bridge http://127.0.0.1:8765]

It calls the page's `agui_user_confirm` tool over MCP. The page (examples/confirm_dialog/index.html,
or the bridge's demo page) shows the user a dialog; the tool returns "ok" or "cancel".
Exit status: 0 when the user answered (either way), 1 when the question could not be asked.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _agent_common import add_bridge_arguments, mcp_url, say, text_of, wait_for_tool  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_bridge_arguments(parser)
    parser.add_argument("--amount", type=float, default=100.0, help="euros to transfer")
    parser.add_argument("--to", default="Alice Martin", help="who receives the money")
    args = parser.parse_args()

    url = mcp_url(args.bridge, args.room)
    say(f"Connecting to {url}")
    async with Client(url) as client:
        await wait_for_tool(client, "agui_user_confirm", args.wait,
                            hint="Open examples/confirm_dialog/index.html (see its README) or the bridge's demo page.")
        say("Asking the user…")
        result = await client.call_tool("agui_user_confirm", {
            "title": f"Transfer {args.amount:.2f} € to {args.to}?",
            "body": f"The agent wants to send {args.amount:.2f} EUR from your checking account to {args.to}. "
                    "Nothing happens unless you confirm.",
            "ok_text": "Transfer",
            "cancel_text": "Don't transfer",
        })
        if result.is_error:
            print(f"Could not ask the user: {text_of(result)}")
            return 1
        answer = text_of(result)
        if answer == "ok":
            # A real agent would call the banking API here.
            print(f"The user confirmed. Transferred {args.amount:.2f} EUR to {args.to} (simulated).")
        else:
            print(f"The user declined ({answer}). Nothing was transferred.")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
