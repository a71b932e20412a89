"""AG-UI on the wire, as an AG-UI client speaks it to the bridge's /agui/run: a run's input, a call's
answer, and the run's event stream, each event checked against the ag-ui-protocol models."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import asynccontextmanager
from typing import Any

import httpx
from ag_ui.core import Event
from pydantic import TypeAdapter
from support import TIMEOUT

EVENT = TypeAdapter(Event)

ADD = {"name": "add", "description": "Add two numbers.",
       "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}


def run_input(thread: str = "thread-1", *, tools: list[dict] | None = None, messages: list[dict] | None = None,
              **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": f"run-{time.monotonic_ns()}", "tools": [ADD] if tools is None else tools,
            "messages": messages or [], **extra}


def answer(call_id: str, content: Any = "ok", **extra: Any) -> list[dict]:
    """What an AG-UI client sends back for a call: the assistant's tool call, and the ToolMessage."""
    return [{"id": f"a-{call_id}", "role": "assistant",
             "toolCalls": [{"id": call_id, "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
            {"id": f"t-{call_id}", "role": "tool", "toolCallId": call_id, "content": content, **extra}]


class Run:
    """One run on the wire: its raw SSE lines, and its events, each checked against the ag-ui-protocol models."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines: list[str] = []
        self.events: list[dict[str, Any]] = []
        self._lines = response.aiter_lines()

    async def next(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next event, within `timeout` seconds (keep-alive comments do not count)."""
        async with asyncio.timeout(timeout):
            return await self._next()

    async def _next(self) -> dict[str, Any]:
        while True:
            line = await anext(self._lines)
            self.lines.append(line)
            if line.startswith("data: "):
                event = json.loads(line[6:])
                model = EVENT.validate_python(event)  # raises on anything AG-UI does not define
                assert not model.model_extra, f"fields AG-UI does not define: {model.model_extra}"
                self.events.append(event)
                return event
            assert line == "" or line.startswith(":"), f"only data: frames and comments, got {line!r}"

    async def until(self, kind: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        while (event := await self.next(timeout))["type"] != kind:
            pass
        return event

    async def finished(self) -> dict[str, Any]:
        event = await self.until("RUN_FINISHED")
        rest = [line async for line in self._lines]
        assert not any(rest), f"the stream ends with RUN_FINISHED, yet it went on: {rest}"
        return event

    def types(self) -> list[str]:
        return [e["type"] for e in self.events]


@asynccontextmanager
async def run(bridge, body: dict[str, Any], path: str = "/agui/run", **headers: str):
    async with httpx.AsyncClient(timeout=None) as http, http.stream("POST", bridge.url + path, json=body,
                                                                     headers=headers) as response:
        assert response.status_code == 200, (await response.aread()).decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Run(response)


def chat_messages(count: int) -> list[dict[str, Any]]:
    """A history of `count` messages, as a chat app sends it."""
    return [{"id": f"m{n}", "role": "user" if n % 2 else "assistant", "content": f"message number {n}"}
            for n in range(count)]
