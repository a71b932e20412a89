"""Each limit of a run ends it with an error naming the limit; computing time counts only computing, never the
time a program waits on pages."""

from __future__ import annotations

import asyncio
import textwrap

import pytest
from code_mode_pages import SCHEMAS, FakePages, eventually

from bridge.code_mode import CodeMode, Limits, run_code_description


@pytest.fixture(scope="module")
async def code_mode():
    async with CodeMode(max_workers=2) as engine:
        yield engine


async def test_the_calls_limit_ends_the_run_at_the_call_past_it(code_mode):
    pages = FakePages()
    result = await code_mode.run(textwrap.dedent("""
        totals = []
        for n in range(10):
            totals.append((await get_order(order_id=n))["total"])
        totals
        """), SCHEMAS, pages, limits=Limits(max_calls=5))
    assert result.error is not None and result.error.kind == "limit" and result.error.limit == "max_calls"
    assert result.error.message == "calls limit reached: a run starts at most 5 tool calls"
    assert result.error.line == 4
    assert len(pages.calls) == 5 and result.calls == 5


async def test_the_calls_in_flight_limit_ends_the_run_and_cancels_the_calls_it_started(code_mode):
    pages = FakePages()
    result = await code_mode.run(textwrap.dedent("""
        import asyncio
        await asyncio.gather(*[ask_user(question=f"Ship order {n}?") for n in range(5)])
        """), SCHEMAS, pages, limits=Limits(max_calls_in_flight=3))
    assert result.error is not None and result.error.limit == "max_calls_in_flight"
    assert "at most 3 tool calls" in result.error.message and "smaller batches" in result.error.message
    assert result.error.line == 3
    assert len(pages.calls) == 3
    await eventually(lambda: len(pages.cancelled) == 3)


async def test_calls_one_after_another_stay_under_the_in_flight_limit(code_mode):
    result = await code_mode.run("[(await get_order(order_id=n))['id'] for n in range(6)]", SCHEMAS, FakePages(),
                                 limits=Limits(max_calls_in_flight=1))
    assert result.value == [0, 1, 2, 3, 4, 5], result.text()


async def test_printing_past_the_limit_ends_the_run_keeping_what_was_printed_up_to_it(code_mode):
    result = await code_mode.run("for n in range(1000):\n    print('line', n)\n'never'", SCHEMAS, FakePages(),
                                 limits=Limits(max_printed_chars=100))
    assert result.error is not None and result.error.kind == "limit" and result.error.limit == "max_printed_chars"
    assert result.error.message.startswith("printed output limit reached (100 characters)")
    assert result.printed == "".join(f"line {n}\n" for n in range(20))[:100]


async def test_catching_the_print_limit_does_not_get_around_it(code_mode):
    result = await code_mode.run(textwrap.dedent("""
        for n in range(1000):
            try:
                print("line", n)
            except Exception:
                pass
        "finished"
        """), SCHEMAS, FakePages(), limits=Limits(max_printed_chars=50))
    assert result.error is not None and result.error.limit == "max_printed_chars"
    assert len(result.printed) == 50


async def test_time_waiting_on_pages_is_not_computing_time(code_mode):
    pages = FakePages()
    run = asyncio.create_task(code_mode.run(textwrap.dedent("""
        answers = []
        for n in range(3):
            answers.append(await ask_user(question=f"Step {n}?"))
        answers
        """), SCHEMAS, pages, limits=Limits(compute_seconds=0.5)))
    for n in range(3):  # the user takes longer to answer than the program may compute in all
        await eventually(lambda: len(pages.calls) == n + 1)
        await asyncio.sleep(0.6)
        await pages.user_answers.put(f"answer {n}")
    result = await asyncio.wait_for(run, 30)
    assert result.value == ["answer 0", "answer 1", "answer 2"], result.text()


async def test_computing_time_adds_up_across_calls_and_parks(code_mode):
    """Each stretch of computing between calls is short; their sum reaches the limit (the sandbox's clock
    survives the program being parked and loaded again)."""
    result = await code_mode.run(textwrap.dedent("""
        while True:
            for n in range(100_000):
                pass
            await get_order(order_id=1)
        """), SCHEMAS, FakePages(delay=0.05), limits=Limits(compute_seconds=0.5, max_calls=100_000))
    assert result.error is not None and result.error.limit == "compute_seconds", result.text()
    assert result.calls >= 2


@pytest.mark.parametrize("field", ["compute_seconds", "memory_bytes", "max_calls", "max_calls_in_flight",
                                   "max_printed_chars", "max_value_chars", "max_program_chars"])
@pytest.mark.parametrize("bad", [0, -1, True, "10"])
def test_a_limit_must_be_a_positive_number(field, bad):
    with pytest.raises(ValueError, match=f"Limits.{field} must be a positive number"):
        Limits(**{field: bad})


def test_the_description_teaches_the_tool_with_its_limits():
    text = run_code_description(Limits(compute_seconds=2, max_calls=40, max_calls_in_flight=8))
    assert "await get_order(order_id=3)" in text and "call_tool" in text and "asyncio.gather" in text
    assert "2 s of computing" in text and "40 tool calls (8 at once)" in text and "20,000 characters" in text
    assert "no class inheritance, generators, `del`, files, network" in text
    assert len(text.splitlines()) <= 8


@pytest.mark.parametrize(("options", "problem"), [
    ({"max_workers": 0}, "need 1 <= max_workers"),
    ({"max_workers": 2, "warm_workers": 3}, "warm_workers <= max_workers"),
    ({"park_after": -1}, "need park_after >= 0"),
    ({"turn_timeout": 0}, "turn_timeout > 0"),
])
def test_an_engine_with_impossible_settings_is_refused_saying_why(options, problem):
    with pytest.raises(ValueError, match=problem):
        CodeMode(**options)


async def test_calling_out_of_the_sandbox_past_its_bound_ends_the_run(code_mode):
    """Refused file accesses are round trips to the host too: the sandbox bounds them all, sized from
    `max_calls`."""
    result = await code_mode.run(textwrap.dedent("""
        refused = 0
        for n in range(3000):
            try:
                open("/etc/hostname")
            except OSError:
                refused += 1
        refused
        """), SCHEMAS, FakePages(), limits=Limits(max_calls=1))
    assert result.error is not None and result.error.kind == "limit" and result.error.limit == "max_calls"
    assert "called out of the sandbox too often (over 1,002 times" in result.error.message
    assert result.error.line == 5
