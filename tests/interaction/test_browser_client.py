"""The browser client in real Chromium when the bridge is not there yet, and with page and agent tokens.

Pages are served from their own origin (a static server on another port) or by the bridge itself
(the demo page, the dashboard); the agent is the MCP SDK client.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import websockets
from browser_support import mcp_client, open_page, serve_html, static_server, text_of, wait_for_tools
from support import eventually, free_port, running_bridge

READY = "document.body.dataset.ready"  # set once the page has connected, or failed to
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "pT0k3n-for-the-tests_x1"
AGENT_TOKEN = "aT0k3n-for-the-dashboard"

# A page of its own origin with its own copy of the client (as an app bundling it would have), opened
# before its bridge runs. One connection is made with `new AguiBridge()` + `start()`, listened to (and
# given a tool) before it connects; the other with the usual `await connect()`.
EARLY_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Early page</title></head><body>
<script type="module">
import { AguiBridge, connect } from "./client/agui-bridge.js";
const url = new URLSearchParams(location.search).get("bridge");
window.loadedAt = performance.timeOrigin;
window.states = [];
window.errors = [];
const bridge = new AguiBridge({ url });
window.bridge = bridge;
bridge.addEventListener("statechange", (e) => window.states.push(e.detail.state));
bridge.addEventListener("error", (e) => window.errors.push(e.detail.code));
bridge.registerTool({ name: "early_tool", description: "Registered before the bridge was up." }, () => "early");
bridge.start().then(() => { window.started = true; }, (error) => { window.failed = error.code; });
connect({ url }).then(
  (connected) => connected.registerTool({ name: "awaited_tool" }, () => "awaited"),
  (error) => { window.failed = error.code; });
document.body.dataset.ready = "true";
</script></body></html>"""

# A page that connects with the token in its query (a test's choice; the demo takes it from the fragment),
# at once, or with ?manual when the test calls go().
TOKEN_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Token page</title></head><body>
<script type="module">
import * as agui from "{bridge}/client/agui-bridge.js";
const query = new URLSearchParams(location.search);
window.states = [];
window.errors = [];
const bridge = new agui.AguiBridge({{url: "{bridge}", token: query.get("token"), reconnectDelay: 100,
                                    maxReconnectDelay: 500}});
window.bridge = bridge;
bridge.addEventListener("statechange", (e) => window.states.push(e.detail.state));
bridge.addEventListener("error", (e) => window.errors.push(e.detail));
window.go = async () => {{
  try {{
    await bridge.start();
  }} catch (error) {{
    window.connectError = {{name: error.name, code: error.code, message: error.message, detail: error.detail}};
  }}
  document.body.dataset.ready = "true";
}};
if (query.has("manual")) document.body.dataset.ready = "loaded";
else await go();
</script></body></html>"""


@contextmanager
def served(name: str, html: str, *, with_client: bool = False):
    """Serve one page from its own local origin, with a copy of the client beside it under client/."""
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, name).write_text(html, encoding="utf-8")
        if with_client:
            shutil.copytree(ROOT / "web_client", Path(directory, "client"))
        with static_server(Path(directory)) as origin:
            yield f"{origin}/{name}"


async def test_a_page_opened_before_the_bridge_connects_once_it_starts(browser):
    port = free_port()
    with served("early.html", EARLY_PAGE, with_client=True) as url:
        async with open_page(browser, f"{url}?bridge={quote(f'http://127.0.0.1:{port}/')}", ready=READY) as page:
            loaded_at = await page.evaluate("window.loadedAt")
            await asyncio.sleep(5)  # the bridge starts 5 s after the page
            assert await page.evaluate("window.failed ?? null") is None, "connect() gave up"
            assert await page.evaluate("bridge.state") == "reconnecting"
            assert await page.evaluate("window.states") == ["reconnecting"]
            errors = await page.evaluate("window.errors")
            assert set(errors) == {"unreachable"} and len(errors) < len(page.sockets) / 2, "said, but not each attempt"
            assert len(page.sockets) >= 4, f"it kept trying: {len(page.sockets)} attempts"

            async with running_bridge(port) as bridge, mcp_client(bridge) as client:
                started = asyncio.get_running_loop().time()
                await wait_for_tools(client, "early_tool", "awaited_tool", timeout=20)
                assert asyncio.get_running_loop().time() - started < 20
                assert text_of(await client.call_tool("early_tool", {})) == "early"
                assert text_of(await client.call_tool("awaited_tool", {})) == "awaited"
                assert await page.evaluate("window.started") is True
                assert await page.evaluate("window.states") == ["reconnecting", "open"]
                assert await page.evaluate("window.loadedAt") == loaded_at, "the page was not reloaded"


# A page of its own origin pointed at a port where nothing listens (a wrong port, or a bridge not started).
WRONG_PORT_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Wrong port</title></head><body>
<script type="module">
import { AguiBridge } from "./client/agui-bridge.js";
window.errors = [];
const bridge = new AguiBridge({ url: new URLSearchParams(location.search).get("bridge"), reconnectDelay: 100,
                                maxReconnectDelay: 400 });
window.bridge = bridge;
bridge.addEventListener("error", (e) => window.errors.push(e.detail));
bridge.start().then(() => { window.started = true; }, (error) => { window.failed = error.code; });
document.body.dataset.ready = "true";
</script></body></html>"""


async def test_a_page_that_cannot_reach_the_bridge_says_which_url_and_what_to_check(browser):
    port = free_port()
    url, socket_url = f"http://127.0.0.1:{port}/", f"ws://127.0.0.1:{port}/agui/ws"
    with served("wrong-port.html", WRONG_PORT_PAGE, with_client=True) as page_url:
        async with open_page(browser, f"{page_url}?bridge={quote(url)}", ready=READY) as page:
            def said() -> list[str]:
                return [line for line in page.console if "agui-bridge:" in line]

            # After a few failed attempts, the console says which URL and what to check; so does an error event.
            first = (await eventually(said))[0]
            assert first.startswith("warning: agui-bridge: Cannot reach the bridge at " + url), first
            assert socket_url in first and f"on 127.0.0.1:{port}?" in first and "connect({ url })" in first
            report = (await page.evaluate("window.errors"))[0]
            assert report["code"] == "unreachable" and report["message"] in first
            assert (report["url"], report["webSocketUrl"], report["attempts"]) == (url, socket_url, 3)
            assert "Is the bridge running" in report["hint"] and f"127.0.0.1:{port}" in report["hint"]

            # Then rarely: each time the failed attempts double, in the console and as an event alike.
            await eventually(lambda: len(page.sockets) > 12, timeout=20)
            reports = await page.evaluate("window.errors")
            assert [r["attempts"] for r in reports][:3] == [3, 6, 12], reports
            assert len(reports) < len(page.sockets) / 3
            await eventually(lambda: len(said()) == len(reports))
            assert await page.evaluate("bridge.state") == "reconnecting"
            assert await page.evaluate("window.failed ?? null") is None, "start() keeps waiting"

            # The bridge starts on that port: the page connects, and says so.
            async with running_bridge(port) as bridge:
                await page.wait_for_function("window.started === true", timeout=20_000)
                assert len(bridge.hub.sessions) == 1
                connected = (await eventually(lambda: said()[len(reports):]))[0]
                assert connected.startswith(f"info: agui-bridge: connected to the bridge at {url} after "), connected


async def test_the_demo_page_takes_its_page_token_from_the_fragment(browser):
    async with running_bridge(token=TOKEN) as bridge:
        async with open_page(browser, f"{bridge.url}/#token={TOKEN}",
                                ready="document.body.dataset.ready === 'true'") as page, \
                mcp_client(bridge) as client:
            await wait_for_tools(client, "agui_user_confirm", "page_read_form")
            assert await page.text_content("#state") == "open"
            # Out of the address bar (a link copied from there does not carry it), kept for the tab.
            assert await page.evaluate("location.href") == f"{bridge.url}/"
            session_id = await page.evaluate("aguiBridge.sessionId")
            await page.reload()
            await page.wait_for_function("document.body.dataset.ready === 'true'")
            assert await page.evaluate("aguiBridge.sessionId") == session_id, "the reload resumed its session"
            assert await page.text_content("#state") == "open"


async def test_a_wrong_or_missing_page_token_rejects_connect_and_is_not_retried(browser):
    async with running_bridge(token=TOKEN) as bridge:
        # The demo page with a wrong token says which, with the bridge's words and how to pass one.
        async with open_page(browser, f"{bridge.url}/#token=wrong",
                                ready="document.body.dataset.ready === 'failed'") as page:
            state = await page.text_content("#state")
            assert state.startswith("closed: unauthorized:"), state
            assert "is not the one it needs" in state and "#token=" in state
            await asyncio.sleep(1.5)  # time for a few retries (250 ms backoff), were there any
            assert len(page.sockets) == 1, page.sockets

        with served("token.html", TOKEN_PAGE.format(bridge=bridge.url)) as url:
            for query, problem in (("?token=wrong", "is not the one it needs"), ("", "is missing")):
                async with open_page(browser, url + query, ready=READY) as page:
                    error = await page.evaluate("window.connectError")
                    assert error["name"] == "AguiBridgeError" and error["code"] == "unauthorized", error
                    assert problem in error["message"], error
                    await asyncio.sleep(1)  # ten retries' worth at 100 ms, were there any
                    assert len(page.sockets) == 1, page.sockets
                    assert await page.evaluate("window.states") == ["closed"]
        assert not bridge.hub.sessions


async def wrong_guesses(bridge, count: int) -> None:
    """`count` wrong page tokens from this address (each costs its socket)."""
    for _ in range(count):
        async with websockets.connect(bridge.ws_url) as ws:
            await ws.send(json.dumps({"type": "agui.hello", "id": 1, "token": "guess"}))
            assert json.loads(await ws.recv())["code"] in ("unauthorized", "too_many_attempts")


async def test_too_many_wrong_tokens_reject_connect_with_retry_after(browser):
    async with running_bridge(token=TOKEN) as bridge:
        with served("token.html", TOKEN_PAGE.format(bridge=bridge.url)) as url:
            async with open_page(browser, f"{url}?token={TOKEN}&manual", ready=READY) as page:
                # The bucket refills one guess a second: the page says hello right after the guesses.
                await wrong_guesses(bridge, 10)
                await page.evaluate("go()")
                error = await page.evaluate("window.connectError")
                assert error["code"] == "too_many_attempts", error
                assert "Too many wrong page tokens" in error["message"]
                assert 0 < error["detail"]["retry_after"] <= 10, error
                await asyncio.sleep(error["detail"]["retry_after"] + 0.5)
                await page.reload()  # the caller tries again when told it may
                await page.wait_for_function("document.body.dataset.ready === 'loaded'")
                await page.evaluate("go()")
                assert await page.evaluate("window.connectError ?? null") is None
                assert await page.evaluate("bridge.state") == "open"


async def test_a_reconnecting_page_slowed_down_by_others_guesses_comes_back(browser):
    # Its token was taken before: wrong guesses from the same address only delay its return.
    async with running_bridge(token=TOKEN, page_grace=30) as bridge, mcp_client(bridge) as client:
        with served("token.html", TOKEN_PAGE.format(bridge=bridge.url)) as url:
            async with open_page(browser, f"{url}?token={TOKEN}", ready=READY, relay=True) as page:
                await page.evaluate("bridge.registerTool({name: 'still_here'}, () => 'here')")
                await wait_for_tools(client, "still_here")
                session_id = await page.evaluate("bridge.sessionId")
                await wrong_guesses(bridge, 10)
                await page.relayed[-1].drop()
                await page.wait_for_function("window.errors.some(e => e.code === 'too_many_attempts')")
                await page.wait_for_function("bridge.state === 'open'")
                assert await page.evaluate("bridge.sessionId") == session_id
                assert await page.evaluate("window.states") == ["open", "reconnecting", "open"]
                assert text_of(await client.call_tool("still_here", {})) == "here"


async def test_the_dashboard_takes_the_agent_token_from_the_fragment(browser):
    async with running_bridge(agent_token=AGENT_TOKEN) as bridge:
        async with open_page(browser, f"{bridge.url}/", ready=READY) as demo, \
                open_page(browser, f"{bridge.url}/dashboard#agent_token={AGENT_TOKEN}", ready=None) as dashboard:
            await demo.wait_for_function("document.body.dataset.ready === 'true'")
            await dashboard.locator("#rooms").get_by_text("agui-mcp-bridge demo").wait_for()
            assert "agui_user_confirm" in await dashboard.text_content("#rooms")
            assert await dashboard.text_content("#status") == "live"
            assert await dashboard.evaluate("location.href") == f"{bridge.url}/dashboard"
            await dashboard.reload()  # kept for the tab
            await dashboard.locator("#rooms").get_by_text("agui-mcp-bridge demo").wait_for()
        # Without it (the prompt dismissed) the dashboard says what it needs, not "unreachable".
        async with open_page(browser, f"{bridge.url}/dashboard", ready=None) as dashboard:
            await dashboard.wait_for_function("document.getElementById('status').dataset.state === 'closed'")
            assert "agent token" in await dashboard.text_content("#status")


# A page whose tool asks the agent's side for the user's name (ctx.askAgent) and logs (ctx.log).
ASKING_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Asking page</title></head><body>
<script type="module">
import {{ connect }} from "{bridge}/client/agui-bridge.js";
const bridge = await connect({{ url: "{bridge}" }});
window.runs = [];
await bridge.registerTool({{ name: "greet_user", description: "Greet the user by name." }}, async (params, ctx) => {{
  window.runs.push({{ state: ctx.requestState ?? null, capabilities: Object.keys(ctx.clientCapabilities) }});
  ctx.log("info", "asking for a name", "greeter");
  const {{ name }} = await ctx.askAgent({{ name: {{ method: "elicitation/create", params: {{
    mode: "form", message: "Your name?",
    requestedSchema: {{ type: "object", properties: {{ name: {{ type: "string" }} }}, required: ["name"] }} }} }} }},
    {{ step: 2 }});
  ctx.log("debug", "not asked for");
  return `Hello, ${{name.content.name}}!`;
}});
document.body.dataset.ready = "true";
</script></body></html>"""


async def test_a_tool_asks_the_agents_user_for_input_and_logs_through_the_browser_client(browser):
    import mcp_types as types
    from mcp import Client

    logged: list[tuple[str, object]] = []

    async def elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append((params.level, params.data))

    async with running_bridge() as bridge:
        with serve_html(ASKING_PAGE.format(bridge=bridge.url.rstrip("/"))) as url:
            async with open_page(browser, url, ready=READY) as page, \
                    Client(bridge.mcp_url(), mode="legacy", elicitation_callback=elicit,
                           logging_callback=on_log) as client:
                await wait_for_tools(client, "greet_user")
                await client.set_logging_level("info")
                result = await client.call_tool("greet_user", {})
                assert text_of(result) == "Hello, Ada!"
                runs = await page.evaluate("window.runs")
                assert runs == [{"state": None, "capabilities": ["elicitation"]},
                                {"state": {"step": 2}, "capabilities": ["elicitation"]}]
                assert logged == [("info", "asking for a name"), ("info", "asking for a name")]
