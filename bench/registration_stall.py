"""How long the event loop stalls while a page registers or leaves, at 100 / 1,000 / 10,000 tools in the room;
what a full garbage collection costs with those tools; and how long a page's small registration waits
while another room registers large schemas.

Drives the bridge's Hub (the code the WebSocket endpoint calls) with a ticker task on the same loop
measuring the longest gap between its wake-ups; the baseline row is the same ticker on an idle loop.
The stall table's "gc ms" column is the longest garbage collection during the row (it stops every
thread, the loop's too); on the resident tools' rows, the CPU time of a full collection (the
quickest of 3) with them registered and the start-up heap frozen, as `serve` freezes it, and
"tracked" the objects it walks. Then, in each room: 5 pages of 200 tools leave at once; a page of
another process (shared mode) registers 1,000 tools and unregisters them, as this process mirrors
them (bridge.shared_mode._mirror's ToolMirror, given each change as published, from its JSON text, timed
until it is applied); and the semantic model arrives after the tools (a stand-in model that
answers at once, so the rows show the loop's own part: Catalog.use_embedder, then every tool
embedded by bridge.search.semantic.embed_pending, the stand-in running on the model's thread).
The second table times one-tool registrations in room "b", one after the other, for as long as
room "a" registers large schemas; its baseline is the same registrations with room "a" idle.
Prints both tables; the bounds are 20 ms for a stall and 50 ms for a registration's wait.

    python bench/registration_stall.py
    python bench/registration_stall.py --waits-only
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import longest_stall  # noqa: E402

from bridge.config import Settings  # noqa: E402
from bridge.core.catalog import check_definition  # noqa: E402
from bridge.core.hub import Hub  # noqa: E402
from bridge.core.messages import Hello, PageInfo, RegisterTools  # noqa: E402
from bridge.search.semantic import embed_pending  # noqa: E402
from bridge.shared_mode._mirror import ToolMirror  # noqa: E402

VERBS = ["get", "set", "list", "create", "delete", "export", "open", "search", "send", "update"]
NOUNS = ["invoice", "order", "customer", "ticket", "report", "playlist", "flight", "meeting", "file", "photo"]


def tools(prefix: str, n: int) -> list[dict]:
    return [{"name": f"{prefix}_{VERBS[i % 10]}_{NOUNS[i // 10 % 10]}_{i}",
             "description": f"{VERBS[i % 10].title()} the {NOUNS[i // 10 % 10]} number {i} of the {prefix} app.",
             "inputSchema": {"type": "object", "properties": {
                 # Every schema distinct, as on a real page: the bridge caches schema checks by content.
                 "id": {"type": "string", "description": f"which {NOUNS[i // 10 % 10]} (#{i} of {prefix})"},
                 "limit": {"type": "integer", "minimum": 1}}, "required": ["id"]}} for i in range(n)]


class StandInModel:
    """An embedding model that answers at once: what remains is the loop's side of embedding."""

    name = "stand-in"

    def embed_documents(self, texts):
        return np.full((len(texts), 384), 384 ** -0.5, dtype=np.float32)

    def embed_query(self, text):
        return np.full(384, 384 ** -0.5, dtype=np.float32)


def full_collection() -> tuple[float, int]:
    """(CPU seconds the quickest of 3 full collections took, objects the collector tracks). CPU time:
    on a busy machine a collection's wall time also counts the turns it waited for a core."""
    took = []
    for _ in range(3):
        started = time.thread_time()
        gc.collect()
        took.append(time.thread_time() - started)
    return min(took), len(gc.get_objects())


async def stall_table() -> None:
    gc.collect()
    gc.freeze()  # as `serve` does once started
    print(f"{'room size':>10} {'operation':<28} {'took ms':>9} {'longest stall ms':>17} {'vs idle':>8} "
          f"{'gc ms':>7} {'tracked':>8}")
    pauses = CollectorPauses()
    idle_took, idle, _ = await longest_stall(lambda: asyncio.sleep(0.2))
    print(f"{'-':>10} {'idle loop (baseline)':<28} {idle_took * 1e3:9.1f} {idle * 1e3:17.2f} {1:8.1f} "
          f"{pauses.longest * 1e3:7.2f}")
    for room_size in (100, 1_000, 10_000):
        # Every size as said: one page holds them all, and the room takes the newcomers too.
        settings = replace(Settings(), max_tools_per_page=max(room_size, 1_000), max_tools_per_room=room_size + 1_005)
        hub = Hub(settings.hub_config())
        resident, _ = hub.hello(Hello(type="agui.hello"))
        await hub.handle(resident, RegisterTools(type="agui.tools.register", tools=tools("resident", room_size)))
        collection, tracked = full_collection()
        print(f"{room_size:>10} {'(the resident tools)':<28} {'':>9} {'':>17} {'':>8} {collection * 1e3:7.2f} "
              f"{tracked:8}")
        for label, count in (("a page registers 5 tools", 5), ("a page registers 1,000 tools", 1_000)):
            page, _ = hub.hello(Hello(type="agui.hello"))
            message = RegisterTools(type="agui.tools.register", tools=tools(f"p{count}r{room_size}", count))

            async def register():
                await hub.handle(page, message)
                await hub.room("default").search("export invoice", 5)
                hub.room("default").listing()

            pauses.reset()
            took, stall, _ = await longest_stall(register)
            print(f"{room_size:>10} {label:<28} {took * 1e3:9.1f} {stall * 1e3:17.2f} {stall / idle:8.1f} "
                  f"{pauses.longest * 1e3:7.2f}")

            async def leave():
                hub.drop(page)
                hub.room("default").listing()
                while hub.room("default").index.sweep(0):  # its index entries, freed a slice a turn
                    await asyncio.sleep(0)

            pauses.reset()
            took, stall, _ = await longest_stall(leave)
            print(f"{room_size:>10} {'  ... and leaves':<28} {took * 1e3:9.1f} {stall * 1e3:17.2f} {stall / idle:8.1f} "
                  f"{pauses.longest * 1e3:7.2f}")

        def row(label: str, took: float, stall: float) -> None:
            print(f"{room_size:>10} {label:<28} {took * 1e3:9.1f} {stall * 1e3:17.2f} {stall / idle:8.1f} "
                  f"{pauses.longest * 1e3:7.2f}")

        room = hub.room("default")
        leaving = []
        for n in range(5):
            page, _ = hub.hello(Hello(type="agui.hello"))
            await hub.handle(page, RegisterTools(type="agui.tools.register", tools=tools(f"g{n}r{room_size}", 200)))
            leaving.append(page)

        async def leave_together():
            for page in leaving:
                hub.drop(page)
            room.listing()
            while room.index.sweep(0):
                await asyncio.sleep(0)

        pauses.reset()
        row("5 pages x 200 leave at once", *(await longest_stall(leave_together))[:2])

        mirror = ToolMirror(hub.catalog, hub.semantic.embed_later)
        elsewhere = hub.pages.mirror(f"elsewhere-{room_size}", "default",
                                     PageInfo(title="Another process's page").model_dump_json(), "elsewhere", True)
        assert elsewhere is not None
        definitions = [check_definition(raw).model_dump(mode="json", by_alias=True, exclude_none=True)
                       for raw in tools(f"m{room_size}", 1_000)]
        registered = json.dumps({"tools": [{"definition": d, "key": d["name"]} for d in definitions], "removed": []})
        unregistered = json.dumps({"tools": [], "removed": [d["name"] for d in definitions]})

        async def mirror_changes(published: str) -> None:
            change = json.loads(published)  # as the link's subscriber reads it
            mirror.change(elsewhere, change["tools"], change["removed"], full=False)
            await mirror.settled()
            room.listing()

        async def mirror_registers():
            await mirror_changes(registered)

        async def mirror_unregisters():
            await mirror_changes(unregistered)
            while room.index.sweep(0):
                await asyncio.sleep(0)

        pauses.reset()
        row("mirror: 1,000 registered", *(await longest_stall(mirror_registers))[:2])
        pauses.reset()
        row("mirror: ... unregistered", *(await longest_stall(mirror_unregisters))[:2])

        async def model_arrives():
            hub.catalog.use_embedder(StandInModel())
            await embed_pending(room.index)
            await room.search("export invoice", 5)

        pauses.reset()
        row("model arrives, all embedded", *(await longest_stall(model_arrives))[:2])


def wide_schema(tag: str) -> dict:
    """A valid schema near the 64 KiB limit: 1,200 described properties (distinct for each `tag`)."""
    return {"type": "object", "properties": {f"p{i}": {"type": "string", "description": f"{tag} field"}
                                             for i in range(1200)}}


def costliest_schema(tag: str) -> dict:
    """Under 64 KiB, the costliest to check found: 20,000 empty subschemas (refused: checking {}
    against it passes the work budget)."""
    return {"type": "object", "description": tag, "allOf": [{}] * 20_000}


async def small_registration_waits(hub: Hub, room_a: list[dict] | None) -> list[float]:
    """Seconds each one-tool registration in room "b" took, registered one after the other for as
    long as a page of room "a" registers `room_a` (or 30 of them when `room_a` is None)."""
    if room_a is not None:
        page_a, _ = hub.hello(Hello(type="agui.hello", room="a"))
        registering = asyncio.create_task(hub.handle(page_a, RegisterTools(type="agui.tools.register",
                                                                           tools=room_a)))
        await asyncio.sleep(0.01)  # its first definition is being checked
    waits: list[float] = []
    while (len(waits) < 30) if room_a is None else not registering.done():
        page_b, _ = hub.hello(Hello(type="agui.hello", room="b"))
        message = RegisterTools(type="agui.tools.register", tools=tools(f"b{len(waits)}", 1))
        started = time.perf_counter()
        replies = await hub.handle(page_b, message)
        waits.append(time.perf_counter() - started)
        assert replies[0]["tools"], replies
        hub.drop(page_b)
        await asyncio.sleep(0.002)
    if room_a is not None:
        replies = await registering
        assert len(replies) == 1 or "work budget" in replies[1]["message"], replies[:2]
        hub.drop(page_a)
    return waits


class CollectorPauses:
    """The longest pause of Python's garbage collector (all threads stop for it) since `reset`, and
    the CPU time of that collection (less than the pause when the process waited for a core)."""

    def __init__(self) -> None:
        self.longest = self.longest_cpu = 0.0
        self._started = self._started_cpu = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started, self._started_cpu = time.perf_counter(), time.thread_time()
        elif time.perf_counter() - self._started > self.longest:
            self.longest = time.perf_counter() - self._started
            self.longest_cpu = time.thread_time() - self._started_cpu

    def reset(self) -> None:
        self.longest = self.longest_cpu = 0.0


async def wait_table(repeat: int) -> None:
    print('A one-tool registration in room "b" while a page of room "a" registers large schemas')
    print(f"{'room a registers':<36} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'p50/idle':>9} "
          f"{'max/idle':>9} {'gc pause ms':>12}")
    pauses = CollectorPauses()
    hub = Hub(Settings().hub_config())
    rows: list[tuple[str, Callable[[int], list[dict]] | None]] = [
        ("nothing (idle baseline)", None),
        ("1 schema of 64 KiB (valid)", lambda run: [{"name": "wide", "inputSchema": wide_schema(f"r{run}")}]),
        ("4 schemas of 64 KiB (valid)", lambda run: [{"name": f"wide{i}", "inputSchema": wide_schema(f"r{run}.{i}")}
                                                     for i in range(4)]),
        ("1 costliest schema (refused)", lambda run: [{"name": "costly",
                                                       "inputSchema": costliest_schema(f"r{run}")}]),
    ]
    idle = [0.0, 0.0]
    for label, room_a in rows:
        waits = []
        pauses.reset()
        for run in range(repeat):
            waits += await small_registration_waits(hub, None if room_a is None else room_a(run))
        waits.sort()
        p50, p95, most = statistics.median(waits), waits[int(0.95 * (len(waits) - 1))], waits[-1]
        if room_a is None:
            idle = [p50, most]
        print(f"{label:<36} {len(waits):>4} {p50 * 1e3:8.2f} {p95 * 1e3:8.2f} {most * 1e3:8.2f} "
              f"{p50 / idle[0]:9.1f} {most / idle[1]:9.1f} {pauses.longest * 1e3:12.1f}")
    print("gc pause: the longest garbage collection meanwhile (it stops every thread, the loop's too)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--waits-only", action="store_true", help="only the table of registrations' waits")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each row of the waits' table")
    args = parser.parse_args()
    if not args.waits_only:
        await stall_table()
        print()
    await wait_table(args.repeat)


if __name__ == "__main__":
    asyncio.run(main())
