"""Declarative WebMCP in real Chromium: a page's `<form toolname>`s are tools (forms.js, on by default in connect()),
with the MCP SDK client as the agent against a real bridge.

Each test serves its page from its own origin; the page connects with no code about its forms.
"""

from __future__ import annotations

import asyncio
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from browser_support import (
    WEBMCP_POLYFILL as POLYFILL,
)
from browser_support import (
    mcp_client,
    open_page,
    static_server,
    text_of,
    wait_for_tools,
)
from support import eventually

BOOKING_FORM = """
<div style="height: 2500px">Our menu…</div>
<form id="booking" toolname="book_table" tooldescription="Book a table at the restaurant." toolautosubmit>
  <label for="name">Your name</label> <input id="name" name="name" required>
  <label>Guests <input type="number" name="guests" min="1" max="8" required></label>
  <label for="time">Time</label>
  <select id="time" name="time" required>
    <option value="">Choose…</option><option value="18:00">6 pm</option><option value="20:00">8 pm</option>
  </select>
  <fieldset toolparamdescription="Where to sit">
    <legend>Seating</legend>
    <label><input type="radio" name="seating" value="inside"> Inside</label>
    <label><input type="radio" name="seating" value="terrace"> Terrace</label>
  </fieldset>
  <label><input type="checkbox" name="highchair"> A high chair</label>
  <input name="notes" toolparamdescription="Anything the kitchen should know, e.g. allergies">
  <input type="hidden" name="source" value="web">
  <button type="submit">Book</button>
</form>
"""

# The page's own code knows nothing of agents: it takes its forms' submissions as it always did.
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Restaurant</title>{head}</head><body>
{body}
<script type="module">
import * as agui from "{bridge}/client/agui-bridge.js";
window.agui = agui;
window.submissions = [];
window.inputEvents = 0;
window.errors = [];
document.addEventListener("input", () => window.inputEvents++);
document.addEventListener("submit", (event) => {{
  const form = event.target;
  window.submissions.push({{form: form.id, agentInvoked: event.agentInvoked === true,
                           values: Object.fromEntries(new FormData(form, event.submitter))}});
  if (form.dataset.navigates === undefined) event.preventDefault();  // handled here, as a single-page app does
}});
window.bridge = await agui.connect({{url: "{bridge}", ...{options}}});
window.bridge.addEventListener("error", (event) => window.errors.push(event.detail));
window.invocations = 0;
window.bridge.addEventListener("invoke", () => window.invocations++);
{script}
document.body.dataset.ready = "true";
</script></body></html>"""

BOOKING_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Your name"},
        "guests": {"type": "integer", "minimum": 1, "maximum": 8, "description": "Guests"},
        "time": {"type": "string", "enum": ["18:00", "20:00"],
                 "oneOf": [{"const": "18:00", "title": "6 pm"}, {"const": "20:00", "title": "8 pm"}],
                 "description": "Time"},
        "seating": {"type": "string", "enum": ["inside", "terrace"],
                    "oneOf": [{"const": "inside", "title": "Inside"}, {"const": "terrace", "title": "Terrace"}],
                    "description": "Where to sit"},
        "highchair": {"type": "boolean", "description": "A high chair"},
        "notes": {"type": "string", "description": "Anything the kitchen should know, e.g. allergies"},
    },
    "additionalProperties": False,
    "required": ["name", "guests", "time"],
}


@asynccontextmanager
async def form_page(browser, bridge, body: str, *, script: str = "", options: str = "{}", head: str = "",
                    files: dict[str, str] | None = None):
    """The page (and `files` beside it) on its own origin; `script` runs after connect()."""
    with tempfile.TemporaryDirectory() as directory:
        for name, content in (files or {}).items():
            Path(directory, name).write_text(content, encoding="utf-8")
        html = PAGE.format(bridge=bridge.url, body=body, script=script, options=options, head=head)
        Path(directory, "index.html").write_text(html, encoding="utf-8")
        with static_server(Path(directory)) as origin:
            async with open_page(browser, f"{origin}/index.html") as page:
                yield page


async def listed_tool(client, name: str):
    return {t.name: t for t in (await client.list_tools(cache_mode="bypass")).tools}[name]


async def test_a_form_is_a_tool_an_agent_fills_and_submits(browser, bridge):
    async with form_page(browser, bridge, BOOKING_FORM) as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "book_table")
        tool = await listed_tool(client, "book_table")
        assert tool.description == "Book a table at the restaurant."
        assert tool.input_schema == BOOKING_SCHEMA
        assert await page.evaluate("document.getElementById('booking').getBoundingClientRect().top") > 900, \
            "the form starts out of view"

        arguments = {"name": "Ada", "guests": 4, "time": "20:00", "seating": "terrace", "highchair": True}
        result = await client.call_tool("book_table", arguments)
        assert not result.is_error, text_of(result)
        # No respondWith(): the result is the submitted values, typed as the schema says.
        assert result.structured_content == {"values": {**arguments, "notes": "", "source": "web"}}
        # The page's own submit handler saw the submission, as from its user, marked as an agent's.
        assert await page.evaluate("window.submissions") == [{"form": "booking", "agentInvoked": True, "values": {
            "name": "Ada", "guests": "4", "time": "20:00", "seating": "terrace", "highchair": "on", "notes": "",
            "source": "web"}}]
        # Filled where the user sees it: in view, the fields showing the values.
        top = await page.evaluate("document.getElementById('booking').getBoundingClientRect().top")
        assert 0 <= top < 900
        assert await page.input_value("#name") == "Ada"
        assert await page.is_checked("input[value=terrace]") and await page.is_checked("input[name=highchair]")
        assert await page.evaluate("document.getElementById('booking').hasAttribute('data-tool-form-active')") is False


async def test_invalid_arguments_are_refused_before_the_page_is_touched(browser, bridge):
    async with form_page(browser, bridge, BOOKING_FORM) as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "book_table")
        valid = {"name": "Ada", "guests": 2, "time": "18:00"}
        for wrong in ({"guests": 99}, {"guests": 0}, {"guests": 2.5}, {"time": "23:00"}, {"seating": "roof"},
                      {"dessert": "cake"}, {"highchair": "yes"}):
            result = await client.call_tool("book_table", {**valid, **wrong})
            assert result.is_error, wrong
        result = await client.call_tool("book_table", {"guests": 2})
        assert result.is_error and "name" in text_of(result), "a required field missing"
        assert await page.evaluate("window.invocations") == 0, "the bridge refused them: the page was not asked"
        assert await page.evaluate("window.inputEvents") == 0
        assert await page.evaluate("window.submissions") == []
        assert await page.input_value("#name") == ""
        # The next valid call goes through.
        result = await client.call_tool("book_table", valid)
        assert result.structured_content["values"]["guests"] == 2


WAITING_FORM = """
<form id="message" toolname="send_message" tooldescription="Send a message to the shop.">
  <label for="to">To</label> <input id="to" type="email" name="to" required>
  <label for="body">Message</label> <textarea id="body" name="body" required></textarea>
  <button type="submit">Send</button>
</form>
"""


async def test_without_autosubmit_the_call_waits_for_the_user_to_submit(browser, bridge):
    async with form_page(browser, bridge, WAITING_FORM) as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "send_message")
        schema = (await listed_tool(client, "send_message")).input_schema
        assert schema["properties"]["to"] == {"type": "string", "format": "email", "description": "To"}
        seen: list[str | None] = []

        async def on_progress(progress, total, message):
            seen.append(message)

        call = asyncio.create_task(client.call_tool("send_message", {"to": "shop@example.com", "body": "Hello"},
                                                    progress_callback=on_progress))
        await page.wait_for_function("document.getElementById('body').value === 'Hello'")
        await eventually(lambda: any(m and "waiting for the user" in m for m in seen))
        assert any("press Send" in m for m in seen if m)
        assert await page.evaluate("document.activeElement.textContent") == "Send", "the submit button has focus"
        assert await page.evaluate("document.getElementById('message').hasAttribute('data-tool-form-active')")
        await asyncio.sleep(0.3)
        assert not call.done(), "nothing is sent before the user submits"
        assert await page.evaluate("window.submissions") == []
        # The user changes a word, then presses Send: the call completes with what was sent.
        await page.fill("#body", "Hello there")
        await page.get_by_role("button", name="Send").click()
        result = await asyncio.wait_for(call, 10)
        assert result.structured_content == {"values": {"to": "shop@example.com", "body": "Hello there"}}
        assert await page.evaluate("window.submissions[0].agentInvoked") is True

        # An agent that gives up leaves what the user typed.
        call = asyncio.create_task(client.call_tool("send_message", {"to": "shop@example.com", "body": "Again"}))
        await page.wait_for_function("document.getElementById('body').value === 'Again'")
        await page.fill("#body", "Again, with my words")
        await eventually(lambda: len(bridge.hub.calls) == 1)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await page.wait_for_function("!document.getElementById('message').hasAttribute('data-tool-form-active')")
        assert await page.input_value("#body") == "Again, with my words"
        assert await page.input_value("#to") == "shop@example.com"
        # A submission nobody asked for answers no call.
        await page.get_by_role("button", name="Send").click()
        await page.wait_for_function("window.submissions.length === 2")
        assert await page.evaluate("window.submissions[1].agentInvoked") is False

        # A newer call takes the form over (the older one fails); the user resetting the form fails the call.
        first = asyncio.create_task(client.call_tool("send_message", {"to": "a@example.com", "body": "First"}))
        await page.wait_for_function("document.getElementById('body').value === 'First'")
        second = asyncio.create_task(client.call_tool("send_message", {"to": "b@example.com", "body": "Second"}))
        result = await asyncio.wait_for(first, 10)
        assert result.is_error and "newer call" in text_of(result)
        await page.wait_for_function("document.getElementById('body').value === 'Second'")
        await page.evaluate("document.getElementById('message').reset()")
        result = await asyncio.wait_for(second, 10)
        assert result.is_error and "reset" in text_of(result)
        assert await page.evaluate("window.submissions.length") == 2


ANSWERING_FORM = """
<form id="availability" toolname="check_availability" tooldescription="Whether a day has free tables."
      toolautosubmit>
  <label>Day <input type="date" name="day" required></label>
  <button>Check</button>
</form>
<form id="search" toolname="search_menu" tooldescription="Search the menu." action="results.html" toolautosubmit
      data-navigates>
  <label>Dish <input type="search" name="q" required></label>
  <button name="go" value="1">Search</button>
</form>
"""

# The page answers agents from its submit handler: respondWith() (after preventDefault(), as the draft says).
ANSWERING_SCRIPT = """
const day = document.querySelector("#availability [name=day]");
day.addEventListener("change", () =>
  day.setCustomValidity(day.value.endsWith("-04") ? "We are closed on Mondays." : ""));
document.getElementById("availability").addEventListener("submit", (event) => {
  if (!event.agentInvoked) return;
  event.preventDefault();
  const day = event.target.elements.day.value;
  event.respondWith(new Promise((resolve) => setTimeout(() => resolve({day, free: day.endsWith("-01") ? 0 : 3}), 50)));
});
"""

RESULTS_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Results</title></head>
<body><h1>Results</h1></body></html>"""


async def test_the_page_answers_with_respond_with_or_the_form_navigates(browser, bridge):
    async with form_page(browser, bridge, ANSWERING_FORM, script=ANSWERING_SCRIPT,
                         files={"results.html": RESULTS_PAGE}) as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "check_availability", "search_menu")
        day = (await listed_tool(client, "check_availability")).input_schema["properties"]["day"]
        assert day == {"type": "string", "format": "date", "description": "Day"}
        result = await client.call_tool("check_availability", {"day": "2026-05-02"})
        assert result.structured_content == {"day": "2026-05-02", "free": 3}
        result = await client.call_tool("check_availability", {"day": "not a day"})
        assert result.is_error, "a date the field cannot take"
        # The browser's own check (here the page's custom validity) stops a submission: the agent hears why.
        result = await client.call_tool("check_availability", {"day": "2026-05-04"})
        assert result.is_error and "We are closed on Mondays." in text_of(result)
        assert [s["form"] for s in await page.evaluate("window.submissions")] == ["availability"]
        # A form that navigates: the values and where it goes; the agent has its answer before the page leaves.
        result = await client.call_tool("search_menu", {"q": "green tea"})
        assert not result.is_error, text_of(result)
        origin = page.url.rsplit("/", 1)[0]
        assert result.structured_content == {"values": {"q": "green tea", "go": "1"},
                                             "url": f"{origin}/results.html?q=green+tea&go=1"}
        await page.wait_for_url(f"{origin}/results.html?q=green+tea&go=1")


async def test_forms_added_changed_or_removed_later_follow(browser, bridge):
    async with form_page(browser, bridge, "<main></main>") as page, mcp_client(bridge) as client:
        await page.evaluate("""() => document.querySelector("main").insertAdjacentHTML("beforeend", `
            <form id="newsletter" toolname="subscribe" tooldescription="Subscribe to the newsletter." toolautosubmit>
              <input name="email" type="email" aria-description="Where the newsletter goes" required>
              <label><input type="checkbox" name="topics" value="news"> News</label>
              <label><input type="checkbox" name="topics" value="offers"> Offers</label>
            </form>`)""")
        await wait_for_tools(client, "subscribe")
        schema = (await listed_tool(client, "subscribe")).input_schema
        assert schema["properties"]["email"]["description"] == "Where the newsletter goes"
        assert schema["properties"]["topics"] == {"type": "array", "uniqueItems": True, "items": {
            "type": "string", "enum": ["news", "offers"],
            "oneOf": [{"const": "news", "title": "News"}, {"const": "offers", "title": "Offers"}]}}
        result = await client.call_tool("subscribe", {"email": "ada@example.com", "topics": ["offers"]})
        assert result.structured_content == {"values": {"email": "ada@example.com", "topics": ["offers"]}}

        # A field changed: the tool is registered again with the new schema.
        await page.evaluate("""() => document.querySelector("#newsletter").insertAdjacentHTML("beforeend",
            `<label>Copies <input type="number" name="copies" min="1" max="3" step="1"></label>`)""")
        await eventually_schema(client, "subscribe", lambda s: "copies" in s["properties"])
        result = await client.call_tool("subscribe", {"email": "ada@example.com", "copies": 5})
        assert result.is_error, "the new field's maximum is checked"

        # Renamed: the old name leaves, the new one comes; toolname removed: it leaves; a second form of the same
        # name is not served, even earlier in the page (the page hears why).
        await page.evaluate("document.querySelector('#newsletter').setAttribute('toolname', 'join_newsletter')")
        await wait_for_tools(client, "join_newsletter", absent=("subscribe",))
        await page.evaluate("""() => document.querySelector("main").insertAdjacentHTML("afterbegin",
            `<form id="twin" toolname="join_newsletter" toolautosubmit><input name="other"></form>`)""")
        await page.wait_for_function("window.errors.some((e) => e.code === 'webmcp' && e.tool === 'join_newsletter')")
        assert "other" not in (await listed_tool(client, "join_newsletter")).input_schema["properties"]
        await page.evaluate("document.querySelector('#twin').remove()")
        # A toolname the bridge cannot take (over 128 characters): refused, and the page hears why.
        await page.evaluate("""() => document.querySelector("main").insertAdjacentHTML("beforeend",
            `<form id="long" toolname="${'x'.repeat(129)}" toolautosubmit><input name="a"></form>`)""")
        await page.wait_for_function("window.errors.some((e) => e.code === 'webmcp' && e.tool === 'x'.repeat(129))")
        await page.evaluate("document.querySelector('#long').remove()")
        await page.evaluate("document.querySelector('#newsletter').removeAttribute('toolname')")
        await wait_for_tools(client, absent=("join_newsletter",))

        # A form removed while a call waits for its user: the call fails, the tool leaves.
        await page.evaluate("""() => document.querySelector("main").insertAdjacentHTML("beforeend", `
            <form id="feedback" toolname="give_feedback" tooldescription="Tell us what you think.">
              <textarea name="text"></textarea><button>Send</button>
            </form>`)""")
        await wait_for_tools(client, "give_feedback")
        call = asyncio.create_task(client.call_tool("give_feedback", {"text": "Lovely"}))
        await page.wait_for_function("document.querySelector('#feedback textarea').value === 'Lovely'")
        await page.evaluate("document.querySelector('#feedback').remove()")
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and "no longer a tool" in text_of(result)
        await wait_for_tools(client, absent=("give_feedback",))


async def eventually_schema(client, name: str, predicate) -> dict:
    for _ in range(200):
        schema = (await listed_tool(client, name)).input_schema
        if predicate(schema):
            return schema
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name}'s schema never changed: {schema}")


# One control per branch of the schema compiler (forms.js), unlabelled unless the description is the point.
COMPILER_FORM = """
<form id="compiler" toolname="every_branch" tooldescription="Each kind of control.">
  <input name="code" pattern="[A-Z]{3}" required>
  <input name="lookahead" pattern="(?!0)[0-9]+">
  <input name="v_flag" pattern="[(]+">
  <input name="nick" minlength="2" maxlength="10">
  <textarea name="bio" minlength="0" maxlength="500"></textarea>
  <input type="email" name="cc" multiple>
  <input type="number" name="count">
  <input type="number" name="price" min="0" step="0.01">
  <input type="number" name="dozens" min="12" step="12">
  <input type="number" name="odd" min="1" step="2">
  <input type="number" name="tens" step="10" value="20">
  <input type="number" name="ratio" min="0" max="1" step="any">
  <input type="range" name="volume">
  <input type="range" name="balance" min="-1" max="1" step="0.5">
  <input type="time" name="at">
  <input type="datetime-local" name="when">
  <input type="month" name="month">
  <input type="week" name="week" readonly>
  <input type="color" name="colour" readonly>
  <select name="extras" multiple>
    <option value="bread">Bread</option><option value="olives" disabled>Olives</option><option>Wine</option>
  </select>
  <input name="reference" value="A1" readonly>
  <input type="number" name="fixed" value="3" readonly>
  <input name="off" disabled>
  <fieldset disabled><input name="inside"></fieldset>
  <input name="twice"><input name="twice">
  <input type="hidden" name="source" value="web">
  <input type="file" name="upload">
  <label><input type="checkbox" name="terms" required> I accept the terms</label>
  <button>Send</button>
</form>
"""

TIME = r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,3})?)?"
DAY = r"[0-9]{4,}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"

COMPILER_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^(?:[A-Z]{3})$"},  # HTML matches the whole value
        "lookahead": {"type": "string"},  # RE2 (the bridge's matcher) has no lookahead: left to the browser
        "v_flag": {"type": "string"},  # invalid with the v flag HTML compiles patterns with: the browser ignores it
        "nick": {"type": "string", "minLength": 2, "maxLength": 10},
        "bio": {"type": "string", "maxLength": 500},
        "cc": {"type": "string"},  # several addresses: no format
        "count": {"type": "integer"},
        "price": {"type": "number", "minimum": 0, "multipleOf": 0.01},
        "dozens": {"type": "integer", "minimum": 12, "multipleOf": 12},
        "odd": {"type": "integer", "minimum": 1},  # 1, 3, 5…: steps from the minimum, not multiples
        "tens": {"type": "integer", "multipleOf": 10},  # no minimum: steps from the value
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "volume": {"type": "integer", "minimum": 0, "maximum": 100},  # a range's defaults
        "balance": {"type": "number", "minimum": -1, "maximum": 1, "multipleOf": 0.5},
        "at": {"type": "string", "pattern": f"^{TIME}$"},
        "when": {"type": "string", "pattern": f"^{DAY}T{TIME}$"},
        "month": {"type": "string", "pattern": "^[0-9]{4,}-(0[1-9]|1[0-2])$"},
        "colour": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"},  # readonly does not apply to a colour
        "extras": {"type": "array", "uniqueItems": True, "items": {
            "type": "string", "enum": ["bread", "Wine"],
            "oneOf": [{"const": "bread", "title": "Bread"}, {"const": "Wine", "title": "Wine"}]}},
        "terms": {"type": "boolean", "const": True, "description": "I accept the terms"},
    },
    "additionalProperties": False,
    "required": ["code", "terms"],
}


async def test_the_schema_compiled_from_each_kind_of_control(browser, bridge):
    async with form_page(browser, bridge, COMPILER_FORM) as page, mcp_client(bridge) as client:
        definition = await page.evaluate("window.agui.formToolDefinition(document.getElementById('compiler'))")
        assert definition == {"name": "every_branch", "description": "Each kind of control.",
                              "inputSchema": COMPILER_SCHEMA}
        # The bridge takes it as it is.
        await wait_for_tools(client, "every_branch")
        assert (await listed_tool(client, "every_branch")).input_schema == COMPILER_SCHEMA


async def test_serve_forms_with_an_aborted_signal_serves_none(browser, bridge):
    script = """window.handle = window.agui.serveForms(window.bridge, {signal: AbortSignal.abort()});
await window.bridge.registerTool({name: "marker", description: "Registered after serveForms()."}, () => "here");"""
    async with form_page(browser, bridge, BOOKING_FORM, options='{"forms": false}', script=script) as page, \
            mcp_client(bridge) as client:
        listed = await wait_for_tools(client, "marker")
        assert "book_table" not in listed
        assert await page.evaluate("window.handle.tools") == []


async def test_forms_false_serves_no_form(browser, bridge):
    script = """await window.bridge.registerTool({name: "marker", description: "Registered after connect()."},
                                                  () => "here");"""
    async with form_page(browser, bridge, BOOKING_FORM, options='{"forms": false}', script=script), \
            mcp_client(bridge) as client:
        listed = await wait_for_tools(client, "marker")
        assert "book_table" not in listed


async def test_a_form_the_webmcp_runtime_also_makes_a_tool_is_served_once(browser, bridge):
    """With a runtime that compiles forms itself (MCP-B's polyfill, as native declarative WebMCP does), bridged by
    bridgeWebMCP(): the form is served once, by the client, not also as the runtime's tool."""
    assert POLYFILL.is_file(), f"{POLYFILL} is missing: run scripts/setup --test (npm ci in tests/webmcp)"
    script = """window.webmcp = window.agui.bridgeWebMCP(window.bridge);
await window.webmcp.ready;
await document.modelContext.registerTool({name: "imperative_tool", description: "Registered with WebMCP.",
                                          execute: () => "imperative"});"""
    async with form_page(browser, bridge, BOOKING_FORM, script=script, head='<script src="runtime.js"></script>',
                         files={"runtime.js": POLYFILL.read_text(encoding="utf-8")}) as page, \
            mcp_client(bridge) as client:
        await wait_for_tools(client, "book_table", "imperative_tool")
        runtime_tools = await page.evaluate("document.modelContext.getTools().then((ts) => ts.map((t) => t.name))")
        assert "book_table" in runtime_tools, "the runtime made the form a tool of its own"
        assert await page.evaluate("webmcp.tools") == ["imperative_tool"]
        # Touch the form's fields later (a runtime registers the form again): still the client's.
        await page.evaluate("document.querySelector('[name=notes]').setAttribute('toolparamdescription', 'Notes')")
        await eventually_schema(client, "book_table", lambda s: s["properties"]["notes"].get("description") == "Notes")
        assert await page.evaluate("webmcp.tools") == ["imperative_tool"]
        result = await client.call_tool("book_table", {"name": "Ada", "guests": 2, "time": "18:00"})
        assert not result.is_error, text_of(result)
        assert result.structured_content["values"]["name"] == "Ada"
        assert await page.evaluate("window.submissions.length") == 1
        assert text_of(await client.call_tool("imperative_tool", {})) == "imperative"
