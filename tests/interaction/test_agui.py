"""AG-UI apps' frontend tools as MCP tools (bridge/page_edge/agui.py, docs/agui.md).

Two kinds of test:
- an AG-UI app made of the real @ag-ui/client `HttpAgent` and web_client/agui-app.js, in Node
  (tests/agui/app.mjs; `scripts/setup --test` installs the client in tests/agui/), whose tools the real
  MCP SDK client lists and calls through a real bridge;
- the endpoint on the wire (httpx): every event it emits validates against the ag-ui-protocol models,
  and what it refuses it refuses with a clear error.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ag_ui.core import RunAgentInput
from agui_support import ADD, Run, answer, run, run_input
from mcp import Client
from support import TIMEOUT, eventually, running_bridge

AGUI = Path(__file__).resolve().parents[1] / "agui"
CLIENT = AGUI / "node_modules" / "@ag-ui" / "client"
ERAS = ["legacy", "2026-07-28"]



# --- an AG-UI app in Node ----------------------------------------------------------------------


class AguiApp:
    """tests/agui/app.mjs: what it says (JSON lines) is collected, and awaited with `expect`."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.said: list[dict[str, Any]] = []
        self._news = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            async with self._news:
                self.said.append(json.loads(line))
                self._news.notify_all()

    async def expect(self, event: str, timeout: float = TIMEOUT, **fields: Any) -> dict[str, Any]:
        """The first thing the app said that is `event` with `fields`, waiting for it if need be."""
        def match() -> dict[str, Any] | None:
            return next((s for s in self.said if s["event"] == event
                         and all(s.get(k) == v for k, v in fields.items())), None)
        async with self._news:
            found = await asyncio.wait_for(self._news.wait_for(match), timeout)
        assert found is not None
        return found

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except TimeoutError:
                self.process.kill()
        await self.process.wait()
        await asyncio.wait_for(self._reader, 5)


@asynccontextmanager
async def agui_app(bridge, *tools: str, room: str = "default", **config: Any):
    """An AG-UI app serving `tools` (names of tests/agui/app.mjs's tools); yields once they are registered."""
    assert CLIENT.is_dir(), f"{CLIENT} is missing: run scripts/setup --test (npm ci in tests/agui)"
    url = f"{bridge.url}/agui/run" if room == "default" else f"{bridge.url}/rooms/{room}/agui/run"
    process = await asyncio.create_subprocess_exec(
        "node", str(AGUI / "app.mjs"), json.dumps({"url": url, "tools": list(tools), **config}),
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "NODE_ENV": "production"})
    app = AguiApp(process)
    try:
        await app.expect("registered")
        yield app
    finally:
        await app.stop()


def text(result) -> str:
    return result.content[0].text


@pytest.mark.parametrize("era", ERAS)
async def test_app_tools_are_listed_and_called(era):
    async with app_bridge() as b, agui_app(b, "add", "greet", title="Calculator") as app, \
            Client(b.mcp_url(), mode=era) as client:
        registered = await app.expect("registered")
        assert registered["tools"] == [{"tool": "add", "name": "add"}, {"tool": "greet", "name": "greet"}]
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(listed) == ["add", "greet"]
        assert listed["add"].description == "Add two numbers."
        assert listed["add"].input_schema["required"] == ["a", "b"]

        added, greeted = await asyncio.gather(client.call_tool("add", {"a": 2, "b": 3}),
                                              client.call_tool("greet", {"name": "Ada"}))

        assert not added.is_error and text(added) == "5"
        # A ToolMessage's content is text: the app's JSON reaches the agent as JSON text.
        assert not greeted.is_error and json.loads(text(greeted)) == {"greeting": "Hello, Ada!", "from": "app"}
        assert (await app.expect("call", tool="add"))["args"] == {"a": 2, "b": 3}
        assert (await app.expect("call", tool="greet"))["args"] == {"name": "Ada"}
        (page,) = b.hub.state()["rooms"][0]["pages"]
        assert page["title"] == "Calculator" and page["connected"]


async def test_an_answer_ready_while_a_run_waits_goes_at_once():
    # The next run is already waiting when the handler finishes: the app aborts it and a new run
    # carries the answer, so it does not wait for the next call.
    async with app_bridge() as b, agui_app(b, "slow") as app, Client(b.mcp_url(), mode="legacy") as client:
        started = time.monotonic()
        results = await asyncio.gather(*(client.call_tool("slow", {"ms": ms}) for ms in (300, 600)))
        assert [text(r) for r in results] == ["slept 300 ms", "slept 600 ms"]
        assert time.monotonic() - started < 2
        assert not [s for s in app.said if s["event"] in ("retrying", "failed")]
        assert len(b.hub.sessions) == 1


async def test_a_tool_message_with_an_error_is_an_error_result():
    async with app_bridge() as b, agui_app(b, "fail") as app, Client(b.mcp_url(), mode="legacy") as client:
        result = await client.call_tool("fail", {})
        assert result.is_error
        assert text(result) == "Card declined"
        await app.expect("call", tool="fail")


async def test_a_call_the_app_never_answers_times_out_and_the_app_is_told():
    async with app_bridge(call_timeout=0.5) as b, agui_app(b, "hang") as app, \
            Client(b.mcp_url(), mode="legacy") as client:
        started = time.monotonic()
        result = await client.call_tool("hang", {})
        assert result.is_error and "did not answer within 0.5 s" in text(result)
        assert time.monotonic() - started < 3
        call = await app.expect("call", tool="hang")
        aborted = await app.expect("aborted", toolCallId=call["toolCallId"])
        assert "timeout" in aborted["reason"]  # CUSTOM agui.tool.cancel aborted the handler's signal


async def test_two_threads_with_the_same_tool_name_stay_distinct():
    # Two apps (two origins): the same tool of one app's threads would share its name.
    async with app_bridge() as b, \
            agui_app(b, "whoami", label="A", headers={"Origin": "http://localhost:3001"}) as first, \
            agui_app(b, "whoami", label="B", headers={"Origin": "http://localhost:3002"}) as second, \
            Client(b.mcp_url(), mode="legacy") as client:
        name_a = (await first.expect("registered"))["tools"][0]["name"]
        name_b = (await second.expect("registered"))["tools"][0]["name"]
        assert name_a == "whoami" and name_b.startswith("whoami__") and name_b != name_a
        assert sorted(t.name for t in (await client.list_tools()).tools) == sorted([name_a, name_b])

        for _ in range(2):
            got_b, got_a = await asyncio.gather(client.call_tool(name_b, {}), client.call_tool(name_a, {}))
            assert (text(got_a), text(got_b)) == ("A", "B")
        assert len([s for s in first.said if s["event"] == "call"]) == 2
        assert len([s for s in second.said if s["event"] == "call"]) == 2


@pytest.mark.parametrize("era", ERAS)
async def test_interrupt_round_trip(era):
    async with app_bridge() as b, agui_app(b, "confirm", "add") as app, Client(b.mcp_url(), mode=era) as client:
        approved = await client.call_tool("confirm", {"question": "Pay 10 €?", "answer": "yes"})
        interrupt = (await app.expect("interrupt"))["interrupt"]
        call = await app.expect("call", tool="confirm")
        assert interrupt == {"id": call["toolCallId"], "reason": "tool_call", "toolCallId": call["toolCallId"],
                             "message": "Please confirm.",
                             "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}}}}
        # The resume entry's payload is the agent's result.
        assert not approved.is_error and approved.structured_content == {"approved": True}

        declined = await client.call_tool("confirm", {"question": "Pay 20 €?", "answer": "decline"})
        assert not declined.is_error and text(declined) == "The user declined to answer."
        # The thread goes on serving after its interrupts.
        assert text(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


async def test_a_thread_that_stops_coming_back_fails_its_calls_within_the_grace_period():
    async with running_bridge(page_grace=0.3) as b, agui_app(b, "vanish", "add") as app, \
            Client(b.mcp_url(), mode="legacy") as client:
        started = time.monotonic()
        result = await client.call_tool("vanish", {})  # the app stops serving when it gets this call
        assert result.is_error and "went away" in text(result)
        assert time.monotonic() - started < 2
        await app.expect("stopped")
        assert (await client.list_tools()).tools == []


async def test_tools_in_another_room_stay_there():
    async with app_bridge() as b, agui_app(b, "whoami", room="kitchen", label="K"), \
            Client(b.mcp_url("kitchen"), mode="legacy") as kitchen, Client(b.mcp_url(), mode="legacy") as default:
        assert [t.name for t in (await kitchen.list_tools()).tools] == ["whoami"]
        assert (await default.list_tools()).tools == []
        assert text(await kitchen.call_tool("whoami", {})) == "K"


async def test_a_refused_app_is_told_why():
    async with app_bridge(token="s3cret") as b:
        url = f"{b.url}/agui/run"
        process = await asyncio.create_subprocess_exec(
            "node", str(AGUI / "app.mjs"), json.dumps({"url": url, "tools": ["add"]}), stdout=asyncio.subprocess.PIPE)
        app = AguiApp(process)
        failed = await app.expect("failed")
        assert failed["code"] == "unauthorized"
        await app.stop()
        async with agui_app(b, "add", headers={"Authorization": "Bearer s3cret"}) as app:
            await app.expect("registered")


@pytest.mark.parametrize("answer, expected", [("yes", "The user confirmed: order A-"),
                                              ("no", "No order: The user declined to answer.")])
async def test_the_agui_app_example(tmp_path, answer, expected):
    # The example as a user runs it, with the AG-UI client the tests installed in place of its own npm install.
    examples = Path(__file__).resolve().parents[2] / "examples"
    shutil.copytree(examples / "agui_app", tmp_path / "examples" / "agui_app")
    shutil.copytree(examples.parent / "web_client", tmp_path / "web_client", ignore=shutil.ignore_patterns("*.html"))
    (tmp_path / "examples" / "agui_app" / "node_modules").symlink_to(AGUI / "node_modules")
    shutil.copy(examples / "_agent_common.py", tmp_path / "examples")
    async with app_bridge() as b:
        app = await asyncio.create_subprocess_exec(
            "node", str(tmp_path / "examples" / "agui_app" / "app.mjs"), "--bridge", b.url, "--answer", answer,
            stdout=asyncio.subprocess.PIPE)
        agent = await asyncio.create_subprocess_exec(
            sys.executable, str(tmp_path / "examples" / "agui_app" / "agent.py"), "--bridge", b.url, "--wait", "10",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(agent.communicate(), 30)
        app.terminate()
        app_out, _ = await asyncio.wait_for(app.communicate(), 10)
    lines = out.decode().splitlines()
    assert agent.returncode == 0, out.decode()
    assert lines[0] == "products: tea 4.50 €, coffee 7.90 €, mug 12.00 €"
    assert lines[1] == "cart: {'tea': 2, 'mug': 1}, total 21.00 €"
    assert lines[2].startswith(expected) and len(lines) == 3
    said = app_out.decode()
    assert "registered: list_products, add_to_cart, view_cart, place_order" in said
    assert f"-> {answer} (--answer)" in said and said.rstrip().endswith("stopped")


TSC = Path(__file__).resolve().parents[1] / "webmcp" / "node_modules" / ".bin" / "tsc"
WEB_CLIENT = Path(__file__).resolve().parents[2] / "web_client"


def test_agui_app_js_agrees_with_its_declarations_and_with_ag_ui_client(tmp_path):
    assert TSC.exists(), f"{TSC} is missing: run scripts/setup --test (npm ci in tests/webmcp)"
    options = {"noEmit": True, "strict": True, "target": "ES2022", "module": "ESNext", "moduleResolution": "bundler",
               "lib": ["ES2022", "DOM", "DOM.Iterable"], "types": []}
    # The module, type-checked against agui-app.d.ts (each export is typed with its declaration).
    (tmp_path / "module.json").write_text(json.dumps({
        "compilerOptions": {**options, "allowJs": True, "checkJs": True, "noImplicitAny": False},
        "files": [str(WEB_CLIENT / "agui-app.js")]}))
    # What an app writes: @ag-ui/client's HttpAgent is an AgentLike, and the handlers' results are accepted.
    usage = AGUI / f"usage-{os.getpid()}.ts"  # beside node_modules, so @ag-ui/client resolves
    usage.write_text(
        'import { HttpAgent } from "@ag-ui/client";\n'
        f'import {{ DECLINE, serveFrontendTools, toolContent }} from {json.dumps(str(WEB_CLIENT / "agui-app.js"))};\n'
        'const agent = new HttpAgent({ url: "http://127.0.0.1:8765/agui/run" });\n'
        'const done: Promise<void> = serveFrontendTools(agent, [\n'
        '  { name: "a", description: "A.", interrupt: true, handler: async () => DECLINE },\n'
        '  { name: "b", handler: (args: { n: number }, { signal }) => signal.aborted ? "" : { n: args.n } },\n'
        '  { name: "c", handler: () => toolContent([{ type: "text", text: "c" }]) },\n'
        '], { signal: new AbortController().signal, onRegistered: (tools) => tools.map((t) => t.name) });\n'
        'void done;\n')
    (tmp_path / "usage.json").write_text(json.dumps({
        "compilerOptions": {**options, "skipLibCheck": True}, "files": [str(usage)]}))
    try:
        for config in ("module.json", "usage.json"):
            done = subprocess.run([str(TSC), "-p", str(tmp_path / config)], capture_output=True, text=True,
                                  timeout=120)
            assert done.returncode == 0, f"tsc -p {config}:\n{done.stdout}{done.stderr}"
    finally:
        usage.unlink()
    module = json.dumps((WEB_CLIENT / "agui-app.js").as_uri())
    exported = subprocess.run(["node", "--input-type=module", "-e",
                               f"console.log(Object.keys(await import({module})).sort().join())"],
                              capture_output=True, text=True, timeout=60)
    assert exported.stdout.strip() == "BRIDGE_KEY,DECLINE,serveFrontendTools,toolContent", exported.stderr


# --- the endpoint on the wire ------------------------------------------------------------------

CONFIRM = {"name": "confirm", "description": "Ask the user.", "parameters": {"type": "object"},
           "metadata": {"agui-mcp-bridge": {"interrupt": True}}}


def wire_bridge(**overrides: Any):
    """A bridge for the wire tests: threads have time to come back between the runs a test makes."""
    return running_bridge(**{"page_grace": 5, **overrides})


# The Node apps' threads, too, come back between runs: on a loaded machine that can take more than
# the short grace the other tests use. The grace tests set theirs.
app_bridge = wire_bridge


async def deliver(bridge, client: Client, name: str, arguments: dict, body: dict) -> tuple[asyncio.Task, Run, str]:
    """An agent's call, handed to the thread by a run: the call's task, the run (finished) and the call's id."""
    async with run(bridge, body) as r:
        await r.until("RUN_STARTED")  # the run's tools are registered before it starts
        call = asyncio.create_task(client.call_tool(name, arguments))
        start = await r.until("TOOL_CALL_START")
        await r.finished()
    return call, r, start["toolCallId"]


async def test_the_event_sequence_of_a_run_that_hands_over_a_call():
    async with wire_bridge() as b, Client(b.mcp_url(), mode="legacy") as client:
        async with run(b, run_input()) as r:
            started = await r.next()
            registered = await r.next()
            call = asyncio.create_task(client.call_tool("add", {"a": 1, "b": 2}))
            finished = await r.finished()
        assert started == {"type": "RUN_STARTED", "threadId": "thread-1", "runId": started["runId"]}
        assert registered == {"type": "CUSTOM", "name": "agui.tools.registered",
                              "value": {"tools": [{"tool": "add", "name": "add"}]}}
        assert r.types() == ["RUN_STARTED", "CUSTOM", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                             "RUN_FINISHED"]
        start, args, end = r.events[2:5]
        call_id = start["toolCallId"]
        assert start == {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "add"}
        assert json.loads(args["delta"]) == {"a": 1, "b": 2} and end["toolCallId"] == call_id
        assert finished["outcome"] == {"type": "success", "pendingToolCallIds": [call_id]}
        assert not any(line.startswith(("event:", "id:")) for line in r.lines)

        async with run(b, run_input(messages=answer(call_id, "3"))) as r2:
            assert (await r2.next())["type"] == "RUN_STARTED"
            result = await asyncio.wait_for(call, TIMEOUT)
        assert text(result) == "3" and not result.is_error
        assert "TOOL_CALL_RESULT" not in r2.types()  # the app answered it: nothing to tell it


async def test_an_idle_run_stays_open_with_keep_alive_comments():
    async with wire_bridge(sse_ping=0.1) as b, run(b, run_input()) as r:
        await r.until("CUSTOM")
        with pytest.raises(TimeoutError):
            await r.next(timeout=0.5)
        assert r.lines.count(": ping") >= 2 and r.types() == ["RUN_STARTED", "CUSTOM"]


async def test_content_parts_and_errors_become_mcp_results():
    image = {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}}
    link = {"type": "document", "source": {"type": "url", "value": "https://x.example/a.pdf"}}
    async with wire_bridge() as b, Client(b.mcp_url(), mode="legacy") as client:
        call, _, call_id = await deliver(b, client, "add", {}, run_input())
        parts = [{"type": "text", "text": "Here:"}, image, link]
        async with run(b, run_input(messages=answer(call_id, parts))) as r:
            await r.next()
        result = await asyncio.wait_for(call, TIMEOUT)
        assert [c.type for c in result.content] == ["text", "image", "resource_link"]
        assert result.content[1].data == "iVBORw0KGgo=" and result.content[2].uri == "https://x.example/a.pdf"

        call, _, call_id = await deliver(b, client, "add", {}, run_input())
        async with run(b, run_input(messages=answer(call_id, "partial", error="Timed out upstream"))) as r:
            await r.next()
        result = await asyncio.wait_for(call, TIMEOUT)
        assert result.is_error and [c.text for c in result.content] == ["Timed out upstream", "partial"]


async def test_tool_messages_are_idempotent_and_unknown_ones_ignored():
    async with wire_bridge() as b, Client(b.mcp_url(), mode="legacy") as client:
        call, _, call_id = await deliver(b, client, "add", {"a": 1}, run_input())
        history = answer(call_id, "first") + answer("c_unknown", "who?")
        for _ in range(3):  # AG-UI clients send their whole history with every run
            async with run(b, run_input(messages=history)) as r:
                assert (await r.next())["type"] == "RUN_STARTED"
                with pytest.raises(TimeoutError):  # no RUN_ERROR, no notice: the run waits for calls
                    await r.next(timeout=0.2)
        assert text(await asyncio.wait_for(call, TIMEOUT)) == "first"
        assert b.hub.calls.recent[0]["outcome"] == "result"


async def test_tools_that_change_between_runs_are_refreshed():
    greet = {"name": "greet", "description": "Greet.", "parameters": {"type": "object"}}
    async with wire_bridge() as b, Client(b.mcp_url(), mode="legacy") as client:
        async with run(b, run_input(tools=[ADD])) as r:
            await r.until("CUSTOM")
        assert [t.name for t in (await client.list_tools()).tools] == ["add"]
        async with run(b, run_input(tools=[ADD])) as r:  # the same tools: nothing to register
            await r.next()
            with pytest.raises(TimeoutError):
                await r.next(timeout=0.2)
        assert r.types() == ["RUN_STARTED"]
        changed = {**ADD, "description": "Add numbers, fast."}
        async with run(b, run_input(tools=[changed, greet])) as r:
            registered = await r.until("CUSTOM")
        assert registered["value"]["tools"] == [{"tool": "add", "name": "add"}, {"tool": "greet", "name": "greet"}]
        listed = {t.name: t.description for t in (await client.list_tools()).tools}
        assert listed == {"add": "Add numbers, fast.", "greet": "Greet."}
        async with run(b, run_input(tools=[greet])) as r:
            await r.until("CUSTOM")
        assert [t.name for t in (await client.list_tools()).tools] == ["greet"]
        assert len(b.hub.sessions) == 1  # one thread, one page


async def test_a_cancelled_call_is_announced_on_the_next_run_and_its_late_answer_ignored():
    async with wire_bridge() as b, Client(b.mcp_url(), mode="legacy") as client:
        async def agent_gives_up():
            with anyio.move_on_after(0.5):  # cancelling the request sends notifications/cancelled
                await client.call_tool("add", {})

        async with run(b, run_input()) as r:
            await r.next()
            call = asyncio.create_task(agent_gives_up())
            call_id = (await r.until("TOOL_CALL_START"))["toolCallId"]
            await r.finished()
        seen = answer(call_id)[:1]  # the app has the call, and has not answered
        await call
        await eventually(lambda: b.hub.calls.recent and b.hub.calls.recent[0]["outcome"] == "cancelled")
        async with run(b, run_input(messages=seen)) as r:
            notice = await r.until("CUSTOM")
            assert notice == {"type": "CUSTOM", "name": "agui.tool.cancel",
                              "value": {"toolCallId": call_id, "reason": "cancelled by the agent"}}
        async with run(b, run_input(messages=answer(call_id, "late"))) as r:  # ignored, no error, no notice
            await r.next()
            with pytest.raises(TimeoutError):
                await r.next(timeout=0.2)
        assert r.types() == ["RUN_STARTED"]


async def test_a_call_the_app_did_not_see_is_handed_over_again():
    async with wire_bridge() as b, Client(b.mcp_url(), mode="legacy") as client:
        call, _, call_id = await deliver(b, client, "add", {"a": 1}, run_input())
        # The next run does not show the call (its app never got the events): it comes again.
        async with run(b, run_input()) as r:
            assert (await r.until("TOOL_CALL_START"))["toolCallId"] == call_id
            await r.finished()
        # Once the app's messages show it, it is not handed over again.
        async with run(b, run_input(messages=answer(call_id)[:1])) as r:
            await r.next()
            with pytest.raises(TimeoutError):
                await r.next(timeout=0.2)
        call.cancel()


async def test_interrupt_on_the_wire_and_a_declined_answer():
    async with wire_bridge() as b, Client(b.mcp_url(), mode="legacy") as client:
        async with run(b, run_input(tools=[CONFIRM])) as r:
            await r.next()
            call = asyncio.create_task(client.call_tool("confirm", {"amount": 10}))
            call_id = (await r.until("TOOL_CALL_START"))["toolCallId"]
            finished = await r.finished()
        (interrupt,) = finished["outcome"]["interrupts"]
        assert finished["outcome"]["type"] == "interrupt"
        assert interrupt == {"id": call_id, "reason": "tool_call", "toolCallId": call_id,
                             "message": 'An agent calls confirm with {"amount": 10}.'}
        # A run that does not answer it (the app is still asking its user) ends with it again.
        async with run(b, run_input(tools=[CONFIRM, ADD], messages=answer(call_id)[:1])) as r:
            await r.next()
            other = asyncio.create_task(client.call_tool("add", {"a": 1}))
            await r.until("TOOL_CALL_START")
            again = await r.finished()
        assert again["outcome"]["interrupts"] == [interrupt]
        other.cancel()
        resume = [{"interruptId": call_id, "status": "cancelled"}]
        async with run(b, run_input(tools=[CONFIRM, ADD], resume=resume)) as r:
            await r.next()
            closed = await r.next()
        assert closed == {"type": "TOOL_CALL_RESULT", "messageId": f"{call_id}.result", "toolCallId": call_id,
                          "content": "The user declined to answer.", "role": "tool"}
        result = await asyncio.wait_for(call, TIMEOUT)
        assert not result.is_error and text(result) == "The user declined to answer."


async def test_a_thread_paused_on_an_interrupt_may_come_back_after_the_grace_period():
    # A plain AG-UI client comes back only once its user has answered the interrupt.
    async with running_bridge(page_grace=0.3) as b, Client(b.mcp_url(), mode="legacy") as client:
        call, finished, call_id = await deliver(b, client, "confirm", {}, run_input(tools=[CONFIRM]))
        assert finished.events[-1]["outcome"]["type"] == "interrupt"
        await asyncio.sleep(1.0)  # the user takes a while
        assert not call.done() and len(b.hub.sessions) == 1
        resume = [{"interruptId": call_id, "status": "resolved", "payload": "yes"}]
        async with run(b, run_input(tools=[CONFIRM], messages=answer(call_id)[:1], resume=resume)) as r:
            await r.until("TOOL_CALL_RESULT")
        result = await asyncio.wait_for(call, TIMEOUT)
        assert not result.is_error and text(result) == "yes"


async def test_a_thread_away_past_the_grace_period_is_dropped_and_told_when_it_returns():
    async with running_bridge(page_grace=0.3) as b, Client(b.mcp_url(), mode="legacy") as client:
        call, _, call_id = await deliver(b, client, "add", {}, run_input())
        started = time.monotonic()
        result = await asyncio.wait_for(call, TIMEOUT)
        assert result.is_error and "went away" in text(result)
        assert time.monotonic() - started < 1.5
        assert (await client.list_tools()).tools == []
        async with run(b, run_input(messages=answer(call_id)[:1])) as r:
            assert (await r.next())["type"] == "RUN_STARTED"
            notice = await r.next()
        assert notice["value"] == {"toolCallId": call_id, "reason": "thread_dropped"}
        assert [t.name for t in (await client.list_tools()).tools] == ["add"]  # a new page for the thread


async def test_an_invalid_tool_ends_the_run_with_run_error():
    bad = {"name": "bad", "description": "No.", "parameters": {"type": "string"}}
    async with wire_bridge() as b, run(b, run_input(tools=[ADD, bad])) as r:
        await r.next()
        registered = await r.next()
        error = await r.next()
    assert registered["value"]["tools"] == [{"tool": "add", "name": "add"}]
    assert error["type"] == "RUN_ERROR" and error["code"] == "invalid_tool" and "'bad'" in error["message"]


async def test_a_newer_run_of_the_thread_supersedes_the_older():
    async with wire_bridge() as b, run(b, run_input()) as older:
        await older.until("CUSTOM")
        async with run(b, run_input()) as newer:
            await newer.next()
            error = await older.next()
    assert error["type"] == "RUN_ERROR" and error["code"] == "superseded"


async def test_rooms_and_their_paths():
    async with wire_bridge() as b, Client(b.mcp_url("lab"), mode="legacy") as lab:
        async with run(b, run_input(), path="/rooms/lab/agui/run") as r:
            await r.until("CUSTOM")
        assert [t.name for t in (await lab.list_tools()).tools] == ["add"]
        async with httpx.AsyncClient() as http:
            response = await http.post(b.url + "/rooms/no%20such/agui/run", json=run_input())
        assert response.status_code == 404 and response.json()["code"] == "bad_room"


@pytest.mark.parametrize("body, field", [
    ({"runId": "r", "messages": []}, "threadId"),
    ({"threadId": "t", "runId": "r", "messages": [], "tools": [{"name": "x"}]}, "tools.0.description"),
    ({"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "tool", "content": "x"}]},
     "messages.0.tool.toolCallId"),
    ({"threadId": "t", "runId": "r", "messages": [], "resume": [{"interruptId": "i", "status": "maybe"}]},
     "resume.0.status"),
    ([1, 2], "(body)"),
])
async def test_a_bad_body_is_refused_with_the_field_named(body, field):
    async with wire_bridge() as b, httpx.AsyncClient() as http:
        response = await http.post(b.url + "/agui/run", json=body)
    assert response.status_code == 422
    refusal = response.json()
    assert refusal["code"] == "invalid_input" and field in [e["field"] for e in refusal["errors"]]
    assert field in refusal["message"] or field == "(body)"
    with pytest.raises(Exception):
        RunAgentInput.model_validate(body)


async def test_wrong_requests_are_refused_with_clear_errors():
    async with wire_bridge() as b, httpx.AsyncClient() as http:
        url = b.url + "/agui/run"
        not_json = await http.post(url, content=b"{nope", headers={"Content-Type": "application/json"})
        as_text = await http.post(url, content=json.dumps(run_input()), headers={"Content-Type": "text/plain"})
        form = await http.post(url, data={"threadId": "t"})
        get = await http.get(url)
        huge = await http.post(url, content=b"[" + b" " * (16 * b.settings.max_message_bytes) + b"]",
                               headers={"Content-Type": "application/json"})
    assert not_json.status_code == 400 and not_json.json()["code"] == "bad_json"
    assert as_text.status_code == 415 and as_text.json()["code"] == "unsupported_media_type"
    assert "application/json" in as_text.json()["message"] and form.status_code == 415
    assert get.status_code == 405 and get.headers["allow"] == "POST"
    assert huge.status_code == 413 and huge.json()["code"] == "too_large"
    assert not b.hub.sessions  # nothing refused opened a thread


async def test_origins_cors_and_the_page_token():
    async with wire_bridge(token="s3cret") as b, httpx.AsyncClient() as http:
        url = b.url + "/agui/run"
        foreign = await http.post(url, json=run_input(), headers={"Origin": "https://evil.example",
                                                                  "Authorization": "Bearer s3cret"})
        assert foreign.status_code == 403 and foreign.json()["code"] == "forbidden_origin"
        assert "access-control-allow-origin" not in foreign.headers
        preflight = await http.options(url, headers={"Origin": "http://localhost:3000",
                                                     "Access-Control-Request-Method": "POST",
                                                     "Access-Control-Request-Headers": "content-type,authorization"})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://localhost:3000"
        assert "POST" in preflight.headers["access-control-allow-methods"]
        refused = await http.options(url, headers={"Origin": "https://evil.example",
                                                   "Access-Control-Request-Method": "POST"})
        assert refused.status_code == 400
        no_token = await http.post(url, json=run_input(), headers={"Origin": "http://localhost:3000"})
        assert no_token.status_code == 401 and no_token.json()["code"] == "unauthorized"
        assert no_token.headers["access-control-allow-origin"] == "http://localhost:3000"  # the app can read why
        assert not b.hub.sessions
        async with run(b, run_input(), Origin="http://localhost:3000", Authorization="Bearer s3cret") as r:
            assert (await r.next())["type"] == "RUN_STARTED"
            assert r.response.headers["access-control-allow-origin"] == "http://localhost:3000"
