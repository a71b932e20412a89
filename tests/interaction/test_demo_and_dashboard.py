"""What a new user meets first, in real Chromium: the demo page's "connect an agent" box, the dashboard's
tool filter, cancel button, agents line and calls waiting for the agent, and the choose dialog's options.

The agent is the real MCP SDK client; pages that only register tools are the websockets page of support.py.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess

from browser_support import mcp_client, mounted_bridge, open_page, screenshot_path, text_of, wait_for_tools
from support import page as ws_page
from support import running_bridge, tool

from bridge.client_config import executable

DASHBOARD_READY = "document.getElementById('status').textContent === 'live'"


async def connect_box_text(page) -> str:
    return await page.locator("section[aria-labelledby=connect-title]").inner_text()


CLI = shlex.join(executable())  # this installation's agui-mcp-bridge, by its absolute path


async def config_command(page, expected: str) -> str:
    """The demo's config command once it shows `expected` (the bridge names its executable after the page loads)."""
    await page.wait_for_function("(text) => document.getElementById('stdio-command').textContent === text",
                                 arg=expected)
    return await page.text_content("#stdio-command")


async def test_demo_shows_this_bridges_mcp_url_and_config_command(browser, bridge):
    port = bridge.url.rsplit(":", 1)[1]
    async with open_page(browser, bridge.url + "/") as page:
        assert await page.text_content("#mcp-url") == f"http://127.0.0.1:{port}/mcp"
        assert bridge.mcp_url() in await page.text_content("#claude-code")
        assert await config_command(page, f"{CLI} config claude-desktop --port {port}")
        box = await connect_box_text(page)
        assert "absolute path" in box and "terminal" in box
        assert await page.locator("#cli-hint").is_hidden()
        assert "8765" not in box, "the box speaks of the port this bridge is on"
    async with open_page(browser, bridge.url + "/?room=team") as page:
        assert await page.text_content("#mcp-url") == f"http://127.0.0.1:{port}/rooms/team/mcp"
        command = await config_command(page, f"{CLI} config claude-desktop --port {port} --room team")
    # The command shown is one the CLI takes, and its entry starts a bridge with those settings.
    printed = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=30, check=True).stdout
    assert '"stdio"' in printed and f'"{port}"' in printed and '"team"' in printed


async def test_demo_without_the_bridges_path_says_where_the_command_is(browser):
    """A bridge that wants an agent token does not tell this page its path: the bare name, and where to find it."""
    async with running_bridge(agent_token="t" * 32) as bridge, open_page(browser, bridge.url + "/") as page:
        await page.locator("#cli-hint").wait_for()
        assert ".venv/bin/agui-mcp-bridge" in await page.locator("#cli-hint").inner_text()
        port = bridge.url.rsplit(":", 1)[1]
        assert await page.text_content("#stdio-command") == f"agui-mcp-bridge config claude-desktop --port {port}"


async def test_demo_under_a_mount_prefix_shows_the_prefixed_mcp_url(browser):
    async with mounted_bridge("/bridge") as bridge, open_page(browser, bridge.url + "/") as page:
        assert await page.text_content("#mcp-url") == bridge.url + "/mcp"
        assert bridge.url + "/mcp" in await page.text_content("#claude-code")
        # The host app's port is not one a bridge started over stdio could take.
        assert await config_command(page, f"{CLI} config claude-desktop")
        assert "8765" not in await connect_box_text(page)
        async with open_page(browser, bridge.url + "/?room=team") as team_page:
            assert await team_page.text_content("#mcp-url") == bridge.url + "/rooms/team/mcp"


def many_tools() -> list[dict]:
    """300 tools: 10 with "invoice" in their name, 2 more with it in their description only."""
    tools = [tool(f"item_{i:03d}", f"Look after item number {i} of the warehouse.") for i in range(300)]
    for i in range(0, 300, 30):
        tools[i] = tool(f"invoice_send_{i:03d}", "Send a bill to a customer.")
    tools[7] = tool("billing_reminder", "Remind a customer that an invoice is overdue.")
    tools[8] = tool("billing_void", "Void an INVOICE sent by mistake.")
    return tools


async def test_dashboard_filters_a_room_of_300_tools_and_says_who_is_connected(browser, bridge):
    async with ws_page(bridge, room="big", title="Warehouse") as warehouse, \
            open_page(browser, bridge.url + "/dashboard", ready=DASHBOARD_READY) as dashboard:
        await warehouse.register(*many_tools())
        room = dashboard.locator("section.room[data-room=big]")
        counts, agents = room.locator(".counts"), room.locator(".agents")
        await room.get_by_text("1 page, 300 tools").wait_for()
        assert await agents.text_content() == "no agent active"

        search = dashboard.get_by_role("searchbox", name="Filter the tools of room big")
        await search.fill("invoice")
        assert await counts.text_content() == "1 page, 12 of 300 tools"
        shown = await room.locator("li:visible code").all_text_contents()
        assert len(shown) == 12 and {"billing_reminder", "billing_void", "invoice_send_000"} <= set(shown)
        assert "12 of 300 tools" in await room.locator("summary").text_content()
        await search.fill("invoice overdue")  # every word, in name or description
        assert await room.locator("li:visible code").all_text_contents() == ["billing_reminder"]
        await search.fill("invoice")

        # An agent joins: the room is redrawn, the filter keeps its words, its count and the focus.
        async with mcp_client(bridge, room="big") as client:
            await client.list_tools()
            await agents.get_by_text("agents: 1 active").wait_for()
            title = await agents.get_attribute("title")
            assert "MCP sessions with a request being answered now" in title and "last 60 s" in title
            assert await counts.text_content() == "1 page, 12 of 300 tools"
            assert await search.input_value() == "invoice"
            assert await search.evaluate("(input) => input === document.activeElement")
            await dashboard.screenshot(path=screenshot_path("dashboard-filter.png"), full_page=True)
        await agents.get_by_text("no agent active").wait_for()  # it ended its session

        await search.fill("no such words")
        await room.get_by_text("No tool matches the filter.").wait_for()
        await search.fill("")
        assert await counts.text_content() == "1 page, 300 tools"
        assert await room.locator("li:visible").count() == 300


async def test_dashboard_cancel_call_button(browser, bridge):
    async with ws_page(bridge, tool("wait_for_ever", "Never answers by itself.")) as slow_page, \
            mcp_client(bridge) as client, \
            open_page(browser, bridge.url + "/dashboard", ready=DASHBOARD_READY) as dashboard:
        await wait_for_tools(client, "wait_for_ever")
        # Cancel requests wait here until the test lets them through, to see the button while one runs.
        release: asyncio.Queue[asyncio.Event] = asyncio.Queue()

        async def hold(route):
            event = asyncio.Event()
            await release.put(event)
            await event.wait()
            await route.continue_()

        await dashboard.route("**/api/calls/*/cancel", hold)
        polls = "Number(document.body.dataset.polls)"

        call = asyncio.create_task(client.call_tool("wait_for_ever", {}))
        first_id = (await slow_page.event())["call_id"]
        button = dashboard.locator("#in-flight").get_by_role("button", name="Cancel call", exact=True)
        await button.wait_for()
        assert await button.evaluate("(b) => [b.tagName, b.type]") == ["BUTTON", "button"]
        # Read from the button on the page now: a poll may have just drawn the list anew (a detached
        # button has no computed style).
        style = await (await dashboard.wait_for_function("""() => {
            const b = [...document.querySelectorAll("#in-flight button")].find(b => b.textContent === "Cancel call");
            const s = b && b.isConnected ? getComputedStyle(b) : null;
            return s && s.cursor ? [s.borderTopStyle, s.cursor] : null; }""")).json_value()
        assert style == ["solid", "pointer"]
        await dashboard.screenshot(path=screenshot_path("dashboard-cancel.png"), full_page=True)
        await button.click()
        running = await asyncio.wait_for(release.get(), 10)
        busy = dashboard.locator("#in-flight").get_by_role("button", name="Cancelling…")
        assert await busy.is_disabled()
        seen = await dashboard.evaluate(polls)
        await dashboard.wait_for_function(f"{polls} >= {seen + 2}")  # the table was redrawn meanwhile
        assert await busy.is_disabled(), "disabled until the cancel request is answered"
        running.set()
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and "operator" in text_of(result)
        await dashboard.locator("#in-flight").get_by_text("No call is waiting").wait_for()
        assert await dashboard.locator("#flight-message").is_hidden()

        # A cancel that fails says so: here the page answers the call while the cancel is on its way.
        call = asyncio.create_task(client.call_tool("wait_for_ever", {}))
        await button.click()
        running = await asyncio.wait_for(release.get(), 10)
        while (invoke := await slow_page.event())["type"] != "agui.tool.invoke" or invoke["call_id"] == first_id:
            pass
        await slow_page.answer(invoke["call_id"], "done after all")
        assert text_of(await asyncio.wait_for(call, 10)) == "done after all"
        running.set()
        message = dashboard.get_by_role("alert")
        await message.get_by_text("Could not cancel wait_for_ever: No such call in flight.").wait_for()


async def test_dashboard_shows_a_call_waiting_for_the_agents_input_and_cancels_it(browser, bridge):
    from mcp import Client

    async def never_answers(context, params):
        await asyncio.Event().wait()

    ask = {"name": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}
    async with ws_page(bridge, tool("greet_user", "Greet the user by name.")) as greeter, \
            Client(bridge.mcp_url(), mode="legacy", elicitation_callback=never_answers) as client, \
            open_page(browser, bridge.url + "/dashboard", ready=DASHBOARD_READY) as dashboard:
        await wait_for_tools(client, "greet_user")
        call = asyncio.create_task(client.call_tool("greet_user", {}))
        invoke = await greeter.event()
        await greeter.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"], "requests": ask,
                            "requestState": None})
        row = dashboard.locator("#in-flight tbody tr", has=dashboard.locator(".waiting"))
        await row.get_by_text("waiting for the agent's input").wait_for()
        assert "greet_user" in await row.text_content()
        await dashboard.screenshot(path=screenshot_path("dashboard-waiting-for-agent.png"), full_page=True)
        await row.get_by_role("button", name="Cancel call").click()
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and "operator" in text_of(result)
        await dashboard.locator("#in-flight").get_by_text("No call is waiting").wait_for()


CHOICES = {
    "short": ["Checking account", "Savings account", "Credit card"],
    "long": [f"Account {i}: " + "the joint account opened for the house and its works " * (1 + i % 2)
             for i in range(30)],
}


async def test_choose_dialog_shows_every_option_whole(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "agui_user_choose")
        for kind, options in CHOICES.items():
            title = f"Pay from which account ({kind})?"
            call = asyncio.create_task(client.call_tool("agui_user_choose", {"title": title, "options": options}))
            group = page.get_by_role("group", name=title)
            await group.wait_for()
            await page.wait_for_function("!document.getAnimations().length")  # the dialog's entrance is over
            for key in ("Tab", "Shift+Tab"):  # back to the first option, by keyboard: its focus ring shows
                await page.keyboard.press(key)
            await page.get_by_role("dialog").screenshot(path=screenshot_path(f"choose-dialog-{kind}.png"))
            layout = await group.evaluate("""(group) => {
                const box = (e) => e.getBoundingClientRect();
                const first = group.firstElementChild, style = getComputedStyle(first);
                // The focus ring is drawn outside the border: the scroll box must leave room for it too.
                const ring = style.outlineStyle === "none" ? 0
                  : parseFloat(style.outlineWidth) + parseFloat(style.outlineOffset);
                const area = box(group);
                return {
                  focused: document.activeElement === first && first.matches(":focus-visible"), ring,
                  area: {top: area.top + group.clientTop, left: area.left + group.clientLeft,
                         right: area.left + group.clientLeft + group.clientWidth},
                  first: box(first),
                  options: [...group.children].map((o) => ({top: box(o).top, bottom: box(o).bottom,
                                                          fits: o.scrollHeight <= o.clientHeight})),
                };
            }""")
            assert layout["focused"] and layout["ring"] > 0, layout
            first, area, ring = layout["first"], layout["area"], layout["ring"]
            assert first["top"] - ring >= area["top"] - 0.5, (kind, layout)
            assert first["left"] - ring >= area["left"] - 0.5, (kind, layout)
            assert first["right"] + ring <= area["right"] + 0.5, (kind, layout)
            boxes = layout["options"]
            assert all(b["fits"] for b in boxes), f"{kind}: a label spills out of its option's border"
            assert all(a["bottom"] <= b["top"] for a, b in zip(boxes, boxes[1:])), f"{kind}: options overlap"
            await page.keyboard.press("Tab")
            await page.keyboard.press("Enter")
            result = await asyncio.wait_for(call, 10)
            assert (result.is_error, text_of(result)) == (False, options[1])
