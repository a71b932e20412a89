"""A program waiting on tool calls is parked: it holds no worker, its record is plain data that another process
can resume, a call whose answer is lost reads "outcome unknown"; cancelling a run ends it and its calls."""

from __future__ import annotations

import asyncio
import json
import textwrap
from typing import Any

import pydantic_monty
import pytest
from code_mode_pages import SCHEMAS, FakePages, eventually, order, run_script, sandbox_workers

from bridge.code_mode import CALL_ID, AnswerLost, CodeMode, Limits, ParkedProgram, PendingCall, RunResult


@pytest.fixture(scope="module")
async def code_mode():
    async with CodeMode(max_workers=2, warm_workers=2) as engine:
        yield engine


async def test_programs_waiting_on_dialogs_hold_no_worker(code_mode):
    pages = FakePages()
    parked: list[ParkedProgram] = []
    program = textwrap.dedent("""
        first = await get_order(order_id=1)
        answer = await ask_user(question=f"Ship order {first['id']}?")
        [answer, first["id"]]
        """)
    runs = [asyncio.create_task(code_mode.run(program, SCHEMAS, pages, on_park=parked.append)) for _ in range(30)]
    await eventually(lambda: len(pages.named("ask_user")) == 30 and pages.in_flight == 30)
    await eventually(lambda: code_mode.workers_held == 0)
    assert len(sandbox_workers()) <= 2  # 30 programs waiting, on 2 worker processes at most, none of them held
    waiting = [record for record in parked if [c.name for c in record.pending] == ["ask_user"]]
    assert len(waiting) == 30 and all(len(record.snapshot) < 64 * 1024 for record in waiting)
    for n in range(30):
        await pages.user_answers.put(f"yes {n}")
    results: list[RunResult] = await asyncio.wait_for(asyncio.gather(*runs), 60)
    assert sorted(r.value[0] for r in results) == sorted(f"yes {n}" for n in range(30))
    assert all(r.value[1] == 1 for r in results)


async def test_a_program_whose_calls_answer_quickly_keeps_its_worker_and_is_not_parked(code_mode):
    parked: list[ParkedProgram] = []
    result = await code_mode.run("[(await get_order(order_id=n))['id'] for n in range(5)]", SCHEMAS,
                                 FakePages(delay=0), on_park=parked.append)
    assert result.value == [0, 1, 2, 3, 4] and parked == []


async def test_with_park_after_0_a_program_is_parked_at_each_wait():
    parked: list[ParkedProgram] = []
    pages = FakePages()

    async def once_parked(arguments: dict[str, Any]) -> Any:  # answers only when its program is parked
        await eventually(lambda: len(parked) == len(pages.calls))
        return order(arguments["order_id"])

    pages.tools["get_order"] = once_parked
    async with CodeMode(max_workers=1, park_after=0) as code_mode:
        result = await code_mode.run("[(await get_order(order_id=n))['id'] for n in range(5)]", SCHEMAS, pages,
                                     on_park=parked.append)
    assert result.value == [0, 1, 2, 3, 4]
    assert [[c.name for c in record.pending] for record in parked] == [["get_order"]] * 5


# Resumes a parked program read from a file, with this process's own pages, and prints the result as JSON.
RESUME = textwrap.dedent("""
    import asyncio, json, sys
    from bridge.code_mode import CodeMode, ParkedProgram

    record = ParkedProgram.from_json(open(sys.argv[1]).read())

    async def pages(name, arguments):
        return {"id": arguments["order_id"], "total": 100.0 + arguments["order_id"]}

    async def the_user_says(text):
        await asyncio.sleep(0.05)
        return {"content": [{"type": "text", "text": text}]}

    async def main():
        answers = {c.call_id: the_user_says("yes, from another process") for c in record.pending}
        async with CodeMode(max_workers=1) as code_mode:
            result = await code_mode.resume(record, answers, {"get_order": None, "ask_user": None}, pages)
        print(json.dumps({"value": result.value, "printed": result.printed, "calls": result.calls,
                          "error": result.error and result.error.text()}))

    asyncio.run(main())
    """)


async def test_a_parked_record_resumed_in_another_process_completes(code_mode, tmp_path):
    pages = FakePages()
    parked: list[ParkedProgram] = []
    run = asyncio.create_task(code_mode.run(textwrap.dedent("""
        first = await get_order(order_id=1)
        print("asking")
        answer = await ask_user(question="Ship order 1?")
        second = await get_order(order_id=2)
        {"first": first["total"], "answer": answer, "second": second["total"]}
        """), SCHEMAS, pages, on_park=parked.append))
    await eventually(lambda: any(c.name == "ask_user" for record in parked for c in record.pending))
    run.cancel()  # this process goes away, as far as the program is concerned
    with pytest.raises(asyncio.CancelledError):
        await run
    record = parked[-1]
    path = tmp_path / "parked.json"
    path.write_text(record.to_json())
    done = await asyncio.to_thread(run_script, RESUME, str(path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"value": {"first": 11.0, "answer": "yes, from another process",
                                                 "second": 102.0},
                                       "printed": "asking\n", "calls": 3, "error": None}


async def parked_at_a_dialog(code_mode: CodeMode, program: str) -> ParkedProgram:
    """The record of `program` parked waiting on the user, its run then cancelled."""
    parked: list[ParkedProgram] = []
    run = asyncio.create_task(code_mode.run(textwrap.dedent(program), SCHEMAS, FakePages(), on_park=parked.append))
    await eventually(lambda: any(c.name == "ask_user" for record in parked for c in record.pending))
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    return ParkedProgram.from_json(parked[-1].to_json())


async def test_a_call_whose_answer_was_lost_raises_outcome_unknown_in_the_program(code_mode):
    record = await parked_at_a_dialog(code_mode, """
        try:
            answer = await ask_user(question="Delete the account?")
        except RuntimeError as error:
            answer = str(error)
        answer
        """)
    result = await code_mode.resume(record, {}, SCHEMAS, FakePages())
    assert result.value == ("outcome unknown: the answer to the call to ask_user was lost; it may or may not have "
                            "taken effect"), result.text()


async def test_an_uncaught_lost_answer_ends_the_run_saying_so(code_mode):
    record = await parked_at_a_dialog(code_mode, "answer = await ask_user(question='Delete the account?')\nanswer")
    lost = asyncio.get_running_loop().create_future()
    lost.set_exception(AnswerLost())
    result = await code_mode.resume(record, {record.pending[0].call_id: lost}, SCHEMAS, FakePages())
    assert result.error is not None and result.error.kind == "exception" and result.error.line == 1
    assert result.error.message.startswith("RuntimeError: outcome unknown: the answer to the call to ask_user")


async def test_a_caller_saying_the_answer_is_lost_is_outcome_unknown_too(code_mode):
    async def pages(name: str, arguments: dict[str, Any]) -> Any:
        raise AnswerLost()

    result = await code_mode.run("try:\n    await get_order(order_id=1)\nexcept Exception as e:\n    r = str(e)\nr",
                                 SCHEMAS, pages)
    assert isinstance(result.value, str) and result.value.startswith("outcome unknown")


async def test_a_caller_reads_each_calls_sandbox_id_the_same_whenever_the_program_is_resumed(code_mode):
    """What lets a process resuming a program tell a call already sent from a new one."""
    ids: list[tuple[int, str]] = []
    pages = FakePages()

    async def tracking(name: str, arguments: dict[str, Any]) -> Any:
        ids.append((CALL_ID.get(), name))
        return await pages(name, arguments)

    parked: list[ParkedProgram] = []
    run = asyncio.create_task(code_mode.run(textwrap.dedent("""
        first = await get_order(order_id=1)
        answer = await ask_user(question="Go on?")
        import asyncio
        rest = await asyncio.gather(*[get_order(order_id=n) for n in range(2, 5)])
        [answer, first["id"], *[order["id"] for order in rest]]
        """), SCHEMAS, tracking, on_park=parked.append))
    await eventually(lambda: any(c.name == "ask_user" for record in parked for c in record.pending))
    record = ParkedProgram.from_json(parked[-1].to_json())
    await pages.user_answers.put("yes")
    assert (await asyncio.wait_for(run, 10)).value == ["yes", 1, 2, 3, 4]
    first_run, ids[:] = list(ids), []
    assert [call_id for call_id, _ in first_run] == sorted({call_id for call_id, _ in first_run})  # unique
    [pending] = record.pending
    assert (pending.call_id, pending.name) == first_run[1]
    for _ in range(2):  # resumed from the record, as another process would
        answer = asyncio.get_running_loop().create_future()
        answer.set_result("yes")
        resumed = await code_mode.resume(record, {pending.call_id: answer}, SCHEMAS, tracking)
        assert resumed.value == ["yes", 1, 2, 3, 4]
        assert ids == first_run[2:]
        ids.clear()


async def test_a_resumed_program_keeps_its_calls_count_printed_output_and_limits(code_mode):
    record = await parked_at_a_dialog(code_mode, """
        print("before")
        first = await get_order(order_id=1)
        answer = await ask_user(question="Go on?")
        [await get_order(order_id=n) for n in range(2, 6)]
        """)
    record = ParkedProgram.from_json(record.to_json().replace('"max_calls": 500', '"max_calls": 4'))
    answer = asyncio.get_running_loop().create_future()
    answer.set_result("yes")
    result = await code_mode.resume(record, {record.pending[0].call_id: answer}, SCHEMAS, FakePages())
    assert result.error is not None and result.error.limit == "max_calls"  # 2 before parking, 2 after, then over
    assert result.calls == 4 and result.printed == "before\n"


async def test_cancelling_a_run_ends_the_program_and_cancels_its_calls_in_flight(code_mode):
    pages = FakePages()
    run = asyncio.create_task(code_mode.run(textwrap.dedent("""
        import asyncio
        await asyncio.gather(ask_user(question="A?"), ask_user(question="B?"), ask_user(question="C?"))
        """), SCHEMAS, pages))
    await eventually(lambda: pages.in_flight == 3)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await eventually(lambda: pages.cancelled == ["ask_user"] * 3)
    await eventually(lambda: code_mode.workers_held == 0)


async def test_cancelling_a_computing_run_frees_its_worker_at_once():
    async with CodeMode(max_workers=1, limits=Limits(compute_seconds=120)) as code_mode:
        run = asyncio.create_task(code_mode.run("while True:\n    pass", SCHEMAS, FakePages()))
        await eventually(lambda: code_mode.workers_held == 1)
        await asyncio.sleep(0.2)  # computing, in the worker
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, 10)
        # Its one worker, killed, is replaced: the next program runs long before the loop's 120 s would end.
        after = await asyncio.wait_for(code_mode.run("6 * 7", SCHEMAS, FakePages()), 20)
        assert after.value == 42


async def test_a_call_the_program_never_awaits_is_cancelled_when_it_ends(code_mode):
    pages = FakePages()
    result = await code_mode.run("forgotten = ask_user(question='Anyone?')\n'done'", SCHEMAS, pages)
    assert result.value == "done"
    await eventually(lambda: pages.cancelled == ["ask_user"])


def test_a_record_goes_through_json_unchanged():
    record = ParkedProgram(run_id="r1", code="x = 1", snapshot=bytes(range(256)),
                           pending=(PendingCall(3, "ask_user", {"question": "Ship? ✓"}),), calls_started=4,
                           printed="été\n", printed_over=False, limits=Limits(max_calls=9), monty_version="1.4.0")
    assert ParkedProgram.from_json(record.to_json()) == record


@pytest.mark.parametrize("text", [
    "", "[]", "not json", '{"format": 2}', '{"format": 1}',
    json.dumps({"format": 1, "run_id": "r", "code": "1", "snapshot": "!!not base64!!", "pending": [],
                "calls_started": 0, "printed": "", "printed_over": False, "limits": {}, "monty_version": "1"}),
    json.dumps({"format": 1, "run_id": "r", "code": "1", "snapshot": "", "pending": [{"call_id": 1}],
                "calls_started": 0, "printed": "", "printed_over": False, "limits": {}, "monty_version": "1"}),
    json.dumps({"format": 1, "run_id": "r", "code": "1", "snapshot": "", "pending": [],
                "calls_started": 0, "printed": "", "printed_over": False, "limits": {"max_calls": 0},
                "monty_version": "1"}),
    json.dumps({"format": 1, "run_id": 7, "code": "1", "snapshot": "", "pending": [],
                "calls_started": 0, "printed": "", "printed_over": False, "limits": {}, "monty_version": "1"}),
])
def test_a_malformed_record_is_refused_saying_so(text):
    with pytest.raises(ValueError, match="not a parked program record"):
        ParkedProgram.from_json(text)


async def test_a_record_from_another_sandbox_version_is_refused(code_mode):
    record = await parked_at_a_dialog(code_mode, "await ask_user(question='Go?')")
    other = ParkedProgram.from_json(record.to_json().replace(pydantic_monty.__version__, "0.0.1"))
    result = await code_mode.resume(other, {}, SCHEMAS, FakePages())
    assert result.error is not None and result.error.kind == "invalid"
    assert f"parked by sandbox version 0.0.1, this process runs {pydantic_monty.__version__}" in result.error.message


async def test_a_damaged_snapshot_is_an_error_not_a_crash(code_mode):
    record = await parked_at_a_dialog(code_mode, "await ask_user(question='Go?')")
    damaged = ParkedProgram.from_json(record.to_json())
    damaged = ParkedProgram(**{**damaged.__dict__, "snapshot": damaged.snapshot[: len(damaged.snapshot) // 2]})
    result = await code_mode.resume(damaged, {}, SCHEMAS, FakePages())
    assert result.error is not None and result.error.kind == "invalid", result.text()
    assert result.error.message.startswith("the parked program cannot be loaded")
    after = await code_mode.run("[o['id'] for o in [await get_order(order_id=3)]]", SCHEMAS, FakePages())
    assert after.value == [order(3)["id"]]


async def test_closing_the_sandbox_ends_computing_and_parked_programs_with_a_clear_error():
    pages = FakePages()
    async with CodeMode(max_workers=2, limits=Limits(compute_seconds=120)) as code_mode:
        computing = asyncio.create_task(code_mode.run("while True:\n    pass", SCHEMAS, FakePages()))
        parked = asyncio.create_task(code_mode.run("await ask_user(question='Still there?')", SCHEMAS, pages))
        await eventually(lambda: code_mode.workers_held == 1 and pages.in_flight == 1)
        await asyncio.sleep(0.2)
    # Closed: the computing program is stopped rather than waited for (120 s).
    result = await asyncio.wait_for(computing, 10)
    assert result.error is not None and result.error.kind == "closed"
    assert result.error.message == "the sandbox is closed (the bridge is stopping)"
    await pages.user_answers.put("yes")  # the parked program's answer comes after: it cannot go on
    result = await asyncio.wait_for(parked, 10)
    assert result.error is not None and result.error.kind == "closed"
    after = await code_mode.run("1", SCHEMAS, FakePages())
    assert after.error is not None and after.error.kind == "closed"
