"""A 2026-07-28 agent speaking raw JSON-RPC, for what the SDK's client does not do (tasks, input requests
answered by hand)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

TASKS = "io.modelcontextprotocol/tasks"


def envelope(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: capabilities,
            CLIENT_INFO_META_KEY: {"name": "test", "version": "1"}}


class Agent:
    """A 2026-07-28 agent speaking raw JSON-RPC: each request its own HTTP request, as the era has it."""

    def __init__(self, url: str, http: httpx.AsyncClient, *, tasks: bool = True,
                 capabilities: dict[str, Any] | None = None) -> None:
        self.url, self.http, self.tasks = url, http, tasks
        self.capabilities = capabilities or {}
        self.ids = 0

    async def request(self, method: str, params: dict[str, Any], *, name: str | None = None,
                      tasks: bool | None = None, meta: dict[str, Any] | None = None) -> httpx.Response:
        self.ids += 1
        headers = {"MCP-Protocol-Version": "2026-07-28", "Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json", "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method,
                "params": params | {"_meta": envelope(self._capabilities(tasks)) | (meta or {})}}
        return await self.http.post(self.url, json=body, headers=headers)

    def _capabilities(self, tasks: bool | None) -> dict[str, Any]:
        with_tasks = self.tasks if tasks is None else tasks
        return self.capabilities | ({"extensions": {TASKS: {}}} if with_tasks else {})

    async def call(self, tool_name: str, arguments: dict[str, Any], *, params: dict[str, Any] | None = None,
                   **kwargs: Any) -> dict[str, Any]:
        response = await self.request("tools/call", {"name": tool_name, "arguments": arguments, **(params or {})},
                                      name=tool_name, **kwargs)
        return answer_of(response)

    async def task_reaching(self, task_id: str, status: str, timeout: float = 10) -> dict[str, Any]:
        """The task as tasks/get shows it once it has `status` (polled)."""
        shown: dict[str, Any] = {}
        for _ in range(int(timeout / 0.05)):
            shown = (await self.task("tasks/get", task_id))["result"]
            if shown["status"] == status:
                return shown
            await asyncio.sleep(0.05)
        raise AssertionError(f"task stayed {shown.get('status')!r}, not {status!r}: {shown}")

    async def task(self, method: str, task_id: str, *, name: str | None = None, **params: Any) -> dict[str, Any]:
        response = await self.request(method, {"taskId": task_id, **params},
                                      name=task_id if name is None else name)
        return response.json()




def answer_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer, from a JSON body or the last message of an event stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return messages_of(response)[-1]
    return response.json()


def messages_of(response: httpx.Response) -> list[dict[str, Any]]:
    """Every JSON-RPC message of an event-stream answer, in order."""
    return [json.loads(line[5:]) for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()]
