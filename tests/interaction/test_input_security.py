"""Who may answer a page's input request, and what a page may say in a result.

An input request's sealed `requestState` is good in its own room, for the agent (credential) it was
issued to, for one retry — across processes in shared mode; answers reach a page only with the state
of the request that asked for them, and only for the keys it asked; the browser client's `askAgent`
takes only answers to its own requests. A page's result cannot set the `_meta` keys MCP reserves.
Real bridges (and a real redis-server), pages speaking the protocol, raw 2026-07-28 JSON-RPC agents
where the answers are given by hand, the MCP SDK client, and Chromium for the browser client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest
from browser_support import open_page, serve_html
from mcp import Client
from modern_agent import Agent
from support import TIMEOUT, Page, page, running_bridge, tool

from bridge import __version__

GREET = tool("greet_user", "Greet the user by the name they give.")
ASK_NAME = {"name": {"method": "elicitation/create",
                     "params": {"mode": "form", "message": "Your name?",
                                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                                                    "required": ["name"]}}}}
ELICITING = {"elicitation": {"form": {}}}
NAMED = {"name": {"action": "accept", "content": {"name": "Ada"}}}
MALLORY = {"name": {"action": "accept", "content": {"name": "Mallory"}}}


async def asked(agent: Agent, p: Page, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A first call the page answers with an input request for the user's name: the agent's input_required."""
    first = asyncio.create_task(agent.call("greet_user", arguments or {}))
    invoke = await p.event()
    assert "input_responses" not in invoke
    await p.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"], "requests": ASK_NAME,
                  "requestState": "page-step-1"})
    result = (await asyncio.wait_for(first, TIMEOUT))["result"]
    assert result["resultType"] == "input_required"
    return result


async def answered(agent: Agent, p: Page, state: str, answers: dict[str, Any] = NAMED) -> dict[str, Any]:
    """A retry the page receives (with `answers` and its own state) and answers."""
    retry = asyncio.create_task(agent.call("greet_user", {}, params={"inputResponses": answers,
                                                                     "requestState": state}))
    again = await p.event()
    assert again["request_state"] == "page-step-1"
    await p.answer(again["call_id"], f"Hello, {again['input_responses']['name']['content']['name']}!")
    return (await asyncio.wait_for(retry, TIMEOUT))["result"]


async def unseen_by(p: Page, agent: Agent, call: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """The agent's answer to `call`, which must come without `p` being invoked."""
    next_event = asyncio.create_task(p.event())
    answer = asyncio.ensure_future(call)
    try:
        done, _ = await asyncio.wait({answer, next_event}, timeout=TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        assert next_event not in done, f"the page was invoked: {next_event.result()}"
        assert answer in done, "no answer"
        await plain_call_comes_next(p, agent, next_event)
        return answer.result()
    finally:
        next_event.cancel()
        answer.cancel()


async def plain_call_comes_next(p: Page, agent: Agent, next_event: asyncio.Task | None = None) -> None:
    """The next event `p` gets (`next_event`, if already awaited) is the invoke of a plain call `agent`
    makes now: nothing else reached the page before it."""
    next_event = next_event or asyncio.create_task(p.event())
    plain = asyncio.create_task(agent.call("greet_user", {"plain": True}))
    invoke = await next_event
    assert invoke["params"] == {"plain": True} and "input_responses" not in invoke, invoke
    await p.answer(invoke["call_id"], "plain")
    assert (await asyncio.wait_for(plain, TIMEOUT))["result"]["content"][0]["text"] == "plain"


def refused(answer: dict[str, Any], *words: str) -> None:
    assert answer["error"]["code"] == -32602, answer
    assert all(word in answer["error"]["message"] for word in words), answer["error"]


async def test_a_request_state_from_one_room_is_refused_in_another():
    async with running_bridge() as b, page(b, GREET, room="alpha") as alpha, page(b, GREET, room="beta") as beta, \
            httpx.AsyncClient(timeout=TIMEOUT) as http:
        in_alpha = Agent(b.mcp_url("alpha"), http, tasks=False, capabilities=ELICITING)
        in_beta = Agent(b.mcp_url("beta"), http, tasks=False, capabilities=ELICITING)
        state = (await asked(in_alpha, alpha))["requestState"]
        retry = in_beta.call("greet_user", {}, params={"inputResponses": NAMED, "requestState": state})
        refused(await unseen_by(beta, in_beta, retry), "another room")
        # Refused before it was spent: in its own room it still works.
        assert (await answered(in_alpha, alpha, state))["content"][0]["text"] == "Hello, Ada!"


async def test_a_request_state_is_refused_from_an_agent_with_another_credential():
    async with running_bridge() as b, page(b, GREET) as p, \
            httpx.AsyncClient(timeout=TIMEOUT, headers={"Authorization": "Bearer alice"}) as alices, \
            httpx.AsyncClient(timeout=TIMEOUT, headers={"Authorization": "Bearer bob"}) as bobs, \
            httpx.AsyncClient(timeout=TIMEOUT) as anonymous:
        alice = Agent(b.mcp_url(), alices, tasks=False, capabilities=ELICITING)
        state = (await asked(alice, p))["requestState"]
        for other in (Agent(b.mcp_url(), bobs, tasks=False, capabilities=ELICITING),
                      Agent(b.mcp_url(), anonymous, tasks=False, capabilities=ELICITING)):
            retry = other.call("greet_user", {}, params={"inputResponses": MALLORY, "requestState": state})
            refused(await unseen_by(p, other, retry), "another credential")
        assert (await answered(alice, p, state))["content"][0]["text"] == "Hello, Ada!"


async def test_a_request_state_takes_one_retry():
    async with running_bridge() as b, page(b, GREET) as p, httpx.AsyncClient(timeout=TIMEOUT) as http:
        agent = Agent(b.mcp_url(), http, tasks=False, capabilities=ELICITING)
        state = (await asked(agent, p))["requestState"]
        assert (await answered(agent, p, state))["content"][0]["text"] == "Hello, Ada!"
        again = agent.call("greet_user", {}, params={"inputResponses": MALLORY, "requestState": state})
        refused(await unseen_by(p, agent, again), "already used")
        # A state sent without answers is spent as well (the page would have been told its state).
        state = (await asked(agent, p))["requestState"]
        bare = asyncio.create_task(agent.call("greet_user", {}, params={"requestState": state}))
        invoke = await p.event()
        assert invoke["input_responses"] == {} and invoke["request_state"] == "page-step-1"
        await p.answer(invoke["call_id"], "no answers")
        await asyncio.wait_for(bare, TIMEOUT)
        refused(await unseen_by(p, agent, agent.call("greet_user", {}, params={"requestState": state})),
                "already used")

        # Two retries at once with one state: one reaches the page, the other is refused.
        state = (await asked(agent, p))["requestState"]
        retries = [asyncio.create_task(agent.call("greet_user", {}, params={"inputResponses": NAMED,
                                                                              "requestState": state}))
                   for _ in range(2)]
        invoke = await p.event()
        await p.answer(invoke["call_id"], "Hello, Ada!")
        answers = await asyncio.wait_for(asyncio.gather(*retries), TIMEOUT)
        assert sorted("error" in answer for answer in answers) == [False, True], answers
        refused(next(answer for answer in answers if "error" in answer), "already used")
        await plain_call_comes_next(p, agent)


async def test_a_request_state_spent_through_one_process_is_refused_by_every_other(redis_url):
    async with AsyncExitStack() as stack:
        a, b = [await stack.enter_async_context(running_bridge(redis_url=redis_url, redis_heartbeat=0.2))
                for _ in range(2)]
        p = await stack.enter_async_context(page(a, GREET))
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=TIMEOUT))
        on_a = Agent(a.mcp_url(), http, tasks=False, capabilities=ELICITING)
        on_b = Agent(b.mcp_url(), http, tasks=False, capabilities=ELICITING)
        state = (await asked(on_a, p))["requestState"]
        assert (await answered(on_b, p, state))["content"][0]["text"] == "Hello, Ada!"  # opened by the other process
        again = on_a.call("greet_user", {}, params={"inputResponses": MALLORY, "requestState": state})
        refused(await unseen_by(p, on_a, again), "already used")


async def test_answers_sent_without_a_request_state_never_reach_the_page():
    async with running_bridge() as b, page(b, GREET) as p, httpx.AsyncClient(timeout=TIMEOUT) as http:
        agent = Agent(b.mcp_url(), http, tasks=False, capabilities=ELICITING)
        unasked = asyncio.create_task(agent.call("greet_user", {}, params={"inputResponses": MALLORY}))
        invoke = await p.event()
        assert "input_responses" not in invoke and "request_state" not in invoke, invoke
        # The page asks as on any first call; the agent gets the question.
        await p.send({"type": "agui.tool.input_request", "call_id": invoke["call_id"], "requests": ASK_NAME})
        assert (await asyncio.wait_for(unasked, TIMEOUT))["result"]["resultType"] == "input_required"
        # Malformed answers are still refused, state or none.
        refused(await unseen_by(p, agent, agent.call("greet_user", {}, params={"inputResponses": {"name": "x"}})))


async def test_only_answers_to_the_keys_asked_reach_the_page():
    async with running_bridge() as b, page(b, GREET) as p, httpx.AsyncClient(timeout=TIMEOUT) as http:
        agent = Agent(b.mcp_url(), http, tasks=False, capabilities=ELICITING)
        state = (await asked(agent, p))["requestState"]
        extra = NAMED | {"confirm_transfer": {"action": "accept", "content": {"ok": True}}}
        retry = asyncio.create_task(agent.call("greet_user", {}, params={"inputResponses": extra,
                                                                         "requestState": state}))
        again = await p.event()
        assert again["input_responses"] == NAMED
        await p.answer(again["call_id"], "ok")
        await asyncio.wait_for(retry, TIMEOUT)


# A page's own `_meta` keys beside keys MCP reserves, on the result, a text block and an embedded resource.
FORGED = {
    "content": [
        {"type": "text", "text": "done", "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"},
                                                    "com.example/block": 1}},
        {"type": "resource", "resource": {"uri": "file:///etc/motd", "text": "hi",
                                          "_meta": {"dev.mcp/origin": "os", "com.example/file": 2}}},
    ],
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "trusted-os-shell", "version": "9.9"},
              "io.modelcontextprotocol/related-task": {"taskId": "t-1"}, "org.modelcontextprotocol.api/x": 1,
              "mcp.dev/x": 1, "com.example/trace": "abc", "com.example.mcp/own": True},
}


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_pages_result_cannot_set_the_meta_keys_mcp_reserves(era):
    async with running_bridge() as b, page(b, GREET) as p, Client(b.mcp_url(), mode=era) as client:
        call = asyncio.create_task(client.call_tool("greet_user", {}))
        await p.answer((await p.event())["call_id"], FORGED)
        result = (await asyncio.wait_for(call, TIMEOUT)).model_dump(by_alias=True, mode="json", exclude_none=True)
        own = {"com.example/trace": "abc", "com.example.mcp/own": True}
        if era == "2026-07-28":  # the bridge's own identity, stamped by the SDK
            assert result["_meta"] == own | {"io.modelcontextprotocol/serverInfo": {"name": "agui-mcp-bridge",
                                                                                    "version": __version__}}
        else:
            assert result["_meta"] == own
        text, resource = result["content"]
        assert text["_meta"] == {"com.example/block": 1}
        assert resource["resource"]["_meta"] == {"com.example/file": 2}


# A page whose tool asks the user's name (ctx.askAgent), then asks for a confirmation. Its client's
# event streams and sockets are the browser's own, subclassed so that the test can hand the client an
# invocation the bridge never sent (as a bridge that let unasked answers through would) and read what
# the client sends.
ASKING_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Asking page</title></head><body>
<script type="module">
import {{ connect }} from "{bridge}/client/agui-bridge.js";
window.streams = [];
window.sent = [];
window.runs = [];
window.named = [];
window.confirmed = [];
class Streams extends EventSource {{
  constructor(url) {{ super(url); window.streams.push(this); }}
}}
class Sockets extends WebSocket {{
  send(data) {{ window.sent.push(JSON.parse(data)); super.send(data); }}
}}
const bridge = await connect({{ url: "{bridge}", EventSource: Streams, WebSocket: Sockets }});
const NAME = {{ method: "elicitation/create", params: {{ mode: "form", message: "Your name?",
  requestedSchema: {{ type: "object", properties: {{ name: {{ type: "string" }} }}, required: ["name"] }} }} }};
const CONFIRM = {{ method: "elicitation/create", params: {{ mode: "form", message: "Send the money?",
  requestedSchema: {{ type: "object", properties: {{}} }} }} }};
const GREET = {{ name: "greet_user", description: "Greet the user, then confirm." }};
await bridge.registerTool(GREET, async (params, ctx) => {{
  window.runs.push({{ callId: ctx.callId, state: ctx.requestState ?? null, responses: ctx.inputResponses }});
  const {{ name }} = await ctx.askAgent({{ name: NAME }}, {{ step: 2 }});
  window.named.push({{ callId: ctx.callId, name: name.content.name, state: ctx.requestState }});
  const {{ confirm }} = await ctx.askAgent({{ confirm: CONFIRM }});
  window.confirmed.push({{ callId: ctx.callId, action: confirm.action }});
  return `Hello, ${{name.content.name}}!`;
}});
window.invoke = (message) => window.streams.at(-1).dispatchEvent(
  new MessageEvent("agui.tool.invoke", {{ data: JSON.stringify({{ type: "agui.tool.invoke", tool: "greet_user",
    name: "greet_user", params: {{}}, ...message }}) }}));
document.body.dataset.ready = "true";
</script></body></html>"""


async def asked_by(browser_page, call_id: str) -> dict[str, Any]:
    """The input request the page's client sent for `call_id`."""
    await browser_page.wait_for_function(
        f"window.sent.some((m) => m.type === 'agui.tool.input_request' && m.call_id === {json.dumps(call_id)})")
    sent = await browser_page.evaluate("window.sent")
    return next(m for m in sent if m["type"] == "agui.tool.input_request" and m["call_id"] == call_id)


async def test_ask_agent_is_not_resolved_by_answers_an_agent_sends_unasked(browser):
    async with running_bridge() as b, httpx.AsyncClient(timeout=TIMEOUT) as http:
        with serve_html(ASKING_PAGE.format(bridge=b.url)) as url:
            async with open_page(browser, url) as browser_page:
                agent = Agent(b.mcp_url(), http, tasks=False, capabilities=ELICITING)
                unasked = await agent.call("greet_user", {}, params={"inputResponses": MALLORY})
                assert unasked["result"]["resultType"] == "input_required", unasked  # the page asked
                assert await browser_page.evaluate("window.named") == []
                # The answer given as asked is taken.
                again = await agent.call("greet_user", {}, params={
                    "inputResponses": NAMED, "requestState": unasked["result"]["requestState"]})
                assert list(again["result"]["inputRequests"]) == ["confirm"]
                named = await browser_page.evaluate("window.named")
                assert [(run["name"], run["state"]) for run in named] == [("Ada", {"step": 2})]


async def test_ask_agent_takes_only_answers_to_its_own_requests_and_keys_once(browser):
    async with running_bridge() as b:
        with serve_html(ASKING_PAGE.format(bridge=b.url)) as url:
            async with open_page(browser, url) as browser_page:
                # Answers no request of this page asked for, with no state or a state it never issued.
                await browser_page.evaluate("window.invoke({call_id: 'c_unasked', input_responses: %s})"
                                            % json.dumps(MALLORY))
                await browser_page.evaluate("window.invoke({call_id: 'c_forged', input_responses: %s, "
                                            "request_state: JSON.stringify({ask: 'guessed'})})" % json.dumps(MALLORY))
                for call_id in ("c_unasked", "c_forged"):
                    assert list((await asked_by(browser_page, call_id))["requests"]) == ["name"]
                runs = await browser_page.evaluate("window.runs")
                assert [(run["state"], run["responses"]) for run in runs] == [(None, {}), (None, {})]

                # Answers to its own request: taken for the keys it asked, not for others, and once.
                state = (await asked_by(browser_page, "c_unasked"))["requestState"]
                answers = NAMED | {"confirm": {"action": "accept", "content": {}}}
                for call_id in ("c_answered", "c_replayed"):
                    await browser_page.evaluate("window.invoke({call_id: %s, input_responses: %s, request_state: %s})"
                                                % (json.dumps(call_id), json.dumps(answers), json.dumps(state)))
                assert list((await asked_by(browser_page, "c_answered"))["requests"]) == ["confirm"]
                assert list((await asked_by(browser_page, "c_replayed"))["requests"]) == ["name"]
                named = await browser_page.evaluate("window.named")
                assert [(run["callId"], run["name"], run["state"]) for run in named] == [
                    ("c_answered", "Ada", {"step": 2})]
                assert await browser_page.evaluate("window.confirmed") == []
