"""Programs waiting on pages: a parked program holds no sandbox worker and goes on when its page answers (a
hundred of them at once on a few workers); the agent's cancel, or its request ending with nobody left to read
the answer, ends the program and cancels its page calls at the page; a program runs as an MCP task when the
agent asks for one, read later with tasks/get and stopped with tasks/cancel."""

from __future__ import annotations

import asyncio
import textwrap

import httpx
import pytest
from code_mode_support import HOLD, SHOP_HANDLERS, code_bridge, sandbox_workers, served_page
from mcp import Client
from modern_agent import Agent
from support import eventually

ASK_NAME = {"name": {"method": "elicitation/create", "params": {
    "mode": "form", "message": "Your name?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}
WAITS_FOR_A_PERSON = textwrap.dedent("""
    first = await get_order(order_id=3)
    answer = await confirm(question=f"Refund order {first['id']}?")
    [answer, first["total"]]
    """)


async def test_a_parked_program_holds_no_worker_and_goes_on_when_its_page_answers():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, served_page(bridge) as shop:
        programs = bridge.bridge.programs
        run = asyncio.create_task(client.call_tool("run_code", {"code": WAITS_FOR_A_PERSON}))
        await eventually(lambda: shop.held)
        await eventually(lambda: programs.workers_held == 0 and len(programs.parked) == 1)
        assert programs.running == 1 and len(sandbox_workers()) >= 1  # the pool's worker is free, not gone
        [(call_id, event)] = shop.held.items()
        assert event["params"] == {"question": "Refund order 3?"}
        await shop.answer(call_id, "yes")
        result = await asyncio.wait_for(run, 10)
        assert result.structured_content == {"result": ["yes", 13.0]}
        assert len(programs.parked) == 0 and programs.running == 0


async def test_a_hundred_programs_waiting_on_pages_hold_no_worker():
    async with code_bridge(code_workers=2, max_calls_per_page=200) as bridge, \
            Client(bridge.mcp_url()) as first, Client(bridge.mcp_url()) as second, served_page(bridge) as shop:
        programs = bridge.bridge.programs
        runs = [asyncio.create_task(agent.call_tool("run_code", {"code": WAITS_FOR_A_PERSON}))
                for agent in (first, second) for _ in range(50)]
        await eventually(lambda: len(shop.held) == 100, timeout=60)
        await eventually(lambda: programs.workers_held == 0 and len(programs.parked) == 100)
        assert programs.running == 100 and 1 <= len(sandbox_workers()) <= 2
        for n, call_id in enumerate(list(shop.held)):
            await shop.answer(call_id, f"yes {n}")
        results = await asyncio.wait_for(asyncio.gather(*runs), 60)
        assert sorted(r.structured_content["result"][0] for r in results) == sorted(f"yes {n}" for n in range(100))
        assert programs.running == 0 and len(programs.parked) == 0


async def test_the_agents_cancel_ends_the_program_and_cancels_its_page_calls():
    program = "import asyncio\nawait asyncio.gather(*[confirm(question=f'Ship {n}?') for n in range(3)])"
    async with code_bridge() as bridge, Client(bridge.mcp_url(), mode="legacy") as client, served_page(bridge) as shop:
        run = asyncio.create_task(client.call_tool("run_code", {"code": program}))
        await eventually(lambda: len(shop.held) == 3)
        waiting = set(shop.held)
        run.cancel()  # the SDK sends notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await run
        await eventually(lambda: {event["call_id"] for event in shop.cancelled} == waiting)
        assert {event["reason"] for event in shop.cancelled} == {"cancelled by the agent"}
        await eventually(lambda: bridge.bridge.programs.running == 0 and not bridge.hub.calls.in_flight())


async def handshake_call(url: str, http: httpx.AsyncClient, code: str) -> httpx.Response:
    """A handshake-era session opened by hand, and a run_code call on it (answered on the call's own stream)."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    headers |= {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                       "params": {"name": "run_code", "arguments": {"code": code}}})


@pytest.mark.parametrize("era", ["2026-07-28", "handshake"])
async def test_a_program_nobody_waits_for_ends_and_its_page_calls_are_cancelled(era):
    """The agent closes its request (2026-07-28's cancel), or a handshake client's response stream closes (it
    timed out and went away): the answer can reach nobody."""
    async with code_bridge() as bridge, served_page(bridge) as shop:
        leaving = httpx.AsyncClient(timeout=None)
        if era == "handshake":
            call = handshake_call(bridge.mcp_url(), leaving, WAITS_FOR_A_PERSON)
        else:
            call = Agent(bridge.mcp_url(), leaving, tasks=False).call("run_code", {"code": WAITS_FOR_A_PERSON})
        run = asyncio.create_task(call)
        await eventually(lambda: shop.held)
        [call_id] = shop.held
        run.cancel()
        await leaving.aclose()  # nobody is left to read the answer
        await eventually(lambda: [event["call_id"] for event in shop.cancelled] == [call_id])
        await eventually(lambda: bridge.bridge.programs.running == 0 and not bridge.hub.calls.in_flight())


async def test_a_program_runs_as_a_task_read_later_with_tasks_get():
    async with code_bridge(task_poll_interval=0.5) as bridge, httpx.AsyncClient(timeout=10) as http, \
            served_page(bridge) as shop:
        agent = Agent(bridge.mcp_url(), http)
        created = (await agent.call("run_code", {"code": WAITS_FOR_A_PERSON}))["result"]
        assert created["resultType"] == "task" and created["status"] == "working"
        await eventually(lambda: shop.held)
        assert (await agent.task("tasks/get", created["taskId"]))["result"]["status"] == "working"
        [call_id] = shop.held
        await shop.answer(call_id, "yes")
        done = await agent.task_reaching(created["taskId"], "completed")
        assert done["result"]["structuredContent"] == {"result": ["yes", 13.0]}
        assert done["result"]["isError"] is False


async def test_cancelling_a_programs_task_cancels_its_page_calls():
    async with code_bridge() as bridge, httpx.AsyncClient(timeout=10) as http, served_page(bridge) as shop:
        agent = Agent(bridge.mcp_url(), http)
        created = (await agent.call("run_code", {"code": WAITS_FOR_A_PERSON}))["result"]
        await eventually(lambda: shop.held)
        [call_id] = shop.held
        await agent.task("tasks/cancel", created["taskId"])
        await eventually(lambda: [event["call_id"] for event in shop.cancelled] == [call_id])
        assert shop.cancelled[0]["reason"] == "cancelled by the agent"
        await agent.task_reaching(created["taskId"], "cancelled")
        assert bridge.bridge.programs.running == 0


async def test_a_program_whose_page_asks_for_input_reads_why_it_cannot_give_it():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, \
            served_page(bridge, handlers={**SHOP_HANDLERS, "get_order": lambda params: HOLD}) as shop:
        run = asyncio.create_task(client.call_tool("run_code", {"code": textwrap.dedent("""
            try:
                await get_order(order_id=1)
            except Exception as error:
                problem = str(error)
            problem
            """)}))
        await eventually(lambda: shop.invoked)
        invoke = shop.invoked[0]
        assert invoke["client_capabilities"] == {}  # the page is told the program's side answers nothing
        await shop.page.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"],
                              "requests": ASK_NAME, "requestState": "s1"})
        result = await asyncio.wait_for(run, 10)
        assert result.structured_content == {"result": "The page asked for input (elicitation), which a program "
                                                       "cannot give: call get_order directly."}


async def test_an_agent_that_asked_for_progress_hears_keep_alive_ticks_while_a_program_waits():
    async with code_bridge(progress_interval=0.2) as bridge, Client(bridge.mcp_url()) as client, \
            served_page(bridge) as shop:
        seen: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        run = asyncio.create_task(client.call_tool("run_code", {"code": WAITS_FOR_A_PERSON},
                                                   progress_callback=on_progress))
        await eventually(lambda: shop.held)
        await eventually(lambda: sum(m == "The program is waiting for the pages to answer." for _, m in seen) >= 2)
        [call_id] = shop.held
        await shop.answer(call_id, "yes")
        assert (await asyncio.wait_for(run, 10)).structured_content == {"result": ["yes", 13.0]}
        assert "1 of 1 tool calls answered; last: get_order" in [message for _, message in seen]
        assert [progress for progress, _ in seen] == sorted({progress for progress, _ in seen})  # increasing
