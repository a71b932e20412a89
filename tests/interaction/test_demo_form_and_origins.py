"""The demo page's form tool (`<form toolname="book_table">`: an agent fills it where the user sees it, the user
books), and the dashboard's origin of each page (the one the bridge saw, beside the URL the page claims). Real
Chromium, the MCP SDK client, pages of the websockets kind with an Origin header.
"""

from __future__ import annotations

import asyncio

from browser_support import mcp_client, open_page, screenshot_path, text_of, wait_for_tools
from support import page as ws_page
from support import tool

DASHBOARD_READY = "document.getElementById('status').textContent === 'live'"
BOOKING = {"name": "Ada Lovelace", "guests": 4, "date": "2026-05-01", "time": "20:00"}


async def test_the_demo_offers_its_booking_form_as_a_tool_the_user_submits(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as agent:
        await wait_for_tools(agent, "book_table")
        (listed,) = [t for t in (await agent.list_tools(cache_mode="bypass")).tools if t.name == "book_table"]
        assert "Book a table" in (listed.description or "")
        schema = listed.input_schema
        assert set(schema["properties"]) == {"name", "guests", "date", "time"}
        assert schema["properties"]["guests"]["type"] == "integer"
        assert schema["properties"]["time"]["enum"] == ["19:00", "19:30", "20:00", "20:30"]
        assert set(schema["required"]) == {"name", "guests", "date"}
        form = page.locator("form#booking")
        assert await form.is_visible()
        assert "book_table" in await page.locator("#tools").inner_text()  # the page lists it with its others

        # A call fills the form where the user sees it, and waits for the user to book.
        call = asyncio.create_task(agent.call_tool("book_table", BOOKING))
        await page.wait_for_selector("form#booking[data-tool-form-active]")
        assert await form.locator("input[name=name]").input_value() == "Ada Lovelace"
        assert await form.locator("input[name=guests]").input_value() == "4"
        assert await form.locator("select[name=time]").input_value() == "20:00"
        await page.screenshot(path=screenshot_path("demo-form-tool.png"), full_page=True)
        assert not call.done()
        await form.get_by_role("button", name="Book the table").click()
        result = await asyncio.wait_for(call, 10)
        booked = "Booked: A table for 4 on 2026-05-01 at 20:00, in the name of Ada Lovelace."
        assert (result.is_error, text_of(result)) == (False, booked)
        assert await page.text_content("#booking-status") == booked

        # What the form refuses changes nothing in it.
        refused = await agent.call_tool("book_table", {**BOOKING, "guests": 40})
        assert refused.is_error and "guests" in text_of(refused)
        assert await form.locator("input[name=guests]").input_value() == "4"


async def test_the_dashboard_shows_each_pages_origin_beside_the_url_it_claims(browser, bridge):
    claimed = {"url": "https://bank.example/login", "title": "Shop"}
    async with ws_page(bridge, tool("read_cart"), origin="http://localhost:5555", page=claimed), \
            ws_page(bridge, tool("script_tool"), title="Script"), \
            open_page(browser, bridge.url + "/dashboard", ready=DASHBOARD_READY) as dashboard:
        shop = dashboard.locator(".page", has=dashboard.get_by_text("Shop", exact=True))
        await shop.locator(".origin").wait_for()
        assert await shop.locator(".origin").inner_text() == "origin http://localhost:5555"
        assert await shop.locator(".url").inner_text() == "https://bank.example/login"
        script = dashboard.locator(".page", has=dashboard.get_by_text("Script", exact=True))
        assert await script.locator(".origin").inner_text() == "origin none (not a browser page)"
        await dashboard.screenshot(path=screenshot_path("dashboard-origins.png"), full_page=True)
