"""Code mode with the demo page in Chromium: a program reads the shop's orders (`list_orders`), asks the user
through the page's confirm dialog and goes on when they click; the agent's cancel ends the program and closes
the dialog it was waiting on."""

from __future__ import annotations

import asyncio
import re
import textwrap

import pytest
from browser_support import mcp_client, open_page, wait_for_tools
from code_mode_support import code_bridge, text_of
from support import eventually

ASKS_BEFORE_SHIPPING = textwrap.dedent("""
    orders = (await list_orders(status="open"))["orders"]
    total = round(sum(order["total"] for order in orders), 2)
    answer = await agui_user_confirm(title=f"Ship {len(orders)} open orders ({total} EUR)?", ok_text="Ship")
    {"answer": answer, "orders": len(orders), "total": total}
    """)
OPEN_ORDERS, OPEN_TOTAL = 16, 2121.2  # of the demo shop's 40 orders (web_client/demo-tools.js)


async def test_a_program_waiting_on_the_users_dialog_goes_on_when_they_click(browser):
    async with code_bridge() as bridge, open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "agui_user_confirm", "list_orders")
        run = asyncio.create_task(client.call_tool("run_code", {"code": ASKS_BEFORE_SHIPPING}))
        dialog = page.get_by_role("dialog", name=f"Ship {OPEN_ORDERS} open orders ({OPEN_TOTAL} EUR)?")
        await dialog.wait_for()
        await eventually(lambda: bridge.bridge.programs.workers_held == 0)  # parked while the user reads
        assert not run.done()
        await dialog.get_by_role("button", name="Ship").click()
        result = await asyncio.wait_for(run, 10)
        assert not result.is_error, text_of(result)
        assert result.structured_content == {"result": {"answer": "ok", "orders": OPEN_ORDERS, "total": OPEN_TOTAL}}
        await dialog.wait_for(state="detached")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_agents_cancel_ends_the_program_and_closes_the_dialog(browser, mode):
    async with code_bridge() as bridge, open_page(browser, bridge.url + "/") as page, \
            mcp_client(bridge, mode=mode) as client:
        await wait_for_tools(client, "agui_user_confirm")
        run = asyncio.create_task(client.call_tool("run_code", {"code": ASKS_BEFORE_SHIPPING}))
        dialog = page.get_by_role("dialog", name=re.compile(r"^Ship \d+ open orders"))
        await dialog.wait_for()
        run.cancel()  # legacy: notifications/cancelled; 2026-07-28: the request is closed
        with pytest.raises(asyncio.CancelledError):
            await run
        await dialog.wait_for(state="detached", timeout=5000)
        assert "cancelled by the agent" in await page.text_content("#log")
        await eventually(lambda: bridge.bridge.programs.running == 0 and len(bridge.hub.calls) == 0)
        again = await client.call_tool("run_code", {"code": "(await list_orders())['count']"})
        assert again.structured_content == {"result": 40}
