"""bridge.core.programs and bridge.core.code_tool, with a real hub and no network: what a run returns to the agent,
which tools a program's type check reads, how a program's call is refused before any page hears of it, and the
sandbox's life (started by the first program, stopped with `serving`)."""

from __future__ import annotations

import dataclasses

import pytest

from bridge.code_mode import Limits, ParkedProgram, RunError, RunResult, ToolError
from bridge.core.catalog import check_definition
from bridge.core.code_tool import code_limits, run_code_definition
from bridge.core.defaults import CODE, CodeConfig, HubConfig
from bridge.core.hub import Hub
from bridge.core.programs import ParkedHere, Programs, RoomCaller, program_result

ORDER = {"name": "get_order", "description": "Read an order.",
         "inputSchema": {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}}


def shop_hub(tools: int = 1, **config: object) -> Hub:
    """A hub whose default room has get_order and `tools - 1` reports, from a page that is not connected."""
    hub = Hub(HubConfig(**config))  # type: ignore[arg-type]
    definitions = [ORDER] + [{"name": f"report_{n}", "description": f"Report {n}.",
                              "inputSchema": {"type": "object", "properties": {}}} for n in range(tools - 1)]
    hub.room("default").register("S" * 22, "Shop", [check_definition(d) for d in definitions])
    return hub


def test_the_bridges_defaults_are_the_engines():
    assert code_limits(CODE) == Limits()
    assert code_limits(CodeConfig(memory_mb=16, max_calls=3)).memory_bytes == 16 * 1024 * 1024


def test_the_run_code_definition_names_the_meta_tools_as_configured():
    definition = run_code_definition(CodeConfig(tool_name="python"), search="find", describe="show")
    assert definition["name"] == "python" and definition["execution"] == {"taskSupport": "optional"}
    assert "`await find(query=...)`" in definition["description"] and "`await show(name=...)`" in \
        definition["description"]
    assert definition["inputSchema"]["required"] == ["code"] and definition["outputSchema"]["required"] == ["result"]


def test_a_value_comes_back_as_json_text_and_structured_content():
    shown = program_result(RunResult(value={"total": 3}, value_text='{"total": 3}', printed="hi\n"))
    assert shown == {"content": [{"type": "text", "text": '{"total": 3}'}, {"type": "text", "text": "Printed:\nhi\n"}],
                     "structuredContent": {"result": {"total": 3}, "printed": "hi\n"}, "isError": False}
    assert program_result(RunResult())["structuredContent"] == {"result": None}


def test_an_error_names_what_happened_and_where():
    shown = program_result(RunResult(error=RunError("limit", "memory limit reached", 4, limit="memory_bytes")))
    assert shown["isError"] is True
    assert shown["content"] == [{"type": "text", "text": "The program stopped (line 4): memory limit reached"}]
    assert shown["structuredContent"] == {"error": {"kind": "limit", "message": "memory limit reached", "line": 4,
                                                    "limit": "memory_bytes"}}
    unplaced = program_result(RunResult(error=RunError("closed", "the sandbox is closed")))
    assert unplaced["structuredContent"] == {"error": {"kind": "closed", "message": "the sandbox is closed"}}


def test_the_type_check_reads_the_stubs_of_the_tools_a_program_names_only():
    hub = shop_hub(tools=1000)
    programs = Programs(hub, CODE)
    assert hub.room("default").is_deferred("report_998")  # 1000 tools: search mode, most of them deferred
    named = programs._tools_named("default", "a = await report_998()\nb = await get_order(order_id=1)\n"
                                             "c = await tool_search(query='x')  # report_5 in a comment\n"
                                             "await call_tool('report_7', {})\nrun_code")
    assert set(named) == {"report_998", "get_order", "tool_search", "report_5", "report_7"}
    assert named["get_order"] == ORDER["inputSchema"]
    assert hub.room("default").is_deferred("report_998")  # naming a tool activates nothing


async def test_a_programs_call_is_refused_before_any_page_hears_of_it():
    hub = shop_hub()
    caller = RoomCaller(hub, "default", pages_url=lambda: "http://127.0.0.1:8765/", deadline=hub.calls.clock().deadline)
    with pytest.raises(ToolError, match=r"^Unknown tool: get_ordr\. Did you mean \"get_order\"\?"):
        await caller("get_ordr", {})
    with pytest.raises(ToolError, match="run_code cannot run inside a program"):
        await caller("run_code", {"code": "1"})
    with pytest.raises(ToolError, match="Invalid arguments for get_order"):
        await caller("get_order", {"order_id": "seven"})
    with pytest.raises(ToolError, match="The page that provides this tool went away"):  # its page is not here
        await caller("get_order", {"order_id": 7})
    assert len(hub.calls) == 0 and hub.refused[0]["reason"].startswith("Invalid arguments for get_order")
    found = await caller("tool_search", {"query": "order"})  # a meta-tool's own answer
    assert found["structuredContent"]["matches"][0]["name"] == "get_order"
    described = await caller("tool_describe", {"name": "get_order"})
    assert described["structuredContent"]["python"] == "async def get_order(*, order_id: int) -> Any"


async def test_with_code_mode_off_run_code_is_no_tool():
    hub = Hub(HubConfig(code=dataclasses.replace(CODE, mode="off")))
    assert "run_code" not in [d["name"] for d in hub.meta.definitions] and list(hub.meta.names) == [
        "tool_search", "tool_describe", "call_tool"]
    caller = RoomCaller(hub, "default", pages_url=lambda: "http://127.0.0.1:8765/", deadline=hub.calls.clock().deadline)
    with pytest.raises(ToolError, match="Unknown tool: run_code"):
        await caller("run_code", {"code": "1"})


async def test_the_sandbox_starts_with_the_first_program_and_stops_with_serving():
    programs = Programs(shop_hub(), CODE)
    refused = await programs.run("default", "1 + 1", pages_url=lambda: "")
    assert refused["isError"] and "the sandbox is not running" in refused["content"][0]["text"]
    async with programs.serving():
        assert not programs.started
        done = await programs.run("default", "1 + 1", pages_url=lambda: "")
        assert done["structuredContent"] == {"result": 2} and programs.started
        assert programs.state() == {"running": 0, "workers_held": 0}
    assert not programs.started and programs.workers_held == 0


def test_parked_records_are_kept_until_their_run_ends():
    parked = ParkedHere()
    record = ParkedProgram(run_id="r1", code="1", snapshot=b"x", pending=(), calls_started=0, printed="",
                           printed_over=False, limits=Limits(), monty_version="0")
    parked.parked(record)
    parked.parked(dataclasses.replace(record, calls_started=2))  # parked again: still one run
    assert len(parked) == 1
    parked.ended("r1")
    parked.ended("r1")
    assert len(parked) == 0


@pytest.mark.parametrize("binary", ["missing", "unusable"])
async def test_a_sandbox_that_cannot_start_is_an_error_the_agent_reads(monkeypatch, binary):
    """No `monty` binary where the sandbox looks for one (an installation without it), or one that cannot run."""
    import pydantic_monty._binary

    if binary == "missing":
        monkeypatch.delenv("MONTY_BIN", raising=False)
        monkeypatch.setattr(pydantic_monty._binary, "_script_dirs", lambda: [])
        monkeypatch.setenv("PATH", "/nonexistent")
    else:
        monkeypatch.setenv("MONTY_BIN", "/nonexistent/monty")
    programs = Programs(shop_hub(), CODE)
    async with programs.serving():
        result = await programs.run("default", "1 + 1", pages_url=lambda: "")
    assert result["isError"] and result["structuredContent"]["error"]["kind"] == "crashed"
    assert result["content"][0]["text"].startswith("The program stopped: the sandbox could not start: ")
    assert not programs.started
