"""Tasks in shared mode: bridge processes joined by a real redis-server. An agent's cancel or answers
reach the process running the task's call once, and Redis goes quiet after; a task whose process died
settles; the bounds on what tasks keep hold there too, and Redis forgets what a process forgot."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import redis.asyncio
from modern_agent import Agent
from redis_support import start_bridge_process, stop, wait_for_port
from support import eventually, free_port, page, running_bridge, tool

APPROVE = tool("approve_payment", "Ask the user to approve a payment.", {"amount": {"type": "number"}},
               execution={"taskSupport": "required"})
ASK = {"ok": {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?",
                                                       "requestedSchema": {"type": "object", "properties": {}}}}}


@asynccontextmanager
async def bridges(redis_url: str, count: int = 2, **overrides: Any):
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(running_bridge(redis_url=redis_url, redis_heartbeat=0.2, **overrides))
               for _ in range(count)]


def credentialed(token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {token}"})


async def publishes(url: str) -> tuple[int, int]:
    """How many PUBLISH commands, and commands in all, Redis has processed."""
    client = redis.asyncio.Redis.from_url(url)
    try:
        stats, totals = await client.info("commandstats"), await client.info("stats")
        return stats.get("cmdstat_publish", {}).get("calls", 0), totals["total_commands_processed"]
    finally:
        await client.aclose()


async def quiet(url: str) -> None:
    """Redis settles within a second: then no publish in the next second, and only heartbeats' commands."""
    await asyncio.sleep(1.0)
    published, commands = await publishes(url)
    await asyncio.sleep(1.0)
    published_after, commands_after = await publishes(url)
    assert published_after == published, f"{published_after - published} publishes in a quiet second"
    assert commands_after - commands < 500, f"{commands_after - commands} commands in a quiet second"


async def test_a_cancel_through_another_process_reaches_the_page_once_and_redis_goes_quiet(redis_url):
    async with bridges(redis_url) as (a, b), page(a, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
        await eventually(lambda: b.hub.room("default").get("approve_payment"))
        on_a, on_b = Agent(a.mcp_url(), http), Agent(b.mcp_url(), http)
        created = (await on_a.call("approve_payment", {"amount": 3}))["result"]  # its call runs on a
        invoke = await p.event()
        assert (await on_b.task("tasks/cancel", created["taskId"]))["result"]["resultType"] == "complete"
        cancel = await p.event()
        assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"], "reason": "cancelled by the agent"}
        assert (await on_b.task_reaching(created["taskId"], "cancelled"))["statusMessage"] == "Cancelled by the agent."
        await quiet(redis_url)
        assert p.events.empty()  # one cancel, once
        assert (await on_b.task("tasks/cancel", created["taskId"]))["result"]["resultType"] == "complete"
        await quiet(redis_url)  # a cancel of a task that ended is not sent anywhere


async def test_answers_through_another_process_reach_the_page_once_and_redis_goes_quiet(redis_url):
    async with bridges(redis_url) as (a, b), page(a, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
        await eventually(lambda: b.hub.room("default").get("approve_payment"))
        on_a = Agent(a.mcp_url(), http, capabilities={"elicitation": {}})
        on_b = Agent(b.mcp_url(), http, capabilities={"elicitation": {}})
        created = (await on_a.call("approve_payment", {"amount": 3}))["result"]
        invoke = await p.event()
        await p.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"], "requests": ASK})
        await on_b.task_reaching(created["taskId"], "input_required")
        answer = {"ok": {"action": "accept", "content": {}}}
        assert "result" in await on_b.task("tasks/update", created["taskId"], inputResponses=answer)
        again = await p.event()
        assert again["type"] == "agui.tool.invoke" and again["input_responses"] == answer
        await quiet(redis_url)
        assert p.events.empty()
        await p.answer(again["call_id"], "paid")
        assert (await on_b.task_reaching(created["taskId"], "completed"))["result"]["content"][0]["text"] == "paid"


async def test_a_task_whose_process_died_settles_and_a_cancel_of_it_starts_nothing(redis_url):
    port = free_port()
    process = start_bridge_process(port, redis_url, 0.2)
    try:
        await wait_for_port(port)
        async with bridges(redis_url, count=1) as (b,), page(b, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
            dying, on_b = Agent(f"http://127.0.0.1:{port}/mcp", http), Agent(b.mcp_url(), http)

            async def listed() -> bool:
                return "approve_payment" in str((await dying.request("tools/list", {})).json())

            for _ in range(200):
                if await listed():
                    break
                await asyncio.sleep(0.05)
            created = (await dying.call("approve_payment", {"amount": 3}))["result"]  # its call runs there
            invoke = await p.event()
            process.kill()  # SIGKILL: no goodbye, only its heartbeat stops

            # Until Redis has seen its connections close, a cancel may still be taken for heard; then, until
            # its heartbeat is gone (3 x 0.2 s), the agent is told to send it again; then it is acknowledged.
            for _ in range(200):
                cancelled = await on_b.task("tasks/cancel", created["taskId"])
                if "result" in cancelled:
                    break
                assert cancelled["error"]["message"].startswith("The bridge process that runs this task did not hear")
                await asyncio.sleep(0.05)
            shown = await on_b.task_reaching(created["taskId"], "failed")  # settled once the heartbeat is gone
            assert shown["error"]["message"] == (
                "The bridge process that ran this task stopped, and its page call ended with it; call the tool again.")
            cancel = await p.event()  # its call ends at the page, once
            assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"],
                              "reason": "the agent's bridge process stopped"}
            await quiet(redis_url)
            assert p.events.empty()
    finally:
        stop(process)


async def test_an_unreadable_order_is_ignored_and_the_next_one_carried_out(redis_url):
    async with bridges(redis_url) as (a, b), page(a, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
        await eventually(lambda: b.hub.room("default").get("approve_payment"))
        created = (await Agent(a.mcp_url(), http).call("approve_payment", {"amount": 3}))["result"]
        invoke = await p.event()
        channel = f"agui:tasks:{a.bridge.link.process_id}"
        for junk in ("not json", "[1]", '{"cancel": true}', '{"task_id": 5, "cancel": true}',
                     '{"task_id": "t_nope", "cancel": true}', '{"task_id": "%s", "answers": 7}' % created["taskId"]):
            await b.bridge.link.redis.publish(channel, junk)
        assert (await Agent(a.mcp_url(), http).task("tasks/get", created["taskId"]))["result"]["status"] == "working"
        await Agent(b.mcp_url(), http).task("tasks/cancel", created["taskId"])
        assert (await p.event())["call_id"] == invoke["call_id"]


# --- bounds --------------------------------------------------------------------------------------


async def test_each_process_bounds_each_agents_tasks_and_redis_forgets_what_it_dropped(redis_url):
    async with bridges(redis_url, max_tasks_per_agent=2) as (a, b), page(a, APPROVE) as p, \
            credentialed("alice") as alice_http, credentialed("bob") as bob_http:
        await eventually(lambda: b.hub.room("default").get("approve_payment"))
        alice_b, alice_a = Agent(b.mcp_url(), alice_http), Agent(a.mcp_url(), alice_http)
        first, second = [(await alice_b.call("approve_payment", {"amount": n}))["result"] for n in (1, 2)]
        invokes = [await p.event(), await p.event()]
        refused = await alice_b.call("approve_payment", {"amount": 3})
        assert refused["error"]["message"] == ("This agent already has 2 tasks running, the most it keeps; "
                                               "wait for one to end.")
        bobs = (await Agent(b.mcp_url(), bob_http).call("approve_payment", {"amount": 4}))["result"]
        assert bobs["resultType"] == "task"  # another agent is not held up
        assert (await alice_a.call("approve_payment", {"amount": 5}))["result"]["resultType"] == "task"  # per process
        await p.event(), await p.event()

        await p.answer(invokes[0]["call_id"], "paid")
        await alice_a.task_reaching(first["taskId"], "completed")  # read from Redis on a
        await alice_b.call("approve_payment", {"amount": 6})  # b forgets her ended task to make room ...
        assert (await alice_a.task("tasks/get", first["taskId"]))["error"]["code"] == -32602  # ... and so does Redis
        assert (await alice_a.task("tasks/get", second["taskId"]))["result"]["status"] == "working"
        assert not await b.bridge.link.redis.exists(f"agui:task:{first['taskId']}")


async def test_kept_bytes_are_bounded_in_shared_mode_and_a_structured_result_is_kept_once(redis_url):
    value = {"rows": [{"id": n} for n in range(10)], "blob": "x" * 900_000}
    # Answers past --result-max-chars reach agents cut: this one is kept whole, for the bound to meet it.
    async with bridges(redis_url, max_task_bytes_per_agent=950_000, result_max_chars=10_000_000) as (a, b), \
            page(a, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
        await eventually(lambda: b.hub.room("default").get("approve_payment"))
        on_a, on_b = Agent(a.mcp_url(), http), Agent(b.mcp_url(), http)
        created = (await on_b.call("approve_payment", {"amount": 1}))["result"]
        await p.answer((await p.event())["call_id"], value)
        done = await on_a.task_reaching(created["taskId"], "completed")
        assert done["result"]["structuredContent"] == value and len(done["result"]["content"][0]["text"]) > 900_000
        kept = await b.bridge.link.redis.memory_usage(f"agui:task:{created['taskId']}")
        assert 900_000 < kept < 1_000_000  # one copy, not two

        larger = (await on_b.call("approve_payment", {"amount": 2}))["result"]
        await p.answer((await p.event())["call_id"], {"blob": "y" * 960_000})
        failed = await on_a.task_reaching(larger["taskId"], "failed")
        assert failed["error"]["message"] == ("The page's result (960053 bytes as JSON) is larger than this bridge "
                                              "keeps for an agent's tasks (950000 bytes), so it was not kept.")
        assert await b.bridge.link.redis.memory_usage(f"agui:task:{larger['taskId']}") < 10_000
