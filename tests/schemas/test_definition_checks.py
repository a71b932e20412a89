"""Definitions checked off the loop in fair turns (bridge.schemas.definition_checks): a small definition is
checked while a large one is paused mid-check, the loop does its own work only between turns, a turn that
ends late does not hold the loop, and a registration dropped lets its thread go."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from support import eventually
from validation_support import LAG_BOUND, WIDE, probed

from bridge.schemas import _validation as validation
from bridge.schemas import definition_checks
from bridge.schemas._validation import Budget
from bridge.schemas.definition_checks import IDLE_THREADS, MOST_THREADS, Checks


class Registrations:
    """Definitions "large" (the meta-schema check of a 62 KiB schema, again and again: seconds of
    work alone) and "small" (at once), checked as the bridge checks them, in `Checks`. The large
    one stops early once a small one is checked (if `large_waits_for_small`), so that which
    finished first is the question."""

    def __init__(self, large_waits_for_small: bool = True) -> None:
        self.large_waits_for_small = large_waits_for_small
        self.finished: list[str] = []
        self.large_started = threading.Event()
        self.small_checked = threading.Event()
        self.large_rounds = 0
        self.large_ended_by: str | None = None

    def check(self, item: str) -> str:
        if item == "large":
            self.large_started.set()
            try:
                while self.large_rounds < 20 and not (self.large_waits_for_small and self.small_checked.is_set()):
                    with Budget(1 << 40):
                        assert validation.schema_error(WIDE) is None
                    self.large_rounds += 1
            except BaseException as exc:
                self.large_ended_by = type(exc).__name__
                raise
        else:
            self.small_checked.set()
        self.finished.append(item)
        return item

    async def start_large(self) -> asyncio.Task:
        large = asyncio.create_task(Checks(["large"], self.check).run())
        while not self.large_started.is_set():  # its definition is being checked
            await asyncio.sleep(0.001)
        return large


async def test_a_small_definition_is_checked_while_a_large_one_is_half_checked():
    registrations = Registrations()
    large = await registrations.start_large()
    assert await Checks(["small"], registrations.check).run() == ["small"]
    assert await large == ["large"]
    # The large definition's turn ended at a checkpoint in the middle of its check; the small one
    # was checked in another thread meanwhile.
    assert registrations.finished == ["small", "large"]
    assert registrations.large_rounds < 20


async def test_definitions_are_checked_only_while_the_loop_waits_between_its_own_work(monkeypatch):
    """A checking thread running beside the loop takes the interpreter from it at every switch
    interval, stalling every page and agent of the process: so the loop hands the checks turns and
    waits for each to end, and does its own work between turns, never during one. (A turn that
    ends late is the next test's: the loop's patience is made long here, so that a turn this
    shared machine delays cannot decide this one.)"""
    monkeypatch.setattr(definition_checks, "LOOP_WAITS_SECONDS", 60.0)
    loop_working = False
    seen_during_loop_work = 0
    loop_steps_during_checks = 0

    def check(item: int) -> int:
        nonlocal seen_during_loop_work
        assert validation.schema_error({"type": "object", "properties": {"n": {"type": "integer"}}}) is None
        busy_until = time.perf_counter() + 0.0003
        while time.perf_counter() < busy_until:
            seen_during_loop_work += loop_working
        return item

    async def loop_work(checks: asyncio.Task) -> None:
        nonlocal loop_working, loop_steps_during_checks
        while not checks.done():
            loop_working = True
            busy_until = time.perf_counter() + 0.02  # longer than the interpreter's switch interval
            while time.perf_counter() < busy_until:
                pass
            loop_working = False
            loop_steps_during_checks += 1
            await asyncio.sleep(0)

    checks = asyncio.create_task(Checks(list(range(400)), check).run())
    await asyncio.gather(checks, loop_work(checks))
    assert checks.result() == list(range(400))
    assert seen_during_loop_work == 0
    assert loop_steps_during_checks >= 2  # the loop was not held for the whole registration either


def sleeping_check(finished: list[str]) -> Any:
    """A check whose "slow" item takes 1.5 s of wall time without a checkpoint, as a checking
    thread does when it waits for a core other threads hold."""
    def check(item: str) -> str:
        if item == "slow":
            time.sleep(1.5)
        finished.append(item)
        return item
    return check


async def test_a_turn_that_ends_late_does_not_hold_the_loop():
    """The loop waits for a turn a few milliseconds at most; a turn still running then is awaited
    while the loop does its other work. No other turn starts before it ends."""
    finished: list[str] = []
    check = sleeping_check(finished)
    async with probed() as probe:
        slow = asyncio.create_task(Checks(["slow", "next"], check).run())
        await asyncio.sleep(0.05)
        small = asyncio.create_task(Checks(["small"], check).run())
        assert await slow == ["slow", "next"] and await small == ["small"]
    assert probe.longest < LAG_BOUND, probe.longest  # 1.5 s when the loop waited for the turn's end
    assert finished.index("slow") < finished.index("small")


async def test_a_registration_dropped_during_a_late_turn_lets_its_thread_go():
    finished: list[str] = []
    check = sleeping_check(finished)
    slow = asyncio.create_task(Checks(["slow", "never"], check).run())
    await asyncio.sleep(0.05)
    slow.cancel()  # its page went away while the turn was late
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert finished == ["slow"]  # the item in hand was finished; the next was not begun
    assert await Checks(["after"], check).run() == ["after"]  # the turn was given back
    await eventually(lambda: sum(t.name == "definition-checks" for t in threading.enumerate()) <= IDLE_THREADS)


async def test_at_most_so_many_registrations_hold_a_definition_paused():
    """Each registration with a definition paused mid-check holds a thread and what it checked so
    far: past MOST_THREADS of them, another registration waits until one finishes."""
    started: set[int] = set()
    finish = [threading.Event() for _ in range(MOST_THREADS + 1)]

    def check(number: int) -> int:
        started.add(number)
        while not finish[number].is_set():  # validator work, with its checkpoints, until told to stop
            with Budget(1 << 40):
                assert validation.schema_error(WIDE) is None
        return number

    registrations = [asyncio.create_task(Checks([number], check).run()) for number in range(MOST_THREADS + 1)]
    await eventually(lambda: len(started) >= MOST_THREADS)
    for _ in range(20):  # turns go round the paused ones; the last registration gets none
        await asyncio.sleep(0.01)
        assert len(started) == MOST_THREADS
    first = min(started)
    finish[first].set()
    assert await registrations[first] == [first]
    await eventually(lambda: len(started) == MOST_THREADS + 1)  # the thread it let go went to the last
    for event in finish:
        event.set()
    assert [await registration for registration in registrations] == [[n] for n in range(MOST_THREADS + 1)]


async def test_a_registration_dropped_in_the_middle_of_a_definition_lets_its_thread_go():
    registrations = Registrations(large_waits_for_small=False)
    large = await registrations.start_large()
    assert await Checks(["small"], registrations.check).run() == ["small"]  # the large is paused for it
    large.cancel()  # its page went away
    with pytest.raises(asyncio.CancelledError):
        await large
    await eventually(lambda: registrations.large_ended_by is not None)
    assert registrations.large_ended_by == "_Dropped" and registrations.large_rounds < 20
    assert registrations.finished == ["small"]
    assert await Checks(["after"], registrations.check).run() == ["after"]  # the turn was given back
    # Threads held by no registration are stopped, but for a few kept idle.
    await eventually(lambda: sum(t.name == "definition-checks" for t in threading.enumerate()) <= IDLE_THREADS)


async def test_a_checking_thread_keeps_nothing_of_the_registration_it_checked():
    """An idle checking thread must not hold its last registration's definitions (a page's 10,000
    tools would stay in memory, and in every full collection, until the next registration)."""
    import weakref

    class Definitions(list):  # a list a weak reference can watch
        pass

    definitions = Definitions([{"name": f"t{i}"} for i in range(3)])
    checks = Checks(definitions, lambda raw: raw["name"])
    assert await checks.run() == ["t0", "t1", "t2"]
    gone = weakref.ref(definitions)
    del definitions, checks
    await asyncio.sleep(0.05)  # the thread has gone back to waiting for its next order
    assert gone() is None
