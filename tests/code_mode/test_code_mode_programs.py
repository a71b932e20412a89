"""Programs as agents write them, run in the real sandbox against tools that answer like pages: the value comes
back, the tools' answers and errors reach the program as values and exceptions, mistakes come back as errors that
say what and where."""

from __future__ import annotations

import asyncio
import textwrap
from typing import Any

import pytest
from code_mode_pages import SCHEMAS, FakePages, eventually, order, run_script

from bridge.code_mode import CallFinished, CodeMode, Limits, RunResult


@pytest.fixture(scope="module")
async def code_mode():
    async with CodeMode(max_workers=3) as engine:
        yield engine


@pytest.fixture(scope="module")
async def unchecked():
    """An engine that does not type-check programs: what a program does at run time, unchecked."""
    async with CodeMode(max_workers=1, type_check=False) as engine:
        yield engine


async def run(engine: CodeMode, program: str, pages: FakePages | None = None, **options: Any) -> RunResult:
    return await engine.run(textwrap.dedent(program), SCHEMAS, pages or FakePages(), **options)


async def test_the_aggregate_example_reads_40_orders_and_returns_only_the_total(code_mode):
    pages = FakePages()
    result = await run(code_mode, """
        import asyncio
        orders = await asyncio.gather(*[get_order(order_id=i) for i in range(40)])
        open_orders = [o for o in orders if o["status"] == "open"]
        print(f"{len(open_orders)} open of {len(orders)}")
        round(sum(o["total"] for o in open_orders), 2)
        """, pages)
    assert result.ok, result.text()
    assert result.value == sum(order(n)["total"] for n in range(40) if n % 2)
    assert result.value_text == "600.0"
    assert result.printed == "20 open of 40\n"
    assert result.calls == 40 and len(pages.named("get_order")) == 40


async def test_gathered_calls_run_together(code_mode):
    pages = FakePages()
    arrived = asyncio.Event()

    async def waits_for_all_five(arguments: dict[str, Any]) -> Any:
        if pages.in_flight == 5:
            arrived.set()
        await asyncio.wait_for(arrived.wait(), 10)  # sequential calls would never get here: the wait would fail
        return order(arguments["order_id"])

    pages.tools["get_order"] = waits_for_all_five
    result = await run(code_mode, """
        import asyncio
        orders = await asyncio.gather(*(get_order(order_id=n) for n in range(5)))
        [o["id"] for o in orders]
        """, pages)
    assert result.value == [0, 1, 2, 3, 4], result.text()
    assert pages.max_in_flight == 5


async def test_a_tool_error_is_an_exception_the_program_can_catch(code_mode):
    result = await run(code_mode, """
        outcomes = {}
        for n in (1, 5000):
            try:
                outcomes[n] = (await get_order(order_id=n))["total"]
            except Exception as error:
                outcomes[n] = f"{type(error).__name__}: {error}"
        try:
            await refuse()
        except RuntimeError as error:
            outcomes["refused"] = str(error)
        outcomes
        """)
    assert result.value == {"1": 11.0, "5000": "RuntimeError: No order 5000", "refused": "The user said no."}


async def test_an_uncaught_tool_error_ends_the_run_naming_the_line(code_mode):
    result = await run(code_mode, """
        first = await get_order(order_id=2)
        second = await get_order(order_id=-1)
        first
        """)
    assert result.error is not None and result.error.kind == "exception"
    assert result.error.message == "RuntimeError: No order -1"
    assert result.error.line == 3
    assert "second = await get_order(order_id=-1)" in result.error.details
    assert "line 3" in result.text()


async def test_a_program_exception_names_the_line_in_its_function(code_mode):
    result = await run(code_mode, """
        def total(orders):
            return sum(o["price"] for o in orders)
        orders = [await get_order(order_id=1)]
        total(orders)
        """)
    assert result.error is not None and result.error.kind == "exception"
    assert result.error.message.startswith("KeyError:") and "price" in result.error.message
    assert result.error.line == 3
    assert 'File "program", line 3' in result.error.details


@pytest.mark.parametrize(("program", "line"), [
    ("x = 1\ny = (\n", 3),
    ("orders = []\nif orders\n    print(orders)\n", 2),
    ("x = 1\n  y = 2\n", 2),
])
async def test_a_syntax_error_names_its_line_and_no_tool_is_called(code_mode, program, line):
    pages = FakePages()
    result = await code_mode.run(program, SCHEMAS, pages)
    assert result.error is not None and result.error.kind == "syntax", result.text()
    assert result.error.line == line
    assert pages.calls == []


@pytest.mark.parametrize(("program", "missing"), [
    ("def numbers():\n    yield 1\nlist(numbers())", "yield expressions"),
    ("class Base:\n    pass\nclass Order(Base):\n    pass", "class inheritance"),
    ("x = 1\ndel x", "'del' statement"),
])
async def test_what_the_subset_lacks_is_a_syntax_error_before_any_call(code_mode, program, missing):
    pages = FakePages()
    result = await code_mode.run("first = await get_order(order_id=1)\n" + program, SCHEMAS, pages)
    assert result.error is not None and result.error.kind == "syntax"
    assert missing in result.error.message and "sandbox's Python" in result.error.message
    assert pages.calls == []


async def test_a_wrong_argument_name_fails_the_type_check_before_any_tool_is_called(code_mode):
    pages = FakePages()
    result = await run(code_mode, """
        first = await get_order(order_id=1)
        second = await get_order(orderid=2)
        [first, second]
        """, pages)
    assert result.error is not None and result.error.kind == "type_check"
    assert result.error.line == 3
    assert "orderid" in result.error.details
    assert "async def get_order(*, order_id: int) -> Any" in result.error.details  # what it takes
    assert pages.calls == []


@pytest.mark.parametrize(("program", "found"), [
    ("await get_ordr(order_id=1)", "get_ordr"),  # a misspelt tool
    ("await get_order(order_id='3')", "Expected `int`"),  # a string where the schema wants an integer
    ("o = get_order(order_id=3)\no['total']", "CoroutineType"),  # a call not awaited
    ("await call_tool('get_order', [3])", "call_tool"),
])
async def test_the_type_check_stops_misspelt_names_wrong_types_and_missing_awaits(code_mode, program, found):
    pages = FakePages()
    result = await code_mode.run(program, SCHEMAS, pages)
    assert result.error is not None and result.error.kind == "type_check", result.text()
    assert found in result.error.details
    assert pages.calls == []


async def test_the_type_check_lets_dynamic_idioms_run(code_mode):
    """What a strict checker rejects but runs fine: a match that may be None, a module name rebound."""
    result = await run(code_mode, """
        import re
        import json
        found = re.match(r"sku-(\\d+)", (await get_order(order_id=7))["items"][0]["sku"])
        json = json.dumps({"n": found.group(1)})
        json
        """)
    assert result.value == '{"n": "7"}', result.text()


async def test_the_usual_agent_idioms_work(code_mode):
    result = await run(code_mode, """
        import asyncio, json, re
        from collections import Counter, defaultdict
        from datetime import date, datetime, timedelta

        async def fetch(n):
            try:
                return await get_order(order_id=n)
            except Exception as error:
                return {"id": n, "error": str(error)}

        orders = await asyncio.gather(*[fetch(n) for n in [3, 1, 2, 9999]])
        good = sorted((o for o in orders if "error" not in o), key=lambda o: -o["total"])
        by_status = defaultdict(list)
        for o in good:
            by_status[o["status"]].append(o["id"])
        skus = [item["sku"] for o in good for item in o["items"] if item["qty"] > 1]
        counts = Counter(o["status"] for o in good)
        due = (date(2024, 2, 27) + timedelta(days=3)).isoformat()
        stamp = datetime(2024, 1, 2, 3, 4, 5).strftime("%Y-%m-%d %H:%M")
        digits = [int(d) for d in re.findall(r"\\d+", "a1b22c333")]
        summary = {"by_status": dict(by_status), "skus": skus, "open": counts["open"], "due": due,
                   "stamp": stamp, "digits": digits, "errors": [o["error"] for o in orders if "error" in o],
                   "pairs": sorted({f"{k}:{v}" for k, v in zip("ab", (1, 2))}), "text": f"{good[0]['total']:>8.2f}"}
        json.loads(json.dumps(summary))
        """)
    assert result.ok, result.text()
    assert result.value == {
        "by_status": {"open": [3, 1], "closed": [2]}, "skus": ["sku-3-1", "sku-2-1", "sku-1-1"], "open": 2,
        "due": "2024-03-01", "stamp": "2024-01-02 03:04", "digits": [1, 22, 333],
        "errors": ["No order 9999"], "pairs": ["a:1", "b:2"], "text": "   13.00"}


async def test_a_top_level_return_is_the_value(code_mode):
    result = await run(code_mode, """
        first = await get_order(order_id=1)
        if first["status"] == "open":
            return {"open": first["id"]}
        "never"
        """)
    assert result.value == {"open": 1}


@pytest.mark.parametrize(("program", "value"), [
    ("", None),
    ("x = 1", None),
    ("(1, 'a', None, True)", [1, "a", None, True]),
    ("{3, 1, 2}", [1, 2, 3]),
    ("{1: 'a', None: 'b'}", {"1": "a", "null": "b"}),
    ("b'bytes'", "bytes"),
    ("import datetime\ndatetime.date(2024, 5, 1)", "2024-05-01"),
    ("float('nan')", "nan"),
    ("2 ** 100", 2 ** 100),
])
async def test_values_come_back_as_json(code_mode, program, value):
    result = await code_mode.run(program, SCHEMAS, FakePages())
    assert result.ok, result.text()
    assert result.value == value


async def test_a_value_nested_past_the_limit_is_an_error_not_a_crash(code_mode):
    result = await run(code_mode, """
        value = []
        for _ in range(5000):
            value = [value]
        value
        """)
    assert result.error is not None and result.error.kind == "value"
    assert "nests deeper than" in result.error.message


async def test_a_huge_value_is_cut_with_a_note_saying_how_large_it_was(code_mode):
    result = await run(code_mode, """
        [{"id": n, "name": "customer " * 5} for n in range(2000)]
        """)
    assert result.ok and result.cut
    assert result.value_chars > 100_000
    assert result.value == result.value_text and len(result.value_text) < 20_000 + 300
    assert f"{result.value_chars:,} characters" in result.value_text
    assert "aggregate" in result.value_text
    small = await run(code_mode, "'x' * 19000")
    assert not small.cut and small.value == "x" * 19000


async def test_print_is_captured(code_mode):
    result = await run(code_mode, """
        import sys
        for n in range(3):
            print("order", n, end=";")
        print()
        print("to stderr", file=sys.stderr)
        "done"
        """)
    assert result.value == "done"
    assert result.printed == "order 0;order 1;order 2;\nto stderr\n"
    assert result.text() == '"done"\n\nPrinted:\n' + result.printed


async def test_call_tool_reaches_names_that_are_not_identifiers_and_mcp_answers_become_values(code_mode):
    pages = FakePages()
    result = await run(code_mode, """
        file = await call_tool("read-file", {"path": "notes.txt"})
        same = await call_tool(name="get_order", arguments={"order_id": 4})
        none = await call_tool("list_orders")
        try:
            await call_tool("no_such_tool", {})
        except Exception as error:
            missing = str(error)
        {"file": file, "same": same["id"], "listed": len(none), "missing": missing}
        """, pages)
    assert result.value == {"file": {"path": "notes.txt", "size": 12}, "same": 4, "listed": 50,
                            "missing": "Unknown tool: no_such_tool"}, result.text()
    assert pages.named("list_orders") == [{}]


async def test_a_text_only_mcp_answer_is_its_text(code_mode):
    pages = FakePages()
    await pages.user_answers.put("Yes, ship it.")
    result = await run(code_mode, "await ask_user(question='Ship?')", pages)
    assert result.value == "Yes, ship it."


async def test_a_tool_read_as_a_value_is_still_the_tool(code_mode):
    result = await run(code_mode, """
        fetch = get_order
        calls = {"get": get_order, "any": call_tool}
        [(await fetch(order_id=1))["id"], (await calls["any"]("get_order", {"order_id": 2}))["id"]]
        """)
    assert result.value == [1, 2], result.text()


async def test_progress_is_told_as_each_call_finishes(code_mode):
    told: list[CallFinished] = []
    result = await run(code_mode, """
        import asyncio
        await asyncio.gather(get_order(order_id=1), get_order(order_id=2))
        try:
            await refuse()
        except Exception:
            pass
        await get_order(order_id=3)
        """, on_call_finished=told.append)
    assert result.ok, result.text()
    await eventually(lambda: len(told) == 4)
    assert [(t.name, t.ok) for t in told[2:]] == [("refuse", False), ("get_order", True)]
    assert [t.finished for t in told] == [1, 2, 3, 4]
    assert told[-1].started == 4


# --- mistakes met at run time (the type check off) ------------------------------------------------------------


@pytest.mark.parametrize(("program", "expected"), [
    ("await get_order(3)", "TypeError: get_order() takes keyword arguments only: async def get_order(*, order_id: "
                           "int) -> Any"),
    ("await get_order(order_id={1, 2})", "TypeError: order_id is a set: tools take JSON values"),
    ("await get_order(order_id=float('inf'))", "TypeError: order_id is inf, which JSON cannot carry"),
    ("await call_tool('get_order', {1: 2})", "TypeError: arguments has the key 1: JSON object keys are strings"),
    ("await call_tool(7, {})", "TypeError: call_tool() needs the tool's name as a string, not int"),
    ("await call_tool('get_order', [1])", "TypeError: call_tool() takes the arguments as a dict, not list"),
    ("await call_tool('get_order', {}, 3)", "TypeError: call_tool() takes 2 arguments (name, arguments) but 3 were"),
    ("await call_tool('get_order', tool='x')", "TypeError: call_tool() got an unexpected keyword argument 'tool'"),
    ("await no_such_function(x=1)", "NameError: name 'no_such_function' is not defined"),
    ("__import__('os')", "NameError: name '__import__' is not defined"),
    ("f = no_such_name", "NameError: name 'no_such_name' is not defined"),
])
async def test_a_bad_call_is_an_exception_in_the_program_and_reaches_no_tool(unchecked, program, expected):
    pages = FakePages()
    result = await unchecked.run(program, SCHEMAS, pages)
    assert result.error is not None and result.error.kind == "exception", result.text()
    assert result.error.message.startswith(expected)
    assert pages.calls == []


async def test_a_bad_call_can_be_caught_and_the_program_goes_on(unchecked):
    result = await unchecked.run(textwrap.dedent("""
        try:
            await get_order(5)
        except TypeError as error:
            problem = str(error)
        [problem.split(":")[0], (await get_order(order_id=5))["id"]]
        """), SCHEMAS, FakePages())
    assert result.value == ["get_order() takes keyword arguments only", 5]


async def test_a_program_past_its_length_limit_is_refused_before_it_runs(code_mode):
    pages = FakePages()
    result = await code_mode.run("x = 1\n" * 20, SCHEMAS, pages, limits=Limits(max_program_chars=100))
    assert result.error is not None and result.error.kind == "invalid"
    assert "120 characters, over the limit of 100" in result.error.message
    assert pages.calls == []


async def test_a_caller_failing_unexpectedly_fails_that_call_only(code_mode):
    def broken(name: str, arguments: dict[str, Any]) -> Any:
        raise LookupError("the hub is confused")

    result = await code_mode.run("try:\n    await get_order(order_id=1)\nexcept Exception as e:\n    r = str(e)\nr",
                                 SCHEMAS, broken)
    assert result.value == "LookupError: the hub is confused"


def test_the_package_imports_neither_starlette_nor_mcp():
    """It belongs with the core, which the MCP edge builds on."""
    code = ("import sys, bridge.code_mode\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', 'starlette', 'uvicorn', "
            "'sse_starlette', 'websockets'}))")
    done = run_script(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


async def test_a_program_holding_a_lone_surrogate_is_refused_and_a_page_text_holding_one_is_repaired(code_mode):
    pages = FakePages()
    refused = await code_mode.run("x = '\ud800'", SCHEMAS, pages)
    assert refused.error is not None and refused.error.kind == "invalid"
    assert "lone surrogate at character 5" in refused.error.message
    await pages.user_answers.put("cut emoji: \ud83d")  # JSON can carry half an emoji; the sandbox's text cannot
    pages.tools["read-file"] = lambda arguments: asyncio.sleep(0, {"\udc00key": ["ok", "\ud83d\ude00 whole"]})
    result = await run(code_mode, """
        [await ask_user(question="Emoji?"), await call_tool("read-file", {"path": "x"})]
        """, pages)
    assert result.value == ["cut emoji: \ufffd", {"\ufffdkey": ["ok", "\U0001f600 whole"]}], result.text()
