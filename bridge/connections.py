"""The connection guard: connections that send nothing, or send it slowly, cannot lock clients out.

uvicorn keeps a connection that never sends a request open for good (its keep-alive timeout starts
after a response) and waits as long as a request head or body takes. With a common open-file limit
of 1024, a thousand idle sockets hold every file the process may open: accepting fails, no agent or
page gets in, and asyncio logs a traceback for each failed accept. The guard gives every HTTP
connection:

- a deadline for its request head, counted from when it opens and from the first byte of each
  later request (between requests a kept-alive connection has uvicorn's keep-alive timeout);
- a deadline for the request body, counted from the end of its head;
- a place in a cap on open connections, set below the open-file limit: past the cap the
  connections idle longest (no request in progress) are closed so that new clients get in. A
  WebSocket, an event stream or any request being answered is never one of them.

A burst of connections can still use up the files before the guard sees them (asyncio accepts up
to uvicorn's backlog at once): asyncio then retries a second later, by when the longest-idle ones
are closed, and `RepeatedErrorFilter` keeps its log to one line per cause.

`guarded_protocol` makes it a subclass of the HTTP protocol uvicorn would choose (h11, or
httptools when installed). A request whose head and body arrive in one read, as real clients send
them, costs a dictionary move and a few attribute tests; timers are set only for a connection's
first request and for heads and bodies that come in pieces.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, cast

from uvicorn.protocols.http.auto import AutoHTTPProtocol

if TYPE_CHECKING:  # the guard is typed against h11's protocol; httptools' has the same members
    from uvicorn.protocols.http.h11_impl import H11Protocol as _HTTPProtocol
else:
    _HTTPProtocol = object

logger = logging.getLogger(__name__)

# Files the bridge needs beside its connections: ~10 at start (standard streams, the event loop's,
# the listening socket), then a Redis pool, files being sent, a search model's files, the log.
RESERVED_FILES = 128
LOG_INTERVAL = 10.0  # seconds: at most one line per cause in this long
# What a failed accept (or open) reports when the process or system is out of files or memory.
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def open_file_limit() -> int | None:
    """How many files this process may open, with the soft limit first raised to the hard one where
    allowed; None when unlimited or unknown (no `resource` module)."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # an unlimited hard limit the system will not grant (macOS)
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def connection_cap(max_connections: int, open_files: int | None) -> int | None:
    """`--max-connections`, or when it is 0 the open-file limit less the bridge's own files (half the
    limit at least); None: no cap."""
    if max_connections > 0:
        return max_connections
    if open_files is None:
        return None
    return max(open_files // 2, open_files - RESERVED_FILES)


class Quota:
    """One log line per cause per interval; the lines held back are counted for the next one."""

    MAX_CAUSES = 256  # past it, causes whose interval is over are forgotten

    def __init__(self, interval: float = LOG_INTERVAL) -> None:
        self.interval = interval
        self._next: dict[Hashable, float] = {}
        self._held: dict[Hashable, int] = {}

    def take(self, cause: Hashable) -> int | None:
        """None when this line is to be held back, else how many were since the last one."""
        now = time.monotonic()
        if now < self._next.get(cause, 0.0):
            self._held[cause] = self._held.get(cause, 0) + 1
            return None
        if len(self._next) >= self.MAX_CAUSES:
            for old in [c for c, until in self._next.items() if until <= now]:
                del self._next[old]
                self._held.pop(old, None)
        self._next[cause] = now + self.interval
        return self._held.pop(cause, 0)


class RepeatedErrorFilter(logging.Filter):
    """Out of files, asyncio logs a traceback for every accept it tries (thousands a second), then for
    every retry it had queued; uvicorn and the libraries log one for each call that fails. Such
    records (asyncio's exceptions, and any out of files or memory) pass once per cause per interval,
    a cause being the logger, the message's first line and the exception; an out-of-files record is
    one line, its traceback says nothing more. Every other record passes untouched."""

    def __init__(self, interval: float = LOG_INTERVAL) -> None:
        super().__init__()
        self.quota = Quota(interval)

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return True
        out_of_files = isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS
        if not out_of_files and record.name != "asyncio":
            return True
        first_line = str(record.msg).partition("\n")[0]
        held = self.quota.take((record.name, first_line, type(exc), str(exc)))
        if held is None:
            return False
        more = f" ({held} more like it held back)" if held else ""
        if out_of_files:
            record.msg, record.args = "%s: %s%s", (first_line, exc, more)
            record.exc_info, record.exc_text = None, None
        elif more:
            record.msg, record.args = "%s%s", (record.getMessage(), more)
        return True


class ConnectionGuard:
    """What the connections of one server share: the deadlines, the cap, and the idle connections in
    the order they became idle (longest idle first)."""

    def __init__(self, cap: int | None, head_timeout: float, body_timeout: float) -> None:
        self.cap = cap
        self.head_timeout = head_timeout
        self.body_timeout = body_timeout
        self.idle: dict[GuardedConnection, None] = {}
        self.closing = 0  # closed to make room, not yet gone: still counted among uvicorn's connections
        self.quota = Quota()
        self._closed_unlogged = 0

    def make_room(self, open_connections: int) -> None:
        """Close the longest-idle connections until the open ones fit the cap again."""
        assert self.cap is not None
        while open_connections - self.closing > self.cap and self.idle:
            oldest = next(iter(self.idle))
            del self.idle[oldest]
            oldest.close_for_room()
            self._closed_unlogged += 1
        if self.quota.take("cap") is not None:
            logger.warning("At the cap of %d open connections (--max-connections): closing the longest-idle ones so "
                           "new clients get in (%d closed since the last line)", self.cap, self._closed_unlogged)
            self._closed_unlogged = 0


class GuardedConnection(_HTTPProtocol):
    """uvicorn's HTTP protocol with the guard's deadlines and a place in its cap; `guarded_protocol`
    puts it before uvicorn's class."""

    guard: ConnectionGuard
    _idle = False  # no request in progress: a place in `guard.idle`
    _head_started = False  # part of a request head has come
    _closed_for_room = False
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        guard = self.guard
        self._idle = True
        guard.idle[self] = None
        self._arm(guard.head_timeout)
        if guard.cap is not None and len(self.connections) - guard.closing > guard.cap:
            guard.make_room(len(self.connections))

    def data_received(self, data: bytes) -> None:
        if not self._idle:  # a body, or a request pipelined behind the one in progress
            super().data_received(data)
            return
        cycle = self.cycle
        super().data_received(data)
        if self.transport.get_protocol() is not self:  # now a WebSocket: never closed for room
            self._forget()
        elif self.cycle is not cycle:
            self._start_request()
        elif not self.transport.is_closing():
            self._head_started = True
            if self._deadline is None:
                self._arm(self.guard.head_timeout)

    def on_response_complete(self) -> None:
        answered = self.cycle
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.cycle is not answered:  # a pipelined request has started
            self._disarm()
            self._start_request()
            return
        self._disarm()
        self._idle = True
        self.guard.idle[self] = None
        if answered.more_body:  # answered before its body came: the rest and the next head get a deadline
            self._arm(self.guard.head_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        # uvicorn stops its keep-alive timer only when the connection ends cleanly; a client that
        # resets it (MCP clients do, after each request) would leave the timer holding the closed
        # connection, its request and its transport for the keep-alive timeout.
        self._unset_keepalive_if_required()
        self._forget()
        if self._closed_for_room:
            self._closed_for_room = False
            self.guard.closing -= 1

    def close_for_room(self) -> None:
        """Close this idle connection (the guard has already taken it from `idle`)."""
        self._idle = False
        self._disarm()
        self._closed_for_room = True
        self.guard.closing += 1
        self.transport.close()

    def _start_request(self) -> None:
        if self._idle:
            self._idle = False
            del self.guard.idle[self]
        self._head_started = False
        self._disarm()
        if self.cycle.more_body:
            self._arm(self.guard.body_timeout)

    def _forget(self) -> None:
        self._disarm()
        if self._idle:
            self._idle = False
            del self.guard.idle[self]

    def _arm(self, seconds: float) -> None:
        self._deadline = self.loop.call_later(seconds, self._deadline_passed)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _deadline_passed(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle, guard = self.cycle, self.guard
        if self._idle:  # the head is late (or the rest of a body the app did not wait for)
            answer = self._head_started and (cycle is None or not cycle.more_body)
            self._time_out("request head", guard.head_timeout, "--request-head-timeout", answer)
        elif cycle.more_body and not cycle.response_complete:
            self._time_out("request body", guard.body_timeout, "--request-body-timeout", not cycle.response_started)

    def _time_out(self, what: str, seconds: float, flag: str, answer: bool) -> None:
        """Close the connection; with a 408 saying which deadline passed when the client is waiting for
        an answer (a connection that never sent a byte is closed without one)."""
        if answer:
            text = f"The {what} was not complete within {seconds:g} s ({flag}).\n".encode()
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                 b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(text), text))
            if (held := self.guard.quota.take(what)) is not None:
                client = "%s:%d" % self.client if self.client else "a client"
                more = f" ({held} more since the last line)" if held else ""
                logger.info("408 to %s: the %s was not complete within %g s (%s)%s", client, what, seconds, flag, more)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the app's own answer, if it comes now, goes nowhere
        self.transport.close()


def guarded_protocol(guard: ConnectionGuard) -> type[asyncio.Protocol]:
    """The HTTP protocol class uvicorn would use, with `guard` over its connections (for
    `uvicorn.Config(http=...)`)."""
    return cast(type[asyncio.Protocol], type("GuardedHTTPProtocol", (GuardedConnection, AutoHTTPProtocol),
                                             {"guard": guard}))
