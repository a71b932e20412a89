"""How long the event loop stalls while a page registers or leaves, at 100 / 1,000 / 10,000 tools in the room.

Drives the bridge's Hub (the code the WebSocket endpoint calls) with a ticker task on the same loop
measuring the longest gap between its wake-ups; the baseline row is the same ticker on an idle loop.
Prints a table; the issue's bound is 20 ms.

    python bench/registration_stall.py
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.config import Settings  # noqa: E402
from bridge.hub import Hub  # noqa: E402
from bridge.messages import Hello, RegisterTools  # noqa: E402

VERBS = ["get", "set", "list", "create", "delete", "export", "open", "search", "send", "update"]
NOUNS = ["invoice", "order", "customer", "ticket", "report", "playlist", "flight", "meeting", "file", "photo"]


def tools(prefix: str, n: int) -> list[dict]:
    return [{"name": f"{prefix}_{VERBS[i % 10]}_{NOUNS[i // 10 % 10]}_{i}",
             "description": f"{VERBS[i % 10].title()} the {NOUNS[i // 10 % 10]} number {i} of the {prefix} app.",
             "inputSchema": {"type": "object", "properties": {
                 # Every schema distinct, as on a real page: the bridge caches schema checks by content.
                 "id": {"type": "string", "description": f"which {NOUNS[i // 10 % 10]} (#{i} of {prefix})"},
                 "limit": {"type": "integer", "minimum": 1}}, "required": ["id"]}} for i in range(n)]


async def longest_stall(work) -> tuple[float, float]:
    """(seconds the work took, longest gap between 1 ms ticks of another task meanwhile)."""
    worst = 0.0
    done = asyncio.Event()

    async def ticker():
        nonlocal worst
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            worst = max(worst, now - last - 0.001)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    await work()
    took = time.perf_counter() - started
    done.set()
    await task
    return took, worst


async def main() -> None:
    print(f"{'room size':>10} {'operation':<28} {'took ms':>9} {'longest stall ms':>17} {'vs idle':>8}")
    idle_took, idle = await longest_stall(lambda: asyncio.sleep(0.2))
    print(f"{'-':>10} {'idle loop (baseline)':<28} {idle_took * 1e3:9.1f} {idle * 1e3:17.2f} {1:8.1f}")
    for room_size in (100, 1_000, 10_000):
        hub = Hub(Settings().hub_config())
        resident, _ = hub.hello(Hello(type="agui.hello"))
        await hub.handle(resident, RegisterTools(type="agui.tools.register", tools=tools("resident", room_size)))
        for label, count in (("a page registers 5 tools", 5), ("a page registers 1,000 tools", 1_000)):
            page, _ = hub.hello(Hello(type="agui.hello"))
            message = RegisterTools(type="agui.tools.register", tools=tools(f"p{count}r{room_size}", count))

            async def register():
                await hub.handle(page, message)
                await hub.room("default").search("export invoice", 5)
                hub.room("default").listing()

            took, stall = await longest_stall(register)
            print(f"{room_size:>10} {label:<28} {took * 1e3:9.1f} {stall * 1e3:17.2f} {stall / idle:8.1f}")

            async def leave():
                hub.drop(page)
                hub.room("default").listing()

            took, stall = await longest_stall(leave)
            print(f"{room_size:>10} {'  ... and leaves':<28} {took * 1e3:9.1f} {stall * 1e3:17.2f} {stall / idle:8.1f}")


if __name__ == "__main__":
    asyncio.run(main())
