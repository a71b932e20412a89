"""Tool search v2 (issue 11), each part through a real bridge and the real MCP SDK client: the semantic
tier wired into the hub (the local all-MiniLM-L6-v2 int8 model, and a stand-in that blocks), pinned
tools, input examples, bounded activation, compact search matches, and the deferred count agents
are told. The browser client's `registerUserTools(bridge, {pinned})` runs in Chromium."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import mcp_types as types
import numpy as np
import pytest
from browser_support import browser, mcp_client, open_page, serve_html, wait_for_tools  # noqa: F401 (fixture)
from mcp import Client

import bridge.semantic
from bridge.catalog import INPUT_EXAMPLES_META
from bridge.config import Settings
from support import eventually, page, running_bridge, tool
from test_search_mode import META, many_tools
from test_semantic import WordHashEmbedder, model_dir  # noqa: F401 (model_dir: the local test model's folder)

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
FORECAST = tool("get_forecast", "Weather forecast for a city", {"city": {"type": "string"}}, ["city"])
DISTRACTORS = [tool("send_email", "Send an email to a contact"), tool("play_music", "Play a song"),
               tool("book_flight", "Book a plane ticket between two airports"),
               tool("convert_currency", "Convert an amount between currencies"),
               tool("create_invoice", "Create an invoice for a customer")]
RAINING = "is it raining in Paris"


async def listed(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools(cache_mode="bypass")).tools]


async def search(client: Client, query: str, limit: int = 5) -> types.CallToolResult:
    result = await client.call_tool("tool_search", {"query": query, "limit": limit})
    assert not result.is_error, result.content
    return result


def match_names(result: types.CallToolResult) -> list[str]:
    return [m["name"] for m in result.structured_content["matches"]]


def search_mode_room() -> list[dict]:
    """Over inline_max=10: fillers first (the listed prefix), the forecast tool last (deferred)."""
    return [*many_tools(20), *DISTRACTORS, FORECAST]


# --- 1. the semantic tier ------------------------------------------------------------------------


async def test_without_a_model_search_is_lexical_and_says_so():
    assert Settings().search_model == "" and Settings().hub_config().search_model == ""
    async with running_bridge(inline_max=10) as b, page(b, *search_mode_room()), \
            Client(b.mcp_url(), mode="legacy") as client:
        found = await search(client, "weather forecast")
        assert found.structured_content["tier"] == "lexical" and "lexical search" in found.content[0].text
        assert match_names(found)[0] == "get_forecast"
        missed = await search(client, RAINING)  # no word in common: BM25 alone cannot find it
        assert "get_forecast" not in match_names(missed) and missed.structured_content["tier"] == "lexical"
        assert "lexical search" in missed.content[0].text
        assert b.hub.semantic.embedder is None and b.hub.room("default").index.pending_embeddings == 0


async def test_the_local_model_finds_a_tool_by_meaning_once_embedded(model_dir: Path):  # noqa: F811
    settings = {"search_model": MODEL, "search_model_path": str(model_dir)}
    assert Settings(**settings).hub_config().search_model_path == str(model_dir)
    async with running_bridge(inline_max=10, **settings) as b, page(b, *search_mode_room()), \
            Client(b.mcp_url(), mode="legacy") as client:
        assert "get_forecast" not in await listed(client)
        await asyncio.wait_for(b.hub.semantic.wait(), 60)
        assert b.hub.semantic.embedder is not None and b.hub.semantic.failure is None
        assert b.hub.room("default").index.pending_embeddings == 0
        found = await search(client, RAINING)
        assert found.structured_content["tier"] == "hybrid" and "hybrid search" in found.content[0].text
        # The room's two weather tools first (weather_tool is among the fillers), by meaning alone.
        assert set(match_names(found)[:2]) == {"get_forecast", "weather_tool"}
        assert "get_forecast" in await listed(client)  # found, so activated

        # A room made after the model loaded gets it at once; its tools are embedded in the background.
        async with page(b, *DISTRACTORS, FORECAST, room="other"), \
                Client(b.mcp_url("other"), mode="legacy") as other:
            await asyncio.wait_for(b.hub.semantic.wait(), 60)
            found = await other.call_tool("tool_search", {"query": "should I take an umbrella tomorrow"})
            assert found.structured_content["tier"] == "hybrid" and match_names(found)[0] == "get_forecast"


class BlockingEmbedder(WordHashEmbedder):
    """The stand-in model (rain/umbrella/forecast mean weather), whose embedding waits for `release`."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.threads: set[int] = set()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.add(threading.get_ident())
        assert self.release.wait(30), "never released"
        return super().embed_documents(texts)


async def test_registration_does_not_wait_for_embeddings(monkeypatch):
    embedder = BlockingEmbedder()
    loads: list[tuple] = []

    def load(model, *, path=None, cache_dir=None):
        loads.append((model, path, cache_dir, threading.get_ident()))
        return embedder

    monkeypatch.setattr(bridge.semantic, "load_embedder", load)
    try:
        async with running_bridge(inline_max=10, search_model="stand-in", search_model_cache="/tmp/models") as b, \
                page(b) as p, Client(b.mcp_url(), mode="legacy") as client:
            await eventually(lambda: b.hub.semantic.embedder is not None)
            # The page's tools are registered, and searchable by words, while the model is still embedding them.
            await asyncio.wait_for(p.register(*search_mode_room()), 5)
            room = b.hub.room("default")
            await eventually(lambda: embedder.threads)
            assert room.index.pending_embeddings == len(room)
            lexical = await search(client, "rain umbrella")
            assert lexical.structured_content["tier"] == "lexical" and "get_forecast" not in match_names(lexical)
            assert (await search(client, "weather forecast")).structured_content["matches"][0]["name"] == "get_forecast"
            await p.register(tool("late_tool", "Registered while the first batch is embedding"))  # no wait either

            embedder.release.set()
            await asyncio.wait_for(b.hub.semantic.wait(), 10)
            assert room.index.pending_embeddings == 0
            hybrid = await search(client, "rain umbrella")
            assert hybrid.structured_content["tier"] == "hybrid" and match_names(hybrid)[0] == "get_forecast"
            assert any("first batch is embedding" in text for text in embedder.embedded)
        assert len(loads) == 1 and loads[0][:3] == ("stand-in", None, "/tmp/models")
        assert loads[0][3] != threading.get_ident() and threading.get_ident() not in embedder.threads  # off the loop
    finally:
        embedder.release.set()


async def test_a_model_that_cannot_load_is_logged_once_and_search_stays_lexical():
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("bridge.semantic")
    try:
        async with running_bridge(inline_max=10, search_model=MODEL, search_model_path="/nonexistent/model") as b:
            logger.addHandler(handler)  # once the server has configured logging (which empties it)
            async with page(b, *search_mode_room()), page(b, *DISTRACTORS, room="other"), \
                    Client(b.mcp_url(), mode="legacy") as client:
                await asyncio.wait_for(b.hub.semantic.wait(), 30)
                assert b.hub.semantic.embedder is None and "/nonexistent/model" in (b.hub.semantic.failure or "")
                found = await search(client, "weather forecast")
                assert found.structured_content["tier"] == "lexical" and match_names(found)[0] == "get_forecast"
    finally:
        logger.removeHandler(handler)
    errors = [r for r in records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "stays lexical" in errors[0].getMessage() and "/nonexistent/model" in errors[0].getMessage()


# --- 2. pinned tools -----------------------------------------------------------------------------

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])


async def test_a_pinned_tool_registered_after_300_tools_is_listed():
    filler = [tool(f"report_{i}", f"Export sales report number {i}") for i in range(300)]
    async with running_bridge() as b, page(b, *filler) as p, Client(b.mcp_url(), mode="legacy") as client:
        await p.register(CONFIRM)
        assert "user_confirm" not in await listed(client)  # unpinned, registered last: deferred
        await p.register(CONFIRM | {"pinned": True})  # the same tool, now pinned
        names = await listed(client)
        assert "user_confirm" in names and names[-3:] == META
        described = await client.call_tool("tool_describe", {"name": "user_confirm"})
        assert described.structured_content["pinned"] is True and described.structured_content["deferred"] is False


async def test_pinned_tools_use_up_the_inline_limits_first():
    pinned = [tool(f"pinned_{i}", "Always there", pinned=True) for i in range(3)]
    async with running_bridge(inline_max=10) as b, page(b, *many_tools(30), *pinned), \
            Client(b.mcp_url(), mode="legacy") as client:
        names = await listed(client)
        page_tools = [n for n in names if n not in META]
        # 10 - 3 meta-tools = 7 places: the 3 pinned tools, then the first 4 in registration order.
        assert page_tools == [f"widget_{i}" for i in range(4)] + [f"pinned_{i}" for i in range(3)]
        assert b.hub.room("default").listing().deferred == 33 - 7
        async with page(b) as other:
            await other.send({"type": "agui.tools.register", "tools": [{"name": "x", "pinned": "yes"}]})
            registered, error = await other.reply(), await other.reply()
            assert registered["tools"] == [] and error["code"] == "invalid_tool" and "pinned" in error["message"]


async def test_the_browser_client_pins_user_tools_registered_after_300_tools(browser):  # noqa: F811
    async with running_bridge() as b, mcp_client(b) as client:
        html = f"""<!doctype html><title>Pinned</title><script type="module">
          import {{ connect, registerUserTools }} from "{b.url}/client/agui-bridge.js";
          import {{ generateTools, simulate }} from "{b.url}/client/demo-tools.js";
          const bridge = await connect({{ url: "{b.url}" }});
          await Promise.all(generateTools(300).map((t) => bridge.registerTool(t, (p) => simulate(t, p))));
          await registerUserTools(bridge, {{ pinned: ["confirm"] }});
          document.body.dataset.ready = "true";
        </script>"""
        with serve_html(html) as url:
            async with open_page(browser, url):
                names = await wait_for_tools(client, "agui_user_confirm", *META)
                assert "agui_user_prompt" not in names and "agui_user_choose" not in names
                assert len(b.hub.room("default")) == 303
                described = await client.call_tool("tool_describe", {"name": "agui_user_confirm"})
                assert described.structured_content["pinned"] is True


async def test_the_demo_pins_its_confirm_dialog(browser):  # noqa: F811
    async with running_bridge() as b, mcp_client(b) as client, open_page(browser, b.url + "/") as demo:
        await demo.get_by_role("checkbox", name="Register 300 more tools").check()
        await demo.wait_for_function("document.body.dataset.manyTools === 'registered'")
        await wait_for_tools(client, "agui_user_confirm", *META)
        confirm = await client.call_tool("tool_describe", {"name": "agui_user_confirm"})
        prompt = await client.call_tool("tool_describe", {"name": "agui_user_prompt"})
        assert confirm.structured_content.get("pinned") is True and "pinned" not in prompt.structured_content


# --- 3. input examples ---------------------------------------------------------------------------

TRANSFER = tool("transfer_money", "Transfer money to a recipient.\nAsks the bank to move funds.",
                {"iban": {"type": "string", "pattern": "^[A-Z]{2}[0-9A-Z]+$"}, "amount": {"type": "number"},
                 "currency": {"enum": ["EUR", "USD"]}, "note": {"type": "string"}},
                ["iban", "amount", "currency"],
                inputExamples=[{"iban": "DE89370400440532013000", "amount": 100, "currency": "EUR"},
                               {"iban": "FR1420041010050500013M02606", "amount": 12.5, "currency": "EUR",
                                "note": "rent"}])


async def test_input_examples_reach_agents_in_the_listing_describe_and_search():
    async with running_bridge(inline_max=10) as b, page(b, TRANSFER, *many_tools(20)), \
            Client(b.mcp_url(), mode="legacy") as client:
        (listed_tool,) = [t for t in (await client.list_tools()).tools if t.name == "transfer_money"]
        assert listed_tool.meta == {INPUT_EXAMPLES_META: TRANSFER["inputExamples"]}
        described = (await client.call_tool("tool_describe", {"name": "transfer_money"})).structured_content
        assert described["inputExamples"] == TRANSFER["inputExamples"] and "_meta" not in described
        found = await search(client, "transfer money")
        (entry,) = [m for m in found.structured_content["matches"] if m["name"] == "transfer_money"]
        assert entry["examples"] == TRANSFER["inputExamples"]
        assert 'example: {"iban": "DE89370400440532013000", "amount": 100, "currency": "EUR"}' in found.content[0].text


@pytest.mark.parametrize("examples, problem", [
    ([{"iban": "DE89", "amount": "lots", "currency": "EUR"}], r"inputExamples\[0\] does not match.*amount"),
    ([TRANSFER["inputExamples"][0], {"iban": "de89", "amount": 1, "currency": "EUR"}],
     r"inputExamples\[1\] does not match.*iban"),
    ([{"amount": 1}], r"inputExamples\[0\].*'iban' is a required property"),
    ([TRANSFER["inputExamples"][0]] * 6, r"inputExamples.*at most 5"),
    (["not an object"], r"inputExamples\.0"),
])
async def test_an_example_that_does_not_match_its_schema_refuses_the_tool(examples, problem):
    async with running_bridge() as b, page(b) as p, Client(b.mcp_url(), mode="legacy") as client:
        await p.send({"type": "agui.tools.register", "id": 1, "tools": [tool("fine"), TRANSFER | {"inputExamples": examples}]})
        registered, error = await p.reply(), await p.reply()
        assert [t["name"] for t in registered["tools"]] == ["fine"]
        assert error["code"] == "invalid_tool" and error["tool"] == "transfer_money", error
        assert re.search(problem, error["message"]), error["message"]
        assert await listed(client) == ["fine"]


# --- 4. bounded activation -----------------------------------------------------------------------


async def test_activation_is_bounded_and_the_least_recently_used_leave_first():
    queries = {"weather_tool": "weather forecast for a city", "flight_tool": "book a flight between airports",
               "invoice_tool": "create an invoice for a customer", "playlist_tool": "add a song to my playlist",
               "translate_tool": "translate text into another language"}
    async with running_bridge(inline_max=10, max_activated=3) as b, page(b, *many_tools(60)) as p:
        changes: list[object] = []

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                changes.append(message)

        async with Client(b.mcp_url(), mode="legacy", message_handler=on_message) as client:
            prefix = [n for n in await listed(client) if n not in META]
            order = list(queries)
            for name in order[:3]:
                assert match_names(await search(client, queries[name], 1)) == [name]
            assert set(await listed(client)) == {*prefix, *order[:3], *META}

            await search(client, queries["weather_tool"], 1)  # found again: now the most recently used
            before = len(changes)
            assert match_names(await search(client, queries["playlist_tool"], 1)) == ["playlist_tool"]
            assert match_names(await search(client, queries["translate_tool"], 1)) == ["translate_tool"]
            names = await listed(client)
            assert "flight_tool" not in names and "invoice_tool" not in names  # the least recently used left
            assert {"weather_tool", "playlist_tool", "translate_tool"} <= set(names)
            assert len(names) == len(prefix) + 3 + len(META)  # never more than max_activated on top
            await eventually(lambda: len(changes) > before)  # agents are told the list changed

            # A call of a tool that left the list brings it back, and pushes out the least recently used.
            task = asyncio.create_task(client.call_tool("flight_tool", {}))
            invoke = await p.event()
            await p.answer(invoke["call_id"], "booked")
            assert (await task).content[0].text == "booked"
            names = await listed(client)
            assert {"flight_tool", "playlist_tool", "translate_tool"} <= set(names) and "weather_tool" not in names
            assert len(names) == len(prefix) + 3 + len(META)

            # A search returning more than max_activated tools keeps its best ones listed.
            wide = await search(client, "tool", 20)
            assert len(wide.structured_content["matches"]) > 3
            listed_now = set(await listed(client))
            best = [n for n in match_names(wide) if n not in prefix][:3]
            assert set(best) <= listed_now and len(listed_now) == len(prefix) + 3 + len(META)


# --- 5. compact matches --------------------------------------------------------------------------


async def test_search_matches_are_compact_and_describe_keeps_the_full_schema():
    nested = tool("ship_order", "Ship an order to a customer address", {
        "order_id": {"type": "string"}, "items": {"type": "array", "items": {"type": "integer"}},
        "speed": {"enum": ["standard", "express"]}, "address": {"type": "object", "properties": {"city": {"type": "string"}}},
        "gift": {"type": "boolean", "description": "Wrap it"}}, ["order_id", "items", "speed", "address"])
    long = tool("long_tool", "Summarise a long report " + "with many words " * 30 + "\nSecond line.")
    async with running_bridge(inline_max=10) as b, page(b, *many_tools(20), TRANSFER, nested, long), \
            Client(b.mcp_url(), mode="legacy") as client:
        found = await search(client, "ship an order to a customer")
        entry = found.structured_content["matches"][0]
        assert entry == {"name": "ship_order", "tool": "ship_order", "description": nested["description"],
                         "required": {"order_id": "string", "items": "integer[]", "speed": '"standard"|"express"',
                                      "address": "object"},
                         "optional": ["gift"]}
        assert ('- ship_order(order_id: string, items: integer[], speed: "standard"|"express", address: object; '
                'optional: gift): Ship an order') in found.content[0].text
        assert "tool_describe shows a tool's full definition" in found.content[0].text
        transfer = (await search(client, "transfer money to a recipient")).structured_content["matches"][0]
        assert transfer["description"] == "Transfer money to a recipient."  # its first line
        assert transfer["required"] == {"iban": "string", "amount": "number", "currency": '"EUR"|"USD"'}
        cut = (await search(client, "summarise a long report")).structured_content["matches"][0]
        assert len(cut["description"]) == 160 and cut["description"].endswith("…")

        described = (await client.call_tool("tool_describe", {"name": "ship_order"})).structured_content
        assert described["inputSchema"] == nested["inputSchema"]
        full_entry = {"name": "ship_order", "tool": "ship_order", "description": nested["description"],
                      "inputSchema": nested["inputSchema"]}
        assert len(json.dumps(entry)) < len(json.dumps(full_entry))


# --- 6. what agents are told about deferred tools ------------------------------------------------


async def test_the_deferred_count_agents_are_told_follows_activation():
    def told(instructions: str | None) -> int:
        found = re.search(r"(\d+) more tools are not listed", instructions or "")
        assert found, instructions
        return int(found.group(1))

    async with running_bridge(inline_max=10, max_activated=2) as b, page(b, *many_tools(60), CONFIRM | {"pinned": True}):
        room = b.hub.room("default")
        async with Client(b.mcp_url(), mode="legacy") as client:
            page_tools = [n for n in await listed(client) if n not in META]
            assert told(client.instructions) == len(room) - len(page_tools) == room.listing().deferred == 61 - 7
            result = await search(client, "weather forecast for a city", 1)
            assert result.structured_content["deferred"] == 61 - 8
            await search(client, "create an invoice for a customer", 1)
            last = await search(client, "translate text into another language", 1)  # one leaves: still 2 on top
            assert last.structured_content["deferred"] == 61 - 9 == room.listing().deferred
        async with Client(b.mcp_url(), mode="legacy") as later:
            page_tools = [n for n in await listed(later) if n not in META]
            assert told(later.instructions) == 61 - 9 == len(room) - len(page_tools)
