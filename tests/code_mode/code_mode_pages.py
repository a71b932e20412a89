"""A tool caller for code mode's tests that behaves like pages: each call is awaited, may answer slowly, may fail,
may never answer (a dialog nobody closes), and is cancelled when its program ends. It records what happened: the
calls made, the most in flight at once, the calls cancelled. It is not what the tests test: the engine is."""

from __future__ import annotations

import asyncio
import glob
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bridge.code_mode import ToolError

REPOSITORY = Path(__file__).resolve().parents[2]

ORDER_SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}
SCHEMAS: dict[str, Any] = {
    "get_order": ORDER_SCHEMA,
    "list_orders": {"type": "object", "properties": {
        "status": {"enum": ["open", "closed"]}, "limit": {"type": "integer", "default": 50}}},
    "ask_user": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    "refuse": {"type": "object", "properties": {}},
    "read-file": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}


def order(order_id: int) -> dict[str, Any]:
    """Order n: open when n is odd, its total 10 + n."""
    return {"id": order_id, "status": "open" if order_id % 2 else "closed", "total": 10.0 + order_id,
            "items": [{"sku": f"sku-{order_id}-{k}", "qty": k + 1} for k in range(2)]}


class FakePages:
    def __init__(self, delay: float = 0.005) -> None:
        self.delay = delay
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.cancelled: list[str] = []
        self.user_answers: asyncio.Queue[str] = asyncio.Queue()  # what the "user" answers ask_user with
        self.tools: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "get_order": self._get_order, "list_orders": self._list_orders, "ask_user": self._ask_user,
            "refuse": self._refuse, "read-file": self._read_file}

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls.append((name, arguments))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            tool = self.tools.get(name)
            if tool is None:
                raise ToolError(f"Unknown tool: {name}")
            return await tool(arguments)
        except asyncio.CancelledError:
            self.cancelled.append(name)
            raise
        finally:
            self.in_flight -= 1

    def named(self, name: str) -> list[dict[str, Any]]:
        return [arguments for called, arguments in self.calls if called == name]

    async def _get_order(self, arguments: dict[str, Any]) -> Any:
        await asyncio.sleep(self.delay)
        order_id = arguments["order_id"]
        if not 0 <= order_id < 1000:
            raise ToolError(f"No order {order_id}")
        return order(order_id)

    async def _list_orders(self, arguments: dict[str, Any]) -> Any:
        await asyncio.sleep(self.delay)
        ids = range(arguments.get("limit", 50))
        return [n for n in ids if arguments.get("status") in (None, order(n)["status"])]

    async def _ask_user(self, arguments: dict[str, Any]) -> Any:  # a dialog: answers when the user does
        return {"content": [{"type": "text", "text": await self.user_answers.get()}]}

    async def _refuse(self, arguments: dict[str, Any]) -> Any:  # a page's own error answer, MCP-shaped
        await asyncio.sleep(self.delay)
        return {"content": [{"type": "text", "text": "The user said no."}], "isError": True}

    async def _read_file(self, arguments: dict[str, Any]) -> Any:
        return {"content": [{"type": "text", "text": f"contents of {arguments['path']}"}],
                "structuredContent": {"path": arguments["path"], "size": 12}}


async def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait (bounded) until `check()` holds."""
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(poll(), timeout)


def sandbox_workers() -> list[int]:
    """The sandbox worker processes this process started."""
    children = []
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        children += [int(pid) for pid in Path(path).read_text().split()]
    workers = []
    for pid in children:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "monty":
                workers.append(pid)
        except FileNotFoundError:
            pass
    return workers


def run_script(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`script` in a fresh interpreter using this checkout's code."""
    env = dict(os.environ, PYTHONPATH=str(REPOSITORY))
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=REPOSITORY)
