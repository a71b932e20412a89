"""What a page's call asks of the agent's side: input requests (an elicitation answered, one refused for a
capability the agent lacks, tampered state; 2026-07-28 retries, handshake-era requests on the call's
stream, tasks) and log lines at the level agents asked for. Real bridge, a real page, the real SDK
client where it can, raw JSON-RPC where it cannot."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import mcp_types as types
from mcp import Client
from mcp_types import LOG_LEVEL_META_KEY
from modern_agent import Agent, messages_of
from support import page, running_bridge, tool

GREET = tool("greet_user", "Greet the user by the name they give.", execution={"taskSupport": "optional"})
ASK_NAME = {"name": {"method": "elicitation/create",
                     "params": {"mode": "form", "message": "Your name?",
                                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                                                    "required": ["name"]}}}}
ELICITING = {"elicitation": {"form": {}}}


async def ask(p, invoke: dict, state: Any = "step-1") -> None:
    await p.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"], "requests": ASK_NAME,
                  "requestState": state})


async def test_a_2026_agent_answers_the_pages_question_by_retrying_the_call():
    async with running_bridge() as b, page(b, GREET) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http, tasks=False, capabilities=ELICITING)
        first = asyncio.create_task(agent.call("greet_user", {}))
        invoke = await p.event()
        assert invoke["client_capabilities"] == ELICITING and "input_responses" not in invoke
        await ask(p, invoke)
        asked = (await first)["result"]
        assert asked["resultType"] == "input_required" and asked["inputRequests"] == ASK_NAME
        assert "step-1" not in asked["requestState"]  # sealed, not the page's plaintext

        answers = {"name": {"action": "accept", "content": {"name": "Luca"}}}
        retry = asyncio.create_task(agent.call("greet_user", {}, params={"inputResponses": answers,
                                                                         "requestState": asked["requestState"]}))
        again = await p.event()
        assert again["input_responses"] == answers and again["request_state"] == "step-1"
        assert again["call_id"] != invoke["call_id"]
        await p.answer(again["call_id"], "Hello, Luca!")
        assert (await retry)["result"]["content"][0]["text"] == "Hello, Luca!"

        tampered = asked["requestState"][:-4] + ("AAAA" if not asked["requestState"].endswith("AAAA") else "BBBB")
        refused = await agent.call("greet_user", {}, params={"inputResponses": answers, "requestState": tampered})
        assert refused["error"]["code"] == -32602
        not_objects = await agent.call("greet_user", {}, params={"inputResponses": {"name": "Luca"},
                                                                 "requestState": asked["requestState"]})
        assert not_objects["error"]["code"] == -32602
        other_tool_state = await agent.call("greet_user", {"other": 1}, params={
            "inputResponses": answers, "requestState": asked["requestState"]})  # bound to the arguments too
        assert other_tool_state["error"]["code"] == -32602


async def test_a_question_the_agent_cannot_answer_is_refused_and_the_page_told():
    async with running_bridge() as b, page(b, GREET) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http, tasks=False)  # declares no elicitation
        call = asyncio.create_task(agent.request("tools/call", {"name": "greet_user", "arguments": {}},
                                                 name="greet_user"))
        invoke = await p.event()
        await ask(p, invoke)
        response = await call
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == -32021 and error["data"] == {"requiredCapabilities": {"elicitation": {}}}
        cancel = await p.event()
        assert cancel["type"] == "agui.tool.cancel" and cancel["call_id"] == invoke["call_id"]


async def test_a_handshake_client_is_asked_on_the_calls_stream_and_the_page_gets_the_answer():
    asked: list[Any] = []

    async def elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with running_bridge() as b, page(b, GREET) as p, \
            Client(b.mcp_url(), mode="legacy", elicitation_callback=elicit) as client:
        call = asyncio.create_task(client.call_tool("greet_user", {}))
        invoke = await p.event()
        assert "elicitation" in invoke["client_capabilities"]
        await ask(p, invoke, state='{"step": 1}')
        again = await p.event()
        assert asked == ["Your name?"]
        assert again["input_responses"] == {"name": {"action": "accept", "content": {"name": "Ada"}}}
        assert again["request_state"] == '{"step": 1}'
        await p.answer(again["call_id"], "Hello, Ada!")
        assert (await asyncio.wait_for(call, 10)).content[0].text == "Hello, Ada!"


async def test_a_task_waits_for_input_and_tasks_update_answers_it():
    async with running_bridge() as b, page(b, GREET) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http, capabilities=ELICITING)
        created = (await agent.call("greet_user", {}))["result"]
        invoke = await p.event()
        await ask(p, invoke)
        shown = await agent.task_reaching(created["taskId"], "input_required")
        assert shown["inputRequests"] == ASK_NAME
        answers = {"name": {"action": "accept", "content": {"name": "Grace"}}, "unknown": {"action": "decline"}}
        assert "result" in await agent.task("tasks/update", created["taskId"], inputResponses=answers)
        again = await p.event()
        assert again["input_responses"] == {"name": answers["name"]} and again["request_state"] == "step-1"
        await p.answer(again["call_id"], "Hello, Grace!")
        shown = await agent.task_reaching(created["taskId"], "completed")
        assert shown["result"]["content"][0]["text"] == "Hello, Grace!"


async def log_lines(p, invoke: dict) -> None:
    for level in ("debug", "info", "error"):
        await p.send({"type": "agui.tool.log", "call_id": invoke["call_id"], "level": level, "data": f"a {level} line",
                      "logger": "page"})
    await p.answer(invoke["call_id"], "done")


async def test_page_log_lines_reach_handshake_agents_at_the_level_they_set_and_none_before():
    received: list[tuple[str, Any]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append((params.level, params.data))

    async with running_bridge() as b, page(b, GREET) as p, \
            Client(b.mcp_url(), mode="legacy", logging_callback=on_log) as client:
        call = asyncio.create_task(client.call_tool("greet_user", {}))
        await log_lines(p, await p.event())
        await asyncio.wait_for(call, 10)
        assert received == []  # no level set: no log messages
        await client.set_logging_level("info")
        call = asyncio.create_task(client.call_tool("greet_user", {}))
        await log_lines(p, await p.event())
        await asyncio.wait_for(call, 10)
        assert received == [("info", "a info line"), ("error", "a error line")]


async def test_page_log_lines_reach_2026_agents_that_ask_in_the_request():
    async with running_bridge() as b, page(b, GREET) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http, tasks=False)
        call = asyncio.create_task(agent.request("tools/call", {"name": "greet_user", "arguments": {}},
                                                 name="greet_user", meta={LOG_LEVEL_META_KEY: "error"}))
        await log_lines(p, await p.event())
        sent = messages_of(await call)
        logs = [m["params"] for m in sent if m.get("method") == "notifications/message"]
        assert logs == [{"level": "error", "data": "a error line", "logger": "page"}]
        assert sent[-1]["result"]["content"][0]["text"] == "done"


async def test_a_malformed_log_or_input_request_is_refused_and_the_call_goes_on():
    async with running_bridge() as b, page(b, GREET) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http, tasks=False)
        call = asyncio.create_task(agent.call("greet_user", {}))
        invoke = await p.event()
        await p.send({"type": "agui.tool.log", "call_id": invoke["call_id"], "level": "loud", "data": "x"})
        assert (await p.reply())["code"] == "bad_message"
        await p.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"],
                      "requests": {"k": {"method": "tools/call", "params": {}}}})
        assert (await p.reply())["code"] == "bad_message"
        await p.send({"type": "agui.tool.input_request", "call_id": "c_nope", "requests": ASK_NAME})
        assert (await p.reply())["code"] == "unknown_call"
        await p.answer(invoke["call_id"], "still fine")
        assert (await call)["result"]["content"][0]["text"] == "still fine"


async def test_a_tool_that_asks_before_its_task_asks_synchronously_then_becomes_a_task():
    first_ask = tool("sign_up", "Ask the user's name, then sign them up.", execution={"taskSupport": "required"},
                     inputBeforeTask=True)
    async with running_bridge() as b, page(b, first_ask) as p, httpx.AsyncClient(timeout=10) as http:
        agent = Agent(b.mcp_url(), http, capabilities=ELICITING)
        first = asyncio.create_task(agent.call("sign_up", {}))
        await ask(p, await p.event())
        asked = (await first)["result"]
        assert asked["resultType"] == "input_required" and "taskId" not in asked
        answers = {"name": {"action": "accept", "content": {"name": "Alice"}}}
        created = (await agent.call("sign_up", {}, params={"inputResponses": answers,
                                                           "requestState": asked["requestState"]}))["result"]
        assert created["resultType"] == "task" and "requestState" not in created
        again = await p.event()
        assert again["input_responses"] == answers
        await p.answer(again["call_id"], "Signed up Alice")
        shown = await agent.task_reaching(created["taskId"], "completed")
        assert shown["result"]["content"][0]["text"] == "Signed up Alice"
