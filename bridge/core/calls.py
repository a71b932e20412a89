"""The table of calls in flight: one future per call, answered by the page.

A call is opened when an agent calls a tool, answered (or failed) by whatever
happens first — the page's return, the page going away, the timeout, the
agent's cancel — and closed exactly once, into a short history for the
dashboard. Knows nothing of sockets or MCP.

Every call gets the same timeout, so the calls' deadlines come in the order the calls
opened: one timer, set for the oldest call's deadline, times them all out (a timer per
call cost a noticeable share of a call's CPU). A call whose page asked the agent for input
goes on in new rounds (the agent's wait, then the page again) that keep its clock, so their
deadlines are earlier than their opening implies: those few are kept apart and checked
each time the timer fires.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.core.prose import cut_text

# What a page says about a call before it ends: {"progress": [progress, total, message]} or {"log": {...}}.
NoteSink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a call ended: the page's result, or an error message the agent will read."""

    result: Any = None
    error: str | None = None
    # result | error | timeout | page_gone | cancelled | invalid_arguments | too_many_calls | bad_answer | shutdown
    # | input_required (result: inputRequests, requestState) | input_unsupported (result: requiredCapabilities)
    kind: str = "result"

    @classmethod
    def failure(cls, kind: str, message: str) -> Outcome:
        return cls(error=message, kind=kind)


@dataclass(frozen=True, slots=True)
class ProgramCall:
    """A page call made by an agent's program that may outlive its process (a task's, in shared mode): the run,
    and the sandbox's id for the call within it. Shared mode marks the call as the program's as it sends it, so
    another process resuming the program knows it was sent (and never sends it again) and can take it over."""

    run_id: str
    sandbox_call_id: int


@dataclass(frozen=True, slots=True)
class CallClock:
    """When an agent's call started and when it times out, for each of its rounds."""

    started: float  # time.monotonic()
    started_at: float  # time.time(), for people
    deadline: float  # on the event loop's clock


@dataclass(eq=False, slots=True)
class Call:
    call_id: str
    room: str
    session_id: str
    tool_key: str
    arguments: dict[str, Any]
    future: asyncio.Future[Outcome]
    clock: CallClock
    on_note: NoteSink | None = None
    # "page": the page was invoked and its answer is awaited; "agent": the page asked the agent for
    # input and the agent's answers are awaited (the page has no call of this id).
    awaits: str = "page"

    @property
    def deadline(self) -> float:
        return self.clock.deadline

    @property
    def started(self) -> float:
        return self.clock.started

    def summary(self, now: float | None = None) -> dict[str, Any]:
        age = (now if now is not None else time.monotonic()) - self.started
        return _summary(self.call_id, self.room, self.session_id, self.tool_key, self.arguments,
                        self.clock.started_at) | {"age_s": round(age, 3), "waiting_for": self.awaits}


@dataclass(frozen=True, slots=True)
class EndedCall:
    """What the call history keeps of a call: what the dashboard shows. Not its result, future or
    note sink, nor what they hold (the agent's request, its streams): every full collection walks
    what the history keeps."""

    call_id: str
    room: str
    session_id: str
    tool_key: str
    arguments: dict[str, Any]
    started_at: float
    duration: float
    kind: str
    error: str | None

    def summary(self) -> dict[str, Any]:
        return _summary(self.call_id, self.room, self.session_id, self.tool_key, self.arguments, self.started_at) \
            | {"duration_s": round(self.duration, 3), "outcome": self.kind, "error": self.error}


def _summary(call_id: str, room: str, session_id: str, tool_key: str, arguments: dict[str, Any],
             started_at: float) -> dict[str, Any]:
    return {"call_id": call_id, "room": room, "page_id": session_id[:6], "tool": tool_key,
            "arguments": _truncated(arguments), "started_at": started_at}


class CallTable:
    """Calls in flight, by bridge-wide unique `call_id`, plus the last finished ones.

    A call still waiting `timeout` seconds after it opened is answered with a "timeout" outcome.
    """

    def __init__(self, history: int = 100, timeout: float = math.inf) -> None:
        self._calls: dict[str, Call] = {}  # in the order they opened, which is the order of their deadlines...
        self._apart: dict[str, Call] = {}  # ...but for these, which keep the clock of a call that began earlier
        self._last_deadline = -math.inf  # of the last call opened in deadline order
        # Calls in flight per room and per page, for the limits checked on every call.
        self._in_room: Counter[str] = Counter()
        self._for_page: Counter[str] = Counter()
        # How the last calls ended, summarised only when the dashboard asks, not at every call.
        self._ended: deque[EndedCall] = deque(maxlen=history)
        self.timeout = timeout
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None  # a bridge may run again on a new loop

    def __len__(self) -> int:
        return len(self._calls)

    def clock(self) -> CallClock:
        """The clock of a call starting now."""
        return CallClock(time.monotonic(), time.time(), asyncio.get_running_loop().time() + self.timeout)

    def open(self, *, room: str, session_id: str, tool_key: str, arguments: dict[str, Any],
             on_note: NoteSink | None = None, clock: CallClock | None = None, awaits: str = "page",
             call_id: str | None = None) -> Call:
        """A call in flight; with `clock`, one round of a call on that clock (its start and deadline go on); with
        `call_id`, a call another process opened and this one takes over (Hub.adopt)."""
        # JSON-RPC ids collide between agents; a random id never does and cannot be guessed by other pages.
        call_id = call_id or "c_" + os.urandom(12).hex()
        loop = asyncio.get_running_loop()
        call = Call(call_id, room, session_id, tool_key, arguments, loop.create_future(), clock or self.clock(),
                    on_note, awaits)
        self._calls[call_id] = call
        self._in_room[room] += 1
        self._for_page[session_id] += 1
        if call.deadline >= self._last_deadline:
            self._last_deadline = call.deadline
        else:
            self._apart[call_id] = call
        if self.timeout != math.inf and (self._timer is None or self._timer_loop is not loop
                                         or self._timer.when() > call.deadline):
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._timer_loop = loop.call_at(call.deadline, self._time_out), loop
        return call

    def _time_out(self) -> None:
        """Answer every call past its deadline, then wait for the next deadline."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        upcoming = math.inf
        for call in list(self._apart.values()):
            if call.deadline > now:
                upcoming = min(upcoming, call.deadline)
            else:
                self._expire(call)
        for call in self._calls.values():
            if call.call_id in self._apart:
                continue
            if call.deadline > now:
                upcoming = min(upcoming, call.deadline)
                break
            self._expire(call)
        if upcoming != math.inf:
            self._timer = loop.call_at(upcoming, self._time_out)

    def _expire(self, call: Call) -> None:
        if call.future.done():
            return
        if call.awaits == "agent":
            message = f"The agent did not answer the page's request for input within the call's {self.timeout:g} s."
        else:
            message = f"The page did not answer within {self.timeout:g} s."
        call.future.set_result(Outcome.failure("timeout", message))

    def get(self, call_id: str) -> Call | None:
        return self._calls.get(call_id)

    def waiting_in(self, room: str) -> int:
        return self._in_room[room]

    def waiting_for(self, session_id: str) -> int:
        return self._for_page[session_id]

    @property
    def rooms_with_calls(self) -> frozenset[str]:
        """The rooms `waiting_in` keeps a count for: those with a call in flight."""
        return frozenset(self._in_room)

    @property
    def pages_with_calls(self) -> frozenset[str]:
        """The session ids `waiting_for` keeps a count for: the pages with a call in flight."""
        return frozenset(self._for_page)

    @property
    def timer_set(self) -> bool:
        """Whether the timer that times the oldest call out is set (never without a timeout)."""
        return self._timer is not None

    def in_flight(self, session_id: str | None = None, *, room: str | None = None) -> list[Call]:
        return [c for c in self._calls.values()
                if (session_id is None or c.session_id == session_id) and (room is None or c.room == room)]

    def settle(self, call_id: str, outcome: Outcome, *, session_id: str | None = None) -> bool:
        """Answer a call; False when it is unknown, already answered, or (given `session_id`) not that page's."""
        call = self._calls.get(call_id)
        if call is None or call.future.done() or (session_id is not None and call.session_id != session_id):
            return False
        call.future.set_result(outcome)
        return True

    def report(self, call_id: str, note: dict[str, Any], *, session_id: str | None = None) -> bool:
        """Pass what the page says about a waiting call (progress, a log line) to whoever waits for it."""
        call = self._calls.get(call_id)
        if call is None or call.future.done() or (session_id is not None and call.session_id != session_id):
            return False
        if call.on_note is not None:
            call.on_note(note)
        return True

    def close(self, call: Call, outcome: Outcome | None) -> None:
        """Forget a call (idempotent) and remember how it ended (`outcome`); None when it did not end but goes
        on in another round, which leaves no history."""
        if self._calls.pop(call.call_id, None) is None:
            return
        self._apart.pop(call.call_id, None)
        for counts, key in ((self._in_room, call.room), (self._for_page, call.session_id)):
            counts[key] -= 1
            if not counts[key]:
                del counts[key]
        if not call.future.done():
            call.future.cancel()
        if outcome is not None:
            self._ended.appendleft(EndedCall(call.call_id, call.room, call.session_id, call.tool_key,
                                             call.arguments, call.clock.started_at, time.monotonic() - call.started,
                                             outcome.kind, outcome.error))

    @property
    def recent(self) -> list[dict[str, Any]]:
        """The last calls that ended, newest first."""
        return [ended.summary() for ended in self._ended]


ARGUMENTS_SHOWN = 200


def _truncated(arguments: dict[str, Any]) -> str:
    """The arguments as the dashboard shows them: JSON, cut to a line."""
    text = json.dumps(arguments, ensure_ascii=False)
    return cut_text(text, ARGUMENTS_SHOWN)


class MonotonicProgress:
    """Progress values an agent sees, which must only increase.

    The page's own values pass through while they increase; keep-alive ticks
    (sent so clients with a request timeout keep waiting) and any page value
    that would go backwards are renumbered one above the last value sent, with
    no total, so nothing the agent sees ever decreases or exceeds its total.
    """

    def __init__(self) -> None:
        self.last: float | None = None

    def page(self, progress: float, total: float | None, message: str | None) -> tuple[float, float | None, str | None]:
        if self.last is None or progress > self.last:
            self.last = progress
            return progress, total if total is not None and total >= progress else None, message
        return self.tick(message)

    def tick(self, message: str | None) -> tuple[float, None, str | None]:
        self.last = 0.0 if self.last is None else self.last + 1
        return self.last, None, message
