"""bridgeWebMCP() against the WebMCP runtimes pages meet today, in real Chromium, with the MCP SDK client as the agent.

Chromium here has no WebMCP, so each runtime is put in the page before its scripts run, as a browser's
would be: MCP-B's published polyfill (tests/webmcp/node_modules), or a small stand-in of Chrome's
`document.modelContext` as it is in Chrome 152 (`executeTool()` takes JSON text, `registerTool()` returns
nothing, `execute(input, client)` gets a ModelContextClient) and in Chrome 155 (the draft: `executeTool()`
takes an object and hands `execute(input, {signal})` the call's signal, `registerTool()` returns a promise).
The stand-ins stand for the browser, not for the adapter under test.
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

# What both stand-ins share: the tools, `toolchange`, and the inputs executeTool() was handed (window.executeInputs).
STAND_IN_BASE = """
window.executeInputs = [];
class StandInModelContext extends EventTarget {
  tools = new Map();
  add(tool, signal) {
    if (this.tools.has(tool.name)) throw new DOMException(`Duplicate tool name: ${tool.name}`, "InvalidStateError");
    this.tools.set(tool.name, tool);
    signal?.addEventListener("abort", () => {
      if (this.tools.get(tool.name) === tool) this.tools.delete(tool.name);
      this.dispatchEvent(new Event("toolchange"));
    }, { once: true });
    this.dispatchEvent(new Event("toolchange"));
  }
  listed(tool) {
    return { name: tool.name, title: tool.title ?? "", description: tool.description ?? "", window,
             origin: location.origin, ...(tool.annotations ? { annotations: tool.annotations } : {}) };
  }
}
"""

CHROME_152 = STAND_IN_BASE + """
class ModelContext152 extends StandInModelContext {
  registerTool(tool, { signal } = {}) {  // returns nothing; an aborted signal registers nothing
    if (!signal?.aborted) this.add(tool, signal);
  }
  async getTools() {  // the input schema as JSON text
    return [...this.tools.values()].map((t) => ({ ...this.listed(t),
                                                  inputSchema: JSON.stringify(t.inputSchema ?? {}) }));
  }
  async executeTool(registered, inputJson, { signal } = {}) {  // DOMString: an object reads "[object Object]"
    window.executeInputs.push(typeof inputJson);
    let input;
    try {
      input = JSON.parse(String(inputJson));
    } catch {
      throw new DOMException("Failed to parse input arguments", "UnknownError");
    }
    const tool = this.tools.get(registered.name);
    const client = { requestUserInteraction: async (callback) => callback() };  // ModelContextClient
    const running = Promise.resolve(tool.execute(input, client));
    const aborted = new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason)));
    return JSON.stringify(await Promise.race([running, aborted]) ?? null);
  }
}
Object.defineProperty(Document.prototype, "modelContext", { value: new ModelContext152(), configurable: true });
"""

CHROME_155 = STAND_IN_BASE + """
class ModelContext155 extends StandInModelContext {
  async registerTool(tool, { signal } = {}) {
    if (signal?.aborted) throw signal.reason;
    this.add(tool, signal);
  }
  async getTools() {
    return [...this.tools.values()].map((t) => ({ ...this.listed(t), inputSchema: t.inputSchema ?? {} }));
  }
  async executeTool(registered, inputObject = {}, { signal } = {}) {  // `object`: WebIDL refuses text
    window.executeInputs.push(typeof inputObject);
    if (inputObject === null || typeof inputObject !== "object") {
      throw new TypeError("Failed to execute 'executeTool' on 'ModelContext': parameter 2 is not of type 'object'.");
    }
    const tool = this.tools.get(registered.name);
    const call = new AbortController();
    signal?.addEventListener("abort", () => call.abort(signal.reason));
    return JSON.stringify(await tool.execute(inputObject, { signal: call.signal }) ?? null);
  }
}
Object.defineProperty(Document.prototype, "modelContext", { value: new ModelContext155(), configurable: true });
"""

RUNTIMES = {"chrome152": CHROME_152, "chrome155": CHROME_155, "polyfill": None}

# Tools registered before the adapter runs (so run through executeTool()), then the bridging lines.
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>WebMCP shapes</title>
<script src="runtime.js"></script></head><body>
<script type="module">
import {{ bridgeWebMCP, connect }} from "{bridge}/client/agui-bridge.js";
const mc = document.modelContext;
await mc.registerTool({{
  name: "add_numbers", description: "Add two numbers.",
  inputSchema: {{ type: "object", properties: {{ a: {{ type: "number" }}, b: {{ type: "number" }} }},
                 required: ["a", "b"] }},
  execute: ({{ a, b }}) => ({{ sum: a + b }}),
}});
await mc.registerTool({{
  name: "early_wait", description: "Wait until cancelled.",
  execute: (input, options) => new Promise((resolve, reject) => options?.signal?.addEventListener("abort", () => {{
    window.earlyCancelled = String(options.signal.reason?.message ?? options.signal.reason);
    reject(options.signal.reason);
  }})),
}});
window.bridge = await connect({{ url: "{bridge}", forms: false }});
window.webmcp = bridgeWebMCP(window.bridge);
await window.webmcp.ready;
document.body.dataset.ready = "true";
</script></body></html>"""


@asynccontextmanager
async def webmcp_page(browser, bridge, runtime: str):
    """The page on its own origin, with the runtime loaded by a classic script before the page's module runs."""
    script = RUNTIMES[runtime]
    if script is None:
        assert POLYFILL.is_file(), f"{POLYFILL} is missing: run scripts/setup --test (npm ci in tests/webmcp)"
        script = POLYFILL.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "runtime.js").write_text(script, encoding="utf-8")
        Path(directory, "index.html").write_text(PAGE.format(bridge=bridge.url), encoding="utf-8")
        with static_server(Path(directory)) as origin:
            async with open_page(browser, f"{origin}/index.html") as page:
                yield page


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
async def test_each_runtime_shape_is_served_as_is(browser, bridge, runtime):
    async with webmcp_page(browser, bridge, runtime) as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "add_numbers", "early_wait")
        # A tool registered before bridging runs through the runtime's executeTool(), whichever input it takes.
        for a, b in ((2, 3), (40, 2)):
            result = await client.call_tool("add_numbers", {"a": a, "b": b})
            assert not result.is_error, text_of(result)
            assert result.structured_content == {"sum": a + b}
        inputs = await page.evaluate("window.executeInputs ?? null")
        if runtime == "chrome155":
            assert inputs == ["object", "object"]
        elif runtime == "chrome152":
            assert inputs == ["object", "string", "string"], "the object is tried once, then the text the runtime takes"

        # A tool registered after: its title and annotations reach the bridge; execute() gets {signal, …}, and
        # no requestUserInteraction (gone from the draft).
        await page.evaluate("""() => document.modelContext.registerTool({
            name: "read_reviews", title: "Read the reviews",
            description: "The product's reviews, as customers wrote them.",
            inputSchema: {type: "object", properties: {}},
            annotations: {readOnlyHint: true, untrustedContentHint: true},
            execute: (input, client) => ({signal: client.signal instanceof AbortSignal,
                                          requestUserInteraction: "requestUserInteraction" in client}),
        })""")
        await wait_for_tools(client, "read_reviews")
        listed = {t.name: t for t in (await client.list_tools(cache_mode="bypass")).tools}["read_reviews"]
        assert listed.title == "Read the reviews"
        assert listed.annotations.read_only_hint is True
        definition = await page.evaluate("bridge.tools.find((t) => t.name === 'read_reviews').definition")
        assert definition["annotations"] == {"readOnlyHint": True, "untrustedContentHint": True}
        result = await client.call_tool("read_reviews", {})
        assert result.structured_content == {"signal": True, "requestUserInteraction": False}

        # The agent's cancel reaches execute()'s signal.
        await page.evaluate("""() => document.modelContext.registerTool({
            name: "slow_search", description: "Search until cancelled.",
            execute: (input, {signal}) => new Promise((resolve, reject) => signal.addEventListener("abort", () => {
                window.lateCancelled = true;
                reject(signal.reason);
            })),
        })""")
        await wait_for_tools(client, "slow_search")
        call = asyncio.create_task(client.call_tool("slow_search", {}))
        await eventually(lambda: len(bridge.hub.calls) == 1)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await page.wait_for_function("window.lateCancelled === true")

        # A registration whose signal is already aborted registers nothing (the promise rejects where there is one).
        outcome = await page.evaluate("""async () => {
            try {
                await document.modelContext.registerTool({name: "never_tool", description: "Never registered.",
                                                          execute: () => "no"}, {signal: AbortSignal.abort()});
                return "registered";
            } catch (error) {
                return error.name;
            }
        }""")
        assert outcome == ("registered" if runtime == "chrome152" else "AbortError")
        await page.evaluate("""() => document.modelContext.registerTool({name: "after_tool", description: "After.",
                                                                         execute: () => "after"})""")
        listed_names = await wait_for_tools(client, "after_tool")
        assert "never_tool" not in listed_names
        assert "never_tool" not in await page.evaluate("webmcp.tools")


async def test_a_cancel_reaches_a_tool_run_through_execute_tool(browser, bridge):
    """Chrome 155 hands executeTool()'s signal on to execute(): a tool registered before bridging is cancelled too."""
    async with webmcp_page(browser, bridge, "chrome155") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "early_wait")
        call = asyncio.create_task(client.call_tool("early_wait", {}))
        await eventually(lambda: len(bridge.hub.calls) == 1)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await page.wait_for_function("typeof window.earlyCancelled === 'string'")
        # The page goes on: the next call runs.
        result = await client.call_tool("add_numbers", {"a": 1, "b": 1})
        assert result.structured_content == {"sum": 2}


async def test_bridging_with_an_aborted_signal_bridges_nothing(browser, bridge):
    async with webmcp_page(browser, bridge, "chrome155") as page, mcp_client(bridge) as client:
        await wait_for_tools(client, "add_numbers", "early_wait")
        tools = await page.evaluate("""async (url) => {
            const { bridgeWebMCP } = await import(`${url}/client/agui-bridge.js`);
            const handle = bridgeWebMCP(window.bridge, {signal: AbortSignal.abort()});
            await handle.ready;
            return handle.tools;
        }""", bridge.url)
        assert tools == []
        # The live bridging still serves what the page registers next, and only once.
        await page.evaluate("""() => document.modelContext.registerTool({name: "after_abort", description: "After.",
                                                                         execute: () => "after"})""")
        await wait_for_tools(client, "after_abort")
        assert await page.evaluate("webmcp.tools.filter((name) => name === 'after_abort').length") == 1
