"""A program past a limit ends with an error naming the limit and the line, and the bridge serves everyone else
meanwhile: an endless loop or a memory bomb computes in a sandbox worker process, never on the event loop."""

from __future__ import annotations

import asyncio

import pytest
from code_mode_support import code_bridge, served_page, text_of
from mcp import Client
from support import eventually

RUNAWAYS = {  # the sandbox says where it ran out of memory, not where its time ran out
    "compute_seconds": ("n = 0\nwhile True:\n    n += 1", None, "compute time limit reached (3 s of computing"),
    "memory_bytes": ("blocks = []\nwhile True:\n    blocks.append('x' * 1_000_000)", 3,
                     "memory limit reached (16,777,216 bytes)"),
}


@pytest.mark.parametrize("limit", list(RUNAWAYS))
async def test_a_runaway_program_ends_with_its_limit_while_another_agent_is_served(limit):
    program, line, said = RUNAWAYS[limit]
    async with code_bridge(code_compute_seconds=3, code_memory_mb=16) as bridge, \
            Client(bridge.mcp_url()) as runaway_agent, Client(bridge.mcp_url()) as other_agent, \
            served_page(bridge):
        runaway = asyncio.create_task(runaway_agent.call_tool("run_code", {"code": program}))
        if limit == "compute_seconds":  # 3 s of computing: the other agent is served meanwhile
            await eventually(lambda: bridge.bridge.programs.workers_held == 1)
        served = await other_agent.call_tool("get_order", {"order_id": 3})
        assert served.structured_content["id"] == 3
        if limit == "compute_seconds":
            assert not runaway.done()
        result = await asyncio.wait_for(runaway, 30)
        assert result.is_error
        error = result.structured_content["error"]
        assert (error["kind"], error["limit"], error.get("line")) == ("limit", limit, line), text_of(result)
        assert said in text_of(result)
        assert bridge.bridge.programs.workers_held == 0
        again = await runaway_agent.call_tool("run_code", {"code": "(await get_order(order_id=5))['total']"})
        assert again.structured_content == {"result": 15.0}  # the sandbox serves the next program


@pytest.mark.parametrize(("program", "limit", "line", "said"), [
    ("for n in range(5):\n    await get_order(order_id=n)", "max_calls", 2,
     "calls limit reached: a run starts at most 3 tool calls"),
    # Dialogs nobody answers: the calls stay in flight, whatever the machine's speed.
    ("import asyncio\nawait asyncio.gather(*[confirm(question=str(n)) for n in range(3)])", "max_calls_in_flight", 2,
     "calls in flight limit reached: at most 2 tool calls wait for their answers at once"),
    ("print('x' * 200)", "max_printed_chars", None, "printed output limit reached (100 characters)"),
])
async def test_the_limits_on_calls_and_output_are_the_settings(program, limit, line, said):
    async with code_bridge(code_max_calls=3, code_max_calls_in_flight=2, code_max_printed_chars=100) as bridge, \
            Client(bridge.mcp_url()) as client, served_page(bridge) as shop:
        result = await client.call_tool("run_code", {"code": program})
        assert result.is_error and said in text_of(result), text_of(result)
        error = result.structured_content["error"]
        assert (error["kind"], error["limit"], error.get("line")) == ("limit", limit, line)
        assert len(shop.invoked) <= 3
