"""Shared mode's cost: the round trip and calls/s of a call that crosses processes through Redis,
against the single-process bridge, in the same run.

Three set-ups, every server its own process (`agui-mcp-bridge serve`), the page a real
`websockets` + SSE client in another process, the agent an MCP SDK client in this one:

- single:     one bridge, no Redis (the default);
- shared, local: a bridge with --redis-url, page and agent on it (what Redis costs when nothing
  crosses: the events and answers still go through it);
- shared, across: two bridges with --redis-url, the page on A, the agent on B.

Starts its own redis-server (Debian's) on a free port. Batches rotate between the set-ups; the
table gives p50/p99 at concurrency 1, calls/s at 8 and 32, and the ratios to single.

    python bench/crossprocess.py            # ~2 minutes
    python bench/crossprocess.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

LOADS = (1, 8, 32)


async def start_redis() -> tuple[subprocess.Popen, str]:
    if shutil.which("redis-server") is None:
        sys.exit("needs redis-server (Debian: apt-get install redis-server)")
    port = c.free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL)
    await c.wait_listening(port, proc)
    return proc, f"redis://127.0.0.1:{port}/0"


async def measure(args) -> None:
    redis_proc, url = await start_redis()
    shared = ["--redis-url", url, *args.bridge_arg]
    servers: list[c.Server] = []
    pages: list[c.Pages] = []
    try:
        single = await c.start_bridge(*args.bridge_arg)
        a = await c.start_bridge(*shared)
        b = await c.start_bridge(*shared)
        servers += [single, a, b]
        for server in (single, a):
            pages.append(await c.Pages.start(server))
            await pages[-1].do("open", n=1, tools=[c.ECHO_TOOL])
        setups = {"single": single, "shared, local": a, "shared, across": b}
        rows = []
        for era in args.eras:
            async with AsyncExitStack() as stack:
                clients = {name: await stack.enter_async_context(c.mcp_client(server.mcp_url, era))
                           for name, server in setups.items()}
                for client in clients.values():  # warm up; b also learns a's page by now
                    await wait_listed(client)
                    await c.timed_calls(client, 50, 1)
                    await c.timed_calls(client, 100, 32)
                latencies = {name: [] for name in setups}
                walls: dict[tuple[str, int], list[float]] = {(n, load): [] for n in setups for load in LOADS[1:]}
                names = list(setups)
                for r in range(args.rounds):
                    for name in names[r % 3:] + names[:r % 3]:
                        latencies[name] += (await c.timed_calls(clients[name], args.calls, 1))[0]
                        for load in LOADS[1:]:
                            walls[(name, load)].append((await c.timed_calls(clients[name], args.calls * 2, load))[1])
                base_p50 = c.percentile(latencies["single"], .5)
                base_rate = {load: len(walls[("single", load)]) * args.calls * 2 / sum(walls[("single", load)])
                             for load in LOADS[1:]}
                for name in names:
                    p50, p99 = c.percentile(latencies[name], .5), c.percentile(latencies[name], .99)
                    rates = {load: len(walls[(name, load)]) * args.calls * 2 / sum(walls[(name, load)])
                             for load in LOADS[1:]}
                    rows.append([c.ERA_LABEL[era], name, f"{p50 * 1e3:.2f}", f"{p99 * 1e3:.2f}",
                                 f"{p50 / base_p50:.2f}",
                                 *(f"{rates[load]:.0f} ({rates[load] / base_rate[load]:.2f})" for load in LOADS[1:])])
    finally:
        for p in pages:
            await p.stop()
        for server in servers:
            server.stop()
        redis_proc.terminate()
        redis_proc.wait(5)
    print(c.machine())
    print(f"{args.rounds} rounds: {args.calls} calls at c=1, {args.calls * 2} at c=8 and at c=32, per set-up")
    print(c.table(["era", "set-up", "c=1 p50 ms", "p99 ms", "p50 vs single", "c=8 calls/s (vs single)",
                   "c=32 calls/s (vs single)"], rows, left=2))


async def wait_listed(client) -> None:
    deadline = time.monotonic() + 10
    while not [t for t in (await client.list_tools()).tools if t.name == "echo"]:
        if time.monotonic() > deadline:
            raise RuntimeError("the page's tool never reached this bridge")
        await asyncio.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 rounds of short batches")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=200, help="calls per batch at concurrency 1 (default 200)")
    parser.add_argument("--eras", default=",".join(c.ERAS), help="legacy and/or 2026-07-28")
    c.add_bridge_options(parser)
    args = parser.parse_args()
    args.eras = args.eras.split(",")
    if args.quick:
        args.rounds, args.calls = 2, 50
    c.raise_fd_limit()
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
