"""No schema, argument, result or registration stalls the bridge: each attack of the security review through
a real uvicorn bridge, real websockets pages and the real MCP SDK client, with a probe task on the bridge's
event loop (tests and bridge share one loop) measuring how long the loop was held, and another room's call or
registration timed while the attack runs. The bound the bridge promises is 50 ms; the tests allow 1 s for
this noisy machine (before the budget the same attacks held the loop for seconds to minutes).

The work budget, the refusals at registration and the checks in turns are tested without a server:
tests/schemas/test_validation.py, tests/schemas/test_page_schemas.py, tests/schemas/test_definition_checks.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from support import Page, open_page, page, running_bridge, tool
from validation_support import LAG_BOUND, RECURSIVE_BOMB, deep, nested_any_of, probed

from bridge.core.meta_tools import QUERY_MAX_CHARS


async def round_trip(agent: Client, other: Page, arguments: dict | None = None) -> float:
    """Seconds for an agent's call of `echo` in another room, answered at once by its page."""
    started = time.perf_counter()
    call = asyncio.create_task(agent.call_tool("echo", arguments or {"text": "hi"}))
    invoke = await other.event()
    await other.answer(invoke["call_id"], result="answered")
    assert (await asyncio.wait_for(call, 10)).content[0].text == "answered"
    return time.perf_counter() - started


async def while_calling(agent: Client, name: str, arguments: dict, other_agent: Client, other: Page,
                        page_answers: tuple[Page, Any] | None = None) -> tuple[Any, float, float]:
    """Call `name` with `arguments`; meanwhile, another room's call. Its result, the other call's
    round trip, and the longest the loop was held."""
    async with probed() as probe:
        offending = asyncio.create_task(agent.call_tool(name, arguments))
        await asyncio.sleep(0)
        other_took = await round_trip(other_agent, other)
        if page_answers is not None:
            answering, result = page_answers
            invoke = await answering.event()
            await answering.answer(invoke["call_id"], result=result)
        result = await asyncio.wait_for(offending, 30)
    return result, other_took, probe.longest


async def refused(p: Page, definition: dict) -> dict:
    """Register one tool the bridge refuses; the `invalid_tool` error it answers with."""
    await p.send({"type": "agui.tools.register", "id": "r", "tools": [definition]})
    assert (await p.reply())["tools"] == []
    return await p.reply()


@asynccontextmanager
async def two_rooms(*tools: dict):
    """A bridge; a page of `tools` and its agent in room "default"; an echo page and its agent in "other"."""
    async with running_bridge() as b, page(b, *tools) as p, page(b, ECHO, room="other") as other, \
            Client(b.mcp_url(), mode="legacy") as agent, Client(b.mcp_url("other"), mode="legacy") as other_agent:
        yield b, p, agent, other, other_agent


ECHO = tool("echo", "Echo.", {"text": {"type": "string"}})


@pytest.mark.timeout(60)
async def test_unique_items_of_many_objects_is_checked_in_linear_time_within_the_budget():
    store = tool("store", "Store rows.", {"rows": {"type": "array", "uniqueItems": True}})
    rows = [{"id": i, "v": "x"} for i in range(4_000)]  # 49 KiB: 13 s of pairwise comparisons before
    async with two_rooms(store) as (b, p, agent, other, other_agent):
        result, other_took, held = await while_calling(agent, "store", {"rows": rows}, other_agent, other,
                                                       page_answers=(p, "stored"))
        assert result.content[0].text == "stored"
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        duplicate = await agent.call_tool("store", {"rows": rows + [{"v": "x", "id": 7.0}]})
        assert duplicate.is_error and "non-unique elements (items 7 and 4000 are equal)" in duplicate.content[0].text
        many = [{"id": i, "v": "x"} for i in range(20_000)]  # over 5 minutes before
        result, other_took, held = await while_calling(agent, "store", {"rows": many}, other_agent, other)
        assert result.is_error and "(arguments): validation exceeded its work budget (limit 100,000 steps)" \
            in result.content[0].text
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        assert p.events.empty()


@pytest.mark.timeout(60)
async def test_many_patterns_by_many_keys_are_refused_at_registration_or_within_the_budget():
    many = {"type": "object", "properties": {"m": {"type": "object", "patternProperties": {
        f"^k{i}$": {"type": "integer"} for i in range(1500)}}}}
    most = {"type": "object", "properties": {"m": {"type": "object", "patternProperties": {
        f"^k{i}x$": {"type": "integer"} for i in range(64)}}}}
    async with two_rooms({"name": "most", "inputSchema": most}) as (b, p, agent, other, other_agent):
        error = await refused(p, {"name": "many", "inputSchema": many})
        assert error["code"] == "invalid_tool" and error["tool"] == "many"
        assert "patternProperties at /properties/m has 1500 patterns, over the limit of 64" in error["message"]
        keys = {f"k{i}": i for i in range(20_000)}  # 64 x 20,000 searches
        result, other_took, held = await while_calling(agent, "most", {"m": keys}, other_agent, other)
        assert result.is_error and "validation exceeded its work budget" in result.content[0].text
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        assert p.events.empty()


@pytest.mark.timeout(60)
async def test_nested_any_of_in_an_input_schema_is_refused_at_registration_or_within_the_budget():
    async with two_rooms({"name": "bomb", "inputSchema": RECURSIVE_BOMB}) as (b, p, agent, other, other_agent):
        error = await refused(p, {"name": "nested", "inputSchema": nested_any_of(16)})
        assert error["tool"] == "nested" and "over 50,000 subschemas" in error["message"]
        result, other_took, held = await while_calling(agent, "bomb", {"x": deep(40)}, other_agent, other)
        assert result.is_error and "(arguments): validation exceeded its work budget (limit 100,000 steps)" \
            in result.content[0].text
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        assert p.events.empty()


@pytest.mark.timeout(60)
async def test_nested_any_of_in_an_output_schema_set_off_by_the_pages_result():
    bomb = {"name": "bomb", "outputSchema": RECURSIVE_BOMB}
    async with two_rooms(bomb) as (b, p, agent, other, other_agent):
        error = await refused(p, {"name": "nested", "outputSchema": nested_any_of(16)})
        assert "outputSchema is not a usable JSON Schema" in error["message"]
        result, other_took, held = await while_calling(agent, "bomb", {}, other_agent, other,
                                                       page_answers=(p, {"x": deep(40)}))
        assert result.is_error and "does not match its output schema: (result): validation exceeded its work budget" \
            in result.content[0].text
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.timeout(90)
async def test_input_examples_bombs_from_six_pages_hold_up_no_other_room():
    bombs = [{"name": f"bomb{i}", "inputSchema": RECURSIVE_BOMB, "inputExamples": [{"x": deep(30)}] * 5}
             for i in range(20)]
    async with running_bridge() as b, page(b, ECHO, room="other") as other, \
            Client(b.mcp_url("other"), mode="legacy") as other_agent:
        before = resident_bytes()
        pages = [await open_page(b, room=f"attack{i}") for i in range(6)]
        try:
            async with probed() as probe:
                for attacker in pages:
                    await attacker.send({"type": "agui.tools.register", "id": "r", "tools": bombs})
                await asyncio.sleep(0.05)  # the attacks are being checked
                newcomer = await open_page(b, room="newcomer")
                started = time.perf_counter()
                await newcomer.register(tool("plain"))
                registered_in = time.perf_counter() - started
                other_took = await round_trip(other_agent, other)
                for attacker in pages:
                    assert (await attacker.reply(timeout=60))["tools"] == []
                    for _ in bombs:
                        error = await attacker.reply(timeout=60)
                        assert error["code"] == "invalid_tool" and "validation exceeded its work budget (limit " \
                            "20,000 steps)" in error["message"], error
                await newcomer.close()
            assert registered_in < LAG_BOUND and other_took < LAG_BOUND, (registered_in, other_took)
            assert probe.longest < LAG_BOUND, probe.longest
            assert resident_bytes() - before < 300 * 2**20
        finally:
            for attacker in pages:
                await attacker.close()


def costliest_definition(name: str) -> dict:
    """Under 64 KiB, about the costliest definition to check (~1 s: 20,000 subschemas against the
    meta-schema, then {} against them, past the budget)."""
    return {"name": name, "inputSchema": {"type": "object", "allOf": [{}] * 20_000}}


@pytest.mark.timeout(60)
async def test_a_registration_waits_for_no_other_pages_large_definition():
    async with running_bridge() as b, page(b, room="attack") as attacker, page(b, room="newcomer") as newcomer:
        await attacker.send({"type": "agui.tools.register", "id": "r", "tools": [costliest_definition("costly")]})
        await asyncio.sleep(0.05)  # its one definition is being checked
        await newcomer.register(tool("plain"))
        # Registered while the attacker's definition is still being checked, not after it.
        assert attacker.replies.empty()
        assert (await attacker.reply(timeout=30))["tools"] == []
        assert "work budget" in (await attacker.reply())["message"]


async def test_a_300_deep_example_is_refused_and_the_rooms_listing_still_works():
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as agent:
        await p.send({"type": "agui.tools.register", "id": "r", "tools": [
            {"name": "deep", "inputExamples": [deep(300)]},
            {"name": "deep_annotations", "annotations": {"x-note": deep(300)}}]})
        assert (await p.reply())["tools"] == []
        messages = sorted([(await p.reply())["message"], (await p.reply())["message"]])
        assert messages == ["Tool 'deep' was not registered: inputExamples[0]: nests 300 levels deep, over the limit "
                            "of 32", "Tool 'deep_annotations' was not registered: annotations: nests 301 levels deep, "
                            "over the limit of 32"], messages
        assert [t.name for t in (await agent.list_tools()).tools] == ["echo"]


@pytest.mark.timeout(60)
async def test_a_long_tool_search_query_is_refused_and_never_echoed():
    async with two_rooms(ECHO) as (b, p, agent, other, other_agent):
        query = "weather " * 450_000  # 3.4 MiB
        result, other_took, held = await while_calling(agent, "tool_search", {"query": query}, other_agent, other)
        text = result.content[0].text
        assert result.is_error and f"at most {QUERY_MAX_CHARS} characters; this one has {len(query)}" in text
        assert len(text) < 500
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        found = await agent.call_tool("tool_search", {"query": "w" * QUERY_MAX_CHARS})  # at the cap: searched
        assert not found.is_error


async def test_a_result_with_1e400_is_refused_like_nan():
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as agent:
        call = asyncio.create_task(agent.call_tool("echo", {"text": "x"}))
        call_id = (await p.event())["call_id"]
        await p.send('{"type": "agui.tool.return", "call_id": "' + call_id + '", "result": {"n": 1e400}}')
        error = await p.reply()
        assert error["code"] == "bad_json" and error["call_id"] == call_id, error
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and result.structured_content is None
        assert "could not be taken: Not valid JSON: 1e400 is not a JSON number" in result.content[0].text
        json.dumps(result.model_dump(), allow_nan=False)  # nothing infinite reached the agent
