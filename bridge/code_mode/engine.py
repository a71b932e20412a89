"""`CodeMode`: runs agents' programs in the sandbox, on a pool of worker processes shared by every run."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from bridge.code_mode._program import ParkSink, Program, Run
from bridge.code_mode._workers import Workers
from bridge.code_mode.limits import Limits
from bridge.code_mode.parked import ParkedProgram
from bridge.code_mode.run_result import RunError, RunResult
from bridge.code_mode.signatures import CALL_TOOL, CALL_TOOL_SIGNATURE, function_signatures, stubs_module
from bridge.code_mode.tool_calls import CallFinishedSink, ToolCaller

ToolSchemas = Mapping[str, Mapping[str, Any] | None]  # tool name -> its input schema


class CodeMode:
    """The sandbox for programs: `async with CodeMode() as code_mode: await code_mode.run(...)`.

    `max_workers` bounds the worker processes (each runs one program at a time; a program waiting on tools holds
    none), `warm_workers` are started at once. `type_check`: check each program against its tools' signatures
    before it runs (4 ms, 8 ms with 50 tools). `park_after`: how long a program waiting on calls keeps its worker
    for an answer before it is parked (parking and loading cost about 1 ms). `turn_timeout` kills a worker that
    does not answer one request in that time."""

    def __init__(self, *, limits: Limits | None = None, max_workers: int = 4, warm_workers: int = 1,
                 type_check: bool = True, park_after: float = 0.005, turn_timeout: float = 60.0,
                 binary_path: str | Path | None = None) -> None:
        if not park_after >= 0 or not turn_timeout > 0:
            raise ValueError(f"need park_after >= 0 and turn_timeout > 0, not {park_after!r}, {turn_timeout!r}")
        self.limits = limits or Limits()
        self.type_check = type_check
        self.park_after = park_after
        self._workers = Workers(max_workers=max_workers, warm_workers=warm_workers, turn_timeout=turn_timeout,
                                binary_path=binary_path)

    async def __aenter__(self) -> CodeMode:
        await self._workers.open()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self._workers.close()

    @property
    def workers_held(self) -> int:
        """Workers running a program now (a parked program holds none)."""
        return self._workers.held


    async def run(self, code: str, tools: ToolSchemas, caller: ToolCaller, *, limits: Limits | None = None,
                  on_call_finished: CallFinishedSink | None = None, on_park: ParkSink | None = None,
                  run_id: str | None = None) -> RunResult:
        """Run `code` with `tools` (name -> input schema: each that can be is a function in the program; any name
        goes through `call_tool`), calling them through `caller`, and return its value, or an error.

        `on_call_finished` is told as each tool call finishes; `on_park` is given the record each time the program
        parks (waits on calls none of which has answered: it holds no worker then). Cancelling the run ends the
        program and cancels the calls it has in flight."""
        limits = limits or self.limits
        if len(code) > limits.max_program_chars:
            return RunResult(error=RunError("invalid", f"the program is {len(code):,} characters, over the limit "
                                            f"of {limits.max_program_chars:,}", limit="max_program_chars"))
        try:
            code.encode()
        except UnicodeEncodeError as problem:  # JSON can carry a lone surrogate; Python source cannot
            return RunResult(error=RunError("invalid", f"the program holds a lone surrogate at character "
                                            f"{problem.start}: it is not text Python can read"))
        signatures = function_signatures(tools)
        run = Run(self._workers, _program(run_id or uuid.uuid4().hex, code, signatures, limits), caller,
                  park_after=self.park_after, on_call_finished=on_call_finished, on_park=on_park)
        return await run.from_start(stubs_module(signatures) if self.type_check else None)

    async def resume(self, parked: ParkedProgram, answers: Mapping[int, Awaitable[Any]], tools: ToolSchemas,
                     caller: ToolCaller, *, on_call_finished: CallFinishedSink | None = None,
                     on_park: ParkSink | None = None) -> RunResult:
        """Go on with a parked program, in this process or another: `answers` gives the awaitable answer of each
        of its pending calls (by `PendingCall.call_id`; raising `AnswerLost`, or missing, the program reads
        "outcome unknown"); the calls it makes next go through `caller`."""
        if (problem := parked.version_problem()) is not None:
            return RunResult(error=RunError("invalid", problem))
        program = _program(parked.run_id, parked.code, function_signatures(tools), parked.limits)
        run = Run.parked(self._workers, program, parked, answers, caller, park_after=self.park_after,
                         on_call_finished=on_call_finished, on_park=on_park)
        return await run.from_snapshot(parked.snapshot)


def _program(run_id: str, code: str, signatures: dict[str, str], limits: Limits) -> Program:
    """`signatures`: of the tools that are functions in programs (`function_signatures`)."""
    return Program(run_id, code, signatures | {CALL_TOOL: CALL_TOOL_SIGNATURE}, limits)
