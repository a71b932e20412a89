"""Code mode in the bridge (`Programs`): an agent's `run_code` program runs in the sandbox (bridge.code_mode),
each tool call it makes goes through exactly the checks of a direct call in the agent's room (`RoomCaller`:
`Hub.route`, then `Hub.call`), and its value comes back as a CallToolResult (`program_result`).

The sandbox's worker processes start with the first program (a bridge nobody sends a program to starts none)
and stop with the bridge (`serving`, in its lifespan). A program waiting on pages holds no worker: the engine
parks it and hands its record (plain data) to `ParkedPrograms`, this process's memory by default; a store other
processes read can take its place, so that one of them resumes a program whose process died.

What runs where: the MCP edge routes a `run_code` call here and owns what is MCP's (progress, the agent's
cancel, tasks); the engine owns the sandbox; this module joins them to the hub.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from bridge.code_mode import (
    CALL_TOOL,
    CallFinishedSink,
    CodeMode,
    ParkedProgram,
    RunError,
    RunResult,
    ToolError,
    ToolSchemas,
)
from bridge.core.calls import CallClock
from bridge.core.code_tool import RunProgram, code_limits
from bridge.core.defaults import CodeConfig
from bridge.core.meta_tools import Invoke, UnknownTool
from bridge.core.results import to_call_tool_result

if TYPE_CHECKING:
    from bridge.core.hub import Hub

log = logging.getLogger(__name__)

# What a page is told a program's call can answer of its input requests: nothing (a program cannot ask its agent).
NO_INPUT: dict[str, Any] = {"client_capabilities": {}}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # what can name a tool as a function in a program (ASCII only)
WARM_WORKERS = 1  # started with the first program; more start as programs need them, up to CodeConfig.workers
# A worker that does not answer one request of the engine in this long is killed: well past a program's compute
# time, which ends any single request first.
TURN_TIMEOUT_MIN = 60.0
NOT_SERVING = RunResult(error=RunError("closed", "the sandbox is not running (the bridge is stopping)"))


class ParkedPrograms(Protocol):
    """Where the records of parked programs are kept while their runs last. A store every bridge process reads
    (shared mode) lets another process resume a program whose process died (`CodeMode.resume`)."""

    def parked(self, room: str, record: ParkedProgram) -> None:
        """The program waits on calls and holds no worker: `record` is where it would resume."""

    def ended(self, run_id: str) -> None:
        """The run is over (a value, an error, a cancel): its record goes."""


class ParkedHere:
    """This process's memory: the last record of each parked program, by run id."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[str, ParkedProgram]] = {}

    def __len__(self) -> int:
        return len(self._records)

    def parked(self, room: str, record: ParkedProgram) -> None:
        self._records[record.run_id] = (room, record)

    def ended(self, run_id: str) -> None:
        self._records.pop(run_id, None)


class Programs:
    """Runs agents' programs against their rooms' tools."""

    def __init__(self, hub: Hub, config: CodeConfig, parked: ParkedPrograms | None = None) -> None:
        self.hub, self.config = hub, config
        self.limits = code_limits(config)
        self.parked = parked if parked is not None else ParkedHere()
        self.running = 0  # runs in progress, parked or not
        self._engine: CodeMode | None = None
        self._serving = False
        self._starting: asyncio.Lock | None = None

    @property
    def workers_held(self) -> int:
        """Sandbox workers held by programs now (a parked program holds none)."""
        return self._engine.workers_held if self._engine is not None else 0

    @property
    def started(self) -> bool:
        """Whether the sandbox's workers were started (by a first program)."""
        return self._engine is not None

    def state(self) -> dict[str, int]:
        return {"running": self.running, "workers_held": self.workers_held}

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Programs run while this lasts (the bridge's lifespan); the sandbox stops with it."""
        self._serving = True
        try:
            yield
        finally:
            self._serving = False
            engine, self._engine = self._engine, None
            if engine is not None:
                await engine.__aexit__(None, None, None)  # a program still computing is stopped

    async def run(self, room: str, code: str, *, pages_url: Callable[[], str],
                  on_call_finished: CallFinishedSink | None = None) -> dict[str, Any]:
        """Run `code` against `room`'s tools; its CallToolResult (wire JSON). `pages_url`: where a person opens a
        page of the room (what a call in a room without pages is told); `on_call_finished`: told as each of the
        program's tool calls finishes. Cancelling it ends the program and the page calls it has in flight."""
        engine = await self._engine_started()
        if isinstance(engine, RunResult):
            return program_result(engine)
        run_id, started = uuid.uuid4().hex, time.monotonic()
        self.running += 1
        try:
            result = await engine.run(code, self._tools_named(room, code), RoomCaller(self.hub, room, pages_url),
                                      on_call_finished=on_call_finished, on_park=partial(self.parked.parked, room),
                                      run_id=run_id)
        finally:
            self.running -= 1
            self.parked.ended(run_id)
        # One line a program, beside its page calls' own.
        log.info("program room=%s calls=%d outcome=%s duration=%.3fs", room, result.calls,
                 result.error.kind if result.error is not None else "value", time.monotonic() - started)
        return program_result(result)

    async def _engine_started(self) -> CodeMode | RunResult:
        if self._engine is not None:
            return self._engine
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if not self._serving:
                return NOT_SERVING
            if self._engine is None:
                try:
                    engine = CodeMode(limits=self.limits, max_workers=self.config.workers, warm_workers=WARM_WORKERS,
                                      turn_timeout=max(TURN_TIMEOUT_MIN, 4 * self.config.compute_seconds))
                    await engine.__aenter__()
                except Exception as exc:  # the sandbox's binary is missing, or cannot start here
                    log.exception("the code mode sandbox could not start")
                    return RunResult(error=RunError("crashed", f"the sandbox could not start: {exc}"))
                self._engine = engine
        return self._engine

    def _tools_named(self, room_name: str, code: str) -> ToolSchemas:
        """The tools a program can call as functions: those of its room its source names (deferred ones too),
        and the meta-tools. Only these are given to the sandbox: its type check reads one stub a tool, and costs
        more the more stubs it reads (~80 ms for 1,000), while a program can only call, as a function, a name it
        writes. Any other tool is still reached with `call_tool(name, arguments)`."""
        room = self.hub.room(room_name)
        meta = {d["name"]: d["inputSchema"] for d in self.hub.meta.definitions
                if d["name"] not in (self.config.tool_name, CALL_TOOL)}  # the sandbox has its own call_tool
        tools: dict[str, Any] = {}
        for name in set(_NAME.findall(code)):
            tool = room.named(name)
            if tool is not None:
                tools[name] = tool.definition.inputSchema
            elif name in meta:
                tools[name] = meta[name]
        return tools


class RoomCaller:
    """The engine's `ToolCaller` for one run: each call goes through exactly a direct call's checks in the run's
    room (`Hub.route`: unknown names, the meta-tools; `Hub.call`: the schema, the page's and the room's limits,
    the timeout), and the calls share the run's deadline: a run waiting on pages ends at the call timeout, as
    one call would. Meta-tools answer as for the agent; `run_code` itself cannot run inside a program."""

    def __init__(self, hub: Hub, room: str, pages_url: Callable[[], str]) -> None:
        self.hub, self.room, self.pages_url = hub, room, pages_url
        self.deadline = hub.calls.clock().deadline

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        route = await self.hub.route(self.room, name, arguments, pages_url=self.pages_url)
        if isinstance(route, UnknownTool):
            raise ToolError(route.message)
        if isinstance(route, RunProgram):
            raise ToolError(f"{name} cannot run inside a program: call the tools themselves")
        if not isinstance(route, Invoke):
            return route  # a meta-tool's answer (an error answer raises in the program)
        tool = route.tool
        clock = CallClock(time.monotonic(), time.time(), self.deadline)
        outcome = await self.hub.call(tool, route.arguments, asked=NO_INPUT, clock=clock)
        if outcome.kind == "input_unsupported":
            wanted = ", ".join(outcome.result["requiredCapabilities"])
            raise ToolError(f"The page asked for input ({wanted}), which a program cannot give: call {tool.key} "
                            "directly.")
        if outcome.error is not None:
            raise ToolError(outcome.error)
        if tool.definition.outputSchema is not None:
            problem = tool.result_errors(to_call_tool_result(outcome, structured_may_be_any_json=True))
            if problem is not None:
                raise ToolError(f"The page's result for {tool.key} does not match its output schema: {problem}")
        return outcome.result


def program_result(result: RunResult) -> dict[str, Any]:
    """A run as the agent reads it (CallToolResult wire JSON): the value's JSON text first and the value as
    `structuredContent.result`, or an error result naming what happened and where; what the program printed
    in a second text block (and as `structuredContent.printed`)."""
    printed = [{"type": "text", "text": f"Printed:\n{result.printed}"}] if result.printed else []
    if result.error is not None:
        error = result.error
        details = {"kind": error.kind, "message": error.message, "line": error.line, "limit": error.limit}
        return {"content": [{"type": "text", "text": error.text()}, *printed],
                "structuredContent": {"error": {key: value for key, value in details.items() if value is not None}},
                "isError": True}
    structured = {"result": result.value} | ({"printed": result.printed} if result.printed else {})
    return {"content": [{"type": "text", "text": result.value_text}, *printed], "structuredContent": structured,
            "isError": False}
