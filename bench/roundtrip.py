"""Round trip of one tools/call: MCP SDK client -> bridge -> page -> bridge -> client, against the floor.

The floor is an MCP server built with the same SDK (low-level `Server`, `StreamableHTTPSessionManager`
under uvicorn) whose tool answers in-process: what any MCP tool costs before the bridge adds the page.
Bridge (`agui-mcp-bridge serve`), floor and page each run in their own process; the MCP clients run
here. Both protocol eras: the handshake era (initialize, Mcp-Session-Id) and 2026-07-28 (sessionless).

Runs alternate bridge and floor in pairs (bridge first in even pairs, floor first in odd ones), so
machine noise lands on both. Reports p50/p99 latency at concurrency 1, calls/s at 8 and 32, the
ratios (targets: p50 <= 1.10x floor, calls/s >= 0.95x floor at 32), and the CPU each process spent
per call (read from /proc, less sensitive to noise than wall time).

    python bench/roundtrip.py                 # ~2-3 minutes
    python bench/roundtrip.py --quick         # ~30 s
    python bench/roundtrip.py --bridge-arg=--log-level=warning    # any flag of `agui-mcp-bridge serve`
    python bench/roundtrip.py --bridge-src /tmp/variant           # a scratch copy of the bridge package
    python bench/roundtrip.py --profile /tmp/rt   # bridge and floor + hop under py-spy (pip install py-spy)
    python bench/roundtrip.py --compare /tmp/a,/tmp/b --pairs 8 --calls 300    # CPU A/B of bridge copies

Needs only the project's dependencies; `--profile` needs py-spy.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import _common as c

LOADS = (1, 8, 32)


class Side:
    """One server as the benchmark drives it: its client and what its calls cost."""

    def __init__(self, name: str, server: c.Server, client, pids: list[int]) -> None:
        self.name, self.server, self.client, self.pids = name, server, client, pids
        self.latencies: dict[int, list[float]] = {n: [] for n in LOADS}
        self.walls: dict[int, list[float]] = {n: [] for n in LOADS}
        self.calls: dict[int, int] = dict.fromkeys(LOADS, 0)
        self.cpu: dict[int, list[float]] = {n: [0.0] * len(pids) for n in LOADS}  # server-side processes
        self.client_cpu: dict[int, float] = dict.fromkeys(LOADS, 0.0)

    async def batch(self, concurrency: int, calls: int) -> None:
        before = [c.cpu_seconds(p) for p in self.pids]
        mine = time.process_time()
        latencies, wall = await c.timed_calls(self.client, calls, concurrency)
        self.client_cpu[concurrency] += time.process_time() - mine
        for i, p in enumerate(self.pids):
            self.cpu[concurrency][i] += c.cpu_seconds(p) - before[i]
        self.latencies[concurrency] += latencies
        self.walls[concurrency].append(wall)
        self.calls[concurrency] += calls


async def run_era(era: str, bridge: c.Server, floor: c.Server, hop: c.Server, pages: c.Pages, hop_pages: c.Pages,
                  args) -> tuple[Side, Side, Side]:
    async with (c.mcp_client(bridge.mcp_url, era) as bc, c.mcp_client(floor.mcp_url, era) as fc,
                c.mcp_client(hop.mcp_url, era) as hc):
        b = Side("bridge", bridge, bc, [bridge.pid, pages.pid])
        f = Side("floor", floor, fc, [floor.pid])
        h = Side("hop", hop, hc, [hop.pid, hop_pages.pid])
        sides = [b, f, h]
        for side in sides:  # warm up: imports, caches, connection pools
            await c.timed_calls(side.client, 50, 1)
            await c.timed_calls(side.client, 100, 32)
            side.__init__(side.name, side.server, side.client, side.pids)
        for load in LOADS:
            calls = args.calls if load == 1 else args.calls * 2
            for pair in range(args.pairs):  # each side goes first, second and last in turn
                for side in sides[pair % 3:] + sides[:pair % 3]:
                    await side.batch(load, calls)
        return b, f, h


def hop_report(era: str, b: Side, f: Side, h: Side) -> str:
    """The page hop's own cost (the floor relaying to a page, against the floor), and the bridge
    against that: what is left is the bridge's own work."""
    rows = []
    for load in LOADS:
        if load == 1:
            p50 = {s.name: c.percentile(s.latencies[1], .5) for s in (b, f, h)}
            rows.append(["c=1   p50", f"{p50['hop'] / p50['floor']:.2f}", f"{p50['bridge'] / p50['hop']:.2f}"])
        speed = {s.name: s.calls[load] / sum(s.walls[load]) for s in (b, f, h)}
        rows.append([f"c={load:<3} calls/s", f"{speed['hop'] / speed['floor']:.2f}",
                     f"{speed['bridge'] / speed['hop']:.2f}"])
    for load in LOADS:
        server = {s.name: s.cpu[load][0] / s.calls[load] * 1e6 for s in (b, f, h)}
        rows.append([f"c={load:<3} server CPU", f"{server['hop'] / server['floor']:.2f}",
                     f"{server['bridge'] / server['hop']:.2f}"])
    return c.table([f"{c.ERA_LABEL[era]} era", "floor+hop/floor", "bridge/floor+hop"], rows)


def report(era: str, b: Side, f: Side) -> str:
    ms = 1e3
    p50b, p50f = c.percentile(b.latencies[1], .5) * ms, c.percentile(f.latencies[1], .5) * ms
    p99b, p99f = c.percentile(b.latencies[1], .99) * ms, c.percentile(f.latencies[1], .99) * ms
    rows = [["c=1   p50 ms", f"{p50b:.2f}", f"{p50f:.2f}", f"{p50b / p50f:.2f}", "<= 1.10"],
            ["c=1   p99 ms", f"{p99b:.2f}", f"{p99f:.2f}", f"{p99b / p99f:.2f}", ""]]
    for load in LOADS[1:]:
        # calls/s over all of a side's batches; the spread is that of the pairs' ratios (equal batches).
        sb, sf = b.calls[load] / sum(b.walls[load]), f.calls[load] / sum(f.walls[load])
        pair_ratios = sorted(y / x for x, y in zip(b.walls[load], f.walls[load]))
        rows.append([f"c={load:<3} calls/s", f"{sb:.0f}", f"{sf:.0f}",
                     f"{sb / sf:.2f} ({pair_ratios[0]:.2f}-{pair_ratios[-1]:.2f})",
                     ">= 0.95" if load == 32 else ""])
    for load in LOADS:
        bridge_cpu, page_cpu = (x / b.calls[load] * 1e6 for x in b.cpu[load])
        floor_cpu = f.cpu[load][0] / f.calls[load] * 1e6
        rows.append([f"c={load:<3} server CPU us/call", f"{bridge_cpu:.0f} (+{page_cpu:.0f} page)", f"{floor_cpu:.0f}",
                     f"{bridge_cpu / floor_cpu:.2f}", ""])
        rows.append([f"c={load:<3} client CPU us/call", f"{b.client_cpu[load] / b.calls[load] * 1e6:.0f}",
                     f"{f.client_cpu[load] / f.calls[load] * 1e6:.0f}", "", ""])
    head = [f"{c.ERA_LABEL[era]} era", "bridge", "floor", "bridge/floor", "target"]
    return c.table(head, rows)


# --- profile: the bridge under py-spy --------------------------------------------------------

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")


def short(frame: str) -> str:
    m = FRAME.match(frame)
    if not m:
        return frame
    path = m["file"]
    for marker in ("site-packages/", "lib/python3.11/", "/work/main/", str(c.ROOT) + "/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{m['func']} ({path})"


ROOT_FRAMES = ("<module>", "main (", "run (asyncio", "Runner.run", "BaseEventLoop.run", "BaseEventLoop._run_once",
               "Handle._run", "TaskHandle._run_coro", "serve (", "Server.serve", "_run (", "floor_main", "Server.run (",
               "run (uvicorn", "_run_code", "_run_module_as_main")


START_UP = ("_find_and_load", "_freeze_startup_heap (", "_parse (")


def per_call(raw: Path, cpu_us_per_call: float) -> tuple[Counter, Counter]:
    """py-spy's raw (collapsed) stacks -> (own, inclusive) microseconds per call, by function.

    A --gil sample is wall time holding the GIL, which on a busy machine includes time the process
    was preempted: samples are only used as shares, scaled to the process's user CPU per call (/proc).
    Start-up (imports, parsing the command line, freezing what start-up built) is left out.
    """
    own, inclusive, samples = Counter(), Counter(), 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or any(step in stack for step in START_UP):
            continue
        n = int(count)
        frames = [f for f in (short(f) for f in stack.split(";")) if not f.startswith(("process ", "thread "))]
        samples += n
        own[frames[-1]] += n
        for f in set(frames):
            if not f.startswith(ROOT_FRAMES):
                inclusive[f] += n
    scale = cpu_us_per_call / max(samples, 1)
    return Counter({f: n * scale for f, n in own.items()}), Counter({f: n * scale for f, n in inclusive.items()})


def summarize(bridge_raw: Path, hop_raw: Path, bridge_cpu: float, hop_cpu: float, top: int) -> str:
    """`*_cpu`: user CPU microseconds per call of each process while profiled."""
    b_own, b_incl = per_call(bridge_raw, bridge_cpu)
    h_own, h_incl = per_call(hop_raw, hop_cpu)
    only_bridge = Counter({f: n for f, n in b_incl.items() if f not in h_incl})
    return "\n".join([
        f"User CPU per call while profiled: bridge {bridge_cpu:.0f} us, floor + hop {hop_cpu:.0f} us "
        "(py-spy --gil samples, scaled to it)", "",
        c.table(["bridge own us/call", "floor+hop", "function (file)"],
                [[f"{n:.1f}", f"{h_own.get(f, 0.0):.1f}", f] for f, n in b_own.most_common(top)], left=0), "",
        "Inclusive, frames the floor + hop never runs (the bridge's own work; nested frames overlap):", "",
        c.table(["bridge incl us/call", "function (file)"],
                [[f"{n:.1f}", f] for f, n in only_bridge.most_common(top * 2)], left=0)])


async def profile(args) -> None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not os.path.exists(spy):
        raise SystemExit("--profile needs py-spy: pip install py-spy")
    out = {name: Path(f"{args.profile}.{name}.txt") for name in ("bridge", "hop")}

    def prefix(name: str) -> list[str]:
        # --gil: only samples holding the GIL, i.e. running Python. Without it a thread waiting in a
        # system call (epoll, or send() while the woken page process has the core) counts as busy.
        return [spy, "record", "--format", "raw", "--rate", str(args.rate), "--gil", "-o", str(out[name]), "--"]

    # Against the floor + page hop, the baseline of the targets: what is left is the bridge's own work.
    bridge = await c.start_bridge(*args.bridge_arg, prefix=prefix("bridge"), src=args.bridge_src)
    hop = await c.start_floor(prefix=prefix("hop"), page_hop=True)
    pages, hop_pages = await c.Pages.start(bridge), await c.Pages.start(hop)
    calls, user = 0, {"bridge": 0.0, "hop": 0.0}
    try:
        for each in (pages, hop_pages):
            await each.do("open", n=1, tools=[c.ECHO_TOOL])
        for era in args.eras:
            for load in (1, 32):
                for server in (bridge, hop):
                    async with c.mcp_client(server.mcp_url, era) as client:
                        before = c.user_seconds(server.pid)
                        _, wall = await c.timed_calls(client, args.calls * 5, load)
                        user[server.name] += c.user_seconds(server.pid) - before
                    print(f"profiled {server.name}: {args.calls * 5} calls, {c.ERA_LABEL[era]} era, concurrency "
                          f"{load}: {args.calls * 5 / wall:.0f} calls/s under the profiler")
                calls += args.calls * 5
    finally:
        await pages.stop()
        await hop_pages.stop()
        bridge.stop(wait=60)
        hop.stop(wait=60)
    print()
    print(summarize(out["bridge"], out["hop"], user["bridge"] / calls * 1e6, user["hop"] / calls * 1e6, args.top))


async def compare(args) -> None:
    """Bridge variants (directories holding a `bridge` package) side by side, all started at once,
    batches in rotating order: server CPU per call at c=8 and p50 at c=1, against the first."""
    from contextlib import AsyncExitStack

    variants = [Path(v) for v in args.compare.split(",")]
    cpu = {(v, e): [] for v in variants for e in args.eras}
    lat = {(v, e): [] for v in variants for e in args.eras}
    running: dict[Path, tuple[c.Server, c.Pages]] = {}
    try:
        async with AsyncExitStack() as stack:  # the clients close before the servers stop
            for v in variants:
                bridge = await c.start_bridge(*args.bridge_arg, src=v)
                pages = await c.Pages.start(bridge)
                running[v] = (bridge, pages)
                await pages.do("open", n=1, tools=[c.ECHO_TOOL])
            clients = {(v, e): await stack.enter_async_context(c.mcp_client(running[v][0].mcp_url, e))
                       for v in variants for e in args.eras}
            for client in clients.values():
                await c.timed_calls(client, 200, 8)
            for r in range(args.pairs):
                for e in args.eras:
                    for v in variants[r % len(variants):] + variants[:r % len(variants)]:
                        pid = running[v][0].pid
                        before = c.cpu_seconds(pid)
                        await c.timed_calls(clients[(v, e)], args.calls * 5, 8)
                        cpu[(v, e)].append((c.cpu_seconds(pid) - before) / (args.calls * 5) * 1e6)
                        lat[(v, e)] += (await c.timed_calls(clients[(v, e)], args.calls, 1))[0]
    finally:
        for bridge, pages in running.values():
            await pages.stop()
            bridge.stop()
    rows = []
    for e in args.eras:
        first = c.median(cpu[(variants[0], e)])
        for v in variants:
            m = c.median(cpu[(v, e)])
            spread = f"{min(cpu[(v, e)]):.0f}-{max(cpu[(v, e)]):.0f}"
            rows.append([c.ERA_LABEL[e], str(v), f"{m:.0f}", spread, f"{m / first:.2f}",
                         f"{c.percentile(lat[(v, e)], .5) * 1e3:.2f}"])
    print(f"{args.pairs} rounds of {args.calls * 5} calls at c=8 (then {args.calls} at c=1) per variant")
    print(c.table(["era", "bridge package from", "server CPU us/call c=8", "rounds", "vs first", "c=1 p50 ms"],
                  rows, left=2))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 pairs of short batches")
    parser.add_argument("--pairs", type=int, default=6, help="bridge/floor pairs per load (default 6)")
    parser.add_argument("--calls", type=int, default=200,
                        help="calls per batch at concurrency 1 (twice that at 8 and 32; default 200)")
    parser.add_argument("--eras", default=",".join(c.ERAS), help="legacy and/or 2026-07-28")
    c.add_bridge_options(parser)
    parser.add_argument("--profile", metavar="PREFIX",
                        help="instead, profile bridge and floor + hop with py-spy (raw stacks in PREFIX.*.txt)")
    parser.add_argument("--compare", metavar="DIR,DIR,...",
                        help="instead, compare bridge packages from these directories (the first is the reference)")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second (--profile)")
    parser.add_argument("--top", type=int, default=15, help="profile entries shown (--profile)")
    args = parser.parse_args()
    args.eras = args.eras.split(",")
    if args.quick:
        args.pairs, args.calls = 2, 100
    c.raise_fd_limit()
    print(c.machine())
    if args.profile:
        await profile(args)
        return
    if args.compare:
        await compare(args)
        return
    bridge = await c.start_bridge(*args.bridge_arg, src=args.bridge_src)
    floor = await c.start_floor()
    hop = await c.start_floor(page_hop=True)
    pages, hop_pages = await c.Pages.start(bridge), await c.Pages.start(hop)
    try:
        await pages.do("open", n=1, tools=[c.ECHO_TOOL])
        await hop_pages.do("open", n=1, tools=[c.ECHO_TOOL])
        print(f"bridge: agui-mcp-bridge serve {' '.join(args.bridge_arg)}".rstrip()
              + (f" (from {args.bridge_src})" if args.bridge_src else "")
              + f"; {args.pairs} interleaved rounds per load, {args.calls} calls per batch at c=1, "
              f"{args.calls * 2} at c=8 and c=32")
        for era in args.eras:
            b, f, h = await run_era(era, bridge, floor, hop, pages, hop_pages, args)
            print()
            print(report(era, b, f))
            print()
            print(hop_report(era, b, f, h))
    finally:
        await pages.stop()
        await hop_pages.stop()
        bridge.stop()
        floor.stop()
        hop.stop()


if __name__ == "__main__":
    asyncio.run(main())
