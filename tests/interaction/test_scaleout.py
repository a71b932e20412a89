"""Shared mode: two bridges joined by a real redis-server; pages on one, agents on the other.

Each bridge has its own link and process id, as two processes would; the kill -9 test at the
end uses real processes.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from contextlib import AsyncExitStack, asynccontextmanager
from types import SimpleNamespace

import anyio
import httpx
import mcp_types as types
import pytest
import redis
import websockets
from mcp import Client
from redis_support import start_redis, wait_for_port
from support import Page, eventually, free_port, open_page, page, running_bridge, tool

from bridge.core.catalog import Room
from bridge.core.hub import CATALOG_SLICE

CONFIRM = tool("user_confirm", "Ask the user to confirm an action.", {"title": {"type": "string"}}, ["title"])
ERAS = ["legacy", "2026-07-28"]



@asynccontextmanager
async def bridges(redis_url: str, count: int = 2, **overrides):
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(running_bridge(redis_url=redis_url, redis_heartbeat=0.2, **overrides))
               for _ in range(count)]


@pytest.mark.parametrize("era", ERAS)
async def test_a_page_on_one_process_is_called_by_an_agent_on_another(redis_url, era):
    async with bridges(redis_url) as (a, b), page(a, CONFIRM) as p, Client(b.mcp_url(), mode=era) as client:
        await eventually(lambda: b.hub.room("default").get("user_confirm"))
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == ["user_confirm"]
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "Send?"}))
        invoke = await p.event()
        assert invoke["params"] == {"title": "Send?"}
        await p.answer(invoke["call_id"], "yes")
        result = await asyncio.wait_for(task, 10)
        assert not result.is_error and result.content[0].text == "yes"
        await p.answer(invoke["call_id"], "twice")
        assert (await p.reply())["code"] == "unknown_call"
        (on_a,), (on_b,) = (b_.hub.state()["rooms"][0]["pages"] for b_ in (a, b))
        assert on_a["here"] is True and on_b["here"] is False and on_b["connected"] is True


RICH = tool("transfer_confirm", "在执行转账之前请用户确认 — ask before a transfer.",
            {"amount": {"type": "number", "minimum": 0}, "to": {"type": "object", "properties": {
                "iban": {"type": "string", "pattern": "^[A-Z]{2}"}}, "required": ["iban"]}},
            ["amount"], title="Confirm a transfer", outputSchema={"type": "object", "properties": {
                "ok": {"type": "boolean"}}}, annotations={"readOnlyHint": False, "title": "Transfer"},
            execution={"taskSupport": "optional"}, inputExamples=[{"amount": 12.5, "to": {"iban": "DE00"}}],
            pinned=True)


async def test_a_rich_definition_reaches_other_processes_as_registered(redis_url):
    """Every field of a definition (title, annotations, output schema, task support, input examples,
    pinned, text in any script) reaches another process as the page's own process keeps it: heard
    as it changes, and read from Redis by a process that starts later."""
    async with bridges(redis_url) as (a, b), page(a, RICH, CONFIRM):
        await listed_on(b, ["transfer_confirm", "user_confirm"])
        kept = a.hub.room("default").get("transfer_confirm").definition
        assert kept.annotations is not None and kept.inputExamples and kept.pinned  # the page's fields all came
        assert b.hub.room("default").get("transfer_confirm").definition == kept
        assert b.hub.room("default").listing().tools == a.hub.room("default").listing().tools
        async with running_bridge(redis_url=redis_url, redis_heartbeat=0.2) as c:
            await listed_on(c, ["transfer_confirm", "user_confirm"])
            assert c.hub.room("default").get("transfer_confirm").definition == kept


def tools_of(b) -> list[str]:
    """What an agent of this process is listed."""
    return [t["name"] for t in b.hub.room("default").listing().tools]


async def listed_on(b, names: list[str]) -> None:
    await eventually(lambda: tools_of(b) == names)


@pytest.mark.parametrize("era", ERAS)
async def test_progress_error_and_cancel_cross_processes(redis_url, era):
    async with bridges(redis_url, progress_interval=5) as (a, b), page(a, CONFIRM) as p, \
            Client(b.mcp_url(), mode=era) as client:
        await listed_on(b, ["user_confirm"])
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}, progress_callback=on_progress))
        invoke = await p.event()
        await p.send({"type": "agui.tool.progress", "call_id": invoke["call_id"], "progress": 5, "total": 10,
                      "message": "half"})
        await eventually(lambda: (5, 10, "half") in seen)
        await p.answer(invoke["call_id"], error="The user said no.")
        result = await asyncio.wait_for(task, 10)
        assert result.is_error and result.content[0].text == "The user said no."

        with anyio.move_on_after(0.5):  # the agent gives up: the page on the other process hears of it
            await client.call_tool("user_confirm", {"title": "y"})
        invoke = await p.event()
        cancel = await p.event()
        assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"], "reason": "cancelled by the agent"}
        await p.answer(invoke["call_id"], "too late")
        assert (await p.reply())["code"] == "unknown_call"
        await p.send({"type": "agui.tool.progress", "call_id": "c_nope", "progress": 1})
        assert (await p.reply())["code"] == "unknown_call"


@pytest.mark.parametrize("era", ERAS)
async def test_every_cancel_reaches_a_page_on_another_process(redis_url, era):
    """A cancel and its call's end go to Redis in that order: the other way round, the page's
    process hears the call ended first and drops the cancel as a stale event."""
    async with bridges(redis_url) as (a, b), page(a, CONFIRM) as p, Client(b.mcp_url(), mode=era) as client:
        await listed_on(b, ["user_confirm"])
        calls = [asyncio.create_task(client.call_tool("user_confirm", {"title": str(i)})) for i in range(40)]
        invoked = {(await p.event())["call_id"] for _ in calls}
        for call in calls:
            call.cancel()
        cancelled = set()
        while cancelled != invoked:
            event = await p.event()
            assert event["type"] == "agui.tool.cancel" and event["call_id"] in invoked, event
            cancelled.add(event["call_id"])
        await eventually(lambda: len(b.hub.calls) == 0)


async def test_timeout_cross_processes(redis_url):
    async with bridges(redis_url, call_timeout=0.5) as (a, b), page(a, CONFIRM) as p, \
            Client(b.mcp_url(), mode="legacy") as client:
        await listed_on(b, ["user_confirm"])
        result = await client.call_tool("user_confirm", {"title": "x"})
        assert result.is_error and "did not answer within 0.5 s" in result.content[0].text
        invoke, cancel = await p.event(), await p.event()
        assert cancel == {"type": "agui.tool.cancel", "call_id": invoke["call_id"], "reason": "timeout"}


@pytest.mark.parametrize("era", ERAS)
async def test_list_changed_reaches_agents_of_every_process(redis_url, era):
    async with bridges(redis_url) as (a, b):
        changes: asyncio.Queue = asyncio.Queue()

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                await changes.put(message)

        async def next_change(listening):
            if era == "legacy":
                await asyncio.wait_for(changes.get(), 5)
            else:
                await asyncio.wait_for(listening.__anext__(), 5)

        async with Client(b.mcp_url(), mode=era, message_handler=on_message) as client, AsyncExitStack() as stack:
            await client.list_tools()
            listening = None if era == "legacy" else await stack.enter_async_context(
                client.listen(tools_list_changed=True))
            p = Page(a)
            await p.connect()
            await p.register(CONFIRM)
            await next_change(listening)
            assert [t.name for t in (await client.list_tools()).tools] == ["user_confirm"]
            await p.send({"type": "agui.tools.unregister", "tools": ["user_confirm"]})
            assert (await p.reply())["type"] == "agui.tools.unregistered"
            await next_change(listening)
            assert (await client.list_tools()).tools == []
            await p.register(CONFIRM)
            await next_change(listening)
            await p.close()  # left for good
            await next_change(listening)
            assert (await client.list_tools()).tools == []


async def test_tools_unregistered_on_another_process_leave_its_mirror_at_once_their_index_entries_slice_by_slice(
        redis_url):
    reports = [tool(f"report_{n}", f"Export the report number {n}") for n in range(300)]
    async with bridges(redis_url) as (a, b), page(a, *reports) as p:
        room = b.hub.room("default")
        await eventually(lambda: len(room) == 300)
        seen = []  # what the mirror's change left, as its listeners see it before the loop turns

        def changed(mirror: Room) -> None:
            seen.append((len(mirror), mirror.listing().keys <= {f"report_{n}" for n in range(50)},
                         mirror.index.sweep(0), [hit.key for hit in mirror.index.search("export report 120", 10)]))

        stop = room.subscribe(changed)
        await p.send({"type": "agui.tools.unregister", "tools": [f"report_{n}" for n in range(50, 300)]})
        assert (await p.reply())["type"] == "agui.tools.unregistered"
        await eventually(lambda: seen)
        stop()
        # Gone from the room, its listing and search at once; their index entries only hidden so far.
        (left, listed, hidden, found), = seen
        assert (left, listed, hidden) == (50, True, 250) and found
        assert all(int(key.removeprefix("report_")) < 50 for key in found)
        await eventually(lambda: room.index.sweep(0) == 0)
        fresh = Room("fresh", room.policy)
        fresh.register(p.session_id, "Test page", [t.definition for t in room.tools_of(p.session_id)])
        for query in ("export report", "report 12", "report 120", "export the report number 7"):
            assert [hit for _, hit in await room.search(query, 10)] == [hit for _, hit in await fresh.search(query, 10)]


def parts(version: str = "v1", numbers: range = range(1000)) -> list[dict]:
    return [tool(f"part_{n}", f"Order the spare part number {n} ({version})") for n in numbers]


def mirrored(b, session_id: str) -> list[tuple[str, str]]:
    """A page's tools as this process's room has them, in its order: (name, description)."""
    return [(t.key, t.description) for t in b.hub.room("default").tools_of(session_id)]


async def test_a_thousand_tools_registered_on_another_process_are_mirrored_a_slice_at_a_time_in_order(redis_url):
    async with bridges(redis_url) as (a, b), Client(b.mcp_url(), mode="2026-07-28") as agent:
        p = Page(a)
        await p.connect()
        await eventually(lambda: b.hub.session(p.session_id))
        room, turns = b.hub.room("default"), 0
        steps = []  # (tools, turns of the loop so far) at each change of the mirror's tools

        def changed(mirror: Room) -> None:
            if not steps or steps[-1][0] != len(mirror):
                steps.append((len(mirror), turns))

        async def count_turns() -> None:
            nonlocal turns
            while True:
                turns += 1
                await asyncio.sleep(0)

        counting = asyncio.create_task(count_turns())
        stop = room.subscribe(changed)
        try:
            await p.register(*parts())
            await eventually(lambda: len(room) == 1000)
        finally:
            stop()
            counting.cancel()
        assert mirrored(b, p.session_id) == mirrored(a, p.session_id)  # the page's order, the same names
        assert [key for key, _ in mirrored(b, p.session_id)] == [f"part_{n}" for n in range(1000)]
        assert tools_of(b) == tools_of(a)
        sizes = [size for size, _ in steps]
        assert all(0 < later - earlier <= CATALOG_SLICE for earlier, later in zip([0, *sizes], sizes)), sizes
        assert all(later > earlier for (_, earlier), (_, later) in zip(steps, steps[1:])), steps  # the loop turned
        found = await agent.call_tool("tool_search", {"query": "order the spare part number 999"})
        assert found.structured_content["matches"][0]["name"] == "part_999"
        await p.close()


async def test_a_page_that_leaves_while_its_tools_are_mirrored_leaves_nothing_behind(redis_url):
    async with bridges(redis_url) as (a, b), Client(b.mcp_url(), mode="legacy") as agent:
        await agent.list_tools()  # the agent holds the room on b
        p = Page(a)
        await p.connect()
        await eventually(lambda: b.hub.session(p.session_id))
        room = b.hub.room("default")
        ghosts = []  # changes that showed tools of the page after it was gone

        def changed(mirror: Room) -> None:
            if b.hub.session(p.session_id) is None and mirror.tools_of(p.session_id):
                ghosts.append(len(mirror))

        stop = room.subscribe(changed)
        await p.register(*parts())
        await p.close()  # for good, as soon as its tools are registered
        await eventually(lambda: b.hub.session(p.session_id) is None)
        await b.bridge.link.mirror.settled()
        stop()
        assert ghosts == [] and len(room) == 0 and b.hub.room("default") is room
        assert (await agent.list_tools()).tools == []


async def test_what_a_page_changes_after_a_thousand_tools_applies_after_them_on_another_process(redis_url):
    async with bridges(redis_url) as (a, b), page(a) as p:
        await p.register(*parts())
        await p.send({"type": "agui.tools.unregister", "tools": [f"part_{n}" for n in range(500, 1000)]})
        assert (await p.reply())["type"] == "agui.tools.unregistered"
        await p.register(*parts("v2", range(400, 500)))  # a replacement
        await p.register(tool("sentinel"))  # once it is mirrored, so is everything said before
        await eventually(lambda: b.hub.room("default").get("sentinel"))
        expected = [(f"part_{n}", f"Order the spare part number {n} ({'v2' if n >= 400 else 'v1'})")
                    for n in range(500)] + [("sentinel", "The sentinel tool.")]
        assert mirrored(b, p.session_id) == mirrored(a, p.session_id) == expected


async def test_a_full_resync_after_a_thousand_tools_replaces_them_on_another_process(redis_url):
    """What a process publishes after reconnecting to Redis (`full`: all the page's tools), said here
    by the test as that process: the page's tools are then these, whatever was mirrored before."""
    async with bridges(redis_url) as (a, b), page(a) as p:
        await p.register(*parts())
        resync = {"op": "tools", "pid": a.bridge.link.process_id, "sid": p.session_id, "removed": [], "full": True,
                  "tools": [{"definition": definition, "key": definition["name"], "seq": n}
                            for n, definition in enumerate(parts("v2", range(100)))]}
        await b.bridge.link.redis.publish("agui:catalog", json.dumps(resync))
        await p.register(*parts("v3", range(1)))  # once it is mirrored, so is everything said before
        await eventually(lambda: mirrored(b, p.session_id)[:1] == [("part_0", "Order the spare part number 0 (v3)")])
        assert mirrored(b, p.session_id)[1:] == [(f"part_{n}", f"Order the spare part number {n} (v2)")
                                                 for n in range(1, 100)]


async def test_a_tool_activated_while_its_page_is_mirrored_is_activated_once_mirrored(redis_url):
    """An agent of the page's process had a tool listed as soon as it was registered (said here by
    the test as that process, while this one is still mirroring the page's tools)."""
    async with bridges(redis_url) as (a, b), page(a) as p:
        await p.register(*parts())
        await eventually(lambda: len(b.hub.room("default")), interval=0)
        activate = {"op": "activate", "pid": a.bridge.link.process_id, "room": "default", "keys": ["part_999"]}
        await b.bridge.link.redis.publish("agui:catalog", json.dumps(activate))
        await eventually(lambda: b.hub.room("default").activated == ["part_999"])


MANY = [tool(f"widget_{i}", f"Adjust widget number {i} on the dashboard panel") for i in range(50)] + [
    tool("invoice_tool", "Create an invoice for a customer", {"customer": {"type": "string"}})]


async def test_search_mode_names_and_activation_are_the_same_on_every_process(redis_url):
    async with bridges(redis_url) as (a, b), page(a, *MANY), page(b, CONFIRM, title="Other page") as other, \
            Client(a.mcp_url(), mode="legacy") as on_a, Client(b.mcp_url(), mode="2026-07-28") as on_b:
        await eventually(lambda: len(a.hub.room("default")) == len(b.hub.room("default")) == 52)
        assert tools_of(a) == tools_of(b) and "invoice_tool" not in tools_of(b)
        found = await on_b.call_tool("tool_search", {"query": "create an invoice for a customer"})
        assert found.structured_content["matches"][0]["name"] == "invoice_tool"
        assert found.structured_content == (await on_a.call_tool(
            "tool_search", {"query": "create an invoice for a customer"})).structured_content
        await listed_on(a, tools_of(b))  # activated on b: listed on a as well
        assert "invoice_tool" in [t.name for t in (await on_a.list_tools()).tools]
        task = asyncio.create_task(on_a.call_tool("call_tool", {"name": "user_confirm", "arguments": {"title": "t"}}))
        invoke = await other.event()  # a's agent, b's page
        await other.answer(invoke["call_id"], "ok")
        assert (await asyncio.wait_for(task, 10)).content[0].text == "ok"


async def test_a_page_that_comes_back_on_another_process_keeps_its_calls(redis_url):
    async with bridges(redis_url, count=3, page_grace=5) as (a, b, c), Client(c.mcp_url(), mode="legacy") as client:
        p = await open_page(a, CONFIRM)
        await listed_on(c, ["user_confirm"])
        first = asyncio.create_task(client.call_tool("user_confirm", {"title": "1"}))
        invoke = await p.event()
        seen = p.event_ids[-1]
        second = asyncio.create_task(client.call_tool("user_confirm", {"title": "2"}))
        await p.event()
        await p.drop()

        back = Page(b, session_id=p.session_id)  # resumes on another process, from where it stopped
        welcome = await back.connect(last_event_id=seen)
        assert welcome["resumed"] is True
        replayed = await back.event()
        assert replayed["params"] == {"title": "2"}
        await back.answer(replayed["call_id"], "two")
        await back.answer(invoke["call_id"], "one")
        assert (await asyncio.wait_for(second, 10)).content[0].text == "two"
        assert (await asyncio.wait_for(first, 10)).content[0].text == "one"
        await asyncio.sleep(0.3)
        assert back.events.empty()  # nothing delivered twice
        await eventually(lambda: a.hub.session(p.session_id).holder == b.bridge.link.process_id)
        await back.close()
        await eventually(lambda: all(b_.hub.session(p.session_id) is None for b_ in (a, b, c)))


async def test_pages_of_a_stopped_process_that_never_come_back_fail_their_calls(redis_url):
    async with bridges(redis_url, count=1, page_grace=0.5) as (b,), Client(b.mcp_url(), mode="legacy") as client:
        async with running_bridge(redis_url=redis_url, redis_heartbeat=0.2, page_grace=0.5) as a:
            p = await open_page(a, CONFIRM)
            await listed_on(b, ["user_confirm"])
            task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}))
            await p.event()
        # a stopped and its page is gone for good: the call fails as a page gone away, not at the timeout
        result = await asyncio.wait_for(task, 10)
        assert result.is_error and "went away" in result.content[0].text
        assert (await client.list_tools()).tools == []
        keys = await b.bridge.link.redis.keys("agui:page:*")
        assert keys == []


class FailoverPage:
    """A page behind a load balancer, as the browser client behaves: when its bridge process dies
    it comes back on the next one with its session, from the last event it saw, re-registers its
    tools and sends again the answers the bridge says it is still waiting for. It answers each
    invocation after a short delay, with the call's own token."""

    def __init__(self, urls: list[str], tools: list[dict]) -> None:
        self.urls, self.tools = urls, tools
        self.session_id: str | None = None
        self.last_event_id: int | None = None
        self.sent: dict[str, dict] = {}  # call_id -> answer sent
        self.outbox: dict[str, dict] = {}  # call_id -> answer made while no socket was open
        self.invoked: dict[str, int] = {}  # call_id -> invocations received
        self.reconnects = 0
        self._ws = None
        self._task: asyncio.Task | None = None
        self._answering: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run())
        await eventually(lambda: self.session_id is not None)

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        turn = 0
        while True:
            base = self.urls[turn % len(self.urls)]
            try:
                await self._connect(base)
            except Exception:  # the process died (socket errors, maybe grouped by the task group)
                pass
            self.reconnects += 1
            turn += 1
            await asyncio.sleep(0.05)

    async def _connect(self, base: str) -> None:
        async with websockets.connect(base.replace("http", "ws") + "/agui/ws") as ws, \
                httpx.AsyncClient(timeout=None) as http:
            await ws.send(json.dumps({"type": "agui.hello", "session_id": self.session_id,
                                      "page": {"url": "http://127.0.0.1/failover", "title": "Failover page"}}))
            welcome = json.loads(await ws.recv())
            self.session_id = welcome["session_id"]
            self._ws = ws
            await ws.send(json.dumps({"type": "agui.tools.register", "tools": self.tools}))
            for call_id in welcome.get("waiting", []):
                if call_id in self.sent:
                    self.outbox[call_id] = self.sent[call_id]
            for call_id, answer in list(self.outbox.items()):
                await ws.send(json.dumps(answer))
                del self.outbox[call_id]
            headers = {"Last-Event-ID": str(self.last_event_id)} if self.last_event_id is not None else {}
            async with anyio.create_task_group() as group:
                group.start_soon(self._read_socket, ws)
                async with http.stream("GET", base + welcome["events_url"], headers=headers) as response:
                    event: dict[str, str] = {}
                    async for line in response.aiter_lines():
                        if line:
                            key, _, value = line.partition(":")
                            event[key] = value.removeprefix(" ")
                            continue
                        if event.get("event") == "agui.tool.invoke":
                            self.last_event_id = int(event["id"])
                            invoke = json.loads(event["data"])
                            self.invoked[invoke["call_id"]] = self.invoked.get(invoke["call_id"], 0) + 1
                            self._answering.add(task := asyncio.create_task(self._answer(invoke)))
                            task.add_done_callback(self._answering.discard)  # outlives the connection
                        elif "id" in event:
                            self.last_event_id = int(event["id"])
                        event = {}
                group.cancel_scope.cancel()
            self._ws = None

    async def _read_socket(self, ws) -> None:
        async for _ in ws:
            pass

    async def _answer(self, invoke: dict) -> None:
        await asyncio.sleep(random.uniform(0, 0.3))
        answer = {"type": "agui.tool.return", "call_id": invoke["call_id"],
                  "result": {"token": invoke["params"]["token"]}}
        self.sent[invoke["call_id"]] = answer
        try:
            await self._ws.send(json.dumps(answer))
        except (AttributeError, websockets.ConnectionClosed):
            self.outbox[invoke["call_id"]] = answer  # sent after reconnecting


def start_process(port: int, redis_url: str, page_grace: float = 10) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bridge.cli", "serve", "--port", str(port), "--redis-url", redis_url,
                             "--redis-heartbeat", "0.2", "--page-grace", str(page_grace), "--max-calls-per-page", "500",
                             "--log-level", "warning"],
                            stderr=subprocess.DEVNULL)


TOKEN_TOOL = tool("echo_token", "Answer with the token.", {"token": {"type": "string"}}, ["token"])


async def test_kill_9_of_the_page_holding_process_loses_and_doubles_no_call(redis_url):
    ports = [free_port(), free_port()]
    processes = [start_process(port, redis_url) for port in ports]
    try:
        await asyncio.gather(*(wait_for_port(port) for port in ports))
        a_url, b_url = (f"http://127.0.0.1:{port}" for port in ports)
        page = FailoverPage([a_url, b_url], [TOKEN_TOOL])
        await page.start()
        async with Client(b_url + "/mcp", mode="legacy") as legacy, Client(b_url + "/mcp", mode="2026-07-28") as modern:
            for _ in range(100):
                if [t.name for t in (await legacy.list_tools()).tools] == ["echo_token"]:
                    break
                await asyncio.sleep(0.05)
            tokens = [f"t{i}" for i in range(200)]
            calls = [asyncio.create_task((legacy if i % 2 else modern).call_tool("echo_token", {"token": token}))
                     for i, token in enumerate(tokens)]
            await eventually(lambda: len(page.sent) >= 40)
            processes[0].kill()  # SIGKILL: no goodbye, no shutdown, answers in flight lost with it
            results = await asyncio.wait_for(asyncio.gather(*calls), 60)
        await page.stop()
        assert page.reconnects >= 1
        assert [r.content[0].text for r in results if r.is_error] == []
        assert [r.structured_content for r in results] == [{"token": t} for t in tokens]  # each its own, once
        assert len(page.invoked) == 200 and set(page.invoked.values()) == {1}  # no invocation delivered twice
        assert redis.Redis.from_url(redis_url).keys("agui:call:*") == []
    finally:
        for process in processes:
            process.kill()
            process.wait(5)


async def test_redis_lost_mid_run_gives_clear_errors_and_recovers():
    port = free_port()
    server = start_redis(port)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        async with bridges(url) as (a, b), page(a, CONFIRM) as p, Client(b.mcp_url(), mode="legacy") as client:
            await listed_on(b, ["user_confirm"])
            waiting = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}))
            await p.event()
            server.terminate()
            server.wait(5)
            # The call in flight ends with the reason, not at its timeout; a new call too.
            result = await asyncio.wait_for(waiting, 10)
            assert result.is_error and "lost its connection to Redis" in result.content[0].text
            refused = await asyncio.wait_for(client.call_tool("user_confirm", {"title": "y"}), 15)
            assert refused.is_error and "lost its connection to Redis" in refused.content[0].text

            server = start_redis(port)  # back, empty: the processes write their pages again
            await eventually(lambda: a.bridge.link.up and b.bridge.link.up, timeout=15)
            await listed_on(b, ["user_confirm"])
            cancel = await p.event()  # the page hears that the call it was asked ended
            assert cancel["type"] == "agui.tool.cancel" and "Redis" in cancel["reason"]
            task = asyncio.create_task(client.call_tool("user_confirm", {"title": "z"}))
            invoke = await p.event()
            assert invoke["params"] == {"title": "z"}
            await p.answer(invoke["call_id"], "fine again")
            assert (await asyncio.wait_for(task, 10)).content[0].text == "fine again"
    finally:
        server.terminate()
        server.wait(5)


async def test_redis_unreachable_at_start_the_bridge_serves_and_says_why():
    async with running_bridge(redis_url=f"redis://127.0.0.1:{free_port()}/0") as b, page(b, CONFIRM), \
            Client(b.mcp_url(), mode="legacy") as client:
        assert not b.bridge.link.up
        result = await asyncio.wait_for(client.call_tool("user_confirm", {"title": "x"}), 15)
        assert result.is_error and "lost its connection to Redis" in result.content[0].text


@pytest.mark.parametrize("url, problem", [("http://127.0.0.1:6379", "must specify one of the following schemes"),
                                          ("redis://127.0.0.1:1/0", "needs the 'redis' extra")])
def test_unusable_redis_settings_are_one_line_and_exit_2(url, problem):
    hide_redis = "import sys; sys.modules['redis'] = None; " if "extra" in problem else ""
    run = subprocess.run([sys.executable, "-c", f"{hide_redis}from bridge.cli import main; "
                          f"main(['serve', '--port', '0', '--redis-url', {url!r}])"],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 2
    assert problem in run.stderr and len(run.stderr.strip().splitlines()) == 1


async def test_pages_of_a_killed_process_that_never_come_back_expire_and_fail_their_calls(redis_url):
    port = free_port()
    process = start_process(port, redis_url, page_grace=0.5)
    try:
        await wait_for_port(port)
        async with bridges(redis_url, count=1, page_grace=0.5) as (b,), Client(b.mcp_url(), mode="legacy") as client:
            gone = Page(SimpleNamespace(url=f"http://127.0.0.1:{port}", ws_url=f"ws://127.0.0.1:{port}/agui/ws"))
            await gone.connect()
            await gone.register(CONFIRM)
            await listed_on(b, ["user_confirm"])
            task = asyncio.create_task(client.call_tool("user_confirm", {"title": "x"}))
            await gone.event()
            process.kill()  # no goodbye: only its heartbeat stops
            result = await asyncio.wait_for(task, 10)  # heartbeats (3 x 0.2 s) + grace (0.5 s), not the timeout
            assert result.is_error and "went away" in result.content[0].text
            assert (await client.list_tools()).tools == []
            assert await b.bridge.link.redis.keys("agui:page:*") == []
            await gone.drop()
    finally:
        process.kill()
        process.wait(5)


async def test_a_stray_message_on_a_channel_stops_nothing(redis_url):
    async with bridges(redis_url) as (a, b), page(a, CONFIRM) as p, Client(b.mcp_url(), mode="legacy") as client:
        await listed_on(b, ["user_confirm"])
        for channel, data in (("agui:catalog", "not json"), ("agui:catalog", '{"op": "tools"}'),
                              (f"agui:proc:{b.bridge.link.process_id}", '{"call_id": "c_nope", "outcome": 5}')):
            await b.bridge.link.redis.publish(channel, data)
        task = asyncio.create_task(client.call_tool("user_confirm", {"title": "still"}))
        invoke = await p.event()
        await p.answer(invoke["call_id"], "fine")
        assert (await asyncio.wait_for(task, 10)).content[0].text == "fine"


async def test_an_agui_thread_on_one_process_serves_an_agent_on_another(redis_url):
    from agui_support import answer, run, run_input  # the AG-UI wire helpers

    async with bridges(redis_url, page_grace=5) as (a, b), Client(b.mcp_url(), mode="legacy") as client:
        async with run(a, run_input()) as r:
            await r.until("RUN_STARTED")
            await listed_on(b, ["add"])
            call = asyncio.create_task(client.call_tool("add", {"a": 1, "b": 2}))
            start = await r.until("TOOL_CALL_START")
            await r.finished()
        async with run(a, run_input(messages=answer(start["toolCallId"], "3"))) as r2:  # the thread's next run
            assert (await r2.next())["type"] == "RUN_STARTED"
            result = await asyncio.wait_for(call, 10)
        assert result.content[0].text == "3" and not result.is_error


async def test_deployments_with_their_own_prefix_share_one_redis_and_see_nothing_of_each_other(redis_url):
    async with bridges(redis_url) as (mine, mine_too), \
            bridges(redis_url, redis_prefix="other:") as (theirs, theirs_too), \
            page(mine, CONFIRM), page(theirs, tool("other_tool")):
        await listed_on(mine_too, ["user_confirm"])
        await listed_on(theirs_too, ["other_tool"])
        await asyncio.sleep(0.3)
        assert tools_of(mine_too) == ["user_confirm"] and tools_of(theirs_too) == ["other_tool"]


async def test_a_page_whose_record_expired_with_every_process_is_forgotten_at_start(redis_url):
    stale = redis.Redis.from_url(redis_url)
    stale.zadd("agui:pages", {"gone-session": 1.0})  # its agui:page:… hash expired long ago
    async with bridges(redis_url, count=1) as (b,):
        assert b.hub.session("gone-session") is None
        assert stale.zrange("agui:pages", 0, -1) == []


async def test_a_search_on_one_process_activates_the_tool_for_agents_of_another(redis_url):
    changes: asyncio.Queue = asyncio.Queue()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            await changes.put(message)

    async with bridges(redis_url) as (a, b), page(a, *MANY), \
            Client(a.mcp_url(), mode="legacy", message_handler=on_message) as on_a, \
            Client(b.mcp_url(), mode="2026-07-28") as on_b:
        await eventually(lambda: len(b.hub.room("default")) == 51)
        assert "invoice_tool" not in [t.name for t in (await on_a.list_tools()).tools]
        while not changes.empty():
            changes.get_nowait()
        await on_b.call_tool("tool_search", {"query": "create an invoice for a customer"})  # only b searches
        await asyncio.wait_for(changes.get(), 5)
        assert "invoice_tool" in [t.name for t in (await on_a.list_tools()).tools]
        assert a.hub.room("default").activated == b.hub.room("default").activated


async def test_a_search_that_only_reorders_activated_tools_reorders_them_on_every_process(redis_url):
    """Which activated tool leaves the listing first is the least recently used: every process must
    agree on that order, also when a search lists nothing new and only uses tools again."""
    async with bridges(redis_url) as (a, b), page(a, *MANY), Client(b.mcp_url(), mode="2026-07-28") as on_b:
        await eventually(lambda: len(b.hub.room("default")) == 51)
        for query in ("create an invoice for a customer", "adjust widget number 45 on the dashboard panel"):
            await on_b.call_tool("tool_search", {"query": query})
        await eventually(lambda: a.hub.room("default").activated == b.hub.room("default").activated)
        before = b.hub.room("default").activated
        assert "invoice_tool" in before and before[-1] != "invoice_tool"
        await on_b.call_tool("tool_search", {"query": "create an invoice for a customer"})  # nothing new to list
        after = b.hub.room("default").activated
        assert sorted(after) == sorted(before) and after[-1] == "invoice_tool"
        await eventually(lambda: a.hub.room("default").activated == after)
