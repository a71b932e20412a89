"""Where the tool definitions pages register are checked: in bounded turns, fairly.

Checking a definition costs from a few steps of work to millions (a schema of the largest size
allowed against the JSON Schema meta-schema, the empty object against it, each input example
within the work budget). The checks run in checking threads of their own, never in the loop's
default executor, so pages registering at once cannot fill the pool other work needs.

A registration takes turns of about `TURN_SECONDS`, and the event loop waits for each turn to
end. That is deliberate: a checking thread running beside the loop holds the interpreter while
the loop waits to take it back after each of its socket reads and writes (up to the switch
interval, 5 ms, each), so a busy loop stalled for a hundred milliseconds and more behind one
registration. Taking turns, the loop stalls for one turn at most and does its other work between
turns. The next turn goes to the waiting registration that has used the least time so far.

The loop waits for a turn `LOOP_WAITS_SECONDS` at most. A turn that has not ended by then is
late: its thread is waiting for a core that other processes or threads hold (the semantic tier's
model takes one), and the loop would wait for the scheduler, not for the checks. So the
loop awaits the late turn's end instead, doing its other work meanwhile; the turn's time was over
when the loop stopped waiting, so the thread ends it at its next checkpoint or definition.

A turn ends between two definitions, or in the middle of one: the validator calls a checkpoint
every few thousand steps of work (`bridge.schemas._validation.checkpoints`), where the thread parks, the
definition half checked, until its registration's next turn, while another thread takes the
turn. So a page registering a small definition waits for one turn of another's, whatever the
other registers. A thread stays with its registration only while a definition is paused
mid-check; at most `MOST_THREADS` are held at once on a loop, so the memory held by paused checks
is bounded.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from bridge.schemas import _validation as validation

Checked = TypeVar("Checked")

TURN_SECONDS = 0.002
LOOP_WAITS_SECONDS = 2 * TURN_SECONDS  # for a turn's end; past it the turn is late and the loop awaits it
MOST_THREADS = 8  # held at once on one loop: the running one, the others each hold a paused definition
IDLE_THREADS = 2  # kept for the next registrations; more are stopped once idle
PARKED_POLL_SECONDS = 1.0  # how often a parked thread checks that its loop still runs


class _Dropped(BaseException):
    """The registration is cancelled (its page went away): the definition being checked is
    dropped where it stands. A BaseException, so that no check mistakes it for a bad schema."""


class _Thread:
    """A checking thread: runs the turns it is sent, one after the other."""

    def __init__(self) -> None:
        self.orders: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="definition-checks", daemon=True).start()

    def _serve(self) -> None:
        while (order := self.orders.get()) is not None:
            order()
            del order  # while idle, keep nothing of the registration the order checked


class _Threads:
    """Checking threads not held by any registration (shared by every loop)."""

    def __init__(self) -> None:
        self._idle: list[_Thread] = []
        self._lock = threading.Lock()

    def take(self) -> _Thread:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return _Thread()

    def put(self, thread: _Thread) -> None:
        with self._lock:
            if len(self._idle) < IDLE_THREADS:
                self._idle.append(thread)
                return
        thread.orders.put(None)


_threads = _Threads()


class Turns:
    """Who checks next on one event loop: the waiting registration that has used the least and
    can run (one with a definition paused holds its thread; any other needs one of the
    `MOST_THREADS`). One turn at a time, given from a callback of its own, so that the loop
    polls its sockets between any two turns."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._busy = False  # a turn is given and not yet over
        self._holding: list[tuple[float, int, asyncio.Future[None]]] = []  # each holds a paused thread
        self._fresh: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._held = 0
        self._next_scheduled = False

    async def take(self, used: float, holding: bool) -> None:
        turn = self._loop.create_future()
        heapq.heappush(self._holding if holding else self._fresh, (used, next(self._order), turn))
        self._schedule()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # given just as it was cancelled: pass it on
                self.give()
            raise

    def give(self) -> None:
        self._busy = False
        self._schedule()

    def hold_thread(self) -> _Thread:
        self._held += 1
        return _threads.take()

    def release_thread(self, thread: _Thread) -> None:
        self._held -= 1
        _threads.put(thread)
        self._schedule()  # a registration may have waited for a thread

    def _schedule(self) -> None:
        if not self._next_scheduled:
            self._next_scheduled = True
            self._loop.call_soon(self._next)

    def _next(self) -> None:
        self._next_scheduled = False
        while not self._busy:
            heaps = [self._holding] if self._held >= MOST_THREADS else [self._holding, self._fresh]
            heaps = [heap for heap in heaps if heap]
            if not heaps:
                return
            _, _, turn = heapq.heappop(min(heaps, key=lambda heap: heap[0][:2]))
            if not turn.done():
                self._busy = True
                turn.set_result(None)


_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Turns] = weakref.WeakKeyDictionary()


class Checks(Generic[Checked]):
    """Check `items` one by one with `check` (in a checking thread), in fair turns."""

    def __init__(self, items: list[Any], check: Callable[[Any], Checked]) -> None:
        self.items = items
        self.check = check
        self._done: list[Checked] = []
        self._thread: _Thread | None = None  # held while a definition is paused mid-check
        self._wake: queue.SimpleQueue[bool] = queue.SimpleQueue()  # to the parked thread: go on, or drop
        self._ended: queue.SimpleQueue[tuple[bool, BaseException | None]] = queue.SimpleQueue()  # turns' ends
        self._late: asyncio.Future[None] | None = None  # awaited by the loop for a late turn's end
        self._late_lock = threading.Lock()
        self._in_turn = False  # the thread has a turn whose end the loop has not taken yet
        self._ends = 0.0  # of the thread's turn
        self._dropped = False

    async def run(self) -> list[Checked]:
        self._loop = loop = asyncio.get_running_loop()
        turns = _turns.get(loop)
        if turns is None:
            turns = _turns[loop] = Turns(loop)
        self._turns = turns
        used = 0.0
        try:
            while len(self._done) < len(self.items):
                await turns.take(used, holding=self._thread is not None)
                started = time.perf_counter()
                try:
                    await self._take_turn()
                finally:
                    turns.give()
                used += time.perf_counter() - started
        except BaseException:
            self._drop()
            raise
        return self._done

    async def _take_turn(self) -> None:
        """One turn, on a thread taken for it or on the one parked mid-definition (the thread
        parks at a checkpoint or between definitions once the turn's time is over)."""
        self._ends = time.perf_counter() + TURN_SECONDS
        self._in_turn = True
        if self._thread is None:
            self._thread = self._turns.hold_thread()
            self._thread.orders.put(self._turn)
        else:
            self._wake.put(True)
        self._turn_ended(*await self._end_of_turn())

    async def _end_of_turn(self) -> tuple[bool, BaseException | None]:
        try:
            return self._ended.get(timeout=LOOP_WAITS_SECONDS)
        except queue.Empty:
            pass
        late = self._loop.create_future()
        with self._late_lock:  # the thread, ending the turn, wakes the loop only if it is told to
            if self._ended.empty():
                self._late = late
        if self._late is late:
            await late
        return self._ended.get_nowait()

    def _drop(self) -> None:
        self._dropped = True
        with self._late_lock:
            self._late = None
        if self._thread is None:
            return
        if not self._in_turn:  # parked between turns: let it unwind
            self._wake.put(False)
        paused, error = self._ended.get()
        if paused:  # a late turn parked before it saw the drop
            self._wake.put(False)
            paused, error = self._ended.get()
        self._turn_ended(paused, error)

    def _turn_ended(self, paused: bool, error: BaseException | None) -> None:
        self._in_turn = False
        if not paused:
            assert self._thread is not None
            self._turns.release_thread(self._thread)
            self._thread = None
        if error is not None:
            raise error

    # --- in the checking thread ------------------------------------------------------------

    def _turn(self) -> None:
        """From the next item on, until the turn is over (at least one item, unless dropped)."""
        error: BaseException | None = None
        orphaned = False
        try:
            with validation.checkpoints(self._checkpoint):
                while len(self._done) < len(self.items) and not self._dropped:
                    self._done.append(self.check(self.items[len(self._done)]))
                    if time.perf_counter() >= self._ends:
                        break
        except _Orphaned:
            orphaned = True
        except _Dropped:
            pass
        except BaseException as exc:  # the check's own bug: raised where the registration awaits
            error = exc
        if orphaned:  # nobody waits for these checks any more
            assert self._thread is not None
            _threads.put(self._thread)
        else:
            self._end_turn(False, error)

    def _checkpoint(self) -> None:
        """Called by the validator every few thousand steps: the turn may end here."""
        if self._dropped:
            raise _Dropped
        if time.perf_counter() < self._ends:
            return
        self._end_turn(True, None)
        while True:  # parked until the registration's next turn
            try:
                go_on = self._wake.get(timeout=PARKED_POLL_SECONDS)
                break
            except queue.Empty:
                if self._loop.is_closed():
                    raise _Orphaned from None
        if not go_on:
            raise _Dropped

    def _end_turn(self, paused: bool, error: BaseException | None) -> None:
        with self._late_lock:
            self._ended.put((paused, error))
            late, self._late = self._late, None
        if late is not None:
            try:
                self._loop.call_soon_threadsafe(_settle, late)
            except RuntimeError:  # the loop is closed: nobody awaits the end any more
                pass


def _settle(late: asyncio.Future[None]) -> None:
    if not late.done():
        late.set_result(None)


class _Orphaned(_Dropped):
    """The loop that waited for these checks is closed: nobody will take the parked thread's
    next turn, nor its end."""
