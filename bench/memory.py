"""Resident memory of the bridge per idle page and per call in flight.

Reads VmRSS of the server process (/proc/<pid>/status) before and after, each measurement in a
fresh server process (freed memory is not given back to the system, so a second measurement in
the same process would reuse the first one's and read low):

- idle pages: N pages connected (WebSocket + event stream, one tool each, no calls), against the
  bridge with no page: pages that offer permessage-deflate (as browsers do), pages that do not,
  and pages with no tool. Target: <= 50 KB a page.
- calls in flight: N calls waiting for pages' answers (100 a page, the bridge's default cap), per
  protocol era, against the floor (an MCP server built with the same SDK, `bench/_common.py`)
  with N calls waiting in its own tool. Target: a bridge call <= a floor call.

    python bench/memory.py                    # 1,000 pages, 1,000 calls (~1 minute)
    python bench/memory.py --pages 200 --calls 200

Needs only the project's dependencies; Linux (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import _common as c

SETTLE = 1.0  # seconds for the server to finish what the last connection started
ARGS = argparse.Namespace(bridge_arg=[], bridge_src=None)


async def settled_rss(pid: int) -> int:
    await asyncio.sleep(SETTLE)
    return c.rss_kb(pid)


async def idle_pages(n: int, deflate: bool, tools: list[dict]) -> tuple[int, int, float]:
    """(RSS KiB before, after n pages, seconds to connect them)."""
    bridge = await c.start_bridge(*ARGS.bridge_arg, src=ARGS.bridge_src)
    pages = await c.Pages.start(bridge)
    try:
        # Warm up: the code paths a page uses, loaded and run once, then gone.
        await pages.do("open", n=20, tools=tools, deflate=deflate)
        await pages.do("close", keep=0)
        before = await settled_rss(bridge.pid)
        opened = await pages.do("open", n=n, tools=tools, deflate=deflate)
        after = await settled_rss(bridge.pid)
        return before, after, opened["seconds"]
    finally:
        await pages.stop()
        bridge.stop()


async def wait_until(predicate, calls: list[asyncio.Task], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        failed = next((t for t in calls if t.done() and t.exception() is not None), None)
        if failed is not None:
            raise RuntimeError(f"a call failed: {failed.exception()}")
        if time.monotonic() > deadline:
            raise RuntimeError("calls did not arrive in time")
        await asyncio.sleep(0.1)


async def pending_calls(side: str, era: str, n: int, per_page: int) -> tuple[int, int]:
    """(RSS KiB of the server with no call waiting, with n calls waiting).

    The bridge's calls are spread over pages, `per_page` each (the bridge's default cap is 100
    calls waiting per page and 1,000 per room).
    """
    server = await (c.start_bridge(*ARGS.bridge_arg, src=ARGS.bridge_src) if side == "bridge" else c.start_floor())
    pages = await c.Pages.start(server) if side == "bridge" else None
    try:
        names = ["wait"]
        if pages is not None:
            opened = await pages.do("open", n=-(-n // per_page), tools=[c.WAIT_TOOL])
            names = [page_names[0] for page_names in opened["names"]]
            await pages.do("hold", on=True)
        async with c.mcp_client(server.mcp_url, era) as client, c.mcp_client(server.mcp_url, era) as control:
            await client.list_tools()  # as an agent does; the SDK client lists again for a tool it has not seen

            async def waiting() -> int:
                if pages is not None:
                    return (await pages.do("held"))["held"]
                return int(await c.call_text(control, "waiting", {}))

            async def release() -> None:
                if pages is not None:
                    await pages.do("release")
                else:
                    await c.call_text(control, "release", {})

            async def round_of(k: int) -> list[asyncio.Task]:
                calls = [asyncio.create_task(c.call_text(client, names[i % len(names)], c.ARGUMENTS))
                         for i in range(k)]
                await wait_until(lambda: _at_least(waiting, k), calls)
                return calls

            # Warm up with a few waiting calls, so what is measured is per call, not first use.
            calls = await round_of(min(50, n))
            await release()
            await asyncio.gather(*calls)
            before = await settled_rss(server.pid)
            calls = await round_of(n)
            during = await settled_rss(server.pid)
            await release()
            await asyncio.gather(*calls)
            return before, during
    finally:
        if pages is not None:
            await pages.stop()
        server.stop()


async def _at_least(count, k: int) -> bool:
    return await count() >= k


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--calls-per-page", type=int, default=100, help="the bridge's default cap (default 100)")
    parser.add_argument("--eras", default=",".join(c.ERAS))
    c.add_bridge_options(parser)
    args = parser.parse_args()
    ARGS.bridge_arg, ARGS.bridge_src = args.bridge_arg, args.bridge_src
    c.raise_fd_limit()
    print(c.machine())
    print()

    rows = []
    for deflate, tools, label in ((True, [c.ECHO_TOOL], "1 tool, deflate offered"),
                                  (False, [c.ECHO_TOOL], "1 tool, deflate not offered"),
                                  (True, [], "no tool, deflate offered")):
        before, after, took = await idle_pages(args.pages, deflate, tools)
        per = (after - before) / args.pages
        rows.append([f"{args.pages} idle pages, {label}", f"{before / 1024:.1f}", f"{after / 1024:.1f}", f"{per:.1f}",
                     "<= 50", f"{took:.1f} s"])
    print(c.table(["bridge, pages connected", "RSS before MiB", "after MiB", "KiB / page", "target", "connecting"],
                  rows))
    print()

    rows = []
    for era in args.eras.split(","):
        per = {}
        for side in ("bridge", "floor"):
            before, during = await pending_calls(side, era, args.calls, args.calls_per_page)
            per[side] = (during - before) / args.calls
            rows.append([f"{c.ERA_LABEL[era]} era, {side}", f"{before / 1024:.1f}", f"{during / 1024:.1f}",
                         f"{per[side]:.1f}", ""])
        rows[-2][-1] = f"{per['bridge'] / per['floor']:.2f}" if per["floor"] > 0 else "-"
    print(c.table([f"{args.calls} calls in flight", "RSS before MiB", "during MiB", "KiB / call", "bridge/floor"],
                  rows))


if __name__ == "__main__":
    asyncio.run(main())
