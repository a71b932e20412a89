"""The tools of pages other processes hold, mirrored into this process's catalog (`ToolMirror`), in
the order their processes changed them (`OrderedWork`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bridge.core.catalog import Catalog
from bridge.core.hub import CATALOG_SLICE
from bridge.core.messages import ToolDefinition
from bridge.core.sessions import PageSession
from bridge.search import ToolIndex

log = logging.getLogger(__name__)


class OrderedWork:
    """Work started under a key (a page), each piece once the pieces started earlier under that key
    have ended; a piece started `after_all` waits for every piece pending then, whatever its key.
    `spawn(work, what)` runs a piece as a task."""

    def __init__(self, spawn: Callable[[Awaitable[Any], str], asyncio.Task[None]]) -> None:
        self._spawn = spawn
        self._latest: dict[str, asyncio.Task[None]] = {}  # per key, while it waits or runs

    def add(self, key: str, work: Callable[[], Awaitable[Any]], what: str, *, after_all: bool = False) -> None:
        earlier = list(self._latest.values()) if after_all else [t for t in (self._latest.get(key),) if t]

        async def in_order() -> None:
            if earlier:
                await asyncio.wait(earlier)
            await work()

        task = self._latest[key] = self._spawn(in_order(), what)
        task.add_done_callback(lambda done: self._latest.pop(key) if self._latest.get(key) is done else None)

    async def settled(self) -> None:
        """Until every piece started so far has ended (each key's latest ends after its earlier ones)."""
        if self._latest:
            await asyncio.wait(list(self._latest.values()))


class ToolMirror:
    """The tools of pages other processes hold, changed as their processes say (the link hands it
    what it hears; it does no I/O). A page's changes apply in the order heard; the tools of each are
    checked and added a slice at a time (`CATALOG_SLICE`) with a turn of the loop between, as the
    page's own process added them: in one step, a page bringing many tools held the loop far longer
    than a turn should take (bench/README.md). A page dropped meanwhile (it left, or its grace
    period ran out) took with it what was mirrored, and the slices still to come are not added.

    Its order is its own, apart from the link's per-page Redis writes: mirroring is the loop's work
    only, so it never waits for Redis to answer, and a push to a page never waits for a mirroring."""

    def __init__(self, catalog: Catalog, embed_later: Callable[[ToolIndex], None]) -> None:
        self.catalog = catalog
        self._embed_later = embed_later
        self._tasks: set[asyncio.Task[None]] = set()
        self._work = OrderedWork(self._spawn)

    def change(self, session: PageSession, tools: list[dict[str, Any]], removed: list[str], *, full: bool) -> None:
        """A page's tools changed on its process: `tools` (their definitions, and their names there)
        registered and `removed` unregistered, or with `full`, `tools` are all it has now."""
        self._work.add(session.id, lambda: self._apply(session, tools, removed, full=full), "mirror a page's tools")

    def activate(self, room: str, keys: list[str]) -> None:
        """An agent of another process had deferred tools listed: listed here too, once the changes
        heard before are applied (they may bring these tools)."""
        self._work.add(f"room {room}", lambda: self._activate(room, keys), "activate mirrored tools", after_all=True)

    async def settled(self) -> None:
        """Until the changes heard so far are applied."""
        await self._work.settled()

    async def _apply(self, session: PageSession, tools: list[dict[str, Any]], removed: list[str], *,
                     full: bool) -> None:
        if session.closed:
            return
        room = self.catalog.room(session.room)
        if full:
            kept = {e["definition"]["name"] for e in tools}
            removed = [t.page_name for t in room.tools_of(session.id) if t.page_name not in kept]
        if removed:
            room.unregister(session.id, removed)
        for start in range(0, len(tools), CATALOG_SLICE):
            if start:
                await asyncio.sleep(0)
                if session.closed:  # it left meanwhile: what was mirrored went with it
                    return
            entries = tools[start:start + CATALOG_SLICE]
            room.register(session.id, session.page.title, [ToolDefinition.model_validate(e["definition"])
                                                           for e in entries],
                          session.label, keys=[e["key"] for e in entries], origin=session.origin)
        if tools:
            self._embed_later(room.index)

    async def _activate(self, room: str, keys: list[str]) -> None:
        mirrored = self.catalog.get(room)
        if mirrored is not None:
            mirrored.activate(keys)

    def _spawn(self, work: Awaitable[Any], what: str) -> asyncio.Task[None]:
        async def logged() -> None:
            try:
                await work
            except Exception:  # a change this process cannot read (another version) stops nothing
                log.exception("could not %s", what)
        task = asyncio.create_task(logged())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
