"""The browser client, demo page and dashboard in real Chromium, with the MCP SDK client as the agent.

Each test starts its own bridge (`bridge` fixture) and page; one Chromium serves the module.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import asynccontextmanager
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

import httpx
import pytest
from browser_support import (
    WEBMCP_PACKAGES,
    mcp_client,
    mounted_bridge,
    open_page,
    screenshot_path,
    serve_html,
    text_of,
    wait_for_tools,
    watch_event_streams,
)
from support import eventually, free_port, running_bridge

USER_TOOLS = ("agui_user_confirm", "agui_user_prompt", "agui_user_choose")
PAGE_TOOLS = ("page_get_selected_text", "page_read_form", "page_fill_form_field", "page_count_slowly", "list_orders",
              "book_table")  # the last: the demo's <form toolname>
META_TOOLS = ("tool_search", "tool_describe", "call_tool")

TRANSFER = {"title": "Transfer 100 € to Alice?", "body": "From your checking account to DE89 3704 0044 0532 0130 00.",
            "ok_text": "Transfer", "cancel_text": "Keep my money"}

# A bare page, served from its own origin, for tests that register their own tools: it imports the client
# from the bridge and connects (with ?token=… when given, and the connect() options in ?options=<JSON>).
BARE_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>
<h1>{title}</h1><script type="module">
import * as agui from "{bridge}/client/agui-bridge.js";
window.agui = agui;
window.errors = [];
window.states = [];
const query = new URLSearchParams(location.search);
const token = query.get("token");
const options = JSON.parse(query.get("options") || "{{}}");
try {{
  const bridge = await agui.connect({{url: "{bridge}", token, reconnectDelay: 100, maxReconnectDelay: 500,
                                      ...options}});
  bridge.addEventListener("error", (e) => window.errors.push(e.detail));
  bridge.addEventListener("statechange", (e) => window.states.push(e.detail.state));
  window.bridge = bridge;
}} catch (error) {{
  window.connectError = {{name: error.name, code: error.code, message: error.message}};
}}
document.body.dataset.ready = "true";
</script></body></html>"""


@asynccontextmanager
async def bare_page(bridge, title: str, **options):
    """The bare page's URL; `options` go to its connect()."""
    with serve_html(BARE_PAGE.format(title=title, bridge=bridge.url)) as url:
        yield f"{url}?options={quote(json.dumps(options))}" if options else url


async def call_in_background(client, name: str, arguments: dict, **kwargs) -> asyncio.Task:
    return asyncio.create_task(client.call_tool(name, arguments, **kwargs))


async def test_demo_page_registers_its_tools(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client:
        listed = await wait_for_tools(client, *USER_TOOLS, *PAGE_TOOLS)
        assert not set(META_TOOLS) & listed, "a handful of tools is listed inline, without meta-tools"
        assert await page.text_content("#state") == "open"
        assert await page.text_content("#mcp-url") == bridge.mcp_url()
        shown = await page.locator("#tools code").all_text_contents()
        assert set(USER_TOOLS) | set(PAGE_TOOLS) <= set(shown)
        tools = {t.name: t for t in (await client.list_tools(cache_mode="bypass")).tools}
        confirm = tools["agui_user_confirm"]
        assert confirm.input_schema["required"] == ["title"]
        assert confirm.annotations.read_only_hint is True


async def test_confirm_dialog_ok_cancel_and_escape(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "agui_user_confirm")
        await page.focus("input[name=recipient]")

        call = await call_in_background(client, "agui_user_confirm", TRANSFER)
        dialog = page.get_by_role("dialog", name=TRANSFER["title"])
        await dialog.wait_for()
        assert TRANSFER["body"] in await dialog.text_content()
        # Accessible: modal, labelled by its title, described by its body, focus moved inside (on Cancel).
        assert await dialog.get_attribute("aria-modal") == "true"
        described_by = await dialog.get_attribute("aria-describedby")
        assert await page.text_content(f"#{described_by}") == TRANSFER["body"]
        assert await page.evaluate("document.activeElement.textContent") == "Keep my money"
        await page.screenshot(path=screenshot_path("confirm-dialog.png"))
        await dialog.get_by_role("button", name="Transfer").click()
        result = await asyncio.wait_for(call, 10)
        assert not result.is_error
        assert text_of(result) == "ok"
        await dialog.wait_for(state="detached")
        assert await page.evaluate("document.activeElement.name") == "recipient", "focus goes back where it was"

        call = await call_in_background(client, "agui_user_confirm", TRANSFER)
        await dialog.get_by_role("button", name="Keep my money").click()
        result = await asyncio.wait_for(call, 10)
        assert (result.is_error, text_of(result)) == (False, "cancel")

        call = await call_in_background(client, "agui_user_confirm", {"title": "Delete the draft?"})
        await page.get_by_role("dialog", name="Delete the draft?").wait_for()
        await page.keyboard.press("Escape")
        result = await asyncio.wait_for(call, 10)
        assert (result.is_error, text_of(result)) == (False, "cancel")
        assert await page.get_by_role("dialog").count() == 0


async def test_prompt_and_choose_dialogs(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge, mode="2026-07-28") as client:
        await wait_for_tools(client, "agui_user_prompt", "agui_user_choose")

        call = await call_in_background(client, "agui_user_prompt",
                                        {"title": "Reference for the transfer?", "default": "Rent"})
        dialog = page.get_by_role("dialog", name="Reference for the transfer?")
        field = dialog.get_by_role("textbox", name="Your answer")
        await field.wait_for()
        assert await field.input_value() == "Rent"
        await field.fill("Rent, March")
        await field.press("Enter")
        result = await asyncio.wait_for(call, 10)
        assert (result.is_error, text_of(result)) == (False, "Rent, March")

        call = await call_in_background(client, "agui_user_prompt", {"title": "Your name?"})
        await page.get_by_role("dialog", name="Your name?").get_by_role("button", name="Cancel").click()
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and "cancelled" in text_of(result)

        options = ["Checking account", "Savings account", "Credit card"]
        call = await call_in_background(client, "agui_user_choose", {"title": "Pay from which account?",
                                                                     "options": options})
        group = page.get_by_role("group", name="Pay from which account?")
        await group.wait_for()
        assert await group.get_by_role("button").all_text_contents() == options
        await group.get_by_role("button", name="Savings account").click()
        result = await asyncio.wait_for(call, 10)
        assert (result.is_error, text_of(result)) == (False, "Savings account")

        # Arguments that break the schema never reach the page.
        result = await client.call_tool("agui_user_choose", {"title": "No options"})
        assert result.is_error and "options" in text_of(result)
        assert await page.get_by_role("dialog").count() == 0


async def test_dialogs_show_one_at_a_time(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "agui_user_confirm")
        first = await call_in_background(client, "agui_user_confirm", {"title": "First question?"})
        await page.get_by_role("dialog", name="First question?").wait_for()
        second = await call_in_background(client, "agui_user_confirm", {"title": "Second question?"})
        third = await call_in_background(client, "agui_user_confirm", {"title": "Third question?"})
        await eventually(lambda: len(bridge.hub.calls) == 3)
        assert await page.get_by_role("dialog").count() == 1
        third.cancel()  # a queued dialog the agent gave up on is never shown
        with pytest.raises(asyncio.CancelledError):
            await third
        await page.get_by_role("dialog", name="First question?").get_by_role("button", name="OK").click()
        assert text_of(await asyncio.wait_for(first, 10)) == "ok"
        await page.get_by_role("dialog", name="Second question?").get_by_role("button", name="Cancel").click()
        assert text_of(await asyncio.wait_for(second, 10)) == "cancel"
        await asyncio.sleep(0.3)
        assert await page.get_by_role("dialog").count() == 0


async def test_agent_cancel_closes_the_dialog(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge, mode="legacy") as client:
        await wait_for_tools(client, "agui_user_confirm")
        call = await call_in_background(client, "agui_user_confirm", TRANSFER)
        dialog = page.get_by_role("dialog", name=TRANSFER["title"])
        await dialog.wait_for()
        await eventually(lambda: len(bridge.hub.calls) == 1)
        call.cancel()  # the SDK sends notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await call
        await dialog.wait_for(state="detached", timeout=5000)
        log = await page.text_content("#log")
        assert "cancelled by the agent" in log
        await eventually(lambda: len(bridge.hub.calls) == 0)
        assert bridge.hub.calls.recent[0]["outcome"] == "cancelled"
        # The page is still fine: the next call works.
        call = await call_in_background(client, "agui_user_confirm", {"title": "Still there?"})
        await page.get_by_role("dialog", name="Still there?").get_by_role("button", name="OK").click()
        assert text_of(await asyncio.wait_for(call, 10)) == "ok"


async def test_reload_shows_the_waiting_dialog_again_and_answers_the_original_call(browser):
    # A grace period long enough for a reload: the page closes with 4001 on pagehide, not 1000, so the
    # bridge keeps its session that long, and the reloaded page takes it back.
    async with running_bridge(page_grace=10) as bridge, open_page(browser, bridge.url + "/") as page, \
            mcp_client(bridge) as client:
        await wait_for_tools(client, "agui_user_confirm")
        session_id = await page.evaluate("aguiBridge.sessionId")
        call = await call_in_background(client, "agui_user_confirm", TRANSFER)
        await page.get_by_role("dialog", name=TRANSFER["title"]).wait_for()
        await page.reload()
        await page.wait_for_function("document.body.dataset.ready === 'true'")
        assert await page.evaluate("aguiBridge.sessionId") == session_id, "the reloaded page resumed the session"
        assert list(bridge.hub.sessions) == [session_id]
        # The bridge asks the reloaded page the call still waiting: the dialog is back, once.
        dialog = page.get_by_role("dialog", name=TRANSFER["title"])
        await dialog.wait_for()
        assert await page.get_by_role("dialog").count() == 1
        assert not call.done(), "the reload did not end the agent's call"
        await dialog.get_by_role("button", name="Transfer").click()
        result = await asyncio.wait_for(call, 10)
        assert (result.is_error, text_of(result)) == (False, "ok")
        assert bridge.hub.calls.recent[0]["outcome"] == "result"
        # The reloaded page's tools replaced the previous page's, under the same names.
        listed = await wait_for_tools(client, *USER_TOOLS, *PAGE_TOOLS)
        assert len(listed) == len(USER_TOOLS) + len(PAGE_TOOLS)


async def test_reloaded_page_runs_waiting_calls_once_it_registers_their_tools(browser):
    async with running_bridge(page_grace=10) as bridge, \
            bare_page(bridge, "Reload", reregisterTimeout=1500) as url, open_page(browser, url) as page, \
            mcp_client(bridge) as client:
        await page.evaluate("""() => Promise.all([
            bridge.registerTool({name: "kept_tool"}, () => new Promise(() => {})),
            bridge.registerTool({name: "dropped_tool"}, () => new Promise(() => {})),
        ])""")
        await wait_for_tools(client, "kept_tool", "dropped_tool")
        session_id = await page.evaluate("bridge.sessionId")
        kept = await call_in_background(client, "kept_tool", {"n": 1})
        dropped = await call_in_background(client, "dropped_tool", {})
        await eventually(lambda: len(bridge.hub.calls) == 2)
        await page.reload()
        await page.wait_for_function("document.body.dataset.ready === 'true'")
        assert await page.evaluate("bridge.sessionId") == session_id
        # The invocations arrive before the reloaded page has registered any tool: they are held.
        await page.wait_for_function("bridge.heldCalls.length === 2")
        await page.evaluate("""() => bridge.registerTool({name: "kept_tool"},
            (params) => ({answeredBy: "the reloaded page", params}))""")
        result = await asyncio.wait_for(kept, 10)
        assert result.structured_content == {"answeredBy": "the reloaded page", "params": {"n": 1}}
        # A tool the reloaded page does not register again within reregisterTimeout leaves, and the call
        # waiting for it fails.
        result = await asyncio.wait_for(dropped, 10)
        assert result.is_error and "has no tool named \"dropped_tool\"" in text_of(result)
        await wait_for_tools(client, "kept_tool", absent=("dropped_tool",))
        assert list(bridge.hub.sessions) == [session_id]


async def test_leave_on_pagehide_fails_the_call_at_once_on_reload(browser):
    # A long grace period: the call fails at once only because the leaving page says goodbye (close 1000).
    async with running_bridge(page_grace=30) as bridge, \
            bare_page(bridge, "Leaves", leaveOnPageHide=True) as url, open_page(browser, url) as page, \
            mcp_client(bridge) as client:
        await page.evaluate("""() => bridge.registerTool({name: "never_answers"}, () => new Promise(() => {}))""")
        await wait_for_tools(client, "never_answers")
        first_session = await page.evaluate("bridge.sessionId")
        call = await call_in_background(client, "never_answers", {})
        await eventually(lambda: len(bridge.hub.calls) == 1)
        started = time.monotonic()
        await page.reload()
        result = await asyncio.wait_for(call, 5)
        assert result.is_error and "went away" in text_of(result)
        assert time.monotonic() - started < 2
        # The reloaded page is a new page.
        await page.wait_for_function("document.body.dataset.ready === 'true'")
        second_session = await page.evaluate("bridge.sessionId")
        assert second_session != first_session
        assert list(bridge.hub.sessions) == [second_session]


async def test_after_disconnect_a_reload_is_a_new_page(browser):
    async with running_bridge(page_grace=30) as bridge, bare_page(bridge, "Leaving") as url, \
            open_page(browser, url) as page:
        first_session = await page.evaluate("bridge.sessionId")
        await page.evaluate("bridge.disconnect()")
        await eventually(lambda: first_session not in bridge.hub.sessions, timeout=2)  # code 1000, despite the grace
        await page.reload()
        await page.wait_for_function("document.body.dataset.ready === 'true'")
        second_session = await page.evaluate("bridge.sessionId")
        assert second_session != first_session
        assert list(bridge.hub.sessions) == [second_session]


async def test_a_window_the_page_opens_starts_its_own_session(browser, bridge):
    """A same-origin window the page opens starts with a copy of its sessionStorage, as a duplicated tab does:
    the session id is stored only while the page is hidden, so the copy cannot take the live page's session."""
    async with bare_page(bridge, "Opener") as url, open_page(browser, url) as page:
        first_session = await page.evaluate(
            "() => { sessionStorage.setItem('probe', 'copied'); return bridge.sessionId; }")
        async with page.context.expect_page() as opened:
            await page.evaluate("window.open(location.href)")
        popup = await opened.value
        await popup.wait_for_function("document.body.dataset.ready === 'true'")
        assert await popup.evaluate("sessionStorage.getItem('probe')") == "copied", "the window got a copy"
        second_session = await popup.evaluate("bridge.sessionId")
        assert second_session != first_session
        assert set(bridge.hub.sessions) == {first_session, second_session}
        assert await page.evaluate("[bridge.state, bridge.sessionId, window.errors]") == ["open", first_session, []]


async def test_pages_under_a_mount_prefix(browser):
    """Mounted at /bridge, the demo page, its client (WebSocket, event stream), the dashboard and the WebMCP
    page use URLs under the prefix."""
    async with mounted_bridge("/bridge") as bridge, open_page(browser, bridge.url + "/") as page, \
            mcp_client(bridge) as client:
        await wait_for_tools(client, "agui_user_confirm", *PAGE_TOOLS)
        assert await page.text_content("#mcp-url") == bridge.url + "/mcp"
        assert await page.evaluate("aguiBridge.url") == bridge.url + "/"
        assert (await page.evaluate("aguiBridge.eventsUrl")).startswith(bridge.url + "/agui/events?session=")
        call = await call_in_background(client, "agui_user_confirm", TRANSFER)
        await page.get_by_role("dialog", name=TRANSFER["title"]).get_by_role("button", name="Transfer").click()
        assert text_of(await asyncio.wait_for(call, 10)) == "ok"

        async with open_page(browser, bridge.url + "/dashboard", ready=None) as dashboard:
            await dashboard.locator("#rooms").get_by_text("agui-mcp-bridge demo").wait_for()
            assert await dashboard.text_content("#status") == "live"
            assert "agui_user_confirm" in await dashboard.locator("#recent tbody").text_content()
        async with open_page(browser, bridge.url + "/?room=team") as team_page:
            assert await team_page.text_content("#mcp-url") == bridge.url + "/rooms/team/mcp"
        async with open_page(browser, bridge.url + "/client/webmcp-demo.html"):
            await wait_for_tools(client, "add_to_cart")
            result = await client.call_tool("add_to_cart", {"productId": "sku-1"})
            assert text_of(result) == "Added 1 × sku-1 to the cart."


async def test_handler_errors_become_is_error(browser, bridge):
    async with bare_page(bridge, "Errors") as url, open_page(browser, url) as page, \
            mcp_client(bridge) as client:
        await page.evaluate("""() => Promise.all([
            bridge.registerTool({name: "throws_error", description: "Throws an Error"},
                                () => { throw new Error("the printer is on fire"); }),
            bridge.registerTool({name: "throws_string", description: "Throws a string"},
                                async () => { throw "plain string failure"; }),
            bridge.registerTool({name: "throws_object", description: "Throws an object"},
                                async () => { throw {code: 42, reason: "quota"}; }),
            bridge.registerTool({name: "throws_undefined", description: "Throws undefined"},
                                async () => { throw undefined; }),
            bridge.registerTool({name: "returns_cycle", description: "Returns what JSON cannot hold"},
                                () => { const a = {}; a.self = a; return a; }),
            bridge.registerTool({name: "returns_nothing", description: "Returns undefined"}, () => {}),
        ])""")
        expected = {"throws_error": "the printer is on fire", "throws_string": "plain string failure",
                    "throws_object": '{"code":42,"reason":"quota"}', "throws_undefined": "undefined",
                    "returns_cycle": "could not be sent as JSON"}
        for name, fragment in expected.items():
            result = await asyncio.wait_for(client.call_tool(name, {}), 10)
            assert result.is_error, name
            assert fragment in text_of(result), (name, text_of(result))
        result = await client.call_tool("returns_nothing", {})
        assert not result.is_error and text_of(result) == "null"
        assert await page.evaluate("window.errors.length") == 0


async def test_bridge_errors_surface_as_events(browser, bridge):
    async with bare_page(bridge, "Bad input") as url, open_page(browser, url, relay=True) as page, \
            mcp_client(bridge) as client:
        outcome = await page.evaluate("""async () => {
            const bad = bridge.registerTool({name: "bad_schema", inputSchema: {type: "array"}}, () => 1);
            const good = bridge.registerTool({name: "good_tool", description: "Fine"}, () => 2);
            const results = await Promise.allSettled([bad, good]);
            let local = null;
            try { await bridge.registerTool({name: ""}, () => 1); } catch (e) { local = e.name; }
            return {results: results.map(r => r.status === "fulfilled" ? r.value : r.reason.code), local,
                    errors: window.errors.map(e => [e.code, e.tool])};
        }""")
        assert outcome["results"] == ["invalid_tool", "good_tool"]
        assert outcome["local"] == "TypeError"
        assert outcome["errors"] == [["invalid_tool", "bad_schema"]]
        listed = await wait_for_tools(client, "good_tool")
        assert "bad_schema" not in listed
        # An invalid replacement leaves no stale definition behind on the bridge.
        code = await page.evaluate("""() => bridge.registerTool({name: "good_tool", inputSchema: {type: 7}}, () => 3)
                                           .then(() => "registered", (e) => e.code)""")
        assert code == "invalid_tool"
        await wait_for_tools(client, absent=("good_tool",))
        window_errors = await page.evaluate("window.errors.map(e => e.code)")
        assert window_errors == ["invalid_tool", "invalid_tool"]
        # An answer the bridge refuses (unknown call) is an `error` event too.
        page.relayed[-1].send_to_bridge({"type": "agui.tool.return", "call_id": "c_nope", "result": 1})
        await page.wait_for_function("window.errors.some(e => e.code === 'unknown_call' && e.call_id === 'c_nope')")


async def test_refused_connections_reject_connect(browser):
    async with running_bridge(token="s3cret") as bridge:
        async with bare_page(bridge, "Token") as url:
            async with open_page(browser, url + "?token=wrong") as page:
                error = await page.evaluate("window.connectError")
                assert error["code"] == "unauthorized" and error["name"] == "AguiBridgeError"
            async with open_page(browser, url + "?token=s3cret") as page, mcp_client(bridge) as client:
                assert await page.evaluate("window.connectError") is None
                await page.evaluate("bridge.registerTool({name: 'behind_token'}, () => 'ok')")
                await wait_for_tools(client, "behind_token")
    # A page from an origin the bridge does not allow: connect() rejects and the demo says why.
    async with running_bridge(allowed_origins="http://localhost:*") as bridge:
        async with open_page(browser, bridge.url + "/", ready="document.body.dataset.ready === 'failed'") as page:
            assert "forbidden_origin" in await page.text_content("#state")
            assert await page.get_attribute("#state", "data-state") == "closed"
        assert not bridge.hub.sessions


async def test_a_page_from_a_refused_origin_loads_the_client_and_hears_why(browser):
    async with running_bridge(allowed_origins="http://localhost:*") as bridge:
        async with bare_page(bridge, "Refused") as url, open_page(browser, url) as page:
            error = await page.evaluate("window.connectError")
            origin = url.split("/index.html")[0]
            assert error["code"] == "forbidden_origin", error
            assert origin in error["message"] and f"--allowed-origins 'http://localhost:*,{origin}'" in error["message"]
            assert "Settings(allowed_origins=" in error["message"]
        assert not bridge.hub.sessions


async def test_client_declarations_are_served_as_typescript(bridge):
    async with httpx.AsyncClient() as http:
        response = await http.get(bridge.url + "/client/agui-bridge.d.ts")
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/typescript")
        assert (await http.get(bridge.url + "/client/agui-bridge.js")).headers["content-type"].startswith(
            "text/javascript")


async def test_progress_reaches_the_agent(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "page_count_slowly")
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        result = await asyncio.wait_for(client.call_tool("page_count_slowly", {"n": 3, "delay_ms": 50},
                                                         progress_callback=on_progress), 10)
        assert text_of(result) == "Counted to 3."
        assert seen == [(1, 3, "counted to 1"), (2, 3, "counted to 2"), (3, 3, "counted to 3")]
        assert "counted to 3" in await page.text_content("#log")


async def test_page_tools_read_and_fill_the_page(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, *PAGE_TOOLS)
        result = await client.call_tool("page_fill_form_field", {"field": "amount", "value": "250"})
        assert result.structured_content == {"field": "amount", "value": "250"}
        assert await page.input_value("input[name=amount]") == "250"
        form = (await client.call_tool("page_read_form", {})).structured_content
        assert form["amount"] == "250" and form["recipient"] == "Alice Martin"
        await page.evaluate("""() => {
            const range = document.createRange();
            range.selectNodeContents(document.getElementById("selectable"));
            getSelection().removeAllRanges(); getSelection().addRange(range);
        }""")
        selected = text_of(await client.call_tool("page_get_selected_text", {}))
        assert "revenue grew 12 %" in selected


async def test_300_tool_switch_turns_on_search_mode(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, *USER_TOOLS)
        await page.get_by_role("checkbox", name="Register 300 more tools").check()
        await page.wait_for_function("document.body.dataset.manyTools === 'registered'")
        listed = await wait_for_tools(client, *META_TOOLS)
        assert len(bridge.hub.room("default")) == 300 + len(USER_TOOLS) + len(PAGE_TOOLS)
        assert "agui_user_confirm" in listed, "the page's first tools stay listed"
        assert "support_escalate_ticket" not in listed, "most generated tools are deferred"

        found = await client.call_tool("tool_search", {"query": "escalate a support ticket", "limit": 3})
        names = [m["name"] for m in found.structured_content["matches"]]
        assert "support_escalate_ticket" in names
        assert "support_escalate_ticket" in await wait_for_tools(client, "support_escalate_ticket")
        result = await client.call_tool("support_escalate_ticket", {"id": "T-17"})
        assert result.structured_content["simulated"] is True
        assert result.structured_content["arguments"] == {"id": "T-17"}

        await page.get_by_role("checkbox", name="Register 300 more tools").uncheck()
        listed = await wait_for_tools(client, *USER_TOOLS, absent=META_TOOLS)
        assert len(bridge.hub.room("default")) == len(USER_TOOLS) + len(PAGE_TOOLS)


async def test_the_browser_client_pins_user_tools_registered_after_300_tools(browser, bridge):
    async with mcp_client(bridge) as client:
        html = f"""<!doctype html><title>Pinned</title><script type="module">
          import {{ connect, registerUserTools }} from "{bridge.url}/client/agui-bridge.js";
          import {{ generateTools, simulate }} from "{bridge.url}/client/demo-tools.js";
          const bridge = await connect({{ url: "{bridge.url}" }});
          await Promise.all(generateTools(300).map((t) => bridge.registerTool(t, (p) => simulate(t, p))));
          await registerUserTools(bridge, {{ pinned: ["confirm"] }});
          document.body.dataset.ready = "true";
        </script>"""
        with serve_html(html) as url:
            async with open_page(browser, url):
                names = await wait_for_tools(client, "agui_user_confirm", *META_TOOLS)
                assert "agui_user_prompt" not in names and "agui_user_choose" not in names
                assert len(bridge.hub.room("default")) == 303
                described = await client.call_tool("tool_describe", {"name": "agui_user_confirm"})
                assert described.structured_content["pinned"] is True


async def test_the_demo_pins_its_confirm_dialog(browser, bridge):
    async with mcp_client(bridge) as client, open_page(browser, bridge.url + "/") as demo:
        await demo.get_by_role("checkbox", name="Register 300 more tools").check()
        await demo.wait_for_function("document.body.dataset.manyTools === 'registered'")
        await wait_for_tools(client, "agui_user_confirm", *META_TOOLS)
        confirm = await client.call_tool("tool_describe", {"name": "agui_user_confirm"})
        prompt = await client.call_tool("tool_describe", {"name": "agui_user_prompt"})
        assert confirm.structured_content.get("pinned") is True and "pinned" not in prompt.structured_content


async def test_dashboard_shows_pages_and_calls(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page, mcp_client(bridge) as client, \
            open_page(browser, bridge.url + "/dashboard", ready=None) as dashboard:
        await wait_for_tools(client, "agui_user_confirm")
        rooms = dashboard.locator("#rooms")
        await rooms.get_by_text("agui-mcp-bridge demo").wait_for()
        assert "connected" in await rooms.text_content()
        assert "agui_user_confirm" in await rooms.text_content()

        call = await call_in_background(client, "agui_user_confirm", TRANSFER)
        in_flight = dashboard.locator("#in-flight tbody")
        await in_flight.get_by_text("agui_user_confirm").wait_for()
        await dashboard.screenshot(path=screenshot_path("dashboard-in-flight.png"), full_page=True)
        await page.get_by_role("dialog").get_by_role("button", name="Transfer").click()
        assert text_of(await asyncio.wait_for(call, 10)) == "ok"

        recent = dashboard.locator("#recent tbody tr", has_text="agui_user_confirm")
        await recent.wait_for()
        assert "result" in await recent.text_content()
        await in_flight.get_by_text("No call is waiting").wait_for()
        await dashboard.screenshot(path=screenshot_path("dashboard.png"), full_page=True)


async def test_dashboard_cancels_a_call_and_a_page_of_another_origin_reads_nothing(browser, bridge):
    port = bridge.url.rsplit(":", 1)[1]
    # The demo page served from http://localhost:PORT: an allowed page origin, but not the bridge's own.
    async with open_page(browser, f"http://localhost:{port}/") as page, mcp_client(bridge) as client, \
            open_page(browser, bridge.url + "/dashboard", ready=None) as dashboard:
        await wait_for_tools(client, "agui_user_confirm")
        call = await call_in_background(client, "agui_user_confirm", TRANSFER)
        await page.get_by_role("dialog").wait_for()
        stolen = await page.evaluate("""async (url) => {
            const outcomes = [];
            for (const [path, init] of [["/api/state", {}], ["/metrics", {}], ["/mcp", {method: "POST",
                    headers: {"content-type": "application/json"},
                    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}'}]]) {
                try { outcomes.push(await (await fetch(url + path, init)).text()); }
                catch (error) { outcomes.push("refused: " + error.name); }
            }
            return outcomes;
        }""", bridge.url)
        assert all(outcome.startswith("refused") for outcome in stolen), stolen
        # The dashboard (same origin as the bridge) still cancels the call.
        await dashboard.locator("#in-flight").get_by_role("button", name="Cancel").click()
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and "operator" in text_of(result)
        await page.get_by_role("dialog").wait_for(state="detached")


async def test_client_reconnects_after_the_bridge_restarts(browser):
    port = free_port()
    context = await browser.new_context()
    page = await context.new_page()
    try:
        async with running_bridge(port) as first:
            await page.goto(f"{first.url}/")
            await page.wait_for_function("document.body.dataset.ready === 'true'")
            async with mcp_client(first) as client:
                await wait_for_tools(client, "agui_user_confirm")
            old_session = next(iter(first.hub.sessions))
            # A call in flight when the bridge goes away (made in-process: no agent connection to tear down).
            stranded = asyncio.create_task(first.hub.call(first.hub.room("default").get("agui_user_confirm"),
                                                          {"title": "Across a restart?"}))
            await page.get_by_role("dialog", name="Across a restart?").wait_for()
        # The bridge is gone: the page notices and keeps trying, with backoff.
        await page.wait_for_function("window.aguiBridge.state === 'reconnecting'")
        assert await page.text_content("#state") == "reconnecting"
        async with running_bridge(port) as second:
            await page.wait_for_function("window.aguiBridge.state === 'open'", timeout=15000)
            # The new bridge never heard of that call: the page stops it and closes its dialog.
            await page.get_by_role("dialog").wait_for(state="detached")
            stranded.cancel()
            async with mcp_client(second) as client:
                listed = await wait_for_tools(client, *USER_TOOLS, *PAGE_TOOLS)
                assert len(listed) == len(USER_TOOLS) + len(PAGE_TOOLS)
                assert old_session not in second.hub.sessions, "a new bridge knows nothing of the old session"
                # Invocations flow on the new event stream.
                call = await call_in_background(client, "agui_user_confirm", {"title": "Back again?"})
                await page.get_by_role("dialog", name="Back again?").get_by_role("button", name="OK").click()
                assert text_of(await asyncio.wait_for(call, 10)) == "ok"
            assert await page.text_content("#state") == "open"
    finally:
        await context.close()


async def test_resumes_its_session_after_a_dropped_socket(browser, bridge):
    async with bare_page(bridge, "Resume") as url, open_page(browser, url, relay=True) as page, \
            mcp_client(bridge) as client:
        await page.evaluate("""() => bridge.registerTool({name: "slow_echo", description: "Echo after a while"},
            async (params, {signal}) => { await new Promise(r => setTimeout(r, 600)); return params; })""")
        await wait_for_tools(client, "slow_echo")
        session_id = await page.evaluate("bridge.sessionId")
        call = await call_in_background(client, "slow_echo", {"x": 1})
        await eventually(lambda: len(bridge.hub.calls) == 1)
        # Drop the page's WebSocket (not a deliberate close): the page answers while away, resumes
        # within the grace period and delivers the held answer.
        await page.relayed[-1].drop()
        result = await asyncio.wait_for(call, 10)
        assert result.structured_content == {"x": 1}
        await page.wait_for_function("bridge.state === 'open'")
        assert await page.evaluate("bridge.sessionId") == session_id
        assert list(bridge.hub.sessions) == [session_id]
        assert "reconnecting" in await page.evaluate("window.states")


async def test_replayed_invocations_run_once(browser, bridge):
    async with bare_page(bridge, "Replay") as url, open_page(browser, url) as page, \
            mcp_client(bridge) as client:
        streamed = await watch_event_streams(page)
        await page.evaluate("""() => {
            window.runs = 0;
            const released = new Promise((resolve) => { window.release = resolve; });
            return bridge.registerTool({name: "count_runs"}, async () => {
                window.runs++;
                await released;
                return window.runs;
            });
        }""")
        await wait_for_tools(client, "count_runs")
        call = await call_in_background(client, "count_runs", {})
        await page.wait_for_function("window.runs === 1")

        def invocations() -> list[dict]:
            return [m for m in streamed if m["eventName"] == "agui.tool.invoke"]

        (first,) = invocations()

        # The page's stream loses its way back: the client then opens a new stream, which says where
        # it stopped, and on the way to the bridge it forgets. A fresh stream (one that does not say)
        # is sent the invocations still waiting: the page must not run them again.
        asked_from = []

        async def lose_the_way_back(route):
            url = urlsplit(route.request.url)
            query = parse_qs(url.query)
            asked_from.append(query.pop("last_event_id", None))
            if len(asked_from) == 1:  # the EventSource's own reconnection: it gives up on a 503
                await route.fulfill(status=503)
            else:
                await route.continue_(url=urlunsplit(url._replace(query=urlencode(query, doseq=True))))

        await page.route("**/agui/events?*", lose_the_way_back)
        # Another stream of the session supersedes the page's (one stream a session): the bridge ends
        # the page's stream, and the page's EventSource reconnects by itself. This one stays open
        # until the page's stream is back, so the bridge does not count the page as gone meanwhile.
        async with httpx.AsyncClient(timeout=None) as http, \
                http.stream("GET", await page.evaluate("bridge.eventsUrl")) as other:
            assert other.status_code == 200
            await eventually(lambda: len(invocations()) == 2)
        assert asked_from == [None, [first["eventId"]]], "the client's new stream said where it stopped"
        assert "events_failed" in await page.evaluate("window.errors.map((e) => e.code)")
        assert json.loads(invocations()[1]["data"])["call_id"] == json.loads(first["data"])["call_id"], \
            "the bridge did replay the invocation"
        await page.evaluate("release()")
        result = await asyncio.wait_for(call, 10)
        assert text_of(result) == "1"
        assert await page.evaluate("window.runs") == 1
        assert len(invocations()) == 2, "one replay"


async def test_an_answer_lost_with_the_socket_is_sent_again(browser, bridge):
    async with bare_page(bridge, "Lost answer") as url, open_page(browser, url) as page, \
            mcp_client(bridge) as client:
        lost = []

        def route(ws):  # between the page and the bridge: the first answer dies with its connection
            server = ws.connect_to_server()

            def from_page(message):
                if not lost and json.loads(message).get("type") == "agui.tool.return":
                    lost.append(message)
                    asyncio.ensure_future(ws.close(code=4999, reason="test: lost with the connection"))
                else:
                    server.send(message)
            ws.on_message(from_page)

        await page.route_web_socket("**/agui/ws", route)  # takes effect from the next load on
        await page.goto(url)
        await page.wait_for_function("document.body.dataset.ready === 'true'")
        await page.evaluate("""() => { window.runs = 0; return bridge.registerTool({name: "run_once"}, async () => {
            window.runs++;
            await new Promise(r => setTimeout(r, 300));
            return "ran";
        }) }""")
        await wait_for_tools(client, "run_once")
        call = await call_in_background(client, "run_once", {})
        result = await asyncio.wait_for(call, 10)  # the bridge's welcome said it still waits: sent again
        assert lost and text_of(result) == "ran"
        assert await page.evaluate("window.runs") == 1


async def test_unregister_by_signal_and_disconnect(browser):
    # A long grace period: disconnect() removes the page at once only because it closes with code 1000.
    async with running_bridge(page_grace=30) as bridge, bare_page(bridge, "Signals") as url, \
            open_page(browser, url) as page, mcp_client(bridge) as client:
        name = await page.evaluate("""async () => {
            window.controller = new AbortController();
            return bridge.registerTool({name: "temporary tool!", description: "Here for a while"}, () => "hi",
                                       {signal: controller.signal});
        }""")
        assert name == "temporary_tool_", "the bridge gave an MCP-safe name"
        await wait_for_tools(client, "temporary_tool_")
        await page.evaluate("controller.abort()")
        await wait_for_tools(client, absent=("temporary_tool_",))
        await page.evaluate("bridge.disconnect()")
        await eventually(lambda: not bridge.hub.sessions, timeout=2)
        assert await page.evaluate("window.states.at(-1)") == "closed"


async def test_webmcp_page_is_bridged(browser, bridge):
    async with open_page(browser, bridge.url + "/client/webmcp-demo.html") as page, mcp_client(bridge) as client:
        listed = await wait_for_tools(client, "get_page_title", "add_to_cart", "early_tool")
        assert "temporary_tool" in listed
        result = await client.call_tool("add_to_cart", {"productId": "sku-42", "quantity": 2})
        assert not result.is_error
        assert text_of(result) == "Added 2 × sku-42 to the cart."
        assert await page.evaluate("window.cart") == [{"productId": "sku-42", "quantity": 2}]
        # A tool registered before the adapter ran is executed through the runtime's executeTool().
        result = await client.call_tool("early_tool", {"word": "hello"})
        assert text_of(result) == "early: hello"
        title = await client.call_tool("get_page_title", {})
        assert title.structured_content == {"title": "WebMCP demo shop"}
        # Aborting the WebMCP registration signal unregisters the tool from the bridge.
        await page.evaluate("window.temporaryRegistration.abort()")
        await wait_for_tools(client, absent=("temporary_tool",))
        # Tools registered later are mirrored too; execute() gets the input and a client with a signal.
        await page.evaluate("""() => document.modelContext.registerTool({
            name: "late_tool", description: "Registered after bridging",
            inputSchema: {type: "object", properties: {n: {type: "number"}}},
            execute: (input, client) => ({n2: input.n * 2, hasSignal: client.signal instanceof AbortSignal}),
        })""")
        await wait_for_tools(client, "late_tool")
        result = await client.call_tool("late_tool", {"n": 21})
        assert result.structured_content == {"n2": 42, "hasSignal": True}
        # The older unregisterTool(name) is wrapped too.
        await page.evaluate("document.modelContext.unregisterTool('late_tool')")
        await wait_for_tools(client, "add_to_cart", absent=("late_tool",))
        # A WebMCP tool that throws gives the agent an error result.
        await page.evaluate("""() => document.modelContext.registerTool({
            name: "broken_tool", description: "Always fails", execute: () => { throw new RangeError("out of stock"); },
        })""")
        await wait_for_tools(client, "broken_tool")
        result = await client.call_tool("broken_tool", {})
        assert result.is_error and text_of(result) == "out of stock"


# Published WebMCP runtimes (npm packages' IIFE builds), installed by `scripts/setup --test` from tests/webmcp/.
WEBMCP_RUNTIMES = {
    "webmcp-polyfill": WEBMCP_PACKAGES / "webmcp-polyfill" / "dist" / "index.iife.js",
    "mcp-b-global": WEBMCP_PACKAGES / "global" / "dist" / "index.iife.js",
}


@pytest.mark.parametrize("runtime", sorted(WEBMCP_RUNTIMES))
async def test_webmcp_page_is_bridged_with_a_real_runtime(browser, bridge, runtime):
    """The WebMCP page on a published WebMCP runtime instead of its stand-in."""
    script = WEBMCP_RUNTIMES[runtime]
    assert script.is_file(), f"{script} is missing: run scripts/setup --test (npm ci in tests/webmcp)"
    context = await browser.new_context()
    try:
        page = await context.new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text))
        page.on("pageerror", lambda e: console.append(str(e)))
        await page.route(lambda url: url.split("?")[0].endswith("/webmcp-runtime.js"),
                         lambda route: route.fulfill(path=script, content_type="text/javascript"))
        await page.goto(bridge.url + "/client/webmcp-demo.html?polyfill=/webmcp-runtime.js")
        try:
            await page.wait_for_function("document.body.dataset.ready === 'true'", timeout=10000)
        except Exception:
            print(*console, sep="\n")
            raise
        assert await page.text_content("#runtime") == "WebMCP polyfill"
        async with mcp_client(bridge) as client:
            await wait_for_tools(client, "get_page_title", "add_to_cart", "early_tool", "temporary_tool")
            result = await client.call_tool("add_to_cart", {"productId": "sku-7"})
            assert text_of(result) == "Added 1 × sku-7 to the cart."
            assert text_of(await client.call_tool("early_tool", {"word": "hi"})).endswith("early: hi")
            await page.evaluate("window.temporaryRegistration.abort()")
            await wait_for_tools(client, absent=("temporary_tool",))
    finally:
        await context.close()
