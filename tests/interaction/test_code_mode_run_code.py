"""Code mode through the bridge: an agent's `run_code` program calls its room's page tools (a real bridge, the
MCP SDK's client, a real test page) and only the program's value comes back. Each page call goes through a
direct call's checks; errors, refusals and limits end the run with an error naming what happened and where."""

from __future__ import annotations

import asyncio
import json
import textwrap

import pytest
from code_mode_support import (
    AGGREGATE,
    GET_ORDER,
    HOLD,
    OPEN_TOTAL,
    SHOP_HANDLERS,
    code_bridge,
    order,
    served_page,
    text_of,
)
from mcp import Client
from mcp.shared.exceptions import MCPError
from support import eventually, page, tool


def dedent(program: str) -> str:
    return textwrap.dedent(program).strip()


async def test_run_code_is_listed_beside_the_meta_tools_and_teaches_its_use():
    async with code_bridge() as bridge, Client(bridge.mcp_url(), mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools) == ["tool_search", "tool_describe", "call_tool", "run_code"]
        run_code = tools["run_code"]
        assert run_code.input_schema["required"] == ["code"]
        assert run_code.execution is not None and run_code.execution.task_support == "optional"
        for taught in ("async function", "asyncio.gather", "call_tool", "last expression", "tool_describe"):
            assert taught in run_code.description, taught
        assert "run_code" in client.instructions


async def test_the_aggregate_example_reads_40_orders_and_returns_only_the_total():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, served_page(bridge) as shop:
        result = await client.call_tool("run_code", {"code": AGGREGATE})
        assert not result.is_error, text_of(result)
        assert result.content[0].text == json.dumps(OPEN_TOTAL)
        assert result.structured_content == {"result": OPEN_TOTAL}
        assert sorted(p["order_id"] for p in shop.named("get_order")) == list(range(40))
        assert len(result.content[0].text) * 100 < shop.bytes_sent  # what the agent reads, against the pages


async def test_gathered_calls_wait_on_the_page_at_once():
    """The page answers only once all 8 calls are waiting on it: one after another, they would never be."""
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, \
            served_page(bridge, handlers={**SHOP_HANDLERS, "get_order": lambda params: HOLD}) as shop:
        program = ("import asyncio\n"
                   "[o['id'] for o in await asyncio.gather(*[get_order(order_id=n) for n in range(8)])]")
        call = asyncio.create_task(client.call_tool("run_code", {"code": program}))
        await eventually(lambda: len(shop.held) == 8)
        for call_id, event in list(shop.held.items()):
            await shop.answer(call_id, order(event["params"]["order_id"]))
        result = await asyncio.wait_for(call, 10)
        assert result.structured_content == {"result": list(range(8))}


async def test_a_pages_error_raises_in_the_program_caught_or_not():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, served_page(bridge):
        caught = await client.call_tool("run_code", {"code": dedent("""
            try:
                await refund(order_id=7)
            except Exception as error:
                outcome = f"refused: {error}"
            outcome
            """)})
        assert caught.structured_content == {"result": "refused: order 7 cannot be refunded"}

        uncaught = await client.call_tool("run_code", {"code": "first = await get_order(order_id=1)\n"
                                                               "await refund(order_id=first['id'])\n'not reached'"})
        assert uncaught.is_error
        assert text_of(uncaught).startswith("The program stopped (line 2): RuntimeError: order 1 cannot be "
                                            "refunded")
        assert uncaught.structured_content["error"] == {"kind": "exception", "line": 2,
                                                        "message": "RuntimeError: order 1 cannot be refunded"}


async def test_arguments_that_break_the_schema_never_reach_the_page():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, served_page(bridge) as shop:
        # Through call_tool the type checker cannot see the arguments: the hub's schema check refuses them.
        refused = await client.call_tool("run_code", {"code": dedent("""
            try:
                await call_tool("get_order", {"order_id": "seven"})
            except Exception as error:
                problem = str(error)
            problem
            """)})
        assert "Invalid arguments for get_order" in refused.structured_content["result"]
        # As functions, the type checker stops the program before it runs: a wrong name, a wrong type.
        for program, said in (("await get_order(id=7)", "Argument `id` does not match any known parameter"),
                              ("await get_order(order_id='seven')", "Argument to function `get_order` is "
                                                                    "incorrect")):
            result = await client.call_tool("run_code", {"code": program})
            assert result.is_error and result.structured_content["error"]["kind"] == "type_check"
            assert said in text_of(result) and "async def get_order(*, order_id: int) -> Any" in text_of(result)
        assert shop.invoked == []


@pytest.mark.parametrize(("program", "kind", "line", "said"), [
    ("x = 1\nif x\n    x = 2", "syntax", 2, "SyntaxError: Expected `:`"),
    ("total = 0\nfor n in range(3):\n    total += n\ntotal.nope()", "exception", 4, "AttributeError"),
    ("1 / 0", "exception", 1, "ZeroDivisionError"),
    ("class A:\n    pass\nclass B(A):\n    pass", "syntax", 3, "class inheritance"),
])
async def test_a_program_that_cannot_run_says_why_and_where(program, kind, line, said):
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client:
        result = await client.call_tool("run_code", {"code": program})
        assert result.is_error
        error = result.structured_content["error"]
        assert (error["kind"], error.get("line")) == (kind, line), text_of(result)
        assert said in text_of(result) and f"(line {line})" in text_of(result)


@pytest.mark.parametrize(("program", "said"), [
    ("open('/etc/passwd').read()", "PermissionError"),
    ("from pathlib import Path\nPath('/etc/hostname').read_text()", "PermissionError"),
    ("import subprocess\nsubprocess.run(['id'])", "No module named 'subprocess'"),
    ("import os\nos.system('id')", "has no attribute 'system'"),
    ("import socket\nsocket.create_connection(('127.0.0.1', 80))", "No module named 'socket'"),
    ("import os\nos.environ['AGUI_CODE_SECRET']", "'os.environ' is not supported"),
    ("import os\nos.getenv('AGUI_CODE_SECRET')", "'os.getenv' is not supported"),
])
async def test_a_program_reaches_no_file_network_process_or_environment(monkeypatch, program, said):
    monkeypatch.setenv("AGUI_CODE_SECRET", "hunter2")
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client:
        result = await client.call_tool("run_code", {"code": program})
        assert result.is_error and said in text_of(result), text_of(result)
        assert "hunter2" not in text_of(result) and "root:" not in text_of(result)


async def test_a_program_reaches_its_own_rooms_tools_and_nothing_else():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, served_page(bridge) as shop, \
            served_page(bridge, tool("open_vault", "Another room's tool."),
                        handlers={"open_vault": lambda params: "opened"}, room="other") as vault:
        reached = await client.call_tool("run_code", {"code": dedent("""
            try:
                await call_tool("open_vault", {})
            except Exception as error:
                refused = str(error)
            refused
            """)})
        assert reached.structured_content["result"].startswith("Unknown tool: open_vault")
        named = await client.call_tool("run_code", {"code": "await open_vault()"})
        assert named.is_error and "open_vault" in text_of(named)
        assert vault.invoked == [] and shop.invoked == []


async def test_a_deferred_tool_is_a_function_in_programs_and_the_meta_tools_answer_there_too():
    many = [tool(f"report_{n:02d}", f"Business report number {n}.", {"year": {"type": "integer"}}, ["year"])
            for n in range(60)]
    async with code_bridge(meta_tools="search-mode") as bridge, Client(bridge.mcp_url()) as client:
        async with page(bridge, *many) as reports:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert "run_code" in listed and "report_59" not in listed  # search mode: the last ones deferred

            async def answer() -> None:
                while True:
                    event = await reports.event()
                    if event["type"] == "agui.tool.invoke":
                        await reports.answer(event["call_id"], {"report": event["tool"], **event["params"]})

            answering = asyncio.create_task(answer())
            try:
                result = await client.call_tool("run_code", {"code": dedent("""
                    found = await tool_search(query="business report number 59", limit=1)
                    described = await tool_describe(name="report_59")
                    [await report_59(year=2026), found["matches"][0]["name"], described["python"]]
                    """)})
            finally:
                answering.cancel()
            assert not result.is_error, text_of(result)
            assert result.structured_content["result"] == [{"report": "report_59", "year": 2026}, "report_59",
                                                           "async def report_59(*, year: int) -> Any"]


async def test_tool_describe_shows_each_tools_python_signature():
    odd = tool("read-file", "A name that is no identifier.", {"path": {"type": "string"}}, ["path"])
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client:
        async with page(bridge, GET_ORDER, odd):
            described = await client.call_tool("tool_describe", {"name": "get_order"})
            assert described.structured_content["python"] == "async def get_order(*, order_id: int) -> Any"
            assert described.structured_content["inputSchema"] == GET_ORDER["inputSchema"]
            described = await client.call_tool("tool_describe", {"name": "read-file"})
            assert described.structured_content["python"] == "await call_tool('read-file', arguments)  # arguments: " \
                                                             "path: str"


async def test_a_huge_value_is_cut_with_a_note_and_what_was_printed_comes_back():
    async with code_bridge(code_max_value_chars=1000) as bridge, \
            Client(bridge.mcp_url()) as client:
        result = await client.call_tool("run_code", {"code": "print('making it')\n'x' * 5000"})
        assert not result.is_error
        value = result.structured_content["result"]
        assert value == result.content[0].text and value.startswith('"' + "x" * 999 + "…")
        assert "[cut: the value's JSON is 5,002 characters, over the 1,000 returned" in value
        assert result.content[1].text == "Printed:\nmaking it\n"
        assert result.structured_content["printed"] == "making it\n"


async def test_progress_tells_the_agent_of_each_page_call_finishing():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, served_page(bridge):
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        program = "[(await get_order(order_id=n))['id'] for n in range(3)]"
        result = await client.call_tool("run_code", {"code": program}, progress_callback=on_progress)
        assert result.structured_content == {"result": [0, 1, 2]}
        await eventually(lambda: len(seen) == 3)
        assert [message for *_, message in seen] == [f"{n} of {n} tool calls answered; last: get_order"
                                                     for n in (1, 2, 3)]
        assert [progress for progress, *_ in seen] == [1, 2, 3]


async def test_what_a_program_cannot_do_with_its_calls_is_an_error_it_can_read():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client, served_page(bridge) as shop:
        result = await client.call_tool("run_code", {"code": dedent("""
            problems = []
            for name, arguments in [("run_code", {"code": "1"}), ("nope", {}), ("get_order", {"order_id": 1.5})]:
                try:
                    await call_tool(name, arguments)
                except Exception as error:
                    problems.append(str(error))
            problems
            """)})
        problems = result.structured_content["result"]
        assert problems[0] == "run_code cannot run inside a program: call the tools themselves"
        assert problems[1].startswith("Unknown tool: nope")
        assert problems[2].startswith("Invalid arguments for get_order")
        assert shop.invoked == []


@pytest.mark.parametrize(("arguments", "said"), [
    ({}, "run_code needs the program as a string 'code'."),
    ({"code": 42}, "run_code needs the program as a string 'code'."),
    ({"code": "1" * 100_001}, "the program is 100,001 characters, over the limit of 100,000"),
])
async def test_a_malformed_run_code_call_is_refused_clearly(arguments, said):
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client:
        result = await client.call_tool("run_code", arguments)
        assert result.is_error and said in text_of(result)


async def test_a_page_cannot_take_the_code_tools_name():
    async with code_bridge() as bridge, Client(bridge.mcp_url()) as client:
        async with page(bridge, tool("run_code", "A page's own tool of that name.")) as p:
            registered = await p.register(tool("run_code", "Again."))
            [given] = registered["tools"]
            assert given["tool"] == "run_code" and given["name"].startswith("run_code__")
            result = await client.call_tool("run_code", {"code": "6 * 7"})
            assert result.structured_content == {"result": 42}


async def test_code_mode_off_hides_run_code_and_frees_its_name():
    async with code_bridge(code_mode="off") as bridge, Client(bridge.mcp_url()) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["tool_search", "tool_describe", "call_tool"]
        with pytest.raises(MCPError, match="Unknown tool: run_code"):
            await client.call_tool("run_code", {"code": "1"})
        described = await client.call_tool("tool_describe", {"name": "tool_search"})
        assert described.is_error  # a meta-tool is no page tool; and no page tool shows a signature
        async with page(bridge, tool("run_code", "The page's own tool.")) as p:
            invoked = asyncio.create_task(client.call_tool("run_code", {}))
            event = await p.event()
            assert event["tool"] == "run_code"
            await p.answer(event["call_id"], "the page's")
            assert text_of(await invoked) == "the page's"
        assert not bridge.bridge.programs.started


async def test_the_code_tool_can_be_renamed():
    async with code_bridge(code_tool_name="python") as bridge, \
            Client(bridge.mcp_url()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "python" in tools and "run_code" not in tools
        result = await client.call_tool("python", {"code": "sum(range(10))"})
        assert result.structured_content == {"result": 45}
        with pytest.raises(MCPError, match="Unknown tool: run_code"):
            await client.call_tool("run_code", {"code": "1"})


async def test_a_direct_calls_long_answer_is_cut_and_a_program_reads_it_whole():
    long = tool("long_report", "A long report.")
    typed = tool("typed_report", "A report with an output schema.",
                 outputSchema={"type": "object", "properties": {"text": {"type": "string"}}})
    handlers = {"long_report": lambda params: "x" * 5000, "typed_report": lambda params: {"text": "y" * 5000}}
    async with code_bridge(result_max_chars=1000) as bridge, \
            Client(bridge.mcp_url()) as client, served_page(bridge, long, typed, handlers=handlers):
        direct = await client.call_tool("long_report", {})
        assert not direct.is_error
        assert direct.content[0].text == "x" * 1000
        note = direct.content[1].text
        assert note.startswith("[cut: the answer is 5,000 characters, over the 1,000 this bridge returns.")
        assert "inside run_code" in note and "a program gets the whole answer" in note

        schema_bound = await client.call_tool("typed_report", {})
        assert schema_bound.is_error and schema_bound.structured_content is None
        assert "Its structured content cannot be cut, so this is an error result." in text_of(schema_bound)

        whole = await client.call_tool("run_code", {"code": "[len(await long_report()), "
                                                            "len((await typed_report())['text'])]"})
        assert whole.structured_content == {"result": [5000, 5000]}
