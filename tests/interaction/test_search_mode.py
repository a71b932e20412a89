"""Search mode, through a real bridge and the real MCP SDK client: which tools are listed and which
deferred (thresholds, pinned tools, bounded activation), tool_search, tool_describe and call_tool, what
search matches show (compact signatures, input examples), and the deferred count agents are told."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import asynccontextmanager

import mcp_types as types
import pytest
from mcp import Client
from search_support import DOMAINS, META, listed, many_tools, match_names, search
from support import eventually, page, running_bridge, tool

from bridge.core.catalog import INPUT_EXAMPLES_META
from bridge.mcp_edge.room_server import NOTIFY_DELAY

ERAS = ["legacy", "2026-07-28"]


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def test_count_threshold_in_and_out_of_search_mode():
    async with running_bridge(inline_max=10) as b, Client(b.mcp_url(), mode="legacy") as client:
        async with page(b, *(tool(f"t{i}") for i in range(10))):
            assert await names(client) == [f"t{i}" for i in range(10)]  # at the threshold: plain
            async with page(b, tool("one_more")):
                listed = await names(client)
                assert listed[:7] == [f"t{i}" for i in range(7)]  # a prefix, leaving room for the meta-tools
                assert listed[7:] == META
            assert await names(client) == [f"t{i}" for i in range(10)]  # the page left: plain again


async def test_token_budget_threshold():
    wordy = [tool(f"w{i}", "A long description. " * 40) for i in range(3)]
    async with running_bridge(inline_max=40, inline_token_budget=400, description_max_chars=100) as b, \
            Client(b.mcp_url(), mode="legacy") as client, page(b, *wordy):
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed][-3:] == META
        page_tools = [t for t in listed if t.name not in META]
        assert 0 < len(page_tools) < 3
        assert all(len(t.description) <= 100 for t in page_tools)  # descriptions cut in search mode
        described = await client.call_tool("tool_describe", {"name": "w0"})
        assert described.structured_content["description"] == "A long description. " * 40  # full text kept


@pytest.mark.parametrize("era", ERAS)
async def test_search_returns_and_activates_with_list_changed(era):
    async with running_bridge() as b, page(b, *many_tools(60)):
        changes: asyncio.Queue = asyncio.Queue()

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                await changes.put(message)

        async with Client(b.mcp_url(), mode=era, message_handler=on_message) as client:
            before = await names(client)
            assert "invoice_tool" not in before and set(META) <= set(before)
            if era == "legacy":
                result = await search(client, "create an invoice for a customer")
                await asyncio.wait_for(changes.get(), 5)
            else:
                async with client.listen(tools_list_changed=True) as events:
                    result = await search(client, "create an invoice for a customer")
                    await asyncio.wait_for(events.__anext__(), 5)
            matches = result.structured_content["matches"]
            assert matches[0]["name"] == "invoice_tool" and matches[0]["tool"] == "invoice_tool"
            assert matches[0]["required"] == {} and matches[0]["optional"] == ["query"]  # compact: no schema
            assert "invoice_tool" in result.content[0].text
            assert result.structured_content["deferred"] == len(b.hub.room("default")) - len(await names(client)) + 3
            assert "invoice_tool" in await names(client)


async def test_call_tool_reaches_deferred_and_inline_tools():
    async with running_bridge() as b, page(b, *many_tools(60)) as p, Client(b.mcp_url(), mode="legacy") as client:
        listed = await names(client)
        inline = listed[0]
        assert "playlist_tool" not in listed
        for name in ("playlist_tool", inline):
            task = asyncio.create_task(client.call_tool("call_tool", {"name": name, "arguments": {}}))
            invoke = await p.event()
            assert invoke["name"] == name
            await p.answer(invoke["call_id"], f"ran {name}")
            assert (await task).content[0].text == f"ran {name}"
        bad = await client.call_tool("call_tool", {"name": "playlist_tool", "arguments": {"query": 5}})
        assert bad.is_error and 'not of type "string"' in bad.content[0].text
        missing = await client.call_tool("call_tool", {"name": "no_such_tool"})
        assert missing.is_error and "tool_search" in missing.content[0].text


async def test_direct_call_of_a_deferred_tool_activates_it():
    async with running_bridge() as b, page(b, *many_tools(60)) as p, Client(b.mcp_url(), mode="legacy") as client:
        assert "translate_tool" not in await names(client)
        task = asyncio.create_task(client.call_tool("translate_tool", {"query": "bonjour"}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], "hello")
        assert (await task).content[0].text == "hello"
        assert "translate_tool" in await names(client)


async def test_describe():
    async with running_bridge() as b, page(b, *many_tools(60)), Client(b.mcp_url(), mode="legacy") as client:
        described = await client.call_tool("tool_describe", {"name": "flight_tool"})
        assert described.structured_content["description"] == DOMAINS["flight"]
        assert described.structured_content["deferred"] is True
        assert described.structured_content["inputSchema"]["type"] == "object"
        unknown = await client.call_tool("tool_describe", {"name": "nope"})
        assert unknown.is_error


async def test_nonsense_query_returns_no_matches():
    async with running_bridge() as b, page(b, *many_tools(60)), Client(b.mcp_url(), mode="legacy") as client:
        before = await names(client)
        result = await search(client, "zzqx flibbertigibbet")
        assert result.structured_content["matches"] == [] and "No tool matches" in result.content[0].text
        assert await names(client) == before


async def test_zero_idf_word_falls_back_to_name_substring():
    # "panel" is in every tool's description, so BM25 gives it zero IDF and ranks nothing with it;
    # the fallback finds it in the names of the panel tools (and only there).
    panel_tools = [tool("panel_lights", "Panel control"), tool("doorpanel", "Panel control")]
    widgets = [tool(f"widget_{i}", "Panel control") for i in range(50)]
    async with running_bridge() as b, page(b, *widgets, *panel_tools), \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await search(client, "panel")
        assert {m["name"] for m in result.structured_content["matches"]} == {"panel_lights", "doorpanel"}
        result = await search(client, "idget_42")  # a name remembered in part: no word matches it
        assert result.structured_content["matches"][0]["name"] == "widget_42"


async def test_limit_is_capped_at_20():
    async with running_bridge() as b, page(b, *(tool(f"report_{i}", "Export a sales report") for i in range(60))), \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await search(client, "report", limit=100)
        assert 0 < len(result.structured_content["matches"]) <= 20
        result = await search(client, "report", limit=3)
        assert len(result.structured_content["matches"]) <= 3
        bad = await client.call_tool("tool_search", {"query": 5})
        assert bad.is_error


@asynccontextmanager
async def agent_noting_list_changes(b):
    """A handshake agent of bridge `b`, and the tools/list_changed notifications it gets."""
    changes: list = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changes.append(message)

    async with Client(b.mcp_url(), mode="legacy", message_handler=on_message) as client:
        yield client, changes


async def test_concurrent_activation_happens_once():
    async with running_bridge() as b, page(b, *many_tools(60)):
        async with agent_noting_list_changes(b) as (client, changes):
            await client.list_tools()
            results = await asyncio.gather(*(search(client, "weather forecast for a city", 1) for _ in range(20)))
            assert all(r.structured_content["matches"][0]["name"] == "weather_tool" for r in results)
            await eventually(lambda: changes)
            await asyncio.sleep(0.3)
            assert len(changes) == 1
            assert (await names(client)).count("weather_tool") == 1


async def test_activations_close_together_notify_once():
    """Agents searching at once each activate tools; each notification goes to every session, so
    changes within NOTIFY_DELAY of the first go out as one."""
    async with running_bridge() as b, page(b, *many_tools(60)):
        async with agent_noting_list_changes(b) as (client, changes):
            listed = set(await names(client))
            room = b.hub.room("default")
            deferred = [tool.key for tool in room.tools_of(b.hub.pages_in("default")[0].id) if tool.key not in listed]
            assert room.activate(deferred[:1])
            await asyncio.sleep(NOTIFY_DELAY / 10)  # the loop turns: each change would be sent on its own
            assert room.activate(deferred[1:2])
            await eventually(lambda: changes)
            await asyncio.sleep(0.3)
            assert len(changes) == 1
            assert set(deferred[:2]) <= set(await names(client))


async def test_another_rooms_tool_is_never_found():
    async with running_bridge() as b, page(b, *many_tools(60)), \
            page(b, tool("secret_vault_opener", "Open the secret vault"), room="other"), \
            Client(b.mcp_url(), mode="legacy") as client:
        result = await search(client, "secret vault opener")
        assert all(m["name"] != "secret_vault_opener" for m in result.structured_content["matches"])
        assert (await client.call_tool("call_tool", {"name": "secret_vault_opener"})).is_error


async def test_a_page_leaving_removes_its_tools_from_the_index():
    async with running_bridge() as b, page(b, *many_tools(60)), Client(b.mcp_url(), mode="legacy") as client:
        async with page(b, tool("submarine_sonar", "Ping the submarine sonar")):
            found = await search(client, "submarine sonar")
            assert found.structured_content["matches"][0]["name"] == "submarine_sonar"
        await eventually(lambda: b.hub.room("default").get("submarine_sonar") is None)
        gone = await search(client, "submarine sonar")
        assert gone.structured_content["matches"] == []


# --- pinned tools --------------------------------------------------------------------------------

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


# --- input examples ------------------------------------------------------------------------------

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
    ([{"amount": 1}], r'inputExamples\[0\].*"iban" is a required property'),
    ([TRANSFER["inputExamples"][0]] * 6, r"inputExamples.*at most 5"),
    (["not an object"], r"inputExamples\.0"),
])
async def test_an_example_that_does_not_match_its_schema_refuses_the_tool(examples, problem):
    async with running_bridge() as b, page(b) as p, Client(b.mcp_url(), mode="legacy") as client:
        await p.send({"type": "agui.tools.register", "id": 1,
                      "tools": [tool("fine"), TRANSFER | {"inputExamples": examples}]})
        registered, error = await p.reply(), await p.reply()
        assert [t["name"] for t in registered["tools"]] == ["fine"]
        assert error["code"] == "invalid_tool" and error["tool"] == "transfer_money", error
        assert re.search(problem, error["message"]), error["message"]
        assert await listed(client) == ["fine"]


# --- bounded activation --------------------------------------------------------------------------


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


# --- compact matches -----------------------------------------------------------------------------


async def test_search_matches_are_compact_and_describe_keeps_the_full_schema():
    nested = tool("ship_order", "Ship an order to a customer address", {
        "order_id": {"type": "string"}, "items": {"type": "array", "items": {"type": "integer"}},
        "speed": {"enum": ["standard", "express"]},
        "address": {"type": "object", "properties": {"city": {"type": "string"}}},
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


# --- what agents are told about deferred tools ---------------------------------------------------


async def test_the_deferred_count_agents_are_told_follows_activation():
    def told(instructions: str | None) -> int:
        found = re.search(r"(\d+) more tools are not listed", instructions or "")
        assert found, instructions
        return int(found.group(1))

    async with running_bridge(inline_max=10, max_activated=2) as b, \
            page(b, *many_tools(60), CONFIRM | {"pinned": True}):
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
