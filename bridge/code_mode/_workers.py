"""The sandbox's worker processes and the threads that talk to them.

Monty's synchronous pool is driven from a few threads of our own, one Monty call at a time: its asyncio pool
completes each call from a Rust thread taking the GIL, and a completion racing interpreter shutdown aborts Python
3.11 (exit status 134, in about one run in seven here). The synchronous pool calls back only on the calling thread.

A session holds one worker. At most `max_workers` sessions are held at once (a semaphore on the event loop), so
a thread never blocks waiting for a worker and every held session finds a thread. Cancelling a Monty call that is
running kills its worker (the pool replaces it): the thread comes back at once instead of when the sandbox's time
limit ends the call. Closing kills the workers running programs too (Monty's pool would wait for them).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic_monty import Monty, MontySession

log = logging.getLogger(__name__)
T = TypeVar("T")
_KILL = getattr(signal, "SIGKILL", signal.SIGTERM)


class Workers:
    def __init__(self, *, max_workers: int, warm_workers: int, turn_timeout: float,
                 binary_path: str | Path | None = None) -> None:
        if not 0 <= warm_workers <= max_workers or max_workers < 1:
            raise ValueError(f"need 1 <= max_workers and 0 <= warm_workers <= max_workers, not {max_workers}, "
                             f"{warm_workers}")
        self._pool = Monty(min_processes=warm_workers, max_processes=max_workers, request_timeout=turn_timeout,
                           binary_path=binary_path)
        # One thread per session held, and one for the pool's own start and stop.
        self._threads = concurrent.futures.ThreadPoolExecutor(max_workers + 1, thread_name_prefix="code-mode")
        self._free = asyncio.Semaphore(max_workers)
        self._sessions: set[Session] = set()
        self._open = False

    @property
    def held(self) -> int:
        """Sessions holding a worker now."""
        return len(self._sessions)

    @property
    def closed(self) -> bool:
        return not self._open

    async def open(self) -> None:
        await asyncio.wrap_future(self._threads.submit(self._pool.__enter__))
        self._open = True

    async def close(self) -> None:
        """Stop the workers and the threads. A program computing is stopped (the pool would wait for it); one
        parked ends when it would next need a worker."""
        if self._open:
            self._open = False
            for session in list(self._sessions):
                session.kill()
            await asyncio.wrap_future(self._threads.submit(self._pool.__exit__, None, None, None))
        await asyncio.to_thread(self._threads.shutdown, True)

    @asynccontextmanager
    async def session(self, **checkout: Any) -> AsyncIterator[Session]:
        """A session on one worker (`checkout` as `Monty.checkout` takes), given back when the block ends."""
        if not self._open:
            raise SandboxClosed()
        await self._free.acquire()
        if not self._open:
            self._free.release()
            raise SandboxClosed()
        try:
            session = Session(self, self._pool.checkout(**checkout), asyncio.get_running_loop())
        except BaseException:
            self._free.release()
            raise
        self._sessions.add(session)
        try:
            await session.enter()
            yield session
        except asyncio.CancelledError:
            session.end()  # in the background: the worker is given back once its call, killed, returns
            raise
        except BaseException:
            await asyncio.wrap_future(session.end())
            raise
        else:
            await asyncio.wrap_future(session.end())

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        return self._threads.submit(fn, *args)

    def freed(self, session: Session) -> None:
        self._sessions.discard(session)
        self._free.release()


class SandboxClosed(RuntimeError):
    def __init__(self) -> None:
        super().__init__("the sandbox is closed")


class Session:
    """One worker held: its Monty calls run on our threads, one at a time."""

    def __init__(self, workers: Workers, monty: MontySession, loop: asyncio.AbstractEventLoop) -> None:
        self.monty = monty
        self._workers = workers
        self._loop = loop
        self._last: concurrent.futures.Future[Any] | None = None
        self._entered: concurrent.futures.Future[Any] | None = None
        self._pid: int | None = None

    async def enter(self) -> None:
        self._entered = self._workers.submit(self.monty.__enter__)
        await self._wait(self._entered)
        self._pid = self.monty.worker_pid

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)`, a call on this session's worker or one of its snapshots, on a thread."""
        return await self._wait(self._workers.submit(fn, *args))

    async def _wait(self, future: concurrent.futures.Future[T]) -> T:
        self._last = future
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self.kill()
            raise

    def kill(self) -> None:
        """Stop the worker's call in flight, if any, by killing the worker (the pool replaces it)."""
        if self._last is not None and not self._last.done() and self._pid is not None:
            try:
                os.kill(self._pid, _KILL)
            except ProcessLookupError:
                pass

    def end(self) -> concurrent.futures.Future[None]:
        """Give the worker back once its last call is over (at once, unless cancelled mid-call), then free the
        slot on the event loop. The future is done when the slot is free."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def give_back() -> None:
            try:
                entered = self._entered
                if entered is not None and not entered.cancelled() and entered.exception() is None:
                    self.monty.__exit__(None, None, None)
            except Exception:  # a worker killed mid-call: the pool replaces it
                log.debug("a sandbox session ended with an error", exc_info=True)
            finally:
                try:
                    self._loop.call_soon_threadsafe(self._workers.freed, self)
                except RuntimeError:  # the event loop is closed: nothing waits for the slot
                    pass
                done.set_result(None)

        def after(_: concurrent.futures.Future[Any] | None = None) -> None:
            try:
                self._workers.submit(give_back)
            except RuntimeError:  # the threads are stopping: so is the pool, with its workers
                done.set_result(None)

        last = self._last
        if last is None or last.done():
            after()
        else:
            last.add_done_callback(after)
        return done
