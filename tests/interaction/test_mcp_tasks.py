"""Page tools as MCP tasks (the `io.modelcontextprotocol/tasks` extension): a call that outlives its
request, read later with tasks/get, cancelled with tasks/cancel: through a real bridge, a real page and raw
2026-07-28 JSON-RPC (the SDK's client has no tasks). (The task table alone, with a clock of its own:
tests/core/test_tasks.py.)"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from typing import Any

import httpx
from mcp import Client
from modern_agent import TASKS, Agent
from support import eventually, page, running_bridge, tool

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"],
               execution={"taskSupport": "optional"})
APPROVE = tool("approve_payment", "Ask the user to approve a payment.", {"amount": {"type": "number"}},
               execution={"taskSupport": "required"})
NOW = tool("page_time", "The page's clock.")  # no execution: forbidden, always synchronous


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


# --- bounds, through the bridge ----------------------------------------------------------------
# Without --agent-token any Authorization passes, and an agent is the credential it presents: behind
# a proxy that passes each user's own token, each user is one agent (with --agent-token all agents
# present the one token and are one agent).


def credentialed(token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {token}"})


async def test_an_agent_at_its_bound_locks_no_one_else_out_and_its_optional_tools_run_without_a_task():
    async with running_bridge(max_tasks_per_agent=2) as b, page(b, APPROVE, CONFIRM) as p, \
            credentialed("alice") as alice_http, credentialed("bob") as bob_http:
        alice, bob = Agent(b.mcp_url(), alice_http), Agent(b.mcp_url(), bob_http)
        first, second = [(await alice.call("approve_payment", {"amount": n}))["result"] for n in (1, 2)]
        invokes = [await p.event(), await p.event()]
        refused = await alice.call("approve_payment", {"amount": 3})  # "required": refused, saying why
        assert refused["error"] == {"code": -32603, "message": "This agent already has 2 tasks running, the most "
                                                               "it keeps; wait for one to end."}
        sync = asyncio.create_task(alice.call("user_confirm", {"title": "Sure?"}))  # "optional": no task
        invoke = await p.event()
        assert invoke["name"] == "user_confirm"
        await p.answer(invoke["call_id"], "yes")
        answer = (await sync)["result"]
        assert answer["resultType"] == "complete" and answer["content"] == [{"type": "text", "text": "yes"}]

        bobs = (await bob.call("approve_payment", {"amount": 4}))["result"]  # another agent is not held up
        assert bobs["resultType"] == "task" and (await p.event())["params"] == {"amount": 4}
        assert (await alice.task("tasks/get", bobs["taskId"]))["error"]["code"] == -32602

        await p.answer(invokes[0]["call_id"], "paid")
        await alice.task_reaching(first["taskId"], "completed")
        third = (await alice.call("approve_payment", {"amount": 5}))["result"]  # her ended task makes room
        assert third["resultType"] == "task"
        assert (await alice.task("tasks/get", first["taskId"]))["error"]["code"] == -32602
        assert (await alice.task("tasks/get", second["taskId"]))["result"]["status"] == "working"
        assert (await bob.task("tasks/get", bobs["taskId"]))["result"]["status"] == "working"


async def test_kept_results_are_bounded_in_bytes_and_one_too_large_fails_its_task_saying_so():
    # Answers past --result-max-chars reach agents cut: these are kept whole, for the bounds to meet them.
    async with running_bridge(max_task_bytes_per_agent=700_000, max_task_bytes=1_000_000,
                              result_max_chars=10_000_000) as b, \
            page(b, APPROVE) as p, credentialed("alice") as alice_http, credentialed("bob") as bob_http:
        alice, bob = Agent(b.mcp_url(), alice_http), Agent(b.mcp_url(), bob_http)

        async def answered(agent: Agent, answer: Any) -> dict[str, Any]:
            created = (await agent.call("approve_payment", {"amount": 1}))["result"]
            await p.answer((await p.event())["call_id"], answer)
            return await agent.task_reaching(created["taskId"], "completed" if len(answer) < 700_000 else "failed")

        bobs = await answered(bob, "b" * 300_000)
        alices = [await answered(alice, "a" * 300_000) for _ in range(3)]  # two fit her bound: her first goes
        assert (await alice.task("tasks/get", alices[0]["taskId"]))["error"]["code"] == -32602
        assert (await alice.task("tasks/get", alices[2]["taskId"]))["result"]["status"] == "completed"
        kept = (await bob.task("tasks/get", bobs["taskId"]))["result"]  # hers never pushed his out
        assert kept["result"]["content"][0]["text"] == "b" * 300_000
        assert b.bridge.mcp.tasks.table.kept_bytes() <= 1_000_000

        too_large = await answered(alice, "a" * 800_000)
        assert too_large["error"]["code"] == -32603
        assert too_large["error"]["message"] == ("The page's result (800061 bytes as JSON) is larger than this bridge "
                                                 "keeps for an agent's tasks (700000 bytes), so it was not kept.")


def kept_size(root: Any) -> int:
    """The bytes of every object reachable from `root` (classes aside): what keeping it costs."""
    seen, stack, total = set(), [root], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


async def test_a_structured_result_is_kept_once():
    value = {"rows": [{"id": n, "name": f"row {n}"} for n in range(10)], "blob": "x" * 900_000}
    async with running_bridge(result_max_chars=10_000_000) as b, page(b, APPROVE) as p, \
            httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http)
        created = (await agent.call("approve_payment", {"amount": 1}))["result"]
        await p.answer((await p.event())["call_id"], value)
        done = await agent.task_reaching(created["taskId"], "completed")
        assert done["result"] == {"content": [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}],
                                  "structuredContent": value, "isError": False}
        assert kept_size(b.bridge.mcp.tasks.table.known(created["taskId"])) < 1_000_000  # not 1.8 MB


async def test_a_task_whose_time_to_live_runs_out_tells_the_page_it_expired():
    async with running_bridge(task_ttl=1.0) as b, page(b, APPROVE) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http)
        await agent.call("approve_payment", {"amount": 1})
        invoke = await p.event()
        cancel = await p.event()
        assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"], "reason": "the task expired"}


async def test_a_task_is_its_agents_however_it_spells_the_bearer_scheme():
    async with running_bridge(agent_token="s3cret") as b, page(b, APPROVE) as p:
        spellings = ["Bearer s3cret", "bearer s3cret", "BEARER   s3cret", "bEaReR s3cret"]
        async with httpx.AsyncClient(timeout=10, headers={"Authorization": spellings[0]}) as http:
            created = (await Agent(b.mcp_url(), http).call("approve_payment", {"amount": 1}))["result"]
        await p.event()
        for spelling in spellings:
            async with httpx.AsyncClient(timeout=10, headers={"Authorization": spelling}) as http:
                shown = await Agent(b.mcp_url(), http).task("tasks/get", created["taskId"])
                assert shown["result"]["taskId"] == created["taskId"], spelling
        for wrong in ["Bearer s3cre", "Basic s3cret", "s3cret"]:
            async with httpx.AsyncClient(timeout=10, headers={"Authorization": wrong}) as http:
                assert (await Agent(b.mcp_url(), http).request("tasks/get", {"taskId": created["taskId"]},
                                                                name=created["taskId"])).status_code == 401
