"""Code mode in the bridge (`Programs`): an agent's `run_code` program runs in the sandbox (bridge.code_mode),
each tool call it makes goes through exactly the checks of a direct call in the agent's room (`RoomCaller`:
`Hub.route`, then `Hub.call`), and its value comes back as a CallToolResult (`program_result`).

The sandbox's worker processes start with the first program (a bridge nobody sends a program to starts none)
and stop with the bridge (`serving`, in its lifespan). A program waiting on pages holds no worker: the engine
parks it (`ParkedHere` counts the parked runs).

A task's program may outlive its process (shared mode): given `SurvivingPrograms`, its record is written where
every process reads it at each park, and each page call it sends is marked there as sent (atomically with the
sending). When its process dies, another claims it (`claim`) and goes on from its last record: the calls still
waiting at their pages are taken over (`Hub.adopt`), a call whose answer is gone reads "outcome unknown" in the
program, and no call already sent is ever sent again.

What runs where: the MCP edge routes a `run_code` call here and owns what is MCP's (progress, the agent's
cancel, tasks); the engine owns the sandbox; this module joins them to the hub.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from bridge.code_mode import (
    CALL_ID,
    CALL_TOOL,
    AnswerLost,
    CallFinishedSink,
    CodeMode,
    ParkedProgram,
    PendingCall,
    RunError,
    RunResult,
    ToolError,
    ToolSchemas,
)
from bridge.core.calls import CallClock, Outcome, ProgramCall
from bridge.core.code_tool import RunProgram, code_limits
from bridge.core.defaults import CodeConfig
from bridge.core.meta_tools import Invoke, UnknownTool
from bridge.core.results import to_call_tool_result
from bridge.core.surviving_programs import ClaimedProgram, SentCall, SurvivingPrograms, SurvivingRun

if TYPE_CHECKING:
    from bridge.core.catalog import Tool
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


class ParkedHere:
    """The runs of this process whose program parked at least once (it waited on calls, holding no worker), until
    they end (a task's program that may outlive its process is written to `SurvivingPrograms` as well)."""

    def __init__(self) -> None:
        self._run_ids: set[str] = set()

    def __len__(self) -> int:
        return len(self._run_ids)

    def parked(self, record: ParkedProgram) -> None:
        self._run_ids.add(record.run_id)

    def ended(self, run_id: str) -> None:
        """The run is over (a value, an error, a cancel)."""
        self._run_ids.discard(run_id)


class Resumption:
    """A program this process claimed: run it as its task's run (`run`), or let it go (`drop`, its task is over)."""

    def __init__(self, programs: Programs, claimed: ClaimedProgram) -> None:
        self.programs, self.claimed = programs, claimed

    async def run(self, room: str) -> dict[str, Any]:
        """Go on with the program, in `room` (its task's: a record of another room is refused); its
        CallToolResult."""
        return await self.programs.resume(self.claimed, room)

    async def drop(self) -> None:
        await self.programs.ended(self.claimed.run_id)


class Programs:
    """Runs agents' programs against their rooms' tools. `survivors`: where tasks' programs are kept for other
    processes to resume (shared mode); `pages_url(room)`: where a person opens a page of a room, for a resumed
    program's calls (no agent's request tells it then)."""

    def __init__(self, hub: Hub, config: CodeConfig, survivors: SurvivingPrograms | None = None,
                 pages_url: Callable[[str], str] = lambda room: "") -> None:
        self.hub, self.config = hub, config
        self.limits = code_limits(config)
        self.parked = ParkedHere()
        self.survivors, self.pages_url = survivors, pages_url
        self.running = 0  # runs in progress, parked or not
        self._engine: CodeMode | None = None
        self._serving = False
        self._starting: asyncio.Lock | None = None
        # The meta-tools a program can call as functions, by name: their input schemas (fixed with the hub).
        self._meta_schemas = {d["name"]: d["inputSchema"] for d in hub.meta.definitions
                              if d["name"] not in (config.tool_name, CALL_TOOL)}  # the sandbox has its own call_tool

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
                  on_call_finished: CallFinishedSink | None = None, task_id: str | None = None) -> dict[str, Any]:
        """Run `code` against `room`'s tools; its CallToolResult (wire JSON). `pages_url`: where a person opens a
        page of the room (what a call in a room without pages is told); `on_call_finished`: told as each of the
        program's tool calls finishes; `task_id`: the program is that task's run, and may outlive this process.
        Cancelling it ends the program and the page calls it has in flight."""
        engine = await self._engine_started()
        if isinstance(engine, RunResult):
            return program_result(engine)
        run_id, started = task_id or uuid.uuid4().hex, time.monotonic()
        deadline = self.hub.calls.clock().deadline
        surviving = await self._surviving(run_id, room, deadline) if task_id is not None else None
        caller = RoomCaller(self.hub, room, pages_url, deadline=deadline,
                            run_id=surviving.run_id if surviving is not None else None)
        return await self._running(lambda: engine.run(code, self._tools_named(room, code), caller,
                                                      on_call_finished=on_call_finished,
                                                      on_park=self._on_park(surviving), run_id=run_id),
                                   room, run_id, surviving=surviving is not None, started=started)

    async def resume(self, claimed: ClaimedProgram, room: str) -> dict[str, Any]:
        """Go on with a program claimed from a stopped process (`claim`), as its task's run in `room`: its pending
        calls still waiting at their pages are taken over, the others read "outcome unknown", and no call its
        processes sent is sent again. Its CallToolResult."""
        run, record, problem = claimed.run, claimed.record, claimed.problem
        if problem is None and run is not None and run.room != room:
            problem = f"its record is of room {run.room!r}, not {room!r}"
        if problem is not None or run is None or record is None:
            await self.ended(claimed.run_id)
            return program_result(RunResult(error=RunError(
                "invalid", f"its bridge process stopped and it could not be resumed in another: {problem}")))
        engine = await self._engine_started()
        if isinstance(engine, RunResult):
            await self.ended(claimed.run_id)
            return program_result(engine)
        loop = asyncio.get_running_loop()
        caller = RoomCaller(self.hub, room, lambda: self.pages_url(room),
                            deadline=loop.time() + max(0.0, run.deadline_at - time.time()), run_id=run.run_id,
                            sent=frozenset(claimed.sent))
        answers = {pending.call_id: caller.adopted(pending, claimed.sent[pending.call_id])
                   for pending in record.pending if pending.call_id in claimed.sent}
        return await self._running(lambda: engine.resume(record, answers, self._tools_named(room, record.code),
                                                         caller, on_park=self._on_park(run)),
                                   room, run.run_id, surviving=True, started=time.monotonic(), resumed=True)

    async def orphans(self) -> list[str]:
        """The tasks whose program's process stopped, for this process to claim."""
        return await self.survivors.orphans() if self.survivors is not None else []

    async def claim(self, task_id: str) -> Resumption | bool:
        """Take over the program of task `task_id` if its process stopped; else True when a living process holds
        it, False when it has none that survives."""
        if self.survivors is None:
            return False
        claimed = await self.survivors.claim(task_id)
        return claimed if isinstance(claimed, bool) else Resumption(self, claimed)

    async def ended(self, run_id: str) -> None:
        """A surviving run is over here (or was never resumed): it is forgotten where others read it."""
        if self.survivors is not None:
            await self.survivors.ended(run_id)

    async def _surviving(self, run_id: str, room: str, deadline: float) -> SurvivingRun | None:
        if self.survivors is None:
            return None
        run = SurvivingRun(run_id, room, time.time() + deadline - asyncio.get_running_loop().time())
        return run if await self.survivors.started(run) else None

    async def _running(self, run: Callable[[], Awaitable[RunResult]], room: str, run_id: str, *, surviving: bool,
                       started: float, resumed: bool = False) -> dict[str, Any]:
        """`run()` (`CodeMode.run` or `resume`) as a run in progress, then logged; its CallToolResult."""
        self.running += 1
        try:
            result = await run()
        finally:
            await self._ended(run_id, surviving)
        # One line a program, beside its page calls' own.
        log.info("program room=%s calls=%d outcome=%s duration=%.3fs%s", room, result.calls,
                 result.error.kind if result.error is not None else "value", time.monotonic() - started,
                 " resumed=1" if resumed else "")
        return program_result(result)

    def _on_park(self, surviving: SurvivingRun | None) -> Callable[[ParkedProgram], None]:
        def parked(record: ParkedProgram) -> None:
            self.parked.parked(record)
            if surviving is not None and self.survivors is not None:
                self.survivors.parked(surviving, record)
        return parked

    async def _ended(self, run_id: str, surviving: bool) -> None:
        self.running -= 1
        self.parked.ended(run_id)
        if surviving:
            await asyncio.shield(self.ended(run_id))  # a cancelled run is forgotten all the same

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
        tools: dict[str, Any] = {}
        for name in set(_NAME.findall(code)):
            tool = room.named(name)
            if tool is not None:
                tools[name] = tool.definition.inputSchema
            elif name in self._meta_schemas:
                tools[name] = self._meta_schemas[name]
        return tools


class RoomCaller:
    """The engine's `ToolCaller` for one run: each call goes through exactly a direct call's checks in the run's
    room (`Hub.route`: unknown names, the meta-tools; `Hub.call`: the schema, the page's and the room's limits,
    the timeout), and the calls share the run's deadline: a run waiting on pages ends at the call timeout, as
    one call would. Meta-tools answer as for the agent; `run_code` itself cannot run inside a program.

    A surviving run's (`run_id`) page calls are marked as its own as they are sent; a call its processes sent
    before this one took it over (`sent`, by the sandbox's id) is never sent again: it reads "outcome unknown"."""

    def __init__(self, hub: Hub, room: str, pages_url: Callable[[], str], *, deadline: float,
                 run_id: str | None = None, sent: frozenset[int] = frozenset()) -> None:
        self.hub, self.room, self.pages_url = hub, room, pages_url
        self.deadline, self.run_id, self.sent = deadline, run_id, sent

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        program_call = None
        if self.run_id is not None:
            call_id = CALL_ID.get()
            if call_id in self.sent:
                raise AnswerLost()
            program_call = ProgramCall(self.run_id, call_id)
        route = await self.hub.route(self.room, name, arguments, pages_url=self.pages_url)
        if isinstance(route, UnknownTool):
            raise ToolError(route.message)
        if isinstance(route, RunProgram):
            raise ToolError(f"{name} cannot run inside a program: call the tools themselves")
        if not isinstance(route, Invoke):
            return route  # a meta-tool's answer (an error answer raises in the program)
        outcome = await self.hub.call(route.tool, route.arguments, asked=NO_INPUT, clock=self._clock(),
                                      program_call=program_call)
        return _value(route.tool.key, route.tool, outcome)

    async def adopted(self, pending: PendingCall, sent: SentCall) -> Any:
        """The answer to a call the program's stopped process sent, taken over here; `AnswerLost` when it no
        longer waits at its page."""
        assert self.run_id is not None  # a resumed run's (`Programs.resume`)
        outcome = await self.hub.adopt(sent.session_id, sent.call_id, pending.name, pending.arguments,
                                       run_id=self.run_id, asked=NO_INPUT, clock=self._clock())
        if outcome is None:
            raise AnswerLost()
        return _value(pending.name, self.hub.room(self.room).named(pending.name), outcome)

    def _clock(self) -> CallClock:
        return CallClock(time.monotonic(), time.time(), self.deadline)


def _value(name: str, tool: Tool | None, outcome: Outcome) -> Any:
    """A page call's outcome as the program reads it: the page's answer, or the exception it raises."""
    if outcome.kind == "input_unsupported":
        wanted = ", ".join(outcome.result["requiredCapabilities"])
        raise ToolError(f"The page asked for input ({wanted}), which a program cannot give: call {name} directly.")
    if outcome.error is not None:
        raise ToolError(outcome.error)
    if tool is not None and tool.definition.outputSchema is not None:
        mismatch = tool.result_mismatch(to_call_tool_result(outcome, structured_may_be_any_json=True), name)
        if mismatch is not None:
            raise ToolError(mismatch)
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
