"""Code mode end to end: `run_code` through MCP, a real `agui-mcp-bridge serve` process and real pages, each row
against a baseline measured in the same run.

- N sequential page calls: one program making them, against an agent making N direct calls (the target: the
  program in at most half the time);
- 16 page calls answering in 100 ms: gathered in a program, against the same 16 one after another in a program
  (the target: at least 8x faster);
- the start of a trivial program (`1 + 1`) on a warm sandbox, p50, against a direct page call's p50;
- a page call inside a program (the slope of the sequential programs' times over their calls), against a direct
  call, and the fixed cost of a program that calls tools (their intercept), against `1 + 1`;
- memory: 100 programs parked on dialogs, RSS of the bridge and its sandbox workers over the same bridge idle
  (once it ran a few programs: a worker's RSS grows once as it first runs and loads programs);
- bytes: an aggregate over 40 orders, the value the agent reads against the bytes the pages sent (and against
  the 40 answers an agent calling directly would read).

    python bench/code_mode_e2e.py               # ~1 minute
    python bench/code_mode_e2e.py --calls 80 --runs 200

Agents are the MCP SDK's client, 2026-07-28 era. Linux (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import statistics
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import _common as c

ORDERS = 40
AGGREGATE = f"""
import asyncio
orders = await asyncio.gather(*[get_order(order_id=n) for n in range({ORDERS})])
sum(order["total"] for order in orders if order["status"] == "open")
"""


def row(what: str, value: str, baseline: str, ratio: float | None) -> None:
    print(f"| {what} | {value} | {baseline} | {'' if ratio is None else f'{ratio:.2f}x'} |", flush=True)


async def run_code(client: Any, code: str) -> Any:
    result = await client.call_tool("run_code", {"code": code})
    if result.is_error:
        raise RuntimeError(f"run_code failed: {result.content[0].text}")
    return result


def sandbox_workers(bridge: c.Server) -> list[int]:
    """The bridge's sandbox worker processes (children of the engine's threads, not of its main thread)."""
    children = []
    for path in glob.glob(f"/proc/{bridge.pid}/task/*/children"):
        try:
            children += [int(pid) for pid in Path(path).read_text().split()]
        except OSError:
            pass
    return [pid for pid in children if _comm(pid) == "monty"]


def bridge_rss_kb(bridge: c.Server) -> tuple[int, int]:
    """(the bridge process, its sandbox workers)."""
    return c.rss_kb(bridge.pid), sum(c.rss_kb(pid) for pid in sandbox_workers(bridge))


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


async def sequential(client: Any, calls: int, runs: int) -> float:
    """One program making `calls` page calls one after another, against as many direct calls; the program's
    median time."""
    program = f"for n in range({calls}):\n    await echo(text=str(n))\n{calls}"

    async def directly() -> None:
        for n in range(calls):
            await c.call_text(client, "echo", {"text": str(n)})

    inside = statistics.median(await c.timed(runs, lambda: run_code(client, program)))
    direct = statistics.median(await c.timed(runs, directly))
    row(f"{calls} sequential page calls: one program (median of {runs})", f"{inside * 1000:.1f} ms",
        f"{direct * 1000:.1f} ms ({calls} direct calls)", inside / direct)
    return inside


async def gathered(client: Any, pages: c.Pages) -> None:
    gather = "import asyncio\nlen(await asyncio.gather(*[echo(text=str(n)) for n in range(16)]))"
    one_by_one = "for n in range(16):\n    await echo(text=str(n))\n16"
    await pages.do("delay", seconds=0.1)
    try:
        together = min(await c.timed(3, lambda: run_code(client, gather)))
        apart = min(await c.timed(1, lambda: run_code(client, one_by_one)))
    finally:
        await pages.do("delay", seconds=0.0)
    row("16 page calls answering in 100 ms, gathered in a program", f"{together * 1000:.0f} ms",
        f"{apart * 1000:.0f} ms (one after another, in a program)", together / apart)


async def start_and_per_call(client: Any, programs: dict[int, float], runs: int) -> None:
    """The start of a trivial program; a page call inside a program and the fixed cost of a program that calls
    tools, from the sequential rows (the slope and the intercept of their times)."""
    trivial = statistics.median(await c.timed(runs, lambda: run_code(client, "1 + 1")))
    direct = statistics.median(await c.timed(runs, lambda: c.call_text(client, "echo", {"text": "x"})))
    row(f"start of `1 + 1`, warm sandbox, through MCP, p50 of {runs}", f"{trivial * 1000:.2f} ms",
        f"{direct * 1000:.2f} ms (a direct page call, p50)", trivial / direct)
    (few, few_time), (many, many_time) = sorted(programs.items())
    per_call = (many_time - few_time) / (many - few)
    row(f"a page call inside a program (the {few}- and {many}-call programs' slope)", f"{per_call * 1000:.2f} ms",
        f"{direct * 1000:.2f} ms (a direct page call, p50)", per_call / direct)
    fixed = few_time - few * per_call
    row("the fixed cost of a program that calls tools (the intercept: its type check most of it)",
        f"{fixed * 1000:.1f} ms", f"{trivial * 1000:.2f} ms (`1 + 1`)", fixed / trivial)


async def parked_memory(client: Any, bridge: c.Server, pages: c.Pages, programs: int) -> None:
    program = ("orders = [{'id': n, 'items': ['sku'] * 5} for n in range(20)]\n"
               "answer = await wait(text='Ship?')\n[answer, len(orders)]")

    async def waiting(count: int, call: Callable[[], Coroutine[Any, Any, Any]]) -> tuple[int, int, int]:
        """RSS of the bridge and its workers while `count` calls wait on dialogs, and its worker processes."""
        await pages.do("hold", on=True)
        runs = [asyncio.create_task(call()) for _ in range(count)]
        while (await pages.do("held"))["held"] < count:
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # the last programs park (5 ms after they wait), the bridge settles
        (host, workers), processes = bridge_rss_kb(bridge), len(sandbox_workers(bridge))
        await pages.do("hold", on=False)
        await pages.do("release")
        await asyncio.gather(*runs)
        return host, workers, processes

    def parked_program() -> Coroutine[Any, Any, Any]:
        return run_code(client, program)

    def direct_call() -> Coroutine[Any, Any, Any]:
        return c.call_text(client, "wait", {"text": "Ship?"})

    await waiting(8, parked_program)  # warm: the workers have run and loaded programs
    await waiting(8, direct_call)
    await asyncio.sleep(1.0)
    idle = sum(bridge_rss_kb(bridge))
    host, workers, processes = await waiting(programs, parked_program)
    await asyncio.sleep(1.0)
    direct_host, direct_workers, _ = await waiting(programs, direct_call)
    over, direct_over = host + workers - idle, direct_host + direct_workers - idle
    row(f"{programs} programs parked on dialogs: RSS over the idle bridge ({idle / 1024:.0f} MB, its "
        f"{processes} sandbox workers included)", f"{over / 1024:.1f} MB ({over / programs:.0f} KB a program)",
        f"{direct_over / 1024:.1f} MB ({programs} direct calls waiting on dialogs)", over / direct_over)


async def aggregate_bytes(client: Any, pages: c.Pages) -> None:
    before = (await pages.do("stats"))["answer_bytes"]
    result = await run_code(client, AGGREGATE)
    sent = (await pages.do("stats"))["answer_bytes"] - before
    value = len(result.content[0].text)
    direct = 0
    for n in range(ORDERS):
        answer = await client.call_tool("get_order", {"order_id": n})
        direct += sum(len(block.text) for block in answer.content)
    row(f"an aggregate over {ORDERS} orders: what the agent reads", f"{value} characters (the total)",
        f"{sent:,} bytes the pages sent ({direct:,} characters in {ORDERS} direct calls' results)", None)
    print(f"|   (the agent reads {sent / value:,.0f}x fewer characters) | | | |")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=40, help="page calls in the sequential rows (and a quarter)")
    parser.add_argument("--runs", type=int, default=100, help="trivial programs and direct calls for the p50s")
    parser.add_argument("--parked", type=int, default=100, help="programs parked for the memory row")
    c.add_bridge_options(parser)
    args = parser.parse_args()
    c.raise_fd_limit()
    print(c.machine() + "\n")
    bridge = await c.start_bridge("--log-level", "warning", "--max-calls-per-page", str(2 * args.parked),
                                  *args.bridge_arg, src=args.bridge_src)
    pages = await c.Pages.start(bridge)
    try:
        await pages.do("open", n=1, tools=[c.ECHO_TOOL, c.WAIT_TOOL, c.ORDER_TOOL])
        async with c.mcp_client(bridge.mcp_url, "2026-07-28") as client:
            for n in range(20):  # warm: the sandbox's first programs, the connections
                await run_code(client, f"for n in range(3):\n    await echo(text='warm')\n{n}")
                await c.call_text(client, "echo", {"text": "warm"})
            print("| what | measured | baseline (same run) | ratio |")
            print("|---|---|---|---|")
            programs = {calls: await sequential(client, calls, 20) for calls in (args.calls // 4, args.calls)}
            await gathered(client, pages)
            await start_and_per_call(client, programs, args.runs)
            await parked_memory(client, bridge, pages, args.parked)
            await aggregate_bytes(client, pages)
    finally:
        await pages.stop()
        bridge.stop()


if __name__ == "__main__":
    asyncio.run(main())
