"""Page tools as MCP tasks (the `io.modelcontextprotocol/tasks` extension): a call that outlives its
request, read later with tasks/get, cancelled with tasks/cancel. The table unit-tested with a clock;
the edge through a real bridge, a real page and raw 2026-07-28 JSON-RPC (the SDK's client has no tasks)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from mcp import Client

from bridge.tasks import TaskTable, TooManyTasks
from modern_agent import TASKS, Agent
from redis_support import redis_server, redis_url  # noqa: F401 (fixtures)
from support import eventually, page, running_bridge, tool

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"],
               execution={"taskSupport": "optional"})
APPROVE = tool("approve_payment", "Ask the user to approve a payment.", {"amount": {"type": "number"}},
               execution={"taskSupport": "required"})
NOW = tool("page_time", "The page's clock.")  # no execution: forbidden, always synchronous


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


# --- the table -------------------------------------------------------------------------------


def test_a_task_is_read_only_by_its_owner_in_its_room_until_its_ttl():
    clock = Clock()
    table = TaskTable(ttl=60, poll_interval=2, clock=clock)
    task = table.create(owner="a", room="r", tool="t")
    assert table.get(task.task_id, owner="a", room="r") is task
    assert table.get(task.task_id, owner="b", room="r") is None
    assert table.get(task.task_id, owner="a", room="other") is None
    shown = task.detailed()
    assert shown["status"] == "working" and shown["ttlMs"] == 60_000 and shown["pollIntervalMs"] == 2000
    assert shown["createdAt"].endswith("Z") and shown["createdAt"] == shown["lastUpdatedAt"]
    clock.now += 60
    assert table.get(task.task_id, owner="a", room="r") is None
    assert len(table) == 0


def test_the_first_outcome_stays_and_each_status_shows_its_payload():
    clock = Clock()
    table = TaskTable(ttl=60, poll_interval=1, clock=clock)
    done, failed, cancelled = (table.create(owner="", room="r", tool="t") for _ in range(3))
    clock.now += 5
    table.completed(done, {"content": []})
    table.cancelled(done, "too late")
    assert done.detailed()["status"] == "completed" and done.detailed()["result"] == {"content": []}
    assert done.detailed()["lastUpdatedAt"] != done.detailed()["createdAt"]
    table.failed(failed, -32603, "The page did not answer within 1 s.")
    assert failed.detailed()["error"] == {"code": -32603, "message": "The page did not answer within 1 s."}
    table.cancelled(cancelled, "Cancelled by the agent.")
    assert "result" not in cancelled.detailed() and "error" not in cancelled.detailed()


def test_input_requests_wait_with_fresh_keys_only():
    table = TaskTable(ttl=60, poll_interval=1, clock=Clock())
    task = table.create(owner="", room="r", tool="t")
    assert table.ask(task, {"name": {"method": "elicitation/create", "params": {}}}) == []
    assert task.detailed()["status"] == "input_required" and list(task.detailed()["inputRequests"]) == ["name"]
    assert table.answered(task, ["unknown"]) == {}
    assert table.answered(task, ["name"]) == {"name": {"method": "elicitation/create", "params": {}}}
    assert task.status == "working"
    assert table.ask(task, {"name": {"method": "roots/list", "params": {}}}) == ["name"]  # a key is never reused
    assert task.status == "working"


def test_the_table_is_bounded():
    table = TaskTable(ttl=60, poll_interval=1, max_tasks=2, clock=Clock())
    table.create(owner="", room="r", tool="t")
    table.create(owner="", room="r", tool="t")
    with pytest.raises(TooManyTasks):
        table.create(owner="", room="r", tool="t")


# --- through the bridge ----------------------------------------------------------------------


async def test_handshake_clients_see_each_tools_task_support():
    async with running_bridge() as b, page(b, CONFIRM, NOW), Client(b.mcp_url(), mode="legacy") as client:
        listed = (await client.list_tools()).tools
        assert [t.execution.task_support if t.execution else None for t in listed] == ["optional", None]


async def test_a_task_outlives_its_request_and_its_agent_reads_the_answer_later():
    async with running_bridge(task_poll_interval=0.5) as b, page(b, CONFIRM, NOW) as p:
        async with httpx.AsyncClient(timeout=10) as http:
            agent = Agent(b.mcp_url(), http)
            discovered = (await agent.request("server/discover", {})).json()["result"]
            assert discovered["capabilities"]["extensions"] == {TASKS: {}}
            created = (await agent.call("user_confirm", {"title": "Pay 40 EUR?"}))["result"]
        # The call's HTTP request is over and its client gone; the page is still asked.
        assert created["resultType"] == "task" and created["status"] == "working"
        assert isinstance(created["ttlMs"], int) and created["pollIntervalMs"] == 500
        invoke = await p.event()
        assert invoke["type"] == "agui.tool.invoke" and invoke["params"] == {"title": "Pay 40 EUR?"}
        async with httpx.AsyncClient(timeout=10) as http:  # the agent comes back, on a new connection
            agent = Agent(b.mcp_url(), http)
            working = (await agent.task("tasks/get", created["taskId"]))["result"]
            assert working["status"] == "working" and working["resultType"] == "complete"
            await asyncio.sleep(1.2)  # longer than the first client would have waited
            await p.answer(invoke["call_id"], {"confirmed": True})
            done = await agent.task_reaching(created["taskId"], "completed")
            assert done["result"]["structuredContent"] == {"confirmed": True}
            assert done["result"]["isError"] is False

            plain = asyncio.create_task(agent.call("page_time", {}))  # no taskSupport: synchronous
            sync_invoke = await p.event()
            await p.answer(sync_invoke["call_id"], "12:00")
            assert (await plain)["result"]["content"][0]["text"] == "12:00"


async def test_only_agents_that_declare_tasks_get_them():
    async with running_bridge() as b, page(b, CONFIRM, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http, tasks=False)
        refused = await agent.call("approve_payment", {"amount": 3})
        assert refused["error"]["code"] == -32021
        assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
        call = asyncio.create_task(agent.call("user_confirm", {"title": "sync"}))  # optional: synchronous
        invoke = await p.event()
        assert invoke["name"] == "user_confirm"
        await p.answer(invoke["call_id"], "yes")
        assert (await call)["result"]["content"][0]["text"] == "yes"
        for method in ("tasks/get", "tasks/cancel", "tasks/update"):
            assert (await agent.task(method, "t_whatever"))["error"]["code"] == -32021


async def test_tasks_refuse_unknown_ids_a_wrong_mcp_name_and_other_rooms():
    async with running_bridge() as b, page(b, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http)
        created = (await agent.call("approve_payment", {"amount": 3}))["result"]
        assert (await agent.task("tasks/get", "nope"))["error"]["code"] == -32602
        assert (await agent.task("tasks/get", created["taskId"], name="other"))["error"]["code"] == -32020
        elsewhere = Agent(b.mcp_url("elsewhere"), http)
        assert (await elsewhere.task("tasks/get", created["taskId"]))["error"]["code"] == -32602
        await p.event()


async def test_cancelling_a_task_aborts_the_page_call_once():
    async with running_bridge() as b, page(b, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http)
        created = (await agent.call("approve_payment", {"amount": 3}))["result"]
        invoke = await p.event()
        assert (await agent.task("tasks/cancel", created["taskId"]))["result"]["resultType"] == "complete"
        cancel = await p.event()
        assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"], "reason": "cancelled by the agent"}
        shown = await agent.task_reaching(created["taskId"], "cancelled")
        assert "result" not in shown
        assert "result" in await agent.task("tasks/cancel", created["taskId"])  # idempotent
        await p.answer(invoke["call_id"], "too late")  # the page's late answer changes nothing
        assert (await agent.task("tasks/get", created["taskId"]))["result"]["status"] == "cancelled"


async def test_a_page_that_does_not_answer_fails_the_task_and_the_ttl_forgets_it():
    async with running_bridge(call_timeout=0.3, task_ttl=2.0) as b, page(b, APPROVE) as p, \
            httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http)
        created = (await agent.call("approve_payment", {"amount": 3}))["result"]
        assert created["ttlMs"] == 2000
        await p.event()
        failed = await agent.task_reaching(created["taskId"], "failed")
        assert failed["error"]["code"] == -32603 and "did not answer" in failed["error"]["message"]
        await asyncio.sleep(2.0)
        assert (await agent.task("tasks/get", created["taskId"]))["error"]["code"] == -32602


async def test_tasks_are_read_updated_and_cancelled_from_any_process_sharing_redis(redis_url):
    ask = {"ok": {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?",
                                                           "requestedSchema": {"type": "object", "properties": {}}}}}
    async with running_bridge(redis_url=redis_url, redis_heartbeat=0.2) as a, \
            running_bridge(redis_url=redis_url, redis_heartbeat=0.2) as b, page(a, APPROVE) as p, \
            httpx.AsyncClient(timeout=10) as http:
        await eventually(lambda: b.hub.room("default").get("approve_payment"))
        on_a = Agent(a.mcp_url(), http, capabilities={"elicitation": {}})
        on_b = Agent(b.mcp_url(), http, capabilities={"elicitation": {}})
        created = (await on_b.call("approve_payment", {"amount": 3}))["result"]  # its call runs on b
        invoke = await p.event()
        assert (await on_a.task("tasks/get", created["taskId"]))["result"]["status"] == "working"
        await p.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"], "requests": ask})
        asked = await on_a.task_reaching(created["taskId"], "input_required")
        assert asked["inputRequests"] == ask
        await on_a.task("tasks/update", created["taskId"], inputResponses={"ok": {"action": "accept", "content": {}}})
        again = await p.event()  # b called the page again with what a was told
        assert again["input_responses"] == {"ok": {"action": "accept", "content": {}}}
        await p.answer(again["call_id"], "paid")
        done = await on_a.task_reaching(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "paid"

        second = (await on_b.call("approve_payment", {"amount": 4}))["result"]
        invoke = await p.event()
        await on_a.task("tasks/cancel", second["taskId"])
        cancel = await p.event()
        assert cancel["type"] == "agui.tool.cancel" and cancel["call_id"] == invoke["call_id"]
        await on_a.task_reaching(second["taskId"], "cancelled")
