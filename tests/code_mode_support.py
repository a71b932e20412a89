"""For the tests of code mode through the bridge (tests/interaction/test_code_mode_*.py): a real test page
(support.Page) that answers its calls as a shop would, holds the ones a test answers itself (a dialog nobody has
closed yet), and remembers what it was asked and told; and the sandbox's worker processes, counted."""

from __future__ import annotations

import asyncio
import glob
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from support import Page, open_page, running_bridge, tool

GET_ORDER = tool("get_order", "Read one order of the shop.", {"order_id": {"type": "integer"}}, ["order_id"])
LIST_ORDERS = tool("list_orders", "The shop's orders.", {"status": {"enum": ["open", "closed"]}})
CONFIRM = tool("confirm", "Ask the user to confirm.", {"question": {"type": "string"}}, ["question"])
FAIL = tool("refund", "Refund an order.", {"order_id": {"type": "integer"}}, ["order_id"])
SHOP = (GET_ORDER, LIST_ORDERS, CONFIRM, FAIL)
# The aggregate of the examples: orders 0-39, the open ones (odd ids) totalled: 20 orders of 10 + id.
OPEN_TOTAL = sum(10.0 + n for n in range(40) if n % 2)
AGGREGATE = """
import asyncio
orders = await asyncio.gather(*[get_order(order_id=n) for n in range(40)])
sum(order["total"] for order in orders if order["status"] == "open")
"""

HOLD = object()  # a handler's answer: the test answers the call itself (a person deciding)


class PageError(Exception):
    """A handler raising it answers with the page's own error (`agui.tool.return` with `error`)."""


def code_bridge(**overrides: Any):
    """A test bridge as agents meet one by default: code mode on, the meta-tools (and run_code) listed."""
    return running_bridge(**{"meta_tools": "always", "code_mode": "on", **overrides})


def order(order_id: int) -> dict[str, Any]:
    """Order n: open when n is odd, its total 10 + n, a few items (a page's answer is larger than what matters)."""
    return {"id": order_id, "status": "open" if order_id % 2 else "closed", "total": 10.0 + order_id,
            "customer": f"customer {order_id}",
            "items": [{"sku": f"sku-{order_id}-{k}", "qty": k + 1} for k in range(3)]}


def _refund(params: dict[str, Any]) -> Any:
    raise PageError(f"order {params['order_id']} cannot be refunded")


SHOP_HANDLERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "get_order": lambda params: order(params["order_id"]),
    "list_orders": lambda params: [order(n) for n in range(40) if params.get("status") in (None, order(n)["status"])],
    "confirm": lambda params: HOLD,
    "refund": _refund,
}


class ServedPage:
    """A page answering each call with its tool's handler (plain or async; HOLD leaves it to the test, a
    PageError is the page's error answer); it remembers the invocations and the cancels it got."""

    def __init__(self, page: Page, handlers: dict[str, Callable[[dict[str, Any]], Any]]) -> None:
        self.page, self.handlers = page, handlers
        self.invoked: list[dict[str, Any]] = []
        self.cancelled: list[dict[str, Any]] = []
        self.held: dict[str, dict[str, Any]] = {}  # call id -> invocation, for the test to answer
        self.bytes_sent = 0  # of the answers' JSON
        self._answering: set[asyncio.Task[None]] = set()
        self._reader = asyncio.create_task(self._read())

    def named(self, name: str) -> list[dict[str, Any]]:
        return [event["params"] for event in self.invoked if event["tool"] == name]

    async def _read(self) -> None:
        while True:
            event = await self.page.events.get()
            if event["type"] == "agui.tool.invoke":
                self.invoked.append(event)
                answering = asyncio.create_task(self._answer(event))
                self._answering.add(answering)
                answering.add_done_callback(self._answering.discard)
            elif event["type"] == "agui.tool.cancel":
                self.cancelled.append(event)
                self.held.pop(event["call_id"], None)

    async def _answer(self, event: dict[str, Any]) -> None:
        try:
            result = self.handlers[event["tool"]](event["params"])
            if isinstance(result, Awaitable):
                result = await result
        except PageError as error:
            await self.page.answer(event["call_id"], error=str(error))
            return
        if result is HOLD:
            self.held[event["call_id"]] = event
            return
        await self.answer(event["call_id"], result)

    async def answer(self, call_id: str, result: Any) -> None:
        self.held.pop(call_id, None)
        self.bytes_sent += len(json.dumps(result))
        await self.page.answer(call_id, result)

    async def close(self) -> None:
        self._reader.cancel()
        for answering in list(self._answering):
            answering.cancel()
        try:
            await self.page.close()
        except Exception:
            pass


@asynccontextmanager
async def served_page(bridge: Any, *tools: dict[str, Any], handlers: dict[str, Callable[[dict[str, Any]], Any]]
                      | None = None, **kwargs: Any) -> AsyncIterator[ServedPage]:
    """A connected page offering `tools` (the shop's by default), answering with `handlers`; closed on exit."""
    served = ServedPage(await open_page(bridge, *(tools or SHOP), **kwargs), handlers or SHOP_HANDLERS)
    try:
        yield served
    finally:
        await served.close()


def sandbox_workers(pid: int | None = None) -> list[int]:
    """The sandbox worker processes (`monty`) started by process `pid` (this one by default)."""
    children: list[int] = []
    for path in glob.glob(f"/proc/{pid or os.getpid()}/task/*/children"):
        try:
            children += [int(child) for child in Path(path).read_text().split()]
        except FileNotFoundError:
            pass
    workers = []
    for child in children:
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "monty":
                workers.append(child)
        except FileNotFoundError:
            pass
    return workers


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
