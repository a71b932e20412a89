"""Does a round trip cost more when the room is big? p50 with 10 / 1,000 / 10,000 tools in the room
and 1 / 100 / 1,000 pages connected.

One page answers `echo` at once and also holds the room's other tools (distinct names and
schemas, registered 1,000 at a time); the other pages are connected (WebSocket + event stream)
with no tool and no call. The bridge runs with `--max-tools-per-page 10000` so one page can hold
them all. In every cell the floor (an MCP server built with the same SDK, its tool answered
in-process; see `bench/_common.py`) is measured in alternation with the bridge, so the
"vs first cell" column, bridge/floor over the same ratio in the first cell, cancels machine noise.
The bridge's CPU per call (/proc) is the steadier sign of growth.

    python bench/scale.py                 # ~3-4 minutes (registering 10,000 tools is ~10-20 s)
    python bench/scale.py --quick
    python bench/scale.py --tools 10,1000 --pages 1,100 --eras legacy

Needs only the project's dependencies; Linux (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from contextlib import AsyncExitStack

import _common as c

REGISTER_BATCH = 1000


async def cell(clients: dict, bridge: c.Server, pages: c.Pages, args) -> dict:
    """p50 of both sides (interleaved pairs) and the bridge's CPU per call, per era."""
    out = {}
    for era, (bc, fc) in clients.items():
        for client in (bc, fc):  # a listing changed since the last cell: the client lists again, once
            await c.timed_calls(client, 20, 1)
        lat = {"bridge": [], "floor": []}
        cpu, calls = 0.0, 0
        for pair in range(args.pairs):
            for side in (("bridge", "floor") if pair % 2 == 0 else ("floor", "bridge")):
                if side == "bridge":
                    before = c.cpu_seconds(bridge.pid)
                    got, _ = await c.timed_calls(bc, args.calls, 1)
                    cpu += c.cpu_seconds(bridge.pid) - before
                    calls += args.calls
                else:
                    got, _ = await c.timed_calls(fc, args.calls, 1)
                lat[side] += got
        out[era] = (c.percentile(lat["bridge"], .5) * 1e3, c.percentile(lat["floor"], .5) * 1e3, cpu / calls * 1e6)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", default="10,1000,10000", help="tools in the room, ascending")
    parser.add_argument("--pages", default="1,100,1000", help="pages connected, ascending")
    parser.add_argument("--eras", default=",".join(c.ERAS))
    parser.add_argument("--pairs", type=int, default=3, help="bridge/floor pairs per cell (default 3)")
    parser.add_argument("--calls", type=int, default=100, help="calls per batch (default 100)")
    parser.add_argument("--quick", action="store_true", help="1 pair of 60 calls per cell")
    c.add_bridge_options(parser)
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.calls = 1, 60
    tool_levels = [int(x) for x in args.tools.split(",")]
    page_levels = [int(x) for x in args.pages.split(",")]
    c.raise_fd_limit()
    print(c.machine())

    bridge = await c.start_bridge("--max-tools-per-page", str(max(tool_levels)), *args.bridge_arg, src=args.bridge_src)
    floor = await c.start_floor()
    pages = await c.Pages.start(bridge)
    rows, first = [], {}
    try:
        async with AsyncExitStack() as stack:
            await pages.do("open", n=1, tools=[c.ECHO_TOOL])
            clients = {era: (await stack.enter_async_context(c.mcp_client(bridge.mcp_url, era)),
                             await stack.enter_async_context(c.mcp_client(floor.mcp_url, era)))
                       for era in args.eras.split(",")}
            await grid(clients, bridge, pages, tool_levels, page_levels, args, rows, first)
    finally:
        await pages.stop()
        bridge.stop()
        floor.stop()
    print()
    print(c.table(["room", "era", "bridge p50 ms", "floor p50 ms", "bridge/floor", "vs first cell",
                   "bridge CPU us/call", "registering", "connecting"], rows, left=2))


async def grid(clients, bridge, pages, tool_levels, page_levels, args, rows, first) -> None:
    """Tools outer (they are only added), pages inner (opened, then closed before the next tool level)."""
    in_room = 1
    for tools in tool_levels:
        started = time.perf_counter()
        while in_room < tools:
            batch = min(REGISTER_BATCH, tools - in_room)
            got = await pages.do("register", page=0, tools=c.filler_tools("filler", in_room, batch))
            if got["registered"] != batch:
                raise RuntimeError(f"the bridge took {got['registered']} of {batch} tools (a limit?)")
            in_room += batch
        took = time.perf_counter() - started
        for n_pages in page_levels:
            opened = await pages.do("open", n=n_pages - (await pages.do("stats"))["pages"], tools=[])
            result = await cell(clients, bridge, pages, args)
            for era, (pb, pf, cpu) in result.items():
                first.setdefault(era, pb / pf)
                rows.append([f"{tools:>6} tools, {n_pages:>5} pages", c.ERA_LABEL[era], f"{pb:.2f}", f"{pf:.2f}",
                             f"{pb / pf:.2f}", f"{pb / pf / first[era]:.2f}", f"{cpu:.0f}",
                             f"{took:.1f} s" if n_pages == page_levels[0] else "",
                             f"{opened['seconds']:.1f} s" if n_pages > 1 else ""])
            print(f"  {rows[-1][0]}: measured", flush=True)
        await pages.do("close", keep=1)


if __name__ == "__main__":
    asyncio.run(main())
