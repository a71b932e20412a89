"""What code mode's engine costs (bridge.code_mode), each against a baseline measured in the same run.

- start: a trivial program (`1 + 1`) on a warm pool, p50 of N runs, without and with the type check (and with
  the stubs of 50 tools), against the sandbox's own floor (a Monty checkout and `feed_run`);
- a tool call inside a program: per call, over a loop of calls to an in-process fake tool, against awaiting the
  fake directly; a fake answering at once (the answer is in before the program waits: no park) and one answering
  after 1 ms (the program is parked and loaded again at each call);
- 16 calls answering in 100 ms each: gathered in the program, against the same 16 one after another;
- memory: 100 programs parked waiting on dialogs: RSS of this process and of the sandbox's workers, over the
  same engine idle; the snapshots' sizes.

    python bench/code_mode.py               # ~30 s
    python bench/code_mode.py --runs 200

The end-to-end numbers, through real pages and the MCP edge, come with the `run_code` tool. Linux (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import glob
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import timed  # noqa: E402
from pydantic_monty import Monty  # noqa: E402

from bridge.code_mode import CodeMode, ParkedProgram  # noqa: E402

ORDER = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def rss_kb(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def workers() -> list[int]:
    children = []
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        children += [int(pid) for pid in Path(path).read_text().split()]
    return [pid for pid in children if Path(f"/proc/{pid}/comm").read_text().strip() == "monty"]


def total_rss_kb() -> tuple[int, int]:
    """(this process, its sandbox workers)."""
    return rss_kb(), sum(rss_kb(pid) for pid in workers())


async def at_once(name: str, arguments: dict[str, Any]) -> Any:
    return {"id": arguments.get("order_id"), "total": 1.0}


async def after_1ms(name: str, arguments: dict[str, Any]) -> Any:
    await asyncio.sleep(0.001)
    return {"id": arguments.get("order_id"), "total": 1.0}


async def after_100ms(name: str, arguments: dict[str, Any]) -> Any:
    await asyncio.sleep(0.1)
    return {"id": arguments.get("order_id"), "total": 1.0}


def row(what: str, value: str, baseline: str, ratio: float | None) -> None:
    print(f"| {what} | {value} | {baseline} | {'' if ratio is None else f'{ratio:.2f}x'} |")


async def start(runs: int) -> None:
    with Monty(min_processes=1, max_processes=1) as pool:
        def floor() -> None:
            with pool.checkout() as session:
                session.feed_run("1 + 1")
        await asyncio.to_thread(floor)
        base = p50_ms(await timed(runs, lambda: asyncio.to_thread(floor)))
    tools50 = {f"tool_{n}": {"type": "object", "properties": {"order_id": {"type": "integer"},
                                                              "note": {"type": "string", "default": ""}},
                             "required": ["order_id"]} for n in range(50)}
    for label, check, tools in [("no type check", False, {}), ("type check", True, {}),
                                ("type check, 50 tools' stubs", True, tools50)]:
        async with CodeMode(max_workers=1, warm_workers=1, type_check=check) as code_mode:
            await code_mode.run("1 + 1", tools, at_once)
            value = p50_ms(await timed(runs, lambda: code_mode.run("1 + 1", tools, at_once)))
        row(f"start of `1 + 1`, warm pool, p50 ({label})", f"{value:.2f} ms",
            f"{base:.2f} ms (Monty checkout + feed_run, from a thread)", value / base)


async def per_call(calls: int) -> None:
    program = f"t = 0\nfor n in range({calls}):\n    t += (await get_order(order_id=n))['total']\nt"
    for label, fake, park_after in [("answered at once", at_once, 0.005),
                                    ("answered after 1 ms, within `park_after`", after_1ms, 0.005),
                                    ("answered after 1 ms, parked at each call", after_1ms, 0.0)]:
        async with CodeMode(max_workers=1, type_check=False, park_after=park_after) as code_mode:
            async def directly() -> None:
                for n in range(calls):
                    await fake("get_order", {"order_id": n})
            await code_mode.run(program, {"get_order": ORDER}, fake)
            direct = min(await timed(3, directly)) / calls * 1e6
            inside = min(await timed(3, lambda: code_mode.run(program, {"get_order": ORDER}, fake))) / calls * 1e6
            row(f"a tool call inside a program ({label})", f"{inside:.0f} µs",
                f"{direct:.1f} µs (awaiting the fake)", inside / direct)


async def gathered() -> None:
    gather = "import asyncio\nlen(await asyncio.gather(*[get_order(order_id=n) for n in range(16)]))"
    sequence = "len([await get_order(order_id=n) for n in range(16)])"
    async with CodeMode(max_workers=1, type_check=False) as code_mode:
        together = min(await timed(3, lambda: code_mode.run(gather, {"get_order": ORDER}, after_100ms)))
        apart = min(await timed(1, lambda: code_mode.run(sequence, {"get_order": ORDER}, after_100ms)))
    row("16 calls answering in 100 ms, gathered", f"{together * 1000:.0f} ms", f"{apart * 1000:.0f} ms (one after "
        "another)", together / apart)


async def parked_memory(programs: int) -> None:
    program = ("orders = [{'id': n, 'items': ['sku'] * 5} for n in range(20)]\n"
               "answer = await ask_user(question='Ship?')\n[answer, len(orders)]")

    async def park_all(code_mode: CodeMode, programs: int) -> tuple[list[ParkedProgram], tuple[int, int], int, int]:
        """Park `programs` programs on dialogs; (their records, RSS while parked, workers held, processes)."""
        answered = asyncio.Event()

        async def dialog(name: str, arguments: dict[str, Any]) -> Any:
            await answered.wait()
            return "yes"

        records: list[ParkedProgram] = []
        runs = [asyncio.create_task(code_mode.run(program, {"ask_user": None}, dialog, on_park=records.append))
                for _ in range(programs)]
        while len(records) < programs:
            await asyncio.sleep(0.01)
        gc.collect()
        await asyncio.sleep(0.5)
        parked = total_rss_kb(), code_mode.workers_held, len(workers())
        answered.set()
        await asyncio.gather(*runs)
        return records, *parked

    async with CodeMode(max_workers=4, warm_workers=4, type_check=False) as code_mode:
        # Warm: a worker's RSS grows once, from 6.5 to 15 MB, as it first runs and loads programs. A few programs
        # only, so that the host's memory for the 100 is not what the warm-up freed.
        await park_all(code_mode, 8)
        gc.collect()
        await asyncio.sleep(0.5)
        idle_host, idle_workers = total_rss_kb()
        records, (host, worker_rss), held, processes = await park_all(code_mode, programs)
    sizes = [len(record.snapshot) for record in records]
    over = (host - idle_host) + (worker_rss - idle_workers)
    row(f"{programs} programs parked on dialogs: RSS over idle", f"{over / 1024:.1f} MB ({over / programs:.0f} KB a "
        f"program; host +{(host - idle_host) / 1024:.1f} MB, workers +{(worker_rss - idle_workers) / 1024:.1f} MB)",
        f"{(idle_host + idle_workers) / 1024:.1f} MB idle (host and 4 warm workers)",
        (host + worker_rss) / (idle_host + idle_workers))
    row("   workers held / worker processes while parked", f"{held} / {processes}", "4 at most", None)
    row("   a parked snapshot", f"{statistics.mean(sizes) / 1024:.1f} KB (largest {max(sizes) / 1024:.1f} KB)", "",
        None)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="trivial programs started for the p50")
    parser.add_argument("--calls", type=int, default=200, help="tool calls in the per-call loop")
    parser.add_argument("--parked", type=int, default=100, help="programs parked for the memory row")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')}; nproc {os.cpu_count()}; Python {sys.version.split()[0]}\n")
    print("| what | measured | baseline (same run) | ratio |")
    print("|---|---|---|---|")
    await start(args.runs)
    await per_call(args.calls)
    await gathered()
    await parked_memory(args.parked)


if __name__ == "__main__":
    asyncio.run(main())
