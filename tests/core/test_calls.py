"""The call table (bridge.core.calls): a call settled once, counted per room and page, timed out at its own
deadline (a round on an earlier clock at that clock's), its progress kept monotonic, and what an ended call
leaves for a full garbage collection to walk."""

from __future__ import annotations

import asyncio

from gc_support import tracked

from bridge.core.calls import CallClock, CallTable, MonotonicProgress, Outcome


async def test_call_table_settles_once_and_keeps_history():
    table = CallTable(history=2)
    call = table.open(room="r", session_id="S", tool_key="t", arguments={})
    assert table.settle(call.call_id, Outcome(result=1), session_id="OTHER") is False
    assert table.settle(call.call_id, Outcome(result=1)) is True
    assert table.settle(call.call_id, Outcome(result=2)) is False
    assert (await call.future).result == 1
    table.close(call, call.future.result())
    table.close(call, Outcome(result=3))  # idempotent
    assert len(table) == 0 and len(table.recent) == 1 and table.recent[0]["outcome"] == "result"
    assert table.settle(call.call_id, Outcome(result=1)) is False


async def test_call_table_counts_calls_waiting_per_room_and_page():
    table = CallTable()
    a1 = table.open(room="r", session_id="A", tool_key="t", arguments={})
    a2 = table.open(room="r", session_id="A", tool_key="t", arguments={})
    b1 = table.open(room="q", session_id="B", tool_key="t", arguments={})
    assert (table.waiting_in("r"), table.waiting_for("A")) == (2, 2)
    assert (table.waiting_in("q"), table.waiting_for("B")) == (1, 1)
    table.close(a1, Outcome(result=1))
    table.close(a1, Outcome(result=1))  # closing twice counts once
    assert (table.waiting_in("r"), table.waiting_for("A")) == (1, 1)
    table.close(a2, Outcome(result=1))
    table.close(b1, Outcome(result=1))
    assert table.waiting_in("r") == table.waiting_for("A") == table.waiting_in("q") == table.waiting_in("nowhere") == 0
    assert not table.rooms_with_calls and not table.pages_with_calls  # nothing kept for rooms and pages with no call


async def test_call_ids_are_unique():
    table = CallTable()
    ids = {table.open(room="r", session_id="S", tool_key="t", arguments={}).call_id for _ in range(500)}
    assert len(ids) == 500


async def test_call_table_times_out_each_call_at_its_own_deadline():
    table = CallTable(timeout=0.2)
    loop = asyncio.get_running_loop()
    first = table.open(room="r", session_id="S", tool_key="t", arguments={})
    answered = table.open(room="r", session_id="S", tool_key="t", arguments={})
    await asyncio.sleep(0.1)
    second = table.open(room="r", session_id="S", tool_key="t", arguments={})
    table.settle(answered.call_id, Outcome(result="yes"))
    timed_out = (await asyncio.wait_for(first.future, 1)).kind, loop.time()
    assert timed_out[0] == "timeout" and "0.2 s" in first.future.result().error
    assert timed_out[1] >= first.deadline and not second.future.done()  # the newer call waits on
    table.close(first, first.future.result())
    assert (await asyncio.wait_for(second.future, 1)).kind == "timeout"
    assert loop.time() >= second.deadline >= first.deadline + 0.1
    assert answered.future.result().result == "yes"  # answered in time: never overwritten
    # The timer is set again for a call opened after the table emptied.
    table.close(second, second.future.result())
    third = table.open(room="r", session_id="S", tool_key="t", arguments={})
    assert (await asyncio.wait_for(third.future, 1)).kind == "timeout"


def test_call_table_times_out_on_a_new_event_loop_too():
    """A bridge stopped with a call waiting and run again (a new loop) still times its calls out."""
    table = CallTable(timeout=0.05)

    async def left_waiting():
        table.open(room="r", session_id="S", tool_key="t", arguments={})

    async def timed_out():
        call = table.open(room="r", session_id="S", tool_key="t", arguments={})
        return (await asyncio.wait_for(call.future, 1)).kind

    asyncio.run(left_waiting())  # its loop closes with the timer pending
    assert asyncio.run(timed_out()) == "timeout"


async def test_call_table_without_timeout_sets_no_timer():
    table = CallTable()
    call = table.open(room="r", session_id="S", tool_key="t", arguments={})
    assert not table.timer_set and call.deadline == float("inf")


def test_monotonic_progress():
    p = MonotonicProgress()
    assert p.tick("wait") == (0.0, None, "wait")
    assert p.page(5, 10, "half") == (5, 10, "half")
    assert p.page(3, 10, "back") == (6, None, "back")  # would go backwards: renumbered, no total
    assert p.page(20, 10, "over") == (20, None, "over")  # a total below progress is dropped
    assert p.tick(None) == (21, None, None)


# --- what a full garbage collection walks ---------------------------------------------------------


async def test_calls_that_ended_keep_what_the_dashboard_shows():
    table = CallTable(history=100)

    def end_one(n: int) -> None:
        call = table.open(room="r", session_id="S1234567", tool_key="rows", arguments={"n": n},
                          on_note=[].append)
        outcome = Outcome(result={"rows": [{"id": j, "tags": ["a", "b"]} for j in range(20)]})
        assert table.settle(call.call_id, outcome)
        table.close(call, outcome)

    end_one(0)
    before = tracked()
    for n in range(1, 101):
        end_one(n)
    assert (tracked() - before) / 100 < 2
    (last, *_) = table.recent
    assert (last["tool"], last["page_id"], last["arguments"], last["outcome"], last["error"]) == \
        ("rows", "S12345", '{"n": 100}', "result", None)
    assert len(table.recent) == 100 and last["duration_s"] >= 0 and "age_s" not in last


# --- rounds that keep their call's clock ------------------------------------------------------------


async def test_a_round_on_an_earlier_clock_times_out_at_its_deadline_before_fresh_calls():
    table = CallTable(timeout=60)
    fresh = table.open(room="r", session_id="s1", tool_key="t", arguments={})
    loop = asyncio.get_running_loop()
    began_earlier = CallClock(started=0.0, started_at=1.0, deadline=loop.time() + 0.2)  # its time is nearly up
    waiting = table.open(room="r", session_id="s1", tool_key="t", arguments={}, clock=began_earlier,
                         awaits="agent")
    outcome = await asyncio.wait_for(waiting.future, 5)  # not after the fresh call's 60 s
    assert outcome.kind == "timeout" and "agent did not answer" in outcome.error
    assert not fresh.future.done()
    assert [c.summary()["waiting_for"] for c in table.in_flight()] == ["page", "agent"]
    table.close(waiting, None)  # a round that goes on elsewhere leaves no history
    assert table.recent == [] and table.in_flight() == [fresh]
    table.close(fresh, Outcome.failure("cancelled", "x"))
    assert [c["outcome"] for c in table.recent] == ["cancelled"]
