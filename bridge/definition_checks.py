"""Where the tool definitions pages register are checked: off the event loop, fairly.

Checking a definition costs microseconds to ~0.2 s (a schema of the largest size allowed
against the JSON Schema meta-schema; each input example within the work budget). The checks
run in one thread of their own, never in the loop's default executor, so pages registering
at once cannot fill the pool other work needs, and at most one checking thread competes with
the loop for the interpreter. A registration takes turns of about `TURN_SECONDS`; the next
turn goes to the registration that has used the least time so far, so a page registering a
few tools waits for at most one turn of another's, however many pages register heavy ones.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

Checked = TypeVar("Checked")

TURN_SECONDS = 0.005
_executor: ThreadPoolExecutor | None = None


class Turns:
    """Who checks next on one event loop: the waiting registration that has used the least."""

    def __init__(self) -> None:
        self._busy = False
        self._waiting: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def take(self, used: float) -> None:
        if not self._busy:
            self._busy = True
            return
        turn = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (used, next(self._order), turn))
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # given just as it was cancelled: pass it on
                self.give()
            raise

    def give(self) -> None:
        while self._waiting:
            _, _, turn = heapq.heappop(self._waiting)
            if not turn.done():
                turn.set_result(None)
                return
        self._busy = False


_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Turns] = weakref.WeakKeyDictionary()


class Checks(Generic[Checked]):
    """Check `items` one by one with `check` (in the checking thread), in fair turns."""

    def __init__(self, items: list[Any], check: Callable[[Any], Checked]) -> None:
        self.items = items
        self.check = check

    async def run(self) -> list[Checked]:
        loop = asyncio.get_running_loop()
        turns = _turns.setdefault(loop, Turns())
        done: list[Checked] = []
        used = 0.0
        while len(done) < len(self.items):
            await turns.take(used)
            try:
                started = time.perf_counter()
                done += await loop.run_in_executor(_checking_thread(), self._turn, len(done))
                used += time.perf_counter() - started
            finally:
                turns.give()
        return done

    def _turn(self, start: int) -> list[Checked]:
        """In the checking thread: from item `start`, as many as fit in one turn (at least one)."""
        ends = time.perf_counter() + TURN_SECONDS
        checked = []
        for index in range(start, len(self.items)):
            checked.append(self.check(self.items[index]))
            if time.perf_counter() >= ends:
                break
        return checked


def _checking_thread() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="definition-checks")
    return _executor
