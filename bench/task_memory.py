"""Resident memory of the bridge while one agent makes many MCP tasks with large answers.

One page registers a tool with `execution.taskSupport: "required"` and answers every call at once
with an object of about `--answer-kb` KB (structured content, so its text is its JSON); one agent
(one credential) makes `--tasks` tasks in a row (2026-07-28, the tasks extension declared), then
another agent (another credential) asks for one. Reads VmRSS of the bridge process (/proc) before
and after, in a fresh bridge process each run, and what the second agent got.

    python bench/task_memory.py                                # 2,000 tasks of 400 KB (~1 minute)
    python bench/task_memory.py --bridge-src /tmp/old          # the same against another copy of bridge/
    python bench/task_memory.py --bridge-arg=--max-task-bytes-per-agent=8388608

Needs only the project's dependencies; Linux (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import _common as c
import httpx
import websockets
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

TASKS = "io.modelcontextprotocol/tasks"
TOOL = {"name": "approve", "description": "Approve.", "inputSchema": {"type": "object", "properties": {}},
        "execution": {"taskSupport": "required"}}


class AnsweringPage:
    """A page that answers every invocation at once with the same (pre-encoded) result."""

    def __init__(self, url: str, result: Any) -> None:
        self.url, self.result = url, json.dumps(result)
        self.answered = 0
        self._runners: list[asyncio.Task[None]] = []

    async def open(self) -> None:
        self.ws = await websockets.connect(self.url.replace("http://", "ws://") + "/agui/ws", max_size=None)
        await self.ws.send(json.dumps({"type": "agui.hello", "page": {"url": "http://127.0.0.1/", "title": "bench"}}))
        welcome = json.loads(await self.ws.recv())
        await self.ws.send(json.dumps({"type": "agui.tools.register", "tools": [TOOL]}))
        assert json.loads(await self.ws.recv())["type"] == "agui.tools.registered"
        self._runners.append(asyncio.create_task(self._answer(welcome["events_url"])))

    async def _answer(self, events_url: str) -> None:
        async with httpx.AsyncClient(timeout=None) as http, http.stream("GET", self.url + events_url) as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data:") and '"agui.tool.invoke"' in line:
                    call_id = json.loads(line[5:])["call_id"]
                    await self.ws.send(f'{{"type":"agui.tool.return","call_id":"{call_id}","result":{self.result}}}')
                    self.answered += 1

    async def close(self) -> None:
        for runner in self._runners:
            runner.cancel()
        await self.ws.close()


async def call(http: httpx.AsyncClient, url: str, token: str) -> dict[str, Any]:
    """tools/call of the page's tool as a 2026-07-28 agent that declares tasks: its JSON-RPC answer."""
    meta = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {"extensions": {TASKS: {}}},
            CLIENT_INFO_META_KEY: {"name": "bench", "version": "1"}}
    response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                          "params": {"name": "approve", "arguments": {}, "_meta": meta}},
                               headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                        "Mcp-Name": "approve", "Authorization": f"Bearer {token}",
                                        "Accept": "application/json, text/event-stream"})
    text = response.text
    return json.loads(text.rsplit("data:", 1)[-1] if text.startswith(("event:", "data:", "id:")) else text)


async def run(tasks: int, answer_kb: int, args: argparse.Namespace) -> list[Any]:
    value = {"rows": [{"id": n, "name": f"row {n}"} for n in range(100)], "blob": "x" * (answer_kb * 1000)}
    bridge = await c.start_bridge("--log-level", "warning", *args.bridge_arg, src=args.bridge_src)
    page = AnsweringPage(bridge.url, value)
    try:
        await page.open()
        await asyncio.sleep(1.0)
        before = c.rss_kb(bridge.pid)
        started = time.perf_counter()
        refused = 0
        async with httpx.AsyncClient(timeout=30) as http:
            for _ in range(tasks):
                refused += "error" in await call(http, bridge.mcp_url, "alice")
            while page.answered < tasks - refused:
                await asyncio.sleep(0.05)
            seconds = time.perf_counter() - started
            await asyncio.sleep(1.0)
            after = c.rss_kb(bridge.pid)
            other = await call(http, bridge.mcp_url, "bob")
        got = other["result"]["resultType"] if "result" in other else other["error"]["message"][:60]
        return [tasks, answer_kb, refused, f"{(after - before) / 1024:.0f}", f"{seconds:.1f}", got]
    finally:
        await page.close()
        bridge.stop()


async def main(args: argparse.Namespace) -> None:
    print(c.machine())
    rows = [await run(args.tasks, args.answer_kb, args)]
    print(c.table(["tasks", "answer KB", "refused", "RSS growth MiB", "seconds", "another agent then got"], rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--answer-kb", type=int, default=400)
    c.add_bridge_options(parser)
    asyncio.run(main(parser.parse_args()))
